"""Build ``adapters/bridge/recipes.json``: the base values of Megatron-Bridge's recipe functions, read
statically (``ast``; nothing imported or run) from a Bridge checkout.

    python scripts/build_bridge_recipes.py /path/to/Megatron-Bridge [COMMIT]
    python scripts/build_bridge_recipes.py --git /work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo

A recipe (``src/megatron/bridge/recipes/**/*.py``, a top-level ``def *_config()``) is read statement by
statement: ``cfg = helper()`` takes the helper's values first (a function of the same module or one imported
from ``megatron.bridge.recipes``), ``ConfigContainer(train=TrainingConfig(k=v), ...)`` gives ``train.k``,
``cfg.a.b = <literal>`` gives ``a.b``, ``cfg.model = AutoBridge.from_hf_pretrained("id")...`` names the
Hugging Face model whose shape the model takes. A value that is not a literal (a module constant is
resolved when it is a literal of the same module) is left out: the catalog has only what the source says.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

RECIPES = "src/megatron/bridge/recipes"
OUT = Path(__file__).resolve().parent.parent / "adapters" / "bridge" / "recipes.json"
_UNKNOWN = object()


class Source:
    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        self.trees: dict[str, ast.Module] = {}

    def tree(self, rel: str) -> ast.Module | None:
        if rel not in self.trees:
            text = self.files.get(rel)
            try:
                self.trees[rel] = ast.parse(text) if text is not None else None  # type: ignore[assignment]
            except SyntaxError:
                self.trees[rel] = None  # type: ignore[assignment]
        return self.trees[rel]


def _module_file(module: str) -> str:
    return "src/" + module.replace(".", "/") + ".py"


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _literal(node: ast.AST, consts: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    if isinstance(node, ast.Attribute):
        name = _dotted(node)
        if name is not None and name.startswith("torch."):
            return name
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return _UNKNOWN


class Reader:
    def __init__(self, source: Source) -> None:
        self.source = source

    def module(self, rel: str) -> tuple[dict[str, ast.FunctionDef], dict[str, Any], dict[str, str]]:
        tree = self.source.tree(rel)
        funcs: dict[str, ast.FunctionDef] = {}
        consts: dict[str, Any] = {}
        imports: dict[str, str] = {}
        if tree is None:
            return funcs, consts, imports
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef):
                funcs[stmt.name] = stmt
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                value = _literal(stmt.value, consts)
                for t in targets:
                    if isinstance(t, ast.Name) and value is not _UNKNOWN:
                        consts[t.id] = value
            elif isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.module.startswith("megatron.bridge.recipes"):
                for alias in stmt.names:
                    imports[alias.asname or alias.name] = _module_file(stmt.module)
        return funcs, consts, imports

    def function(self, rel: str, name: str, depth: int = 0) -> dict[str, Any]:
        funcs, consts, imports = self.module(rel)
        fn = funcs.get(name)
        if fn is None and name in imports and depth < 4:
            return self.function(imports[name], name, depth + 1)
        out: dict[str, Any] = {}
        if fn is None:
            return out
        var = "cfg"
        for stmt in ast.walk(fn) if False else fn.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
                if isinstance(target, ast.Name) and isinstance(value, ast.Call):
                    called = _dotted(value.func)
                    if called == "ConfigContainer":
                        var = target.id
                        self._container(rel, value, consts, out)
                    elif called is not None and "." not in called and depth < 4:
                        base = self.function(rel, called, depth + 1)
                        if base:
                            var = target.id
                            out.update(base)
                    continue
                path = _dotted(target)
                if path is None or not path.startswith(var + "."):
                    continue
                key = path[len(var) + 1:]
                hf = _hf_model(value, consts)
                if key == "model" and hf is not None:
                    out["@hf_model"] = hf
                    continue
                literal = _literal(value, consts)
                if literal is not _UNKNOWN and not isinstance(literal, (dict, set)):
                    out[key] = list(literal) if isinstance(literal, tuple) else literal
                    out.get("@unknown", {}).pop(key, None)
                else:
                    out.pop(key, None)
                    out.setdefault("@unknown", {})[key] = f"computed at {rel}:{stmt.lineno}"
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and depth < 4:
                for key, why in self._helper_sets(rel, stmt.value, var, depth):
                    out.pop(key, None)
                    out.setdefault("@unknown", {})[key] = why
            elif isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Call) and depth < 4:
                called = _dotted(stmt.value.func)
                if called is not None and "." not in called and not stmt.value.args:
                    out.update(self.function(rel, called, depth + 1))
        return out

    def _helper_sets(self, rel: str, call: ast.Call, var: str, depth: int) -> list[tuple[str, str]]:
        """The fields a helper called on ``cfg`` / ``cfg.<section>`` assigns (``model_cfg.x = ...``), each as
        computed: the helper may branch, so its values are not taken, only that it sets them."""
        name = _dotted(call.func)
        if name is None or "." in name:
            return []
        funcs, _, imports = self.module(rel)
        fn, where = funcs.get(name), rel
        if fn is None and name in imports:
            fn, where = self.module(imports[name])[0].get(name), imports[name]
        if fn is None:
            return []
        params = [a.arg for a in fn.args.args]
        out: list[tuple[str, str]] = []
        for position, arg in enumerate(call.args[:len(params)]):
            path = _dotted(arg)
            if path is None or not (path == var or path.startswith(var + ".")):
                continue
            section = path[len(var) + 1:]
            for node in ast.walk(fn):
                if isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        dotted = _dotted(t)
                        if dotted is not None and dotted.startswith(params[position] + "."):
                            key = dotted[len(params[position]) + 1:]
                            key = f"{section}.{key}" if section else key
                            out.append((key, f"set by {name}() at {where}:{node.lineno}"))
                elif isinstance(node, ast.Call) and _dotted(node.func) == "setattr" and len(node.args) >= 2 and \
                        _dotted(node.args[0]) == params[position] and isinstance(node.args[1], ast.Constant):
                    key = f"{section}.{node.args[1].value}" if section else str(node.args[1].value)
                    out.append((key, f"set by {name}() at {where}:{node.lineno}"))
        return out

    def _container(self, rel: str, call: ast.Call, consts: dict[str, Any], out: dict[str, Any]) -> None:
        for kw in call.keywords:
            if kw.arg is None:
                continue
            if isinstance(kw.value, ast.Call) and (_dotted(kw.value.func) or "").endswith("Config"):
                for inner in kw.value.keywords:
                    if inner.arg is None:
                        continue
                    literal = _literal(inner.value, consts)
                    if literal is not _UNKNOWN and not isinstance(literal, (dict, set)):
                        out[f"{kw.arg}.{inner.arg}"] = list(literal) if isinstance(literal, tuple) else literal
                    else:
                        out.setdefault("@unknown", {})[f"{kw.arg}.{inner.arg}"] = f"computed at {rel}:{inner.value.lineno}"
            else:
                literal = _literal(kw.value, consts)
                if literal is not _UNKNOWN and literal is not None and not isinstance(literal, (dict, set)):
                    out[kw.arg] = literal


def _hf_model(value: ast.AST, consts: dict[str, Any]) -> str | None:
    for node in ast.walk(value):
        if isinstance(node, ast.Call) and _dotted(node.func) in ("AutoBridge.from_hf_pretrained",) and node.args:
            arg = _literal(node.args[0], consts)
            if isinstance(arg, str):
                return arg
    return None


def _git_files(repo: str) -> tuple[dict[str, str], str]:
    commit = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    names = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", "HEAD", "--", RECIPES],
                           capture_output=True, text=True, check=True).stdout.split()
    files = {}
    for name in names:
        if name.endswith(".py"):
            files[name] = subprocess.run(["git", "-C", repo, "show", f"HEAD:{name}"], capture_output=True, text=True,
                                         check=True).stdout
    return files, commit


def _dir_files(root: str) -> dict[str, str]:
    base = Path(root)
    return {str(p.relative_to(base)): p.read_text(encoding="utf-8") for p in (base / RECIPES).rglob("*.py")}


def _kept(path: str) -> bool:
    """The fields the adapter and its rules read (the rest of a recipe, logging and data paths, is left out)."""
    from trainlint.adapters.bridge.keys import KEYS

    return path in {k.path for k in KEYS} or path in ("dataset.seq_length", "mixed_precision") or \
        path.split(".", 1)[0] in ("scheduler", "checkpoint", "train", "dist")


def build(files: dict[str, str], commit: str) -> dict[str, Any]:
    reader = Reader(Source(files))
    recipes: dict[str, Any] = {}
    for rel in sorted(files):
        funcs, _, _ = reader.module(rel)
        for name, fn in funcs.items():
            if name.startswith("_") or not name.endswith("_config"):
                continue
            values = reader.function(rel, name)
            if not values:
                continue
            hf = values.pop("@hf_model", None)
            unknown = {k: v for k, v in values.pop("@unknown", {}).items() if _kept(k)}
            values = {k: v for k, v in values.items() if _kept(k)}
            recipes[name] = {"file": rel, "line": fn.lineno, "hf_model": hf, "values": dict(sorted(values.items())),
                             "computed": dict(sorted(unknown.items()))}
    return {"source": "NVIDIA-NeMo/Megatron-Bridge", "commit": commit,
            "how": "scripts/build_bridge_recipes.py: literal assignments of each recipe function, read with ast",
            "recipes": recipes}


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "--git":
        files, commit = _git_files(argv[1])
    elif argv:
        files, commit = _dir_files(argv[0]), (argv[1] if len(argv) > 1 else "unknown")
    else:
        print(__doc__)
        return 2
    data = build(files, commit)
    OUT.write_text("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in data.items()) + "\n}\n", encoding="utf-8")
    print(f"{len(data['recipes'])} recipes at {commit[:12]} -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
