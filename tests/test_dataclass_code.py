"""The methods ``@dataclass`` generates for trainlint's classes come from a table of compiled code kept
beside the bytecode (``trainlint.core.dataclass_code``, issue 33): the same classes as the decorator's own
``exec`` makes, no compilation in a cold check once the table is written, and a table that is missing,
damaged or of another interpreter changes nothing but the time."""

from __future__ import annotations

import dataclasses
import json
import marshal
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from trainlint.core import dataclass_code

REPO = Path(__file__).resolve().parents[1]
DS_JSON = REPO / "examples" / "deepspeed_zero3_offload.json"

CLASSES = textwrap.dedent('''\
    from dataclasses import dataclass, field

    @dataclass(frozen=True, order=True)
    class Point:
        x: int
        y: int = 0
        tags: tuple = field(default=(), compare=False)

    @dataclass
    class Box:
        items: list = field(default_factory=list)
        label: "str | None" = None
    ''')


@pytest.fixture
def fresh_table(tmp_path, monkeypatch):
    """An empty table in tmp_path, this process's state reset, bytecode writing on."""
    path = tmp_path / "methods.marshal"
    monkeypatch.setattr(dataclass_code, "table_path", lambda: str(path))
    monkeypatch.setattr(dataclass_code, "_table", None)
    monkeypatch.setattr(dataclass_code, "_used", {})
    monkeypatch.setattr(dataclass_code, "_missed", True)  # no atexit registration from a test
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return path


def _define(module_name: str, monkeypatch) -> types.ModuleType:
    module = types.ModuleType(module_name)
    monkeypatch.setitem(sys.modules, module_name, module)
    exec(compile(CLASSES, f"<{module_name}>", "exec", dont_inherit=True), module.__dict__)
    return module


def _behaviour(module: types.ModuleType) -> list:
    Point, Box = module.Point, module.Box
    p = Point(1, 2, ("a",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3
    return [repr(p), p == Point(1, 2), p < Point(2), hash(p) == hash(Point(1, 2, ("b",))),
            repr(Box()), Box([1]) == Box([1]), Box() == Box(label="x"), [f.name for f in dataclasses.fields(Box)],
            Point.__init__.__annotations__, repr(dataclasses.replace(p, y=5))]


def test_a_trainlint_class_is_the_same_from_a_compiled_table_and_from_the_source(fresh_table, monkeypatch):
    built = _define("trainlint._zz_dc_first", monkeypatch)
    assert dataclass_code._used, "the decorator's sources of a trainlint module reach the table"
    dataclass_code.save()
    table = dataclass_code._read(str(fresh_table))
    assert set(table) == set(dataclass_code._used)
    for source, blob in table.items():  # what is kept is what compile gives for the text
        assert marshal.loads(blob) == compile(source, "<string>", "exec", dont_inherit=True)

    # a second process: every method comes from the table, none is compiled
    monkeypatch.setattr(dataclass_code, "_table", None)
    monkeypatch.setattr(dataclass_code, "_used", {})
    compiled = []
    real_compile = compile
    monkeypatch.setattr("builtins.compile", lambda *a, **k: compiled.append(a[0]) or real_compile(*a, **k))
    again = _define("trainlint._zz_dc_first", monkeypatch)
    monkeypatch.undo()  # builtins.compile back before the comparisons
    assert [c for c in compiled if isinstance(c, str) and "__create_fn__" in c] == []
    assert _behaviour(again) == _behaviour(built)
    assert again.Point.__init__.__code__ == built.Point.__init__.__code__


def test_another_packages_class_is_compiled_as_before_and_not_kept(fresh_table, monkeypatch):
    other = _define("zz_not_trainlint", monkeypatch)
    assert dataclass_code._used == {}
    dataclass_code.save()
    assert not fresh_table.exists()
    # and __future__ flags of dataclass_code do not leak into its methods: annotations stay objects
    assert other.Point.__init__.__annotations__["x"] is int


@pytest.mark.parametrize("content", [b"", b"garbage", dataclass_code.FORMAT + b"x",
                                     b"\x00\x00\r\n" + dataclass_code.FORMAT + marshal.dumps({"a": b"b"})])
def test_a_damaged_or_foreign_table_changes_nothing_but_the_time(fresh_table, monkeypatch, content):
    from importlib.util import MAGIC_NUMBER

    fresh_table.write_bytes(content)
    reference = _behaviour(_define("trainlint._zz_dc_damaged", monkeypatch))
    # a table of this interpreter whose entry is not code: compiled again
    source = next(iter(dataclass_code._used))
    fresh_table.write_bytes(MAGIC_NUMBER + dataclass_code.FORMAT + marshal.dumps({source: b"not marshal"}))
    monkeypatch.setattr(dataclass_code, "_table", None)
    monkeypatch.setattr(dataclass_code, "_used", {})
    assert _behaviour(_define("trainlint._zz_dc_damaged", monkeypatch)) == reference
    assert marshal.loads(dataclass_code._used[source]) == compile(source, "<string>", "exec", dont_inherit=True)


def test_no_table_is_written_when_bytecode_is_not(fresh_table, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    _define("trainlint._zz_dc_nowrite", monkeypatch)
    assert dataclass_code._used
    dataclass_code.save()
    assert not fresh_table.exists()


def test_the_table_is_merged_with_what_another_process_wrote_and_bounded(fresh_table, monkeypatch):
    from importlib.util import MAGIC_NUMBER

    theirs = {"def __create_fn__():\n def f(): pass\n return f": marshal.dumps(compile("pass", "<string>", "exec"))}
    fresh_table.write_bytes(MAGIC_NUMBER + dataclass_code.FORMAT + marshal.dumps(theirs))
    monkeypatch.setattr(dataclass_code, "_table", {})  # read before the other process wrote
    _define("trainlint._zz_dc_merge", monkeypatch)
    dataclass_code.save()
    assert set(dataclass_code._read(str(fresh_table))) == set(theirs) | set(dataclass_code._used)
    monkeypatch.setattr(dataclass_code, "MAX_ENTRIES", len(dataclass_code._used))
    dataclass_code.save()
    assert set(dataclass_code._read(str(fresh_table))) == set(dataclass_code._used)


def _cold_check(cache: Path) -> dict:
    code = ("import json, sys\nfrom trainlint.cli import main\n"
            f"status = main(['check', '--isolated', '--exit-zero', {str(DS_JSON)!r}])\n"
            "from trainlint.core import dataclass_code as d\n"
            "print(json.dumps({'status': status, 'missed': d._missed, 'used': len(d._used)}))")
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO, env=env)
    return json.loads(done.stdout.splitlines()[-1])


def test_a_cold_check_compiles_no_dataclass_method_once_the_table_is_written(tmp_path):
    first = _cold_check(tmp_path)
    assert first["status"] == 0 and first["missed"] and first["used"] > 100
    assert list(tmp_path.rglob("dataclass_methods.*.marshal")), "written under PYTHONPYCACHEPREFIX"
    second = _cold_check(tmp_path)
    assert second == {**first, "missed": False}
