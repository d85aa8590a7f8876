"""A fast "nothing to report" pre-check for :func:`trainlint.schema_check.check_document`.

Importing jsonschema costs ~60 ms of start-up and its validation is slow per file, while
most configs are valid. This module compiles a schema, once per process, into a small
checker for the keywords trainlint's schemas use (``type``, ``properties``,
``additionalProperties``, ``items``, ``enum``, ``minimum``, ``maximum``,
``minLength``, ``maxLength``, ``required``, ``anyOf``) with jsonschema's Draft 2020-12
semantics, and answers one question: would ``check_document`` report nothing?

It is conservative by construction: it says True only when every error jsonschema could
raise would be dropped by ``check_document`` anyway (under a pointer the adapter marked
unresolved, or an unknown key that is itself unresolved). Anything else (a failing keyword,
a keyword or a value type it does not model) says False, and jsonschema runs as before, so
the diagnostics are the same either way.
"""

from __future__ import annotations

from typing import Any

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
    """True when ``check_document`` would certainly return no diagnostic for this data."""
    node = _compiled(schema)
    if node is None:
        return False
    try:
        return _Check(unresolved).valid(node, data, "", False)
    except (Unsupported, RecursionError):
        return False
