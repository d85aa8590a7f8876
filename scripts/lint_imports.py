"""Run import-linter (``lint-imports``) over the trainlint package under its import names.

import-linter builds its graph from the installed package's folder; trainlint's subpackages live
in three folders (pyproject's package-dir), so, as ``scripts/typecheck.py`` does for mypy, the
package is laid out under ``.mypy_cache/import-tree`` with symbolic links and import-linter runs
with that tree first on the path. The contracts are ``[tool.importlinter]`` in pyproject.toml.

    python scripts/lint_imports.py [lint-imports options]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from typecheck import ROOT, TREE, build_tree  # noqa: E402

OWN_TREE = TREE.with_name(f"import-tree-imports-{os.getpid()}")
"""A tree of its own (a test may run this beside mypy or the other script), removed after."""


def main(argv: list[str]) -> int:
    build_tree(OWN_TREE)
    command = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    if command is None:
        print("lint_imports: lint-imports not found (pip install -e '.[dev]')", file=sys.stderr)
        return 2
    env = dict(os.environ, PYTHONPATH=str(OWN_TREE))
    try:
        return subprocess.run([command, "--config", str(ROOT / "pyproject.toml"), "--no-cache", *argv], cwd=str(OWN_TREE),
                              env=env).returncode
    finally:
        shutil.rmtree(OWN_TREE, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
