"""Argument definitions read statically from a framework's source, with :mod:`ast`.

Nothing is imported or run: the source is parsed, and only literal values are taken from it
(``add_argument('--num-layers', type=int, default=None)``). What cannot be read literally (an
option string built at run time, a parser extended by code trainlint does not see) makes the
catalog *partial*, and a partial catalog never turns an unknown name into an error.

Three readers, one per framework family:

* Megatron (Megatron-LM, Megatron-DeepSpeed and their forks): every ``X.add_argument(...)`` call
  in the argument modules, plus the flags ``ArgumentGroupFactory(SomeConfig)`` builds from a
  config dataclass (newer Megatron-LM), read from that class's fields.
* GPT-NeoX: the fields of the ``@dataclass`` argument classes (``NeoXArgsModel`` ...).
* DeepSpeed: the config keys of its pydantic config models (field names and ``alias=``) and the
  string constants of its ``constants.py`` modules.
"""

from __future__ import annotations

import ast
import re
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, TypeVar

from trainlint.frameworks.argdef import ArgDef, jsonable as _jsonable

_T = TypeVar("_T")

MAX_SOURCE_BYTES = 4 * 1024 * 1024
"""A file larger than this is not read (an argument module is ~100-200 KB)."""
MAX_FILES = 64
"""At most this many files are parsed for one catalog."""


@dataclass
class ScanResult:
    args: dict[str, ArgDef] = field(default_factory=dict)
    """By name (option string or key); the first definition wins, as argparse refuses a second."""
    partial: list[str] = field(default_factory=list)
    """Why the catalog may miss names (dynamic option strings, unresolved factories...)."""
    files: list[str] = field(default_factory=list)
    uses_deepspeed_args: bool = False
    """The parser is handed to ``deepspeed.add_config_arguments`` (adds ``--deepspeed`` ...)."""
    refused: dict[str, str] = field(default_factory=dict)
    """Megatron: destinations the argument module's own checks refuse whenever they are given
    (``assert args.batch_size is None, '--batch-size argument is no longer valid ...'``,
    ``if args.checkpoint_activations: ... exit()``), with the message it stops with."""

    def add(self, arg: ArgDef) -> None:
        self.args.setdefault(arg.name, arg)


def _literal(node: ast.AST | None) -> tuple[bool, Any]:
    if node is None:
        return False, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _type_name(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Name) and node.id in ("int", "float", "str", "bool"):
        return node.id
    return None


def _parse(text: str, path: str) -> ast.Module | None:
    if len(text) > MAX_SOURCE_BYTES:
        return None
    import warnings

    try:
        # A fork's module may hold invalid escape sequences ("\\ " in a help string): Python warns
        # while compiling (SyntaxWarning on stderr from 3.12), which is noise in a lint run.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=path)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _timed(items: Iterable[_T], out: ScanResult, started: float) -> Iterator[_T]:
    """``items`` until the reading has taken ``catalog.MAX_READ_SECONDS``; then the result is
    marked partial (so names it lacks are warnings, not errors) and the rest is not read."""
    from trainlint.frameworks.catalog import MAX_READ_SECONDS

    for item in items:
        if time.perf_counter() - started > MAX_READ_SECONDS:
            out.partial.append(f"reading stopped after {MAX_READ_SECONDS:g} s; the rest of the source was not read")
            return
        yield item


# --------------------------------------------------------------------------- Megatron


def scan_megatron(sources: Mapping[str, str], classes: Mapping[str, str] | None = None) -> ScanResult:
    """The flags of Megatron argument modules (``{relative path: text}``).

    ``classes`` are further modules where config dataclasses used by ``ArgumentGroupFactory`` may
    be defined (only their class definitions are read)."""
    out = ScanResult()
    started = time.perf_counter()
    trees: dict[str, ast.Module] = {}
    for path, text in _timed(list(sources.items())[:MAX_FILES], out, started):
        tree = _parse(text, path)
        if tree is None:
            out.partial.append(f"{path} could not be parsed")
            continue
        trees[path] = tree
        out.files.append(path)
        _refusals(tree, out)
    factories: list[tuple[str, str, set[str], str, int]] = []
    class_trees = dict(trees)
    for path, text in _timed(list((classes or {}).items())[:MAX_FILES], out, started):
        tree = _parse(text, path)
        if tree is not None:
            class_trees.setdefault(path, tree)
    enums = enum_index(class_trees)
    for path, tree in trees.items():
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name == "add_argument":
                _megatron_flag(node, path, out, enums, functions)
            elif name == "add_config_arguments":
                out.uses_deepspeed_args = True
            elif name == "ArgumentGroupFactory" and node.args and isinstance(node.args[0], ast.Name):
                exclude_node = next((k.value for k in node.keywords if k.arg == "exclude"), None)
                if exclude_node is None and len(node.args) > 1:
                    exclude_node = node.args[1]
                if isinstance(exclude_node, ast.Name):
                    exclude_node = _assigned_before(tree, exclude_node.id, node.lineno)
                ok, exclude = _literal(exclude_node)
                if exclude_node is not None and not ok:
                    out.partial.append(f"{path}:{node.lineno}: the fields excluded from {node.args[0].id} are not literal")
                factories.append((node.args[0].id, path, set(exclude or ()) if ok else set(), path, node.lineno))
    if factories:
        index = _class_index(class_trees)
        for cls_name, _p, exclude, path, line in factories:
            fields_ = _dataclass_fields(cls_name, index, set(), enums)
            if fields_ is None:
                out.partial.append(f"{path}:{line}: the fields of {cls_name} (ArgumentGroupFactory) were not found")
                continue
            for fname, ann, default_node, meta, fpath, fline in fields_:
                if fname in exclude or fname.startswith("_"):
                    continue
                _factory_flag(fname, ann, default_node, meta, fpath, fline, out, enums)
    return out


_STOPS = ("exit", "_exit", "quit", "abort")


def _refusals(tree: ast.Module, out: ScanResult) -> None:
    """The flags an argument module refuses unconditionally: statements directly in a function's
    body (not under a condition of their own) that stop whenever the flag is given. Upstream keeps
    such stubs for renamed flags (``--checkpoint-activations``, ``--batch-size``); a fork that
    deleted or commented out the check accepts the flag, and only the source says which."""
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for stmt in fn.body:
            if isinstance(stmt, ast.Assert):
                dest = _none_required(stmt.test)
                if dest is not None:
                    out.refused.setdefault(dest, _text(stmt.msg))
            elif isinstance(stmt, ast.If) and not stmt.orelse:
                dest = _args_attr(stmt.test)
                if dest is not None and _stops(stmt.body):
                    out.refused.setdefault(dest, _first_text(stmt.body))


def _args_attr(node: ast.AST) -> str | None:
    """``args.X`` -> ``X``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "args":
        return node.attr
    return None


def _none_required(test: ast.AST) -> str | None:
    """``args.X is None`` or ``not args.X`` -> ``X`` (an assertion any given value fails)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) \
            and _is_none(test.comparators[0]):
        return _args_attr(test.left)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _args_attr(test.operand)
    return None


def _stops(body: list[ast.stmt]) -> bool:
    """The block ends the process: ``raise``, ``exit()``, ``sys.exit()`` at its own level."""
    for stmt in body:
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in _STOPS:
                return True
    return False


def _text(node: ast.AST | None) -> str:
    """The literal text of a message: a string, ``'a' + 'b'``, or an f-string's literal parts."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _text(node.func.value)
    return ""


def _first_text(body: list[ast.stmt]) -> str:
    """The first message a block prints or raises."""
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.Call):
            for a in node.args:
                text = _text(a)
                if text:
                    return text
    return ""


def _assigned_before(tree: ast.Module, name: str, line: int) -> ast.expr | None:
    """The value last assigned to ``name`` before ``line`` (a local ``exclude = [...]`` list)."""
    best: ast.expr | None = None
    best_line = -1
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.lineno < line and node.lineno > best_line and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            best, best_line = node.value, node.lineno
    return best


EnumIndex = dict[str, tuple[tuple[str, ...], tuple[Any, ...] | None]]
"""Enum class name -> (member names, member values; None when a value is not literal)."""


def enum_index(trees: Mapping[str, ast.Module]) -> EnumIndex:
    """The ``Enum`` subclasses defined at the top level of the modules, with their members."""
    out: EnumIndex = {}
    for tree in trees.values():
        for node in tree.body:
            if not isinstance(node, ast.ClassDef) or not any(_ann_name(b).endswith("Enum") for b in node.bases):
                continue
            names: list[str] = []
            values: list[Any] | None = []
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                        and not stmt.targets[0].id.startswith("_"):
                    names.append(stmt.targets[0].id)
                    ok, value = _literal(stmt.value)
                    if ok and values is not None:
                        values.append(value)
                    else:
                        values = None  # auto() or a computed value
            if names:
                out.setdefault(node.name, (tuple(names), tuple(values) if values is not None else None))
    return out


def enum_choices(node: ast.AST | None, enums: EnumIndex) -> tuple | None:
    """The choices an enum gives a flag, read without importing it: ``[e.name for e in E]`` (names),
    ``[e.value for e in E]`` (values), ``list(E)`` / ``E`` (argparse converting with ``E[...]``: the
    names a user types)."""
    if node is None:
        return None
    if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)) and len(node.generators) == 1:
        gen = node.generators[0]
        if isinstance(gen.iter, ast.Name) and gen.iter.id in enums and not gen.ifs and \
                isinstance(node.elt, ast.Attribute) and isinstance(node.elt.value, ast.Name) and \
                isinstance(gen.target, ast.Name) and node.elt.value.id == gen.target.id:
            names, values = enums[gen.iter.id]
            if node.elt.attr == "name":
                return names
            if node.elt.attr == "value":
                return values
        return None
    if isinstance(node, ast.Call) and _ann_name(node.func) in ("list", "tuple") and len(node.args) == 1:
        return enum_choices(node.args[0], enums)
    if isinstance(node, ast.Name) and node.id in enums:
        return enums[node.id][0]
    return None


def _enum_type(node: ast.AST | None, enums: EnumIndex,
               functions: Mapping[str, ast.FunctionDef] | None = None) -> tuple[str, tuple] | None:
    """The enum a flag converts to, and the literal values the conversion lets through unchanged:
    ``type=E``, ``type=E.__getitem__``, ``type=lambda x: E[x]``, ``type=lambda x: E[x] if x != "full"
    else x`` (Megatron's ``--cuda-graph-scope``, core_v0.16.0-0.17.0), or a module-level function whose
    returns are ``E[x]`` and ``x`` under ``if x in {...}`` (``_parse_cuda_graph_modules_arg``)."""
    if isinstance(node, ast.Name) and node.id in enums:
        return node.id, ()
    if isinstance(node, ast.Attribute) and node.attr == "__getitem__" and isinstance(node.value, ast.Name) \
            and node.value.id in enums:
        return node.value.id, ()
    if isinstance(node, ast.Lambda) and len(node.args.args) == 1:
        param = node.args.args[0].arg
        body = node.body
        if isinstance(body, ast.IfExp):
            passed = _passed_through(body.test, param)
            if passed is None:
                return None
            literals, when_true = passed
            kept, converted = (body.body, body.orelse) if when_true else (body.orelse, body.body)
            enum = _subscripted_enum(converted, param, enums)
            if enum is None or not (isinstance(kept, ast.Name) and kept.id == param):
                return None
            return enum, literals
        enum = _subscripted_enum(body, param, enums)
        return (enum, ()) if enum is not None else None
    if isinstance(node, ast.Name) and functions and node.id in functions:
        return _enum_function(functions[node.id], enums)
    return None


def _subscripted_enum(node: ast.AST, param: str, enums: EnumIndex) -> str | None:
    """``E[param]`` -> ``E``."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in enums \
            and isinstance(node.slice, ast.Name) and node.slice.id == param:
        return node.value.id
    return None


def _passed_through(test: ast.AST, param: str) -> tuple[tuple, bool] | None:
    """``param == "a"`` / ``param in {"a", "b"}`` (True: the literals when the test holds) or ``!=`` /
    ``not in`` (False: when it fails); None for any other test."""
    if not (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == param
            and len(test.ops) == 1):
        return None
    ok, value = _literal(test.comparators[0])
    if not ok:
        return None
    op = test.ops[0]
    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(value, str):
        return (value,), isinstance(op, ast.Eq)
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(value, (list, tuple, set, frozenset)) \
            and all(isinstance(v, str) for v in value):
        return tuple(sorted(value)), isinstance(op, ast.In)
    return None


def _enum_function(func: ast.FunctionDef, enums: EnumIndex) -> tuple[str, tuple] | None:
    """A converter ``def f(x): if x in {...}: return x; return E[x]`` (and nothing else)."""
    if len(func.args.args) != 1:
        return None
    param = func.args.args[0].arg
    body = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]  # docstring
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return None
    enum = _subscripted_enum(body[-1].value, param, enums)
    if enum is None:
        return None
    literals: list = []
    for stmt in body[:-1]:
        if not (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Return)
                and isinstance(stmt.body[0].value, ast.Name) and stmt.body[0].value.id == param):
            return None
        passed = _passed_through(stmt.test, param)
        if passed is None or not passed[1]:
            return None
        literals.extend(passed[0])
    return enum, tuple(literals)


def _megatron_flag(call: ast.Call, path: str, out: ScanResult, enums: EnumIndex | None = None,
                   functions: Mapping[str, ast.FunctionDef] | None = None) -> None:
    flags: list[str] = []
    for a in call.args:
        ok, value = _literal(a)
        if not ok or not isinstance(value, str):
            out.partial.append(f"{path}:{call.lineno}: an option string that is not a literal")
            return
        flags.append(value)
    if not flags or not all(f.startswith("-") for f in flags):
        return  # a positional argument: not a flag a launch script passes by name
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    _, dest = _literal(kw.get("dest"))
    long_flags = [f for f in flags if f.startswith("--")]
    if not isinstance(dest, str):
        dest = (long_flags[0] if long_flags else flags[0]).lstrip("-").replace("-", "_")
    action = "store"
    if "action" in kw:
        ok, act = _literal(kw["action"])
        if ok and isinstance(act, str):
            action = act
        elif isinstance(kw["action"], ast.Attribute) and kw["action"].attr == "BooleanOptionalAction":
            action = "boolean_optional"
        else:
            action = "store"  # a custom Action class: it takes a value in Megatron's code base
    typ = _type_name(kw.get("type"))
    ok_choices, choices = _literal(kw.get("choices"))
    choices_t = tuple(choices) if ok_choices and isinstance(choices, (list, tuple)) else None
    if choices_t is None and enums:
        choices_t = enum_choices(kw.get("choices"), enums)
        converted = _enum_type(kw.get("type"), enums, functions)
        if converted is not None:
            enum, passed = converted
            choices_t, typ = choices_t or (*enums[enum][0], *(p for p in passed if p not in enums[enum][0])), "str"
    _, nargs = _literal(kw.get("nargs"))
    has_default, default = _literal(kw.get("default"))
    if action == "store_true" and "default" not in kw:
        default, has_default = False, True
    elif action == "store_false" and "default" not in kw:
        default, has_default = True, True
    if action == "store" and typ is None and kw.get("type") is None:
        typ = "str"
    for flag in flags:
        if action == "boolean_optional" and flag.startswith("--"):
            out.add(ArgDef(flag, dest, "store_true", None, None, None, default, has_default, path, call.lineno))
            out.add(ArgDef("--no-" + flag[2:], dest, "store_false", None, None, None, default, has_default,
                           path, call.lineno))
            continue
        out.add(ArgDef(flag, dest, action, typ, choices_t, nargs if _jsonable(nargs) else None, default,
                       has_default, path, call.lineno))


_FieldRow = tuple[str, ast.AST | None, ast.AST | None, dict, str, int]


def _class_index(trees: Mapping[str, ast.Module]) -> dict[str, tuple[ast.ClassDef, str]]:
    index: dict[str, tuple[ast.ClassDef, str]] = {}
    for path, tree in trees.items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                index.setdefault(node.name, (node, path))
    return index


def _dataclass_fields(name: str, index: Mapping[str, tuple[ast.ClassDef, str]], seen: set[str],
                      enums: EnumIndex | None = None) -> list[_FieldRow] | None:
    """Annotated class attributes of ``name`` and its bases (bases first, as dataclasses order them)."""
    if name in seen:
        return []
    seen.add(name)
    entry = index.get(name)
    if entry is None:
        return None
    node, path = entry
    rows: list[_FieldRow] = []
    for base in node.bases:
        base_name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        if base_name and base_name in index:
            rows.extend(_dataclass_fields(base_name, index, seen, enums) or [])
    own: dict[str, _FieldRow] = {}
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if isinstance(stmt.annotation, ast.Subscript) and _ann_name(stmt.annotation.value) == "ClassVar":
            continue
        meta: dict = {}
        default_node = stmt.value
        if isinstance(stmt.value, ast.Call) and _ann_name(stmt.value.func) == "field":
            kws = {k.arg: k.value for k in stmt.value.keywords if k.arg}
            if _literal(kws.get("init")) == (True, False):
                continue  # not an __init__ argument: the factory skips it
            default_node = kws.get("default")
            metadata_node = kws.get("metadata")
            ok, metadata = _literal(metadata_node)
            if not ok and isinstance(metadata_node, ast.Dict):
                metadata = _partial_dict(metadata_node, enums or {})
            if isinstance(metadata, dict):
                argparse_meta = metadata.get("argparse_meta")
                meta = argparse_meta if isinstance(argparse_meta, dict) else {}
        own[stmt.target.id] = (stmt.target.id, stmt.annotation, default_node, meta, path, stmt.lineno)
    names = {r[0] for r in rows}
    rows = [own.get(r[0], r) for r in rows] + [r for n, r in own.items() if n not in names]
    return rows


def _partial_dict(node: ast.Dict, enums: EnumIndex | None = None) -> dict:
    out: dict = {}
    for k, v in zip(node.keys, node.values, strict=True):
        ok, key = _literal(k)
        if not ok:
            continue
        if isinstance(v, ast.Dict):
            out[key] = _partial_dict(v, enums)
        else:
            okv, value = _literal(v)
            if okv:
                out[key] = value
            elif key == "choices" and enums:
                choices = enum_choices(v, enums)
                if choices is not None:
                    out[key] = list(choices)
            elif key == "type" and isinstance(v, ast.Name) and v.id in ("str", "int", "float"):
                out[key] = v.id
    return out


def _ann_name(node: ast.AST | None) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def _ann_type(ann: ast.AST | None) -> tuple[str | None, tuple | None, bool]:
    """(type, choices, optional) of an annotation: ``int``, ``Optional[float]``, ``Literal["a", "b"]``."""
    if ann is None:
        return None, None, False
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return None, None, False
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        left = _ann_type(ann.left)
        right = _ann_type(ann.right)
        if _is_none(ann.right):
            return left[0], left[1], True
        if _is_none(ann.left):
            return right[0], right[1], True
        return None, None, left[2] or right[2]
    if isinstance(ann, ast.Subscript):
        head = _ann_name(ann.value)
        inner = ann.slice
        if head == "Optional":
            t, c, _ = _ann_type(inner)
            return t, c, True
        if head == "Literal":
            items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            values = []
            for it in items:
                ok, v = _literal(it)
                if not ok:
                    return None, None, False
                values.append(v)
            kinds = {type(v).__name__ for v in values if v is not None}
            return (kinds.pop() if len(kinds) == 1 else None), tuple(values), None in values
        if head == "Union":
            items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            non_none = [i for i in items if not _is_none(i)]
            if len(non_none) == 1:
                t, c, _ = _ann_type(non_none[0])
                return t, c, len(non_none) != len(items)
            return None, None, len(non_none) != len(items)
        return None, None, False
    name = _ann_name(ann)
    return (name if name in ("int", "float", "str", "bool") else None), None, False


def _list_element(ann: ast.AST | None) -> str | None:
    """For ``list[int]``, ``Optional[list[int]]``, ``list[int] | None``: the element type
    (``"int"``; ``""`` when not a plain type); None when the annotation is not a list."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        if _is_none(ann.right):
            return _list_element(ann.left)
        if _is_none(ann.left):
            return _list_element(ann.right)
        return None
    if not isinstance(ann, ast.Subscript):
        return None
    head = _ann_name(ann.value)
    if head in ("Optional", "Union"):
        items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        non_none = [i for i in items if not _is_none(i)]
        return _list_element(non_none[0]) if len(non_none) == 1 else None
    if head in ("list", "List"):
        name = _ann_name(ann.slice)
        return name if name in ("int", "float", "str") else ""
    return None


def _is_none(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and node.value is None) or (isinstance(node, ast.Name) and node.id == "None")


def _annotated_enum(ann: ast.AST | None, enums: EnumIndex) -> str | None:
    """``E``, ``Optional[E]``, ``E | None``: the enum a config field holds."""
    if isinstance(ann, ast.Name):
        return ann.id if ann.id in enums else None
    if isinstance(ann, ast.Subscript) and _ann_name(ann.value) == "Optional":
        return _annotated_enum(ann.slice, enums)
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _annotated_enum(ann.right if _is_none(ann.left) else ann.left, enums) \
            if _is_none(ann.left) or _is_none(ann.right) else None
    return None


def _factory_flag(fname: str, ann: ast.AST | None, default_node: ast.AST | None, meta: dict, path: str, line: int,
                  out: ScanResult, enums: EnumIndex | None = None) -> None:
    """The flag ArgumentGroupFactory builds from one dataclass field (``--field-name``; a bool
    that defaults to True becomes ``--no-field-name``), unless ``argparse_meta`` names it."""
    typ, choices, _optional = _ann_type(ann)
    element = _list_element(ann)
    list_nargs = None
    if element is not None:
        # ArgumentGroupFactory: a list[X] field (Optional or not) is nargs="+" of type X
        typ, list_nargs = element or None, "+"
    has_default, default = _literal(default_node)
    names = meta.get("arg_names") if isinstance(meta.get("arg_names"), list) else None
    action = meta.get("action") if isinstance(meta.get("action"), str) else None
    meta_dest = meta.get("dest")
    dest = meta_dest if isinstance(meta_dest, str) else fname
    if typ == "bool" and action is None:
        action = "store_false" if default is True else "store_true"
        dashed = fname.replace("_", "-")
        flags = names or (["--no-" + dashed, "--disable-" + dashed] if default is True else ["--" + dashed])
        typ = None
    else:
        flags = names or ["--" + fname.replace("_", "-")]
        action = action or "store"
    meta_type = meta.get("type")
    if isinstance(meta_type, str) and meta_type in ("int", "float", "str"):
        typ = meta_type
    enum = _annotated_enum(ann, enums or {}) if choices is None else None
    if enum is not None and enums and "type" not in meta:
        # ArgumentGroupFactory._get_enum_kwargs: type=lambda s: E[s], choices=list(E): a member's name
        typ, choices = "str", enums[enum][0]
    if isinstance(meta.get("choices"), (list, tuple)):
        choices = tuple(meta["choices"])
    nargs = meta.get("nargs", list_nargs)
    for flag in flags:
        if isinstance(flag, str) and flag.startswith("-"):
            out.add(ArgDef(flag, dest, action, typ, choices, nargs if _jsonable(nargs) else None, default, has_default,
                           path, line))


# --------------------------------------------------------------------------- GPT-NeoX


def scan_neox(sources: Mapping[str, str]) -> ScanResult:
    """The config keys of NeoX's argument dataclasses (``class NeoXArgs...``, ``@dataclass``)."""
    out = ScanResult()
    started = time.perf_counter()
    for path, text in _timed(list(sources.items())[:MAX_FILES], out, started):
        tree = _parse(text, path)
        if tree is None:
            # Older NeoX releases hold docstrings Python 3.12 no longer parses; their fields are
            # still one `name: type = default` line each.
            if not _neox_lines(text, path, out):
                out.partial.append(f"{path} could not be parsed")
            continue
        out.files.append(path)
        for node in tree.body:
            if not isinstance(node, ast.ClassDef) or not node.name.startswith("NeoXArgs"):
                continue
            for stmt in node.body:
                if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                    continue
                name = stmt.target.id
                typ, choices, _opt = _ann_type(stmt.annotation)
                has_default, default = _literal(stmt.value)
                out.add(ArgDef(name, name, "key", typ, choices, None, default, has_default, path, stmt.lineno))
    return out


_NEOX_CLASS = re.compile(r"^class (NeoXArgs\w*)\b")
_NEOX_FIELD = re.compile(r"^    ([A-Za-z_]\w*)\s*:\s*([^=#]+?)\s*(?:=\s*(.+?))?\s*$")


def _neox_lines(text: str, path: str, out: ScanResult) -> bool:
    """Fields of NeoX argument classes read line by line (when the module does not parse)."""
    in_class = False
    in_doc = False
    found = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith("class "):
            in_class = bool(_NEOX_CLASS.match(line))
            continue
        if not in_class:
            continue
        if line and not line[0].isspace():
            in_class = False
            continue
        if line.count('"""') % 2 == 1:
            in_doc = not in_doc
            continue
        if in_doc:
            continue
        m = _NEOX_FIELD.match(line)
        if m is None:
            continue
        try:
            ann = ast.parse(m.group(2), mode="eval").body
        except SyntaxError:
            ann = None
        typ, choices, _opt = _ann_type(ann)
        has_default, default = False, None
        if m.group(3):
            try:
                has_default, default = _literal(ast.parse(m.group(3), mode="eval").body)
            except SyntaxError:
                pass
        out.add(ArgDef(m.group(1), m.group(1), "key", typ, choices, None, default, has_default, path, lineno))
        found = True
    if found:
        out.files.append(path)
    return found


# --------------------------------------------------------------------------- DeepSpeed


def scan_deepspeed(sources: Mapping[str, str]) -> ScanResult:
    """Config keys DeepSpeed reads: pydantic config-model fields (and their ``alias``) and the
    string constants of ``constants.py`` modules (``TRAIN_BATCH_SIZE = "train_batch_size"``)."""
    out = ScanResult()
    started = time.perf_counter()
    for path, text in _timed(list(sources.items())[:MAX_FILES * 4], out, started):
        tree = _parse(text, path)
        if tree is None:
            continue
        out.files.append(path)
        if path.endswith("constants.py"):
            for top in tree.body:
                if isinstance(top, ast.Assign) and len(top.targets) == 1 and isinstance(top.targets[0], ast.Name):
                    ok, value = _literal(top.value)
                    target = top.targets[0].id
                    if ok and isinstance(value, str) and target.isupper() and _key_like(value) \
                            and not target.endswith(("_DEFAULT", "_FORMAT")):
                        out.add(ArgDef(value, value, "key", None, None, None, None, False, path, top.lineno))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or not _is_config_model(node):
                continue
            for stmt in node.body:
                if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                    continue
                name = stmt.target.id
                if name.startswith("_") or name == "model_config":
                    continue
                typ, choices, _opt = _ann_type(stmt.annotation)
                alias = None
                default_node = stmt.value
                if isinstance(stmt.value, ast.Call) and _ann_name(stmt.value.func) == "Field":
                    kws = {k.arg: k.value for k in stmt.value.keywords if k.arg}
                    _, alias = _literal(kws.get("alias"))
                    default_node = stmt.value.args[0] if stmt.value.args else kws.get("default")
                has_default, default = _literal(default_node)
                key = alias if isinstance(alias, str) else name
                out.add(ArgDef(key, name, "key", typ, choices, None, default, has_default, path, stmt.lineno))
    return out


def _key_like(value: str) -> bool:
    return 0 < len(value) <= 64 and value.replace("_", "").isalnum() and value.lower() == value


def _is_config_model(node: ast.ClassDef) -> bool:
    return any(_ann_name(b).endswith(("ConfigModel", "BaseModel")) for b in node.bases) or node.name.endswith("Config")


def merge(results: Iterable[ScanResult]) -> ScanResult:
    out = ScanResult()
    for r in results:
        for arg in r.args.values():
            out.add(arg)
        out.partial.extend(r.partial)
        out.files.extend(r.files)
        for dest, message in r.refused.items():
            out.refused.setdefault(dest, message)
        out.uses_deepspeed_args = out.uses_deepspeed_args or r.uses_deepspeed_args
    return out
