"""Where each framework family keeps its argument definitions: what marks a checkout of it.

Apart from :mod:`.catalog` (catalogs, the shipped index, the cache) so that looking for a checkout
beside a config, which the check of every DeepSpeed JSON, NeoX YAML and launch script does, imports
nothing more; the catalog module is imported when a checkout or a configured release is read.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainlint.frameworks.stat_paths import path_is_file

class _Markers:
    """family -> where it keeps its argument definitions, in the order tried (a fork keeps the
    layout): each framework's own ``Framework.source_markers``."""

    def get(self, family: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        from trainlint.frameworks.families import markers

        return markers(family) or default

    def __getitem__(self, family: str) -> tuple[str, ...]:
        return self.get(family)


MARKERS = _Markers()


def marker(root: Path, family: str) -> str | None:
    """The argument module of ``family`` under ``root`` (relative path), if there is one."""
    folder = str(root)
    for rel in MARKERS.get(family, ()):
        if path_is_file(os.path.join(folder, rel)) and (rel not in CHECKED or _reads_like(root / rel, family)):
            return rel
    return None


CHECKED = frozenset({"arguments.py"})
"""Markers whose name alone says little: the file must also read like the family's parser."""
_MEGATRON_NAMES = ("--num-layers", "--num_layers", "--hidden-size", "--hidden_size")


def megatron_like(text: str) -> bool:
    """An argparse module defining Megatron's model flags (``add_argument('--num-layers'``, or a
    fork's ``--num_layers``): a generic ``arguments.py`` of another project is not one."""
    return "add_argument" in text and sum(f"'{n}'" in text or f'"{n}"' in text for n in _MEGATRON_NAMES) >= 2


def _reads_like(path: Path, family: str) -> bool:
    from trainlint.frameworks.families import family as framework_of_family

    framework = framework_of_family(family)
    if framework is None:
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 20).decode("utf-8", errors="replace")
    except OSError:
        return False
    return bool(framework.reads_like_parser(head))
