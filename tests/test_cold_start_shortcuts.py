"""Shortcuts a cold start takes (issue 33), each compared with what it replaces: argparse's untranslated
messages without a catalog search per message, and Span's ordering written out instead of generated."""

from __future__ import annotations

import itertools
import random
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from trainlint.core.positions import Span

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, order=True)
class _GeneratedSpan:
    """What ``@dataclass(order=True)`` generates for Span's fields: the reference."""

    line: int
    column: int
    end_line: int
    end_column: int


def test_span_orders_as_the_generated_ordering():
    rng = random.Random(33)
    fields = [tuple(rng.randint(0, 3) for _ in range(4)) for _ in range(120)]
    for a, b in itertools.product(fields, repeat=2):
        x, y, gx, gy = Span(*a), Span(*b), _GeneratedSpan(*a), _GeneratedSpan(*b)
        assert (x < y, x <= y, x > y, x >= y, x == y) == (gx < gy, gx <= gy, gx > gy, gx >= gy, gx == gy)
    spans = [Span(*f) for f in fields]
    assert [(s.line, s.column, s.end_line, s.end_column) for s in sorted(spans)] == sorted(fields)


def test_span_refuses_to_order_against_another_class():
    span = Span(1, 2, 3, 4)
    for other in ((1, 2, 3, 4), _GeneratedSpan(1, 2, 3, 4), None):
        for compare in (span.__lt__, span.__le__, span.__gt__, span.__ge__):
            assert compare(other) is NotImplemented  # type: ignore[arg-type]


def _mo_file(path: Path, translations: dict[str, str]) -> None:
    """A GNU message catalog (the .mo layout gettext reads) with these translations."""
    keys = sorted(translations)
    ids, strs = b"", b""
    offsets = []
    for key in keys:
        k, v = key.encode(), translations[key].encode()
        offsets.append((len(ids), len(k), len(strs), len(v)))
        ids += k + b"\0"
        strs += v + b"\0"
    start = 7 * 4
    ids_start = start + len(keys) * 16
    strs_start = ids_start + len(ids)
    table = b"".join(struct.pack("<II", length, ids_start + off) for off, length, _, _ in offsets)
    table += b"".join(struct.pack("<II", length, strs_start + off) for _, _, off, length in offsets)
    header = struct.pack("<7I", 0x950412DE, 0, len(keys), start, start + len(keys) * 8, 0, 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + table + ids + strs)


_PROBE = """
import argparse, gettext, sys
from trainlint.cli import build_parser
build_parser("check")
messages = ["usage: ", "options", "positional arguments", "show this help message and exit"]
print(all(argparse._(m) == gettext.gettext(m) for m in messages),
      argparse.ngettext("a", "b", 1) == gettext.ngettext("a", "b", 1),
      argparse.ngettext("a", "b", 2) == gettext.ngettext("a", "b", 2),
      argparse._("options"))
"""


def _probe(env_extra: dict[str, str], prelude: str = "") -> list[str]:
    import os

    env = {**os.environ, **env_extra}
    done = subprocess.run([sys.executable, "-c", prelude + _PROBE], capture_output=True, text=True, check=True,
                          cwd=REPO, env=env)
    return done.stdout.split()


def test_argparse_messages_are_gettexts_without_a_catalog():
    assert _probe({"LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "C.UTF-8"}) == [
        "True", "True", "True", "options"]


def test_a_catalog_for_the_language_still_translates_argparse(tmp_path):
    _mo_file(tmp_path / "xx" / "LC_MESSAGES" / "messages.mo", {"options": "optionen"})
    prelude = f"import gettext\ngettext.bindtextdomain('messages', {str(tmp_path)!r})\n"
    assert _probe({"LANGUAGE": "xx", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "C.UTF-8"}, prelude) == [
        "True", "True", "True", "optionen"]
