"""Count the import cycles of the trainlint package (issue 31: the layers depend one way).

The package is laid out under its import names as ``scripts/typecheck.py`` does (symbolic links
under ``.mypy_cache/import-tree``), its import graph built with grimp (import-linter's graph
library; imports inside functions count, imports under ``if TYPE_CHECKING:`` do not: they never
run), and every strongly connected component of more than one module is a cycle: a set of modules
each of which imports, directly or through the others, every other one.

    python scripts/import_cycles.py            # the count, and each cycle's modules
    python scripts/import_cycles.py --count    # the count only

Exit code 0; the test ``tests/test_import_layers.py`` holds the count down.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from typecheck import TREE, build_tree  # noqa: E402

OWN_TREE = TREE.with_name(f"import-tree-cycles-{os.getpid()}")
"""A tree of its own (a test may run this beside mypy or the other script), removed after."""


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (outside TYPE_CHECKING), read by grimp in a child
    process whose path starts with the import tree (so ``trainlint`` is the laid-out package)."""
    top = build_tree(OWN_TREE)
    code = ("import grimp, json, sys\n"
            f"g = grimp.build_graph({top!r}, exclude_type_checking_imports=True)\n"
            "json.dump({m: sorted(g.find_modules_directly_imported_by(m)) for m in g.modules}, sys.stdout)\n")
    env = dict(os.environ, PYTHONPATH=str(OWN_TREE))
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(OWN_TREE), capture_output=True, text=True,
                             check=True)
    finally:
        shutil.rmtree(OWN_TREE, ignore_errors=True)
    import json

    return {m: set(v) for m, v in json.loads(out.stdout).items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


def main(argv: list[str]) -> int:
    found = cycles(import_graph())
    print(len(found))
    if "--count" not in argv:
        for component in found:
            print(f"  {len(component)} modules: {', '.join(component)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
