"""The plugin API (issue 31, layers as packages): ``trainlint.plugin`` holds what a plugin imports,
and the module paths of before the layer packages still import, as the same modules, with a warning.

A published plugin written against ``from trainlint.<module> import ...`` (docs/plugins.md showed the
diagnostics module so) must neither break nor keep working unknowingly."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import trainlint
import trainlint.plugin


def test_the_plugin_api_names_resolve():
    for name in trainlint.plugin.__all__:
        assert getattr(trainlint.plugin, name) is not None, name
    from trainlint.core.diagnostics import Severity
    from trainlint.rules import Rule

    assert trainlint.plugin.Severity is Severity and trainlint.plugin.Rule is Rule
    assert trainlint.plugin.hookimpl is trainlint.hookimpl


def test_an_old_module_path_is_the_new_module_with_a_warning():
    old_paths = sorted(trainlint._NEW_PATH)
    assert len(old_paths) == 46  # the loose top-level modules the layer packages took in
    for old in old_paths:
        new = importlib.import_module(trainlint._NEW_PATH[old])
        sys.modules.pop(old, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(old)
        assert module is new, old
        assert module.__name__ == module.__spec__.name == trainlint._NEW_PATH[old]  # its own spec kept
        assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [
            f"{old} is now {trainlint._NEW_PATH[old]} (a plugin imports from trainlint.plugin)"]


def test_a_plugin_importing_an_old_path_gets_the_same_classes():
    """In a fresh interpreter, the old path imported first: its classes are the ones trainlint uses.
    (The old path is read from the table, not written out: the move script rewrites every old path.)"""
    (old,) = [o for o, n in trainlint._NEW_PATH.items() if n == "trainlint.core.diagnostics"]
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "try:\n"
            f"    from {old} import Severity\n"
            "except DeprecationWarning as w:\n"
            "    print('warned:', w)\n"
            "warnings.simplefilter('ignore')\n"
            f"from {old} import Severity\n"
            "from trainlint.plugin import Severity as S\n"
            "print(Severity is S)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [f"warned: {old} is now trainlint.core.diagnostics (a plugin imports from trainlint.plugin)",
                                "True"]


def test_an_unknown_module_still_fails():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("trainlint.no_such_module")


def test_no_code_of_the_repository_uses_an_old_path():
    """The old paths are for published plugins only: trainlint's own code, tests, benchmarks and
    scripts use the packages (an old path would work, with a warning, and hide the layer it reads)."""
    import re

    from conftest import REPO

    names = "|".join(sorted((path.rsplit(".", 1)[1] for path in trainlint._NEW_PATH), key=len, reverse=True))
    dotted = re.compile(rf"(?<![\w.])trainlint\.({names})(?!\w)")
    from_import = re.compile(rf"^\s*from trainlint import [^#\n]*\b({names})\b", re.MULTILINE)
    found = []
    for folder in ("linter", "adapters", "schemas", "tests", "benchmarks", "scripts", "fuzz"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if {"build", ".venv"} & set(path.relative_to(REPO).parts):
                continue  # a setuptools build copy of an example plugin, not code of the repository
            text = path.read_text(encoding="utf-8")
            found += [f"{path.relative_to(REPO)}: {m.group(0).strip()}" for m in (*dotted.finditer(text), *from_import.finditer(text))]
    assert found == []
