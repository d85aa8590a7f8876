"""Bash arithmetic (``$((...))``, ``((...))``, ``let``), statically: signed 64-bit, the variables
the script set, unknown when any operand is.

A mixin of :class:`trainlint.adapters.megatron.shell.ShellEvaluator`; nothing is run.
"""

from __future__ import annotations

import re

from trainlint.adapters.megatron.shell_text import EvaluatorParts, FileText, Unresolvable
from trainlint.adapters.megatron.words import Loc, Seg


class Arithmetic(EvaluatorParts):
    """The arithmetic half of the evaluator."""


    def _arith(self, node, ft: FileText) -> int:
        self._enter(node, ft)
        try:
            return _wrap64(self._arith_of(node, ft))
        finally:
            self._depth -= 1

    def _arith_of(self, node, ft: FileText) -> int:
        kind = node.type
        if kind == "number":
            text = node.text.decode("utf-8", "replace")
            if re.fullmatch(r"[0-9]+", text) and not text.startswith("0"):
                return _decimal64(text)
            try:
                return int(text, 0) if not re.fullmatch(r"0\d+", text) else int(text, 8)
            except ValueError:
                raise Unresolvable(f"`{text}` is not an integer") from None
        if kind in ("variable_name", "word"):
            name = node.text.decode("utf-8", "replace")
            if kind == "word" and re.fullmatch(r"-?\d+", name):
                return -_decimal64(name[1:]) if name.startswith("-") else _decimal64(name)
            return self._arith_var(name, self._loc(node, ft))
        if kind in ("simple_expansion", "expansion"):
            pieces = self._expansion_pieces(node, ft, quoted=True)
            segs = [s for p in pieces for s in p.segs]
            unknown = [s for s in segs if s.unknown]
            if unknown:
                raise Unresolvable(unknown[0].unknown or "unknown")
            text = "".join(s.text for s in segs).strip()
            return self._arith_text(text)
        if kind == "parenthesized_expression":
            inner = node.named_children
            if len(inner) != 1:
                raise Unresolvable("arithmetic")
            return self._arith(inner[0], ft)
        if kind == "unary_expression":
            op = node.children[0].text.decode("utf-8", "replace")
            value = self._arith(node.named_children[-1], ft)
            if op == "-":
                return -value
            if op == "+":
                return value
            if op == "!":
                return int(not value)
            raise Unresolvable(f"operator {op}")
        if kind == "binary_expression":
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            op_node = node.child_by_field_name("operator")
            if left is None or right is None or op_node is None:
                raise Unresolvable("arithmetic")
            op = op_node.text.decode("utf-8", "replace")
            a = self._arith(left, ft)
            b = self._arith(right, ft)
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            if op == "/":
                if b == 0:
                    raise ZeroDivisionError
                q = abs(a) // abs(b)
                return q if (a >= 0) == (b >= 0) else -q  # bash truncates toward zero
            if op == "%":
                if b == 0:
                    raise ZeroDivisionError
                r = abs(a) % abs(b)
                return r if a >= 0 else -r
            if op == "**":
                if b < 0:
                    raise Unresolvable("exponent out of range")
                return pow(a, b, 1 << 64)
            if op in ("<", ">", "<=", ">=", "==", "!="):
                return int({"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b, "==": a == b, "!=": a != b}[op])
            raise Unresolvable(f"operator {op}")
        if kind == "ternary_expression":
            cond, yes, no = node.named_children[:3]
            return self._arith(yes, ft) if self._arith(cond, ft) else self._arith(no, ft)
        raise Unresolvable(f"`{node.text.decode('utf-8', 'replace')}`")

    def _arith_var(self, name: str, loc: Loc, depth: int = 0) -> int:
        value = self._lookup(name, loc)
        if isinstance(value, Seg):
            raise Unresolvable(value.unknown or "unknown")
        segs = value.as_scalar()
        unknown = [s for s in segs if s.unknown]
        if unknown:
            raise Unresolvable(unknown[0].unknown or "unknown")
        text = "".join(s.text for s in segs).strip()
        if text == "":
            return 0
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text) and depth < 8:
            return self._arith_var(text, loc, depth + 1)
        return self._arith_text(text)

    def _arith_text(self, text: str) -> int:
        if re.fullmatch(r"[+-]?\d+", text):
            value = _decimal64(text.lstrip("+-"))
            return -value if text.startswith("-") else value
        raise Unresolvable(f"`{text}` is not an integer")




def _wrap64(value: int) -> int:
    """Bash arithmetic is signed 64-bit: results wrap (and stay small, whatever a script multiplies)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


def _decimal64(digits: str) -> int:
    """A decimal literal of any length, as bash reads it (modulo 2^64), in linear time: Python's
    int() refuses more than 4,300 digits and is quadratic before that."""
    if len(digits) <= 18:
        return _wrap64(int(digits))
    value = 0
    for i in range(0, len(digits), 18):
        chunk = digits[i:i + 18]
        value = (value * 10 ** len(chunk) + int(chunk)) & ((1 << 64) - 1)
    return _wrap64(value)
