"""Deciding ``if``/``while`` conditions of a launch script statically (``[ ... ]``, ``[[ ... ]]``,
``&&``/``||``, string and number tests): True, False, or None when it cannot be decided.

A mixin of :class:`trainlint.adapters.megatron.shell.ShellEvaluator` (the evaluator's variables
and word expansion are its own); nothing is run.
"""

from __future__ import annotations

from trainlint.adapters.megatron.shell_pattern import Glob, distinct_characters, fullmatch
from trainlint.adapters.megatron.shell_text import EvaluatorParts, FileText


class Conditions(EvaluatorParts):
    """The condition half of the evaluator."""


    def _condition(self, conds: list, ft: FileText) -> bool | None:
        nodes = [c for c in conds if c.is_named and c.type != "comment"]
        if not nodes:
            return None
        return self._cond_node(nodes[-1], ft)

    def _cond_node(self, node, ft: FileText) -> bool | None:
        self._enter(node, ft)
        try:
            return self._cond_node_of(node, ft)
        finally:
            self._depth -= 1

    def _cond_node_of(self, node, ft: FileText) -> bool | None:
        kind = node.type
        if kind == "test_command":
            inner = list(node.named_children)
            if len(inner) != 1:
                return None
            return self._test_expr(inner[0], ft)
        if kind == "command":
            name = node.child_by_field_name("name")
            text = name.text.decode("utf-8", "replace") if name is not None else ""
            if text in ("true", ":"):
                return True
            if text == "false":
                return False
            if text in ("[", "test"):
                return None
            return None
        if kind == "negated_command":
            inner = node.named_children
            value = self._cond_node(inner[0], ft) if inner else None
            return None if value is None else not value
        if kind == "list":
            parts = node.children
            if len(parts) == 3:
                left = self._cond_node(parts[0], ft)
                right = self._cond_node(parts[2], ft)
                op = parts[1].type
                return _tri(op, left, right)
            return None
        if kind == "redirected_statement":
            body = node.child_by_field_name("body")
            return self._cond_node(body, ft) if body is not None else None
        return None

    def _test_expr(self, node, ft: FileText) -> bool | None:
        kind = node.type
        if kind == "parenthesized_expression":
            inner = node.named_children
            return self._test_expr(inner[0], ft) if inner else None
        if kind == "unary_expression":
            op_node = node.children[0]
            op = op_node.text.decode("utf-8", "replace")
            operand = node.named_children[-1] if node.named_children else None
            if op == "!":
                v = self._test_expr(operand, ft) if operand is not None else None
                return None if v is None else not v
            value = self._string_of(operand, ft) if operand is not None else None
            if op == "-z":
                return None if value is None else value == ""
            if op == "-n":
                return None if value is None else value != ""
            return None
        if kind == "binary_expression":
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            op_node = node.child_by_field_name("operator")
            if op_node is None:
                ops = [c for c in node.children if not c.is_named]
                op_node = ops[0] if ops else None
            op = op_node.text.decode("utf-8", "replace") if op_node is not None else ""
            if op in ("&&", "||", "-a", "-o"):
                lv = self._test_expr(left, ft) if left is not None else None
                rv = self._test_expr(right, ft) if right is not None else None
                return _tri("&&" if op in ("&&", "-a") else "||", lv, rv)
            ls = self._string_of(left, ft) if left is not None else None
            rs = self._string_of(right, ft) if right is not None else None
            if ls is None or rs is None:
                return None
            if op in ("==", "=", "!="):
                matched = self._matches(ls, rs)
                return None if matched is None else matched != (op == "!=")
            if op in ("-eq", "-ne", "-gt", "-lt", "-ge", "-le"):
                try:
                    a, b = int(ls), int(rs)
                except ValueError:
                    return None
                return {"-eq": a == b, "-ne": a != b, "-gt": a > b, "-lt": a < b, "-ge": a >= b, "-le": a <= b}[op]
            return None
        value = self._string_of(node, ft)
        if value is None:
            return None
        return value != ""

    def _matches(self, text: str, pattern: str) -> bool | None:
        """Whether ``text`` matches the shell pattern, within the budget (None: not decided)."""
        glob = Glob.of(pattern)
        if not self.budget.charge_match(len(text), glob.words, distinct_characters(text) * len(glob.tokens)):
            return None
        return fullmatch(glob, text)

    def _string_of(self, node, ft: FileText) -> str | None:
        """The value of a word as one string (no splitting), or None when not known."""
        if node is None:
            return None
        if node.type in ("extglob_pattern", "regex"):
            return node.text.decode("utf-8", "replace")
        pieces = self._pieces(node, ft, quoted=True)
        segs = [s for p in pieces for s in p.segs]
        if any(s.unknown is not None for s in segs):
            return None
        return "".join(s.text for s in segs)



def _tri(op: str, left: bool | None, right: bool | None) -> bool | None:
    if op == "&&":
        if left is False or right is False:
            return False
        if left is True and right is True:
            return True
        return None
    if left is True or right is True:
        return True
    if left is False and right is False:
        return False
    return None
