"""A DeepSpeed hostfile (``deepspeed --hostfile FILE``): which hosts, how many GPU slots each.

The DeepSpeed launcher reads one host per line, ``hostname slots=N``; blank lines and ``#``
comments are skipped (deepspeed/launcher/runner.py, ``fetch_hostfile``). ``--num_nodes N`` keeps the
first N hosts, ``--num_gpus G`` uses G GPUs on each kept host. The file is only read (bounded), never
run, and only when it lies in the linted project (see :mod:`trainlint.files.containment`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

MAX_HOSTFILE_BYTES = 256 * 1024
_LINE = re.compile(r"^\s*(\S+)\s+slots\s*=\s*(\d+)\s*$")


@dataclass(frozen=True)
class Host:
    name: str
    slots: int
    line: int  # 1-based line in the hostfile


def parse_hostfile(text: str) -> list[Host] | None:
    """The hosts in order; None when a non-comment line is not ``host slots=N`` (DeepSpeed stops on it)
    or no host is listed."""
    hosts: list[Host] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.match(line)
        if m is None:
            return None
        hosts.append(Host(m.group(1), int(m.group(2)), number))
    return hosts or None


def find_hostfile(written: str, script_path: str | None) -> str | None:
    """The hostfile's path when it exists inside the project of ``script_path`` (the current
    directory for a command line): relative names are tried against the current directory, the
    script's directory and the project root. None otherwise."""
    from trainlint.files.containment import contained, roots_for

    anchor = script_path if script_path and os.path.isfile(script_path) else os.path.join(os.getcwd(), "x")
    roots = roots_for(anchor)
    if os.path.isabs(written):
        candidates = [written]
    else:
        candidates = [os.path.join(os.getcwd(), written), os.path.join(os.path.dirname(os.path.abspath(anchor)), written)]
        candidates += [os.path.join(root, written) for root in roots]
    for candidate in candidates:
        if os.path.isfile(candidate) and contained(candidate, roots):
            return candidate
    return None


def read_hostfile(path: str) -> list[Host] | None:
    """The hosts of the file at ``path`` (read at most MAX_HOSTFILE_BYTES); None when unreadable or malformed."""
    from trainlint.files.sources import UnreadableSource, read_source

    try:
        return parse_hostfile(read_source(path, max_bytes=MAX_HOSTFILE_BYTES).text)
    except (UnreadableSource, OSError):
        return None
