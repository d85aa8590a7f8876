"""A toy training-config format, as a team would add one with a plugin: ``key = value`` lines
that name spec fields directly (``parallel.tensor = 2``), ``#`` comments, files named
``*.toytrain``.

It is the proof that adding a format is one module: through the adapter protocol alone
(``sniff``/``load`` to read; ``expressible``, ``spell_changes`` and ``writer`` for the way back) it gets
``check``, estimates, ``suggest`` and ``suggest --write-to`` (tests/test_toy_adapter.py).
Nothing of it is known anywhere else in trainlint.
"""

from __future__ import annotations

import re
from typing import Any

from trainlint.plugin import (BY_CONTENT, NOT_MINE, Adapter, LoadContext, LoadResult, SourceText, Span, Texts, TrainingSpec,
                              WritebackError, Writer, from_file, hookimpl, input_diagnostic)

FORMAT = "toytrain"
_LINE = re.compile(r"^(?P<key>[a-z_]+\.[a-z_]+)[ \t]*=[ \t]*(?P<value>[^#\n]*?)[ \t]*(?:#.*)?$")
_SECTIONS = ("model", "parallel", "batch", "precision", "memory", "cluster", "run", "engine")


def _value(text: str) -> Any:
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text in ("true", "false"):
        return text == "true"
    return text


def _spelled(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _entries(text: str) -> dict[str, tuple[Any, int, int, int]]:
    """key -> (value, line number, value start column, value end column), for the lines written."""
    out = {}
    for number, line in enumerate(text.split("\n"), 1):
        m = _LINE.match(line)
        if m and m.group("key").split(".")[0] in _SECTIONS:
            out[m.group("key")] = (_value(m.group("value")), number, m.start("value") + 1, m.end("value") + 1)
    return out


class ToyAdapter(Adapter):
    name = FORMAT
    extensions = (".toytrain",)

    def sniff(self, path: str, text: str) -> int:
        return BY_CONTENT if path.endswith(".toytrain") and _entries(text) else NOT_MINE

    def load(self, source: SourceText, context: LoadContext) -> LoadResult:
        result = LoadResult(format=FORMAT)
        spec = TrainingSpec(framework=FORMAT, path=source.path, sources=[source.path])
        for number, line in enumerate(source.text.split("\n"), 1):
            if line.strip() and not line.lstrip().startswith("#") and not _LINE.match(line):
                result.diagnostics.append(input_diagnostic(
                    "TL003", "not a `section.key = value` line", Span(number, 1, number, len(line) + 1), path=source.path))
        for key, (value, line, start, end) in _entries(source.text).items():
            section, name = key.split(".")
            entry = from_file(value, source.path, Span(line, start, line, end), key)
            part = getattr(spec, section)
            if hasattr(part, name):
                setattr(part, name, entry)
            spec.settings[key] = entry
        result.specs.append(spec)
        return result

    # -- the way back ------------------------------------------------------------------------
    def spell_changes(self, spec: TrainingSpec, changes: dict[str, Any], base: Any) -> list[str]:
        return [f"{key} = {_spelled(value)}" for key, value in changes.items() if key != "parallel.data"]

    def expressible(self, spec: TrainingSpec) -> frozenset[str]:
        return frozenset({"tp", "pp", "micro"})  # parallel.tensor / parallel.pipeline / batch.micro_batch lines

    def writer(self, texts, result, spec, changes, index):
        return ToyWriter(texts, result.path, changes)


class ToyWriter(Writer):
    """A written key's value is replaced in place; a key not written is added as a last line."""

    def __init__(self, texts: Texts, path: str, changes: dict[str, Any]) -> None:
        self.buffer = texts.buffer(path)
        self.changes = changes
        self.touched: set[str] = set()

    def run(self) -> None:
        written = _entries(self.buffer.text)
        for key, value in self.changes.items():
            if key == "parallel.data":
                continue  # derived from the world size, never written
            if value is None:
                raise WritebackError(f"{key}: removing a setting is not supported by the toy format")
            self.touched.add(key)
            if key in written:
                _, line, start, end = written[key]
                a = self.buffer.offset(line, start)
                self.buffer.replace(a, a + (end - start), _spelled(value))
            else:
                at = len(self.buffer.text)
                sep = "" if self.buffer.text.endswith("\n") or not self.buffer.text else "\n"
                self.buffer.insert(at, f"{sep}{key} = {_spelled(value)}\n")


@hookimpl
def trainlint_adapters():
    return [ToyAdapter()]
