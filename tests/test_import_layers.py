"""The package's import graph: the layer contracts hold and the import cycles do not grow (issue 31).

Both read the graph with grimp (installed with the dev extra, as import-linter's library); without
it the tests skip, as in a user's clone set up with the test extra only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

def test_no_import_cycles():
    """No module imports, directly or through others, a module that imports it back (issue 31: 8
    cycles before its framework work, 0 since). Break a new one by moving the shared code to a
    module both import, not by hiding an import inside a function (grimp counts those too)."""
    pytest.importorskip("grimp")
    from import_cycles import cycles, import_graph

    graph = import_graph()
    assert "trainlint.adapters.megatron.adapter" in graph and "trainlint.commands.check" in graph  # the whole package
    found = cycles(graph)
    assert not found, "import cycle(s):\n" + "\n".join(", ".join(c) for c in found)


def test_cycle_finder_finds_a_cycle():
    from import_cycles import cycles

    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_layer_contracts_hold():
    pytest.importorskip("importlinter")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "lint_imports.py")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def _contract() -> dict:
    try:
        import tomllib
    except ImportError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def test_no_import_is_excused_from_the_layers():
    """The layer contract has no ignore_imports (27 before issue 31's layer work): an import against
    the layers is fixed by moving code, not listed."""
    contracts = _contract()["contracts"]
    assert contracts and all(not c.get("ignore_imports") for c in contracts)
    assert "ignore_imports" not in _contract()


ENTRY_MODULES = {"cli", "__main__", "builtin", "plugin"}
"""The top-level modules that are not in a layer package, each named from outside the package (the
console script trainlint.cli:main, ``python -m trainlint``, the built-in plugin's name as ``trainlint
rules`` shows it, the plugin API); pyproject's contract comment says why each is there."""


def test_the_layers_are_packages():
    """Issue 31: each layer is packages in the existing top-level folders, not a list of loose
    modules (46 of them were named one by one before; now the contract names packages): every
    top-level ``linter/*.py`` is an entry module, and every name in the contract is a package or an
    entry module."""
    loose = {p.stem for p in (ROOT / "linter").glob("*.py")} - {"__init__"}
    assert sorted(loose - ENTRY_MODULES) == [], "a loose top-level module: put it in its layer's package"
    (layers,) = [c["layers"] for c in _contract()["contracts"] if c["type"] == "layers"]
    named = [name.strip().removeprefix("trainlint.") for layer in layers for name in layer.split(":")]
    folders = {"adapters": ROOT / "adapters", "schemas": ROOT / "schemas"}
    not_packages = [n for n in named if n not in ENTRY_MODULES and not (folders.get(n, ROOT / "linter" / n) / "__init__.py").is_file()]
    assert not_packages == []


def test_every_top_level_module_is_in_a_layer():
    """A module left out of the contract would be free to import anything: each top-level module
    and package of trainlint (linter/, adapters/, schemas/) is named in one layer."""
    (layers,) = [c["layers"] for c in _contract()["contracts"] if c["type"] == "layers"]
    named = [name.strip() for layer in layers for name in layer.split(":")]
    assert len(named) == len(set(named)), "a module named in two layers"
    top = {p.stem for p in (ROOT / "linter").glob("*.py") if p.stem != "__init__"}
    top |= {p.name for p in (ROOT / "linter").iterdir() if (p / "__init__.py").is_file()}
    top |= {"adapters", "schemas"}
    assert sorted(top - {n.removeprefix("trainlint.") for n in named}) == []
