"""Text edits that rename a key of a JSON or YAML document in place, in the file's own format.

A fix is an :class:`~trainlint.core.diagnostics.Edit` over the key's own token, so quoting, comments,
order and layout stay as they are. No edit is made when the token is not exactly the key as
written (an escaped character, a key spread over lines, a merge key): renaming it then needs a
person, and the finding keeps its hint only.
"""

from __future__ import annotations

import re

from trainlint.core.diagnostics import Edit
from trainlint.files.did_you_mean import edit_distance
from trainlint.core.document import Document, parent_pointer, pointer_parts
from trainlint.core.positions import Span

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


def span_text(text: str, span: Span) -> str | None:
    """The text a single-line span covers, or None for a span over lines or outside the text."""
    if span.line != span.end_line or span.line < 1:
        return None
    lines = text.split("\n")
    if span.line > len(lines):
        return None
    line = lines[span.line - 1]
    if not (1 <= span.column <= span.end_column <= len(line) + 1):
        return None
    return line[span.column - 1:span.end_column - 1]


def rename_key(doc: Document, ptr: str, new_name: str) -> tuple[Edit, ...]:
    """The edit renaming the key at ``ptr`` to ``new_name`` (a sibling key of that name must not
    exist: the fix would make a duplicate), or () when it cannot be done exactly."""
    parts = pointer_parts(ptr)
    if not parts or not _PLAIN_KEY.match(new_name):
        return ()
    parent = doc.get(parent_pointer(ptr))
    if not isinstance(parent, dict) or new_name in parent:
        return ()
    span = doc.key_spans.get(ptr)
    if span is None:
        return ()
    token = span_text(doc.text, span)
    old = parts[-1]
    if token is None:
        return ()
    quote = token[0] if len(token) == len(old) + 2 and token[0] == token[-1] and token[0] in "\"'" else ""
    written = token[1:-1] if quote else token
    if written == old:
        return (Edit(span, quote + new_name + quote),)
    if written != old and written.replace("-", "_") == old and "-" not in old:
        # GPT-NeoX reads `gradient-accumulation-steps` as `gradient_accumulation_steps`: the key
        # keeps the dashes it is written with
        return (Edit(span, quote + new_name.replace("_", "-") + quote),)
    return ()


def is_misspelling(written: str, known: str) -> bool:
    """A typo rather than another word: the same name up to case, dashes and underscores, or at
    most two letters added, dropped, changed or swapped (a longer distance is a guess: its fix
    is offered as unsafe)."""
    def norm(name: str) -> str:
        return name.replace("-", "_").lower()

    return norm(written) == norm(known) or edit_distance(norm(written), norm(known)) <= 2
