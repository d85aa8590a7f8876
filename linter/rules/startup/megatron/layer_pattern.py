"""Reading Megatron-LM's per-layer list patterns (``--no-rope-freq "([0]*3+[1])*6"``, ``--moe-layer-freq``)
without evaluating them.

Megatron-LM checks that such a string holds only digits, commas, brackets, parentheses, ``+`` and
``*`` and then ``eval``\\s it (``_eval_pattern``, ``megatron/training/arguments.py:245-253@d98e8a6``).
trainlint evaluates nothing from a config: the string is parsed with :mod:`ast` and only list
literals of integers, list concatenation and repetition by an integer are computed, within a size
bound; anything else is left unread (None)."""

from __future__ import annotations

import ast
import re

_ALLOWED = re.compile(r"[,\d\[\]()+*]+")
_LIMIT = 1_000_000
"""Elements a pattern may reach before it is left unread."""


def pattern_list(text: str) -> list[int] | None:
    """The list a pattern names, or None (not a pattern Megatron would accept, or too large)."""
    if not isinstance(text, str) or "[" not in text or not _ALLOWED.fullmatch(text):
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    try:
        value = _value(tree.body, 0)
    except (_Unread, RecursionError):
        return None
    return value if isinstance(value, list) else None


class _Unread(Exception):
    pass


def _value(node: ast.AST, depth: int) -> list[int] | int:
    if depth > 100:
        raise _Unread
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.List):
        items = [_value(e, depth + 1) for e in node.elts]
        if not all(isinstance(i, int) for i in items):
            raise _Unread
        return items  # type: ignore[return-value]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        left, right = _value(node.left, depth + 1), _value(node.right, depth + 1)
        if isinstance(node.op, ast.Add):
            if type(left) is type(right):
                _bound(left, right)
                return left + right  # type: ignore[operator]
            raise _Unread
        if isinstance(left, list) and isinstance(right, int):
            return _repeat(left, right)
        if isinstance(right, list) and isinstance(left, int):
            return _repeat(right, left)
        if isinstance(left, int) and isinstance(right, int) and abs(left * right) <= _LIMIT:
            return left * right
    raise _Unread


def _bound(left: object, right: object) -> None:
    if isinstance(left, list) and isinstance(right, list) and len(left) + len(right) > _LIMIT:
        raise _Unread


def _repeat(items: list[int], times: int) -> list[int]:
    if len(items) * max(times, 0) > _LIMIT:
        raise _Unread
    return items * times
