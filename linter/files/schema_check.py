"""The one schema validator: check a Document against a JSON Schema and report at the right positions.

jsonschema finds the problems; this module turns each into a TL0xx diagnostic:
unknown keys (TL004, with "did you mean", also when the key belongs in another section),
wrong types (TL005), values outside choices or ranges (TL006). Pointers the adapter marked
unresolved ("auto", placeholders) are skipped: they are reported once, as TL007.

:func:`check_document` is the one entry point. In front of jsonschema it has a fast path, because
importing jsonschema costs ~60 ms of start-up and its validation is slow per file while most configs
are valid: the schema is compiled once per process into a small checker for the keywords trainlint's
schemas use (``type``, ``properties``, ``additionalProperties``, ``items``, ``enum``, ``minimum``,
``maximum``, ``minLength``, ``maxLength``, ``required``, ``anyOf``) with jsonschema's Draft 2020-12
semantics, which answers one question: would jsonschema's errors all be dropped (nothing to report)?
It only ever answers "nothing to report" (then the result is ``[]``, as jsonschema's would be);
anything else (a failing keyword, a keyword or a value type it does not model) hands the document to
jsonschema, so the result is jsonschema's on every input. ``tests/test_schema_check_fast.py`` compares
``check_document`` with ``check_document(..., fast=False)`` (jsonschema alone) on every document the
adapters check in the examples, fixtures and corpus, and on fuzzed documents.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterator

from trainlint.core.diagnostics import Diagnostic, Severity, code
from trainlint.core.document import Document, pointer
from trainlint.core.input_codes import input_diagnostic
from trainlint.files.did_you_mean import did_you_mean

_JSON_TYPES = {
    dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null",
}


def _type_name(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


_VALIDATORS: dict[int, tuple[dict, Any]] = {}


def _get_validator(schema: dict):
    # Schemas come from load_schema(), which caches them, so identity is a good key; the
    # schema is kept alongside so its id cannot be reused by another object.
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        from jsonschema import Draft202012Validator  # imported late: it is slow to import

        cached = (schema, Draft202012Validator(schema))
        _VALIDATORS[id(schema)] = cached
    return cached[1]


@lru_cache(maxsize=8)
def _key_index_cached(schema_id: int) -> dict[str, list[str]]:
    return _key_index(_VALIDATORS[schema_id][0])


def _key_index(schema: dict) -> dict[str, list[str]]:
    """Every property name anywhere in the schema -> the pointers of the sections that define it."""
    index: dict[str, list[str]] = {}

    def walk(node: dict, path: list[str]) -> None:
        for name, sub in (node.get("properties") or {}).items():
            index.setdefault(name, []).append(".".join(path))
            if isinstance(sub, dict):
                walk(sub, path + [name])

    walk(schema, [])
    return index


def _unknown_keys(error, doc: Document, schema: dict, refusal: str | None,
                  comment_prefix: str | None = None) -> Iterator[Diagnostic]:
    sub = error.schema
    known = list((sub.get("properties") or {}).keys())
    instance = error.instance if isinstance(error.instance, dict) else {}
    severity = Severity(sub.get("x-unknown-key-severity", "error"))
    base = list(error.absolute_path)
    index = _key_index_cached(id(schema))
    where = code(".".join(str(p) for p in base)) if base else "the top level"
    # a rename never targets a key the section already has (it would make a duplicate)
    absent = [k for k in known if k not in instance]
    for key in instance:
        if key in known:
            continue
        ptr = pointer(base + [key])
        if ptr in doc.unresolved:
            continue
        comment = comment_prefix is not None and str(key).startswith(comment_prefix)
        if comment and severity is not Severity.ERROR:
            continue  # `_comment` where the framework ignores unknown keys: a comment, as meant
        # a key the schema defines elsewhere is that key misplaced, not a misspelling of a neighbour
        suggestion = [] if comment or key in index else did_you_mean(key, absent)
        twin = [] if suggestion or comment or key in index else did_you_mean(key, [k for k in known if k in instance])
        if suggestion:
            tail = f"; did you mean `{suggestion[0]}`?"
        elif twin:  # a misspelled copy of a key the section has: a second value, not a rename
            tail = f"; did you mean `{twin[0]}`? It is set already: this is a second value for it (remove one)"
        elif key in index:
            places = sorted(set(index[key]))
            tail = "; " + " or ".join("it belongs at the top level" if not p else f"it belongs in `{p}`" for p in places)
        elif comment:
            tail = (f"; a `{comment_prefix}` key is a comment only where unknown keys are ignored, and this "
                    "section refuses every key it does not define")
        else:
            tail = ""
        effect = ("ignored by the framework" if severity is not Severity.ERROR
                  else refusal if refusal and not base else "the framework refuses it")
        diag = input_diagnostic(
            "TL004",
            f"unknown key {code(key)} in {where} ({effect}){tail}",
            doc.locate_key(ptr),
            path=doc.path,
            severity=severity,
            fix=f"rename {code(key)} to `{suggestion[0]}`" if suggestion else None,
            subject=ptr,
        )
        if suggestion:
            yield _with_rename(diag, doc, ptr, key, suggestion[0])
        else:
            yield diag


def _with_rename(diag: Diagnostic, doc: Document, ptr: str, key: str, known: str) -> Diagnostic:
    """The finding with its fix as an edit: safe for a misspelling of a key the schema defines,
    unsafe when the suggestion is only a close word (it may not be what was meant)."""
    from dataclasses import replace

    from trainlint.core.diagnostics import Applicability
    from trainlint.files.key_edits import is_misspelling, rename_key

    edits = rename_key(doc, ptr, known)
    if not edits:
        return replace(diag, applicability=Applicability.DISPLAY)
    safe = is_misspelling(key, known)
    return replace(diag, applicability=Applicability.SAFE if safe else Applicability.UNSAFE, edits=edits)


def _describe_expected(sub: dict) -> str:
    expected = sub.get("type")
    if isinstance(expected, list):
        return " or ".join(expected)
    return str(expected)


def check_document(doc: Document, schema: dict, *, refusal: str | None = None,
                   comment_prefix: str | None = None, fast: bool = True) -> list[Diagnostic]:
    """All schema problems of ``doc``, one diagnostic each, sorted by position. ``refusal``: how the
    message says that the framework refuses an unknown top-level key (default: "the framework refuses
    it"). ``comment_prefix``: keys starting with it are comments (DeepSpeed's ``_comment``): no finding
    where the framework ignores unknown keys, and never a "did you mean" where it refuses them.
    ``fast=False``: jsonschema alone (the tests compare the two; the result is the same)."""
    if fast and nothing_to_report(doc.data, schema, doc.unresolved):
        return []  # the usual case, decided without importing or running jsonschema
    validator = _get_validator(schema)
    out: list[Diagnostic] = []
    seen: set[str] = set()
    errors = sorted(validator.iter_errors(doc.data), key=lambda e: (e.validator != "type", list(map(str, e.absolute_path))))
    for error in errors:
        ptr = pointer(error.absolute_path)
        if any(ptr == u or ptr.startswith(u + "/") for u in doc.unresolved):
            continue
        keyword = error.validator
        # One finding per value: a wrong type makes the enum or range check redundant.
        if keyword != "additionalProperties":
            if ptr in seen:
                continue
            seen.add(ptr)
        name = str(error.absolute_path[-1]) if error.absolute_path else "the document"
        if keyword == "additionalProperties":
            out.extend(_unknown_keys(error, doc, schema, refusal, comment_prefix))
        elif keyword == "type" and error.schema.get("x-numeric-string") and isinstance(error.instance, str):
            out.extend(_numeric_string(error, doc, ptr, name))
        elif keyword == "type":
            out.append(input_diagnostic(
                "TL005",
                f"{code(name)} must be {_describe_expected(error.schema)}, got {_type_name(error.instance)} {_short(error.instance)}",
                doc.locate(ptr), path=doc.path))
        elif keyword in ("enum", "const"):
            choices = error.schema.get("enum") or [error.schema.get("const")]
            out.append(input_diagnostic(
                "TL006",
                f"{code(name)} is {_short(error.instance)}; expected one of {', '.join(_short(c) for c in choices)}",
                doc.locate(ptr), path=doc.path, subject=ptr, choices=tuple(_short(c) for c in choices)))
        elif keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                         "minLength", "maxLength", "minItems", "maxItems", "pattern"):
            out.append(input_diagnostic(
                "TL006", f"{code(name)} is {_short(error.instance)}: {error.message}", doc.locate(ptr), path=doc.path))
        elif keyword == "required":
            out.append(input_diagnostic("TL006", error.message, doc.locate_key(ptr), path=doc.path))
        elif keyword in ("anyOf", "oneOf"):
            out.append(input_diagnostic(
                "TL005", f"{code(name)} has an unexpected value {_short(error.instance)}", doc.locate(ptr), path=doc.path))
        else:
            out.append(input_diagnostic("TL006", f"{code(name)}: {error.message}", doc.locate(ptr), path=doc.path))
    out.sort(key=lambda d: (d.span, d.code))
    return out


def _numeric_string(error: Any, doc: Document, ptr: str, name: str) -> list[Diagnostic]:
    """A number written as a string in a section a pydantic model reads (``"loss_scale": "3"``):
    pydantic's lax mode converts it (``float("3")``, ``int("3")``), so the framework accepts it and
    only its range is checked; a string that is no number of the type is the usual wrong type."""
    sub, text = error.schema, error.instance.strip()
    types = sub["type"] if isinstance(sub["type"], list) else [sub["type"]]
    number: float | int | None = None
    if "integer" in types and re.fullmatch(r"[+-]?[0-9]+", text):
        number = int(text)
    elif "number" in types and re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", text):
        number = float(text)
    if number is None:
        return [input_diagnostic(
            "TL005", f"{code(name)} must be {_describe_expected(sub)}, got {_type_name(error.instance)} {_short(error.instance)}",
            doc.locate(ptr), path=doc.path)]
    low, high = sub.get("minimum"), sub.get("maximum")
    if (low is not None and number < low) or (high is not None and number > high):
        bound = f"less than the minimum of {low}" if low is not None and number < low else \
            f"greater than the maximum of {high}"
        return [input_diagnostic("TL006", f"{code(name)} is {_short(error.instance)}: {number} is {bound}",
                                 doc.locate(ptr), path=doc.path)]
    return []


def _short(value: Any) -> str:
    import json

    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# -- the fast path: "nothing to report", decided without jsonschema ------------------------------------
# Conservative by construction: True only when every error jsonschema could raise would be dropped by
# check_document anyway (under a pointer the adapter marked unresolved, or an unknown key that is itself
# unresolved); anything it does not model is Unsupported, and jsonschema runs.

# Every keyword Draft202012Validator acts on; a schema using one this module does not model
# is not pre-checked at all.
_VALIDATION_KEYWORDS = frozenset({
    "$dynamicRef", "$ref", "additionalProperties", "allOf", "anyOf", "const", "contains", "dependentRequired",
    "dependentSchemas", "enum", "exclusiveMaximum", "exclusiveMinimum", "format", "if", "items", "maxItems",
    "maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "multipleOf",
    "not", "oneOf", "pattern", "patternProperties", "prefixItems", "properties", "propertyNames", "required",
    "type", "unevaluatedItems", "unevaluatedProperties", "uniqueItems",
})
_MODELLED = frozenset({
    "type", "properties", "additionalProperties", "items", "enum", "minimum", "maximum", "minLength",
    "maxLength", "required", "anyOf",
})
_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_PLAIN = (dict, list, str, bool, int, float, type(None))


class Unsupported(Exception):
    """The schema or the instance is outside what this module models."""


class _Node:
    """One compiled (sub)schema."""

    __slots__ = (
        "additional",
        "always",
        "any_of",
        "enum",
        "items",
        "max_length",
        "maximum",
        "min_length",
        "minimum",
        "properties",
        "required",
        "types",
    )

    def __init__(self) -> None:
        self.always: bool | None = None  # a boolean schema
        self.types: tuple[str, ...] | None = None
        self.properties: dict[str, _Node] | None = None
        self.additional: _Node | bool = True
        self.items: _Node | None = None
        self.enum: list | None = None
        self.minimum: Any = None
        self.maximum: Any = None
        self.min_length: Any = None
        self.max_length: Any = None
        self.required: list | None = None
        self.any_of: list[_Node] | None = None


def compile_schema(schema: Any) -> _Node:
    """Raises :class:`Unsupported` for a schema using anything not modelled here."""
    node = _Node()
    if isinstance(schema, bool):
        node.always = schema
        return node
    if not isinstance(schema, dict):
        raise Unsupported("schema is not an object")
    unknown = (schema.keys() & _VALIDATION_KEYWORDS) - _MODELLED
    if unknown:
        raise Unsupported(", ".join(sorted(unknown)))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not all(isinstance(t, str) and t in _TYPES for t in types):
            raise Unsupported("type")
        node.types = tuple(types)
    if "properties" in schema:
        if not isinstance(schema["properties"], dict):
            raise Unsupported("properties")
        node.properties = {name: compile_schema(sub) for name, sub in schema["properties"].items()}
    if "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        # jsonschema: an object is a schema for the extras; any other value is truthy or not
        node.additional = compile_schema(extra) if isinstance(extra, dict) else bool(extra)
    if "items" in schema:
        node.items = compile_schema(schema["items"])
    if "enum" in schema:
        if not isinstance(schema["enum"], list):
            raise Unsupported("enum")
        node.enum = list(schema["enum"])
    for keyword, attribute in (("minimum", "minimum"), ("maximum", "maximum"), ("minLength", "min_length"),
                               ("maxLength", "max_length")):
        if keyword in schema:
            limit = schema[keyword]
            if isinstance(limit, bool) or not isinstance(limit, (int, float)):
                raise Unsupported(keyword)
            setattr(node, attribute, limit)
    if "required" in schema:
        if not isinstance(schema["required"], list):
            raise Unsupported("required")
        node.required = list(schema["required"])
    if "anyOf" in schema:
        if not isinstance(schema["anyOf"], list) or not schema["anyOf"]:
            raise Unsupported("anyOf")
        node.any_of = [compile_schema(sub) for sub in schema["anyOf"]]
    return node


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's ``_utils.equal`` for plain JSON values: True and 1 differ, 1 and 1.0 do not."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return len(one) == len(two) and all(key in two and _equal(value, two[key]) for key, value in one.items())
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    return one == two


def _is_type(instance: Any, name: str) -> bool:
    # Draft 2020-12's type checker; bool is not a number, 1.0 is an integer
    if name == "object":
        return isinstance(instance, dict)
    if name == "string":
        return isinstance(instance, str)
    if name == "array":
        return isinstance(instance, list)
    if name == "boolean":
        return isinstance(instance, bool)
    if name == "null":
        return instance is None
    if isinstance(instance, bool):
        return False
    if name == "integer":
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    return isinstance(instance, (int, float))  # number


class _Check:
    def __init__(self, unresolved: Any) -> None:
        self.unresolved = unresolved

    def valid(self, node: _Node, instance: Any, ptr: str, strict: bool) -> bool:
        """No reportable error at or under ``ptr``. ``strict`` (inside anyOf): an error under an
        unresolved pointer still fails the branch, as jsonschema reports it at the anyOf."""
        if not strict and self.unresolved and ptr in self.unresolved:
            return True  # check_document drops every error at or under this pointer
        if not isinstance(instance, _PLAIN):
            raise Unsupported(type(instance).__name__)
        if node.always is not None:
            return node.always
        if node.types is not None and not any(_is_type(instance, t) for t in node.types):
            return False
        if node.enum is not None and not any(_equal(each, instance) for each in node.enum):
            return False
        if isinstance(instance, dict):
            if not self._object(node, instance, ptr, strict):
                return False
        elif isinstance(instance, list):
            if node.items is not None:
                for index, item in enumerate(instance):
                    if not self.valid(node.items, item, f"{ptr}/{index}" if self.unresolved else ptr, strict):
                        return False
        elif isinstance(instance, str):
            if node.min_length is not None and len(instance) < node.min_length:
                return False
            if node.max_length is not None and len(instance) > node.max_length:
                return False
        elif not isinstance(instance, bool) and isinstance(instance, (int, float)):
            if node.minimum is not None and instance < node.minimum:
                return False
            if node.maximum is not None and instance > node.maximum:
                return False
        if node.any_of is not None:
            return any(self.valid(sub, instance, ptr, True) for sub in node.any_of)
        return True

    def _object(self, node: _Node, instance: dict, ptr: str, strict: bool) -> bool:
        properties = node.properties or {}
        if node.required is not None and any(name not in instance for name in node.required):
            return False
        for key, value in instance.items():
            if not isinstance(key, str):
                raise Unsupported("non-string key")
            child = f"{ptr}/{_escape(key)}" if self.unresolved else ptr
            sub = properties.get(key)
            if sub is None:
                extra = node.additional
                if extra is True:
                    continue
                if extra is False:
                    # an unknown key is reported unless the key itself is unresolved
                    if strict or not self.unresolved or child not in self.unresolved:
                        return False
                    continue
                sub = extra
            if not self.valid(sub, value, child, strict):
                return False
        return True


_COMPILED: dict[int, tuple[Any, _Node | None]] = {}


def _compiled(schema: dict) -> _Node | None:
    # Schemas come from load_schema(), which caches them: identity is the key (the schema is
    # kept with its node so that its id cannot be reused by another object).
    cached = _COMPILED.get(id(schema))
    if cached is None or cached[0] is not schema:
        try:
            node: _Node | None = compile_schema(schema)
        except Unsupported:
            node = None
        cached = (schema, node)
        _COMPILED[id(schema)] = cached
    return cached[1]


def nothing_to_report(data: Any, schema: dict, unresolved: Any = ()) -> bool:
    """True only when :func:`check_document` with jsonschema would return no diagnostic for this data
    (False: jsonschema decides)."""
    node = _compiled(schema)
    if node is None:
        return False
    try:
        return _Check(unresolved).valid(node, data, "", False)
    except (Unsupported, RecursionError):
        return False
