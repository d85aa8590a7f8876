"""The wheel ships what the source tree holds (issue 31, Deliver 4).

The three top-level folders map to import names (``trainlint = linter``, ``trainlint.adapters =
adapters``, ``trainlint.schemas = schemas``; pyproject ``package-dir``). setuptools'
``[tool.setuptools.packages.find]`` cannot express that mapping (it names a package after its
folder: it finds ``linter.commands``, never ``trainlint.commands``), so pyproject lists the packages.
The list cannot go stale unnoticed: the first test compares it with the folders of the source
tree (a new subpackage that works in the editable install but is missing from the wheel fails it),
and the second builds the wheel, installs it in a fresh virtual environment and imports every
module and reads every data file from there.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

from conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: tomli is a dependency there
    import tomli as tomllib

SETUPTOOLS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
PACKAGE_DIR: dict[str, str] = SETUPTOOLS["package-dir"]


def _source_packages() -> dict[str, Path]:
    """Every folder under the mapped roots that holds a Python module, by import name."""
    found: dict[str, Path] = {}
    for name, folder in PACKAGE_DIR.items():
        root = REPO / folder
        for directory, subdirs, files in os.walk(root):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__" and not d.startswith("."))
            here = Path(directory)
            relative = here.relative_to(root).parts
            # a folder that is itself another root (none today) belongs to that root's name
            if here != root and os.path.relpath(here, REPO) in PACKAGE_DIR.values():
                continue
            if any(f.endswith(".py") for f in files):
                found[".".join((name, *relative))] = here
    return found


def _source_modules() -> list[str]:
    """Every module of the source tree, by import name (``__main__`` is run, not imported)."""
    modules = []
    for package, folder in _source_packages().items():
        modules.append(package)
        modules += [f"{package}.{p.stem}" for p in sorted(folder.glob("*.py")) if p.stem not in ("__init__", "__main__")]
    return sorted(modules)


def _source_data_files() -> list[str]:
    """Every file under the mapped roots that is not Python, as a path under the installed
    ``trainlint`` folder (``data/gpus.json``, ``schemas/project.schema.json``)."""
    files = []
    for name, folder in PACKAGE_DIR.items():
        prefix = Path(*name.split(".")[1:])
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts:
                files.append(str(prefix / path.relative_to(REPO / folder)))
    return files


def test_pyproject_lists_every_package_of_the_source_tree():
    listed = SETUPTOOLS["packages"]
    assert len(listed) == len(set(listed)), "a package is listed twice in pyproject [tool.setuptools] packages"
    source = set(_source_packages())
    missing = sorted(source - set(listed))
    assert not missing, f"pyproject [tool.setuptools] packages misses {missing}: the wheel would not hold them"
    # a listed package with no module (a folder that holds only data) is fine if it exists
    for name in sorted(set(listed) - source):
        root = max((n for n in PACKAGE_DIR if name == n or name.startswith(n + ".")), key=len)
        folder = REPO / PACKAGE_DIR[root] / Path(*name[len(root):].split(".")[1:])
        assert folder.is_dir(), f"pyproject lists {name}, but {folder} does not exist"


def _glob_matches(path: str, pattern: str) -> bool:
    """A package-data glob as setuptools reads it: ``*`` stays within one folder (``*.json`` does
    not ship ``frameworks/x.json``); ``**`` crosses folders."""
    if "**" in pattern:
        return fnmatch.fnmatchcase(path, pattern)
    parts, globs = path.split("/"), pattern.split("/")
    return len(parts) == len(globs) and all(fnmatch.fnmatchcase(a, g) for a, g in zip(parts, globs))


def test_package_data_patterns_cover_every_data_file():
    """Each non-Python file under the roots is matched by a ``package-data`` pattern of its package
    (the wheel test checks the same thing in a built wheel; this one says which pattern is missing)."""
    patterns: dict[str, list[str]] = SETUPTOOLS.get("package-data", {})
    packages = set(SETUPTOOLS["packages"])
    uncovered = []
    for relative in _source_data_files():
        parts = Path(relative).parts
        covered = False
        for depth in range(len(parts) - 1, -1, -1):  # the innermost listed package holding it
            package = ".".join(("trainlint", *parts[:depth]))
            if package in packages:
                rest = "/".join(parts[depth:])
                covered = any(_glob_matches(rest, p) for p in patterns.get(package, []))
                break
        if not covered:
            uncovered.append(relative)
    assert not uncovered, f"no [tool.setuptools.package-data] pattern ships {uncovered}"


IMPORT_EVERYTHING = textwrap.dedent("""
    import importlib, json, sys
    from importlib import resources
    from pathlib import Path

    modules, data_files = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    failed, outside = {}, []
    for name in modules:
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"
            continue
        if not Path(module.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()):
            outside.append(f"{name}: {module.__file__}")
    root = resources.files("trainlint")
    missing = [f for f in data_files if not root.joinpath(f).is_file()]
    print(json.dumps({"failed": failed, "outside": outside, "missing": missing}))
""")


@pytest.mark.slow
def test_wheel_installs_in_a_fresh_venv_and_imports_every_module(tmp_path):
    """Build the wheel from this checkout, install it with ``--no-deps`` in a new virtual
    environment, and import there every module of the source tree and read every data file.

    Offline: the wheel is built with the setuptools of this environment (``--no-build-isolation``),
    and the fresh environment reads the dependencies (pyyaml, jsonschema, ...) from this one's
    site-packages through a ``.pth`` file; a ``.pth`` line adds a folder only, so the editable
    install of this checkout (its finder runs from a ``.pth`` of that folder) is not active there,
    and the test asserts that every module was imported from the fresh environment."""
    pytest.importorskip("setuptools")  # the build backend, run in this environment
    # built from a copy: setuptools writes build/ and an egg-info beside the sources it builds
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for folder in PACKAGE_DIR.values():
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            "--no-index", "-w", str(dist), str(source)], capture_output=True, text=True, cwd=tmp_path)
    assert built.returncode == 0, built.stdout + built.stderr
    wheels = list(dist.glob("trainlint-*.whl"))
    assert len(wheels) == 1, wheels

    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=False, symlinks=os.name != "nt")
    python = fresh / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                                "--no-index", str(wheels[0])], capture_output=True, text=True, cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    purelib = subprocess.run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "zz_test_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")

    modules, data_files = _source_modules(), _source_data_files()
    assert "trainlint.data" in modules and any(f.startswith("data/frameworks/") for f in data_files)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run([str(python), "-I", "-c", IMPORT_EVERYTHING, json.dumps(modules), json.dumps(data_files)],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report == {"failed": {}, "outside": [], "missing": []}, report

    # the console script of the wheel runs, reading the shipped catalogs and schemas
    trainlint = fresh / ("Scripts/trainlint.exe" if os.name == "nt" else "bin/trainlint")
    checked = subprocess.run([str(trainlint), "check", "--isolated", "--exit-zero", "--format", "json", str(REPO / "examples")],
                             capture_output=True, text=True, cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stderr
    files = json.loads(checked.stdout)["files"]
    assert files and not [d for f in files for d in f["diagnostics"] if d["code"] in ("TL998", "TL999")]


def test_no_reference_to_a_data_folder_the_checkout_does_not_have():
    """The shipped data is the ``trainlint.data`` package (``linter/data/`` in the source tree);
    a path ``trainlint/data/...`` exists in neither a checkout nor the words a user looks it up by."""
    stale = []
    for folder in (*PACKAGE_DIR.values(), "docs", "scripts", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in (".py", ".md") and "__pycache__" not in path.parts:
                text = path.read_text(encoding="utf-8")
                stale += [f"{path.relative_to(REPO)}:{n}" for n, line in enumerate(text.splitlines(), 1) if "trainlint/data" in line]
    if "trainlint/data" in (REPO / "README.md").read_text(encoding="utf-8"):
        stale.append("README.md")
    assert not stale, stale
