"""Check a Document against a JSON Schema and report at the right positions.

jsonschema finds the problems; this module turns each into a TL0xx diagnostic:
unknown keys (TL004, with "did you mean", also when the key belongs in another section),
wrong types (TL005), values outside choices or ranges (TL006). Pointers the adapter marked
unresolved ("auto", placeholders) are skipped: they are reported once, as TL007.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterator

from trainlint.diagnostics import Diagnostic, Severity, code
from trainlint.document import Document, pointer
from trainlint.input_codes import input_diagnostic
from trainlint.did_you_mean import did_you_mean

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

    from trainlint.diagnostics import Applicability
    from trainlint.key_edits import is_misspelling, rename_key

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
                   comment_prefix: str | None = None) -> list[Diagnostic]:
    """All schema problems of ``doc``, one diagnostic each, sorted by position. ``refusal``: how the
    message says that the framework refuses an unknown top-level key (default: "the framework refuses
    it"). ``comment_prefix``: keys starting with it are comments (DeepSpeed's ``_comment``): no finding
    where the framework ignores unknown keys, and never a "did you mean" where it refuses them."""
    from trainlint.schema_fast import nothing_to_report

    if nothing_to_report(doc.data, schema, doc.unresolved):
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
