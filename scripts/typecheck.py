"""Run mypy over the trainlint package under its import names, and print the real file paths.

The package is imported as ``trainlint.*`` but lives in ``linter/``, ``adapters/`` and
``schemas/`` (pyproject's ``[tool.setuptools] package-dir``). mypy has no such mapping: given
``linter/`` it checks a package named ``linter`` in which every ``from trainlint... import``
is unresolved, so each imported name is ``Any`` and most type errors go unseen. This script
lays out the package as Python imports it, with symbolic links under ``.mypy_cache/`` (nothing
is copied, so findings point at the one real file), runs ``mypy -p trainlint`` there with the
``[tool.mypy]`` configuration from pyproject.toml, and rewrites the paths in mypy's report back
to the repository's. The exit code is mypy's (0: no findings).

    python scripts/typecheck.py [extra mypy options]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / ".mypy_cache" / "import-tree"
_SKIP = {"__pycache__"}


def package_dirs() -> dict[str, Path]:
    """Import name -> folder, from pyproject's package-dir (the one statement of the layout)."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        setuptools = tomllib.load(f)["tool"]["setuptools"]
    return {name: ROOT / folder for name, folder in setuptools["package-dir"].items()}


def _lay_out(name: str, mapping: dict[str, Path], into: Path) -> None:
    """Place package ``name`` at ``into``: one link to its folder, or, when a subpackage
    comes from another folder, a real folder holding a link per entry plus that subpackage."""
    source = mapping[name]
    nested = {sub for sub in mapping if sub.startswith(name + ".") and "." not in sub[len(name) + 1 :]}
    if not nested:
        into.symlink_to(source, target_is_directory=True)
        return
    into.mkdir()
    own = {sub.rsplit(".", 1)[1] for sub in nested}
    for entry in sorted(source.iterdir()):
        if entry.name in _SKIP or entry.name in own:
            continue
        (into / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    for sub in sorted(nested):
        _lay_out(sub, mapping, into / sub.rsplit(".", 1)[1])


def build_tree(tree: Path = TREE) -> str:
    """The import tree at ``tree``, rebuilt from scratch (so a new or removed module is never
    missed); returns the top-level package's name."""
    mapping = package_dirs()
    tops = [name for name in mapping if "." not in name]
    if len(tops) != 1:
        raise SystemExit(f"typecheck: expected one top-level package in package-dir, found {tops}")
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    _lay_out(tops[0], mapping, tree / tops[0])
    return tops[0]


_LOCATION = re.compile(r"^(?P<path>[^:\n]+\.pyi?)(?P<rest>:.*)$")


def real_path(line: str) -> str:
    """A report line with the tree's path replaced by the repository's (relative to the root)."""
    match = _LOCATION.match(line)
    if match is None:
        return line
    path = Path(match["path"])
    if not path.is_absolute():
        path = ROOT / path
    try:
        shown = os.path.relpath(path.resolve(), ROOT)
    except ValueError:  # another drive (Windows)
        return line
    return shown + match["rest"]


def main(argv: list[str]) -> int:
    top = build_tree()
    env = dict(os.environ, MYPYPATH=str(TREE))
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "-p", top, *argv]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        print(real_path(line))
    sys.stderr.write(proc.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
