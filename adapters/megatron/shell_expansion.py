"""Expanding the words of a launch script the way bash would, statically: quotes, ``$VAR`` and
``${VAR:-x}`` (and the other ``${...}`` operators), arrays, ``$((...))``, word splitting; every
piece keeps the place it was written, and what cannot be known stays unknown with the reason.

A mixin of :class:`trainlint.adapters.megatron.shell.ShellEvaluator`; nothing is run.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass

from trainlint.adapters.megatron.shell_budget import size_of
from trainlint.adapters.megatron.shell_pattern import Glob, distinct_characters, remove_prefix, remove_suffix
from trainlint.adapters.megatron.shell_text import MAX_NESTING, EvaluatorParts, FileText, Unresolvable
from trainlint.adapters.megatron.words import Field, Loc, Piece, Seg, VarValue, join_segs, split_pieces, unescaped_seg

_SCHEDULER_SET = re.compile(r"(SLURM|PBS|LSB|OMPI_COMM_WORLD|PMIX?|COBALT|FLUX)_")
"""Variables a scheduler or MPI launcher sets in every job it starts (slurm, PBS, LSF, Open MPI,
PMI). The default of ``${SLURM_NNODES:-1}`` holds only when the script runs outside the scheduler
it is written for; unless an ``#SBATCH`` allocation or ``--env`` gives the variable, the default is
read marked uncertain (as a value from an undecided branch): the rules treat it as unknown instead
of judging a world size the job will not have, and an estimate states it as assumed."""

_SPECIAL_UNKNOWN = {
    "@": "$@ (the script's arguments)",
    "*": "$* (the script's arguments)",
    "#": "$# (the number of arguments)",
    "?": "$? (an exit status)",
    "$": "$$ (the shell's process id)",
    "!": "$! (a process id)",
    "-": "$- (shell options)",
    "0": "$0 (the script's path)",
    "_": "$_ (the last argument)",
}


class WordExpansion(EvaluatorParts):
    """The word-expansion half of the evaluator."""


    def _word_fields(self, node, ft: FileText, kind: str | None = None) -> list[Field]:
        """``kind``: the node's type when the caller has read it already (each read makes a new str)."""
        self._step(node, ft)
        if kind is None:
            kind = node.type
        if (kind == "word" or kind == "number") and self._depth < MAX_NESTING:
            # a literal (most words): the one field split_pieces makes of its one piece, made here
            # with one location for both (no Piece, no second node lookup)
            loc = self._loc(node, ft)
            return [Field((self._literal_at(loc, ft),), loc, bool(self._uncertain))]
        if kind == "command_name" and self._depth < MAX_NESTING - 1 and node.child_count == 1:
            # a command's name written as one literal (`torchrun`, `mkdir`): the field _pieces_of and
            # split_pieces make of it (the literal's piece, at the name's place), without them; deeper
            # than that, the long way reports the nesting as before
            child = node.child(0)
            child_kind = child.type
            if child_kind == "word" or child_kind == "number":
                table = ft._char_of_byte  # the two self._loc written out
                start, end = child.start_byte, child.end_byte
                name_start, name_end = node.start_byte, node.end_byte
                if table is not None:
                    start, end, name_start, name_end = table[start], table[end], table[name_start], table[name_end]
                raw = ft.text[start:end]
                loc = Loc(ft.path, start, end)
                seg = Seg(raw, loc, True) if "\\" not in raw else unescaped_seg(raw, loc, _ESCAPE)
                return [Field((seg,), Loc(ft.path, name_start, name_end), bool(self._uncertain))]
        pieces = self._pieces(node, ft, False, kind)
        table = ft._char_of_byte  # self._loc(node, ft) written out (every word that is not a literal)
        if table is None:
            site = Loc(ft.path, node.start_byte, node.end_byte)
        else:
            site = Loc(ft.path, table[node.start_byte], table[node.end_byte])
        return split_pieces(pieces, site, bool(self._uncertain))

    def _rejoined_fields(self, head, tail, ft: FileText) -> list[Field]:
        """One word tree-sitter-bash cut in two (see :func:`split_at_dollar`): the head's pieces
        without its lone ``$``, the variable the tail starts with, then the rest of the tail."""
        self._step(head, ft)
        pieces: list[Piece] = []
        for child in head.children[:-1]:
            pieces.extend(self._pieces(child, ft, quoted=False))
        first = tail if tail.type == "word" else tail.children[0]
        matched = _NAME.match(first.text)
        if matched is None:  # split_at_dollar checked it; kept for the type checker
            return self._word_fields(head, ft) + self._word_fields(tail, ft)
        name = matched.group(0)
        dollar = self._loc(head.children[-1], ft)
        name_end = ft.char(first.start_byte + len(name))
        pieces.extend(self._var_pieces(name.decode("ascii"), None, Loc(ft.path, dollar.start, name_end), quoted=False))
        first_end = ft.char(first.end_byte)
        if name_end < first_end:
            rest = Loc(ft.path, name_end, first_end)
            pieces.append(Piece([Seg(ft.text[rest.start:rest.end], rest, True)], False))
        if first is not tail:
            for child in tail.children[1:]:
                pieces.extend(self._pieces(child, ft, quoted=False))
        whole = Loc(ft.path, self._loc(head, ft).start, self._loc(tail, ft).end)
        return split_pieces(pieces, whole, bool(self._uncertain))


    def _pieces(self, node, ft: FileText, quoted: bool, kind: str | None = None) -> list[Piece]:
        """``kind``: the node's type when the caller has read it already."""
        if kind is None:
            kind = node.type
        depth = self._depth
        if (kind == "word" or kind == "number") and depth < MAX_NESTING:
            # a literal (most parts of words): nothing below it, so no nesting to count, only the
            # bound to respect (at it, _enter below reports it as for any other node); _literal written out
            table = ft._char_of_byte
            start, end = node.start_byte, node.end_byte
            if table is not None:
                start, end = table[start], table[end]
            raw = ft.text[start:end]
            loc = Loc(ft.path, start, end)
            return [Piece([Seg(raw, loc, True) if "\\" not in raw else unescaped_seg(raw, loc, _ESCAPE)], False)]
        if depth >= MAX_NESTING:
            self._enter(node, ft)  # reports the nesting (raises)
        self._depth = depth + 1  # = self._enter(node, ft) below the bound
        try:
            if kind == "simple_expansion" or kind == "expansion":  # (most nodes here) _pieces_of's branch
                return self._expansion_pieces(node, ft, quoted, kind)
            return self._pieces_of(node, kind, ft, quoted)
        finally:
            self._depth -= 1

    def _pieces_of(self, node, kind: str, ft: FileText, quoted: bool) -> list[Piece]:
        if kind == "command_name":
            out_name: list[Piece] = []
            for child in node.children:
                out_name.extend(self._pieces(child, ft, quoted))
            return out_name
        if kind == "raw_string":
            loc = self._loc(node, ft)
            inner = Loc(ft.path, loc.start + 1, max(loc.start + 1, loc.end - 1))
            return [Piece([Seg(ft.text[inner.start:inner.end], inner, True)], False)]
        if kind == "ansi_c_string":
            loc = self._loc(node, ft)
            raw = ft.text[loc.start + 2:loc.end - 1]
            try:
                value = raw.encode("latin-1", "backslashreplace").decode("unicode_escape")
            except UnicodeDecodeError:
                value = raw
            return [Piece([Seg(value, loc, value == raw)], False)]
        if kind in ("string", "translated_string"):
            if ft.placeholders:  # `<Specify path>` parsed as a quoted string (none in most scripts)
                loc = self._loc(node, ft)
                if ft.placeholders.get(loc.start) == loc.end:
                    text = ft.text[loc.start:loc.end]
                    return [Piece([Seg("", loc, False, f"`{text}` (a placeholder to fill in)")], False)]
            out: list[Piece] = []
            prev_end = None
            table = ft._char_of_byte
            for child in node.children:
                child_start = child.start_byte
                if prev_end is not None and child_start > prev_end:
                    # Text tree-sitter leaves between two expansions (spaces, `\` + newline).
                    gap = Loc(ft.path, ft.char(prev_end), ft.char(child_start))
                    out.append(Piece([self._dq_text(ft, gap)], False))
                prev_end = child.end_byte
                child_kind = child.type  # read once: each read makes a new str
                if child_kind == "string_content":
                    if ft.quoted_placeholders:
                        out.append(Piece(self._dq_pieces(child, ft), False))
                    else:  # the common case (no placeholder in the file): _dq_pieces' one Seg, written out
                        start, end = child_start, prev_end
                        if table is not None:
                            start, end = table[start], table[end]
                        raw = ft.text[start:end]
                        loc = Loc(ft.path, start, end)
                        out.append(Piece([Seg(raw, loc, True) if "\\" not in raw else unescaped_seg(raw, loc, _DQ_ESCAPE)],
                                         False))
                elif child_kind in ('"', '$"', "$"):
                    continue
                elif child.is_named:
                    # tree-sitter-bash may start an expansion node with the text before its `$`
                    # (`" \<newline>    ${B}"`): keep that text.
                    lead = 0
                    if child_kind == "expansion" or child_kind == "simple_expansion":
                        at = child.start_byte  # the `$` searched in the file's bytes: no copy of the node's text
                        lead = ft.data.find(b"$", at, child.end_byte) - at
                    if lead > 0:
                        start = ft.char(child.start_byte)
                        gap = Loc(ft.path, start, ft.char(child.start_byte + lead))
                        out.append(Piece([self._dq_text(ft, gap)], False))
                    out.extend(self._expansion_pieces(child, ft, True, child_kind))
            if not out:
                out.append(Piece([], False))
            return out
        if kind == "concatenation":
            out = []
            for child in node.children:
                out.extend(self._pieces(child, ft, quoted))
            return out
        if kind in ("simple_expansion", "expansion", "command_substitution", "arithmetic_expansion",
                    "process_substitution"):
            return self._expansion_pieces(node, ft, quoted)
        if kind == "brace_expression":
            written = node.text.decode("utf-8", "replace")
            return [Piece([Seg("", self._loc(node, ft), False, f"`{written}` (a brace expansion)")], False)]
        # Anything else: its text as written.
        loc = self._loc(node, ft)
        return [Piece([Seg(ft.text[loc.start:loc.end], loc, True)], False)]

    def _literal(self, node, ft: FileText, unquoted: bool) -> Seg:
        return self._literal_at(self._loc(node, ft), ft)

    def _literal_at(self, loc: Loc, ft: FileText) -> Seg:
        raw = ft.text[loc.start:loc.end]
        if "\\" not in raw:
            return Seg(raw, loc, True)
        # a backslash keeps the character after it and is removed; before a line break, both are
        return unescaped_seg(raw, loc, _ESCAPE)

    def _dq_pieces(self, node, ft: FileText) -> list[Seg]:
        loc = self._loc(node, ft)
        if not ft.quoted_placeholders:  # the common case: no placeholder anywhere in the file
            return [self._dq_text(ft, loc)]
        inside = [(a, b) for a, b in ft.quoted_placeholders.items() if loc.start <= a and b <= loc.end]
        if not inside:
            return [self._dq_text(ft, loc)]
        out: list[Seg] = []
        pos = loc.start
        for a, b in sorted(inside):
            if a > pos:
                out.append(self._dq_text(ft, Loc(ft.path, pos, a)))
            out.append(Seg("", Loc(ft.path, a, b), False, f"`{ft.text[a:b]}` (a placeholder to fill in)"))
            pos = b
        if pos < loc.end:
            out.append(self._dq_text(ft, Loc(ft.path, pos, loc.end)))
        return out

    def _dq_text(self, ft: FileText, loc: Loc) -> Seg:
        raw = ft.text[loc.start:loc.end]
        if "\\" not in raw:
            return Seg(raw, loc, True)
        # inside double quotes a backslash escapes only " \ $ ` and a line break (which it removes)
        return unescaped_seg(raw, loc, _DQ_ESCAPE)

    def _expansion_pieces(self, node, ft: FileText, quoted: bool, kind: str | None = None) -> list[Piece]:
        """``kind``: the node's type when the caller has read it already."""
        table = ft._char_of_byte
        if table is None:  # self._loc(node, ft) written out (every expansion)
            loc = Loc(ft.path, node.start_byte, node.end_byte)
        else:
            loc = Loc(ft.path, table[node.start_byte], table[node.end_byte])
        if kind is None:
            kind = node.type
        if kind == "simple_expansion":  # (the most common, then ${...}: tested first)
            name_node = node.named_child(0)
            if name_node is None:
                return [Piece([Seg("$", loc, True)], False)]
            name = ft.data[name_node.start_byte:name_node.end_byte].decode("utf-8", "replace")  # node.text, without a node call
            return self._var_pieces(name, None, loc, quoted)
        if kind == "expansion":
            return self._braced(node, ft, loc, quoted)
        split = not quoted
        if kind == "command_substitution":
            path = self._path_substitution(node, ft)
            if path is not None:
                return [Piece([Seg(path, loc, False)], split)]
            text = ft.text[loc.start:loc.end].replace("\n", " ")
            short = text if len(text) <= 40 else text[:37] + "..."
            return [Piece([Seg("", loc, False, f"`{short}` (a command substitution)")], False)]
        if kind == "process_substitution":
            return [Piece([Seg("", loc, False, "a process substitution")], False)]
        if kind == "arithmetic_expansion":
            inner = list(node.named_children)
            try:
                if len(inner) != 1:
                    raise Unresolvable("arithmetic")
                value = self._arith(inner[0], ft)
            except Unresolvable as exc:
                text = ft.text[loc.start:loc.end]
                return [Piece([Seg("", loc, False, f"`{text}` ({exc})")], False)]
            except ZeroDivisionError:
                return [Piece([Seg("", loc, False, "a division by zero")], False)]
            return [Piece([Seg(str(value), loc, False)], split)]
        # ${...} in another node type (none in the grammar)
        return self._braced(node, ft, loc, quoted)

    def _path_substitution(self, node, ft: FileText) -> str | None:
        """The output of a command substitution that only computes a path, without running anything:
        ``$(dirname P)``, ``$(realpath P)``, ``$(readlink -f P)``, ``$(basename P)``, and ``$(cd D && pwd)``
        / ``$(cd D; pwd)`` with D absolute (the idiom ``$(cd "$(dirname "$0")" && pwd)``). dirname(1)
        and basename(1) are string operations (POSIX); realpath(1) / readlink -f and ``cd D && pwd`` name
        the directory itself, taken here without resolving symbolic links. None for anything else."""
        commands = [c for c in node.named_children if c.type != "comment"]
        if len(commands) == 1 and commands[0].type == "list":
            commands = [c for c in commands[0].named_children if c.type != "comment"]
        words: list[list[str]] = []
        for c in commands:
            got = self._command_words(c, ft)
            if got is None:
                return None
            words.append(got)
        if len(words) == 2 and words[1] == ["pwd"] and len(words[0]) == 2 and words[0][0] == "cd":
            target = words[0][1]
            return posixpath.normpath(target) if target.startswith("/") else None
        if len(words) != 1 or not words[0]:
            return None
        name, args = words[0][0], words[0][1:]
        if name in self.functions:
            return None  # the script's own function of that name: not the command it shadows
        if name == "echo":
            # `$(echo torchrun)`: the words joined by blanks, trailing line breaks removed (what the
            # substitution gives); -n changes nothing here, -e would interpret escapes: not followed
            while args and args[0] in ("-n", "-E"):
                args = args[1:]
            if args and args[0].startswith("-") and len(args[0]) > 1 and set(args[0][1:]) <= set("neE"):
                return None
            return " ".join(args).rstrip("\n")
        if name == "readlink" and args[:1] in (["-f"], ["-e"], ["-m"]):
            name, args = "realpath", args[1:]
        if len(args) != 1 or not args[0]:
            return None
        arg = args[0]
        if name == "dirname":
            stripped = arg.rstrip("/")
            if not stripped:
                return "/"
            head = stripped.rsplit("/", 1)[0] if "/" in stripped else "."
            return head.rstrip("/") or "/"
        if name == "basename":
            return arg.rstrip("/").rsplit("/", 1)[-1] or "/"
        if name == "realpath" and arg.startswith("/"):
            return posixpath.normpath(arg)
        return None

    def _command_words(self, node, ft: FileText) -> list[str] | None:
        """The fully known words of a simple command with no redirection or assignment, else None."""
        if node.type != "command":
            return None
        out: list[str] = []
        for child in node.named_children:
            if child.type not in ("command_name", "word", "string", "raw_string", "concatenation",
                                  "simple_expansion", "expansion", "command_substitution", "number"):
                return None
            for f in self._word_fields(child, ft):
                if f.text is None:
                    return None
                out.append(f.text)
        return out

    def _var_pieces(self, name: str, index: str | None, loc: Loc, quoted: bool) -> list[Piece]:
        value = self._lookup(name, loc)
        split = not quoted
        if isinstance(value, Seg):
            return [Piece([value], split)]
        array = value.array
        if index is None and (array is None or (name != "@" and name != "*")):
            # a scalar read (`$X`, `${X}`: most expansions): _charge_value's last case and as_scalar
            # written out
            scalar = (value.scalar or ()) if array is None else (array[0].segs if array else ())
            if split:
                chars, count = size_of([s.text for s in scalar], split)
            else:  # quoted: size_of's count without its per-piece blank counting
                chars, count = sum([len(s.text) for s in scalar]), len(scalar)
            refused = self.budget.charge(chars, count)
            if refused is not None:
                return [Piece([self._refused_seg(f"${{{name}}}", refused, loc)], False)]
            return [Piece(list(scalar), split)]
        if name in ("@", "*") and index is None and value.is_array:
            index = name  # a function's arguments ($@ inside `run() { "$@"; }`): one field each
        refused = self._charge_value(value, index, split)
        if refused is not None:
            return [Piece([self._refused_seg(f"${{{name}}}", refused, loc)], False)]
        if index in ("@", "*") and value.is_array:
            elements = value.as_fields()
            if index == "*" and quoted:
                segs: list[Seg] = []
                for i, el in enumerate(elements):
                    if i:
                        segs.append(Seg(" ", None, False))
                    segs.extend(el.segs)
                return [Piece(segs, False)]
            return [Piece(list(el.segs), split, i > 0) for i, el in enumerate(elements)] or [
                Piece([], True)]
        if index is not None and index not in ("@", "*"):
            try:
                i = int(index)
            except ValueError:
                return [Piece([Seg("", loc, False, f"${{{name}[{index}]}}")], False)]
            elements = value.as_fields()
            if 0 <= i < len(elements):
                return [Piece(list(elements[i].segs), split)]
            return [Piece([], split)]
        return [Piece(list(value.as_scalar()), split)]

    def _charge_value(self, value: VarValue, index: str | None, split: bool) -> str | None:
        """Charge the part of ``value`` that ``${name[index]}`` copies to the budget: None when it
        may be copied, else why not (see :mod:`.shell_budget`)."""
        if index in ("@", "*") and value.is_array:
            elements = value.as_fields()
            chars, pieces = size_of((s.text for el in elements for s in el.segs), split)
            pieces += len(elements)
        elif index is not None and index not in ("@", "*") and value.is_array:
            elements = value.as_fields()
            i = int(index) if index.isdigit() else -1
            chars, pieces = size_of((s.text for s in elements[i].segs), split) if 0 <= i < len(elements) else (0, 0)
        else:
            segs = value.as_scalar()
            if split:
                chars, pieces = size_of([s.text for s in segs], split)
            else:  # quoted (most expansions): size_of's count without its per-piece blank counting
                chars, pieces = sum([len(s.text) for s in segs]), len(segs)
        return self.budget.charge(chars, pieces)

    def _refused_seg(self, what: str, reason: str, loc: Loc) -> Seg:
        """The unknown piece a refused expansion leaves, and (once) a TL012 where the first was."""
        self._budget_refused(reason, loc)
        return Seg("", loc, False, f"{what} ({reason}; trainlint does not build it)")

    def _lookup(self, name: str, loc: Loc) -> VarValue | Seg:
        if self._reads is not None:
            self._note_read(name)  # a dependency of the statement the memo records (shell_memo)
        value = self.env.values.get(name)
        if value is not None and name not in _SPECIAL_UNKNOWN and not name.isdigit():
            # a variable the script set (most reads): every case below first asks for a special or
            # positional name, or for one not set (BASH_SOURCE), so none of them applies
            return value
        if self.call_arguments and (name in ("@", "*", "#") or (name.isdigit() and name != "0")):
            return _call_argument(self.call_arguments[-1], name)
        if self.arguments is not None and ((name.isdigit() and name != "0") or name == "#"):
            if name == "#":
                return VarValue(scalar=(Seg(str(len(self.arguments)), None, False),))
            i = int(name)
            if i > len(self.arguments) or self.arguments[i - 1] == "":
                return VarValue(scalar=())
            return VarValue(scalar=(Seg(self.arguments[i - 1], None, False, None, env=f"${name}"),))
        if name in ("0", "BASH_SOURCE") and loc is not None and loc.path and name not in self.env.values:
            # $0 is the path the script was started by, ${BASH_SOURCE[0]} the file being read (bash(1),
            # "Special Parameters" and "Shell Variables"): written relative to the caller's directory,
            # both name this file, so a path built from them names the same file. Taken as absolute.
            return VarValue(scalar=(Seg(os.path.abspath(self.root_path if name == "0" else loc.path), None, False),))
        if name in _SPECIAL_UNKNOWN:
            return Seg("", loc, False, _SPECIAL_UNKNOWN[name])
        if name.isdigit():
            return Seg("", loc, False, f"${name} (a positional parameter)" if len(name) == 1 else f"${{{name}}} (a positional parameter)")
        if name in self.env.values:
            return self.env.values[name]
        if name in self.environment:
            return VarValue(scalar=(Seg(self.environment[name], None, False, None, env=name),))
        if name in self.slurm:
            return VarValue(scalar=self.slurm[name].segs)
        return Seg("", loc, False, f"${name} (not set in the script)")

    def _is_set(self, name: str) -> bool | None:
        if self._reads is not None:
            self._note_read(name)
        if self.call_arguments and name.isdigit() and name != "0":
            return int(name) <= len(self.call_arguments[-1])
        if self.arguments is not None and name.isdigit() and name != "0":
            return int(name) <= len(self.arguments)
        if name in _SPECIAL_UNKNOWN or name.isdigit():
            return None
        if name in self.env.values:
            v = self.env.values[name]
            segs = v.as_scalar()
            if any(s.unknown for s in segs):
                return None
            return True
        return name in self.environment or name in self.slurm

    def _braced(self, node, ft: FileText, loc: Loc, quoted: bool) -> list[Piece]:
        length = False
        indirect = False
        name: str | None = None
        index: str | None = None
        ops: list[tuple[str, list]] = []
        data = ft.data  # the parsed bytes: a node's text is data[start_byte:end_byte]
        for child in node.children:
            kind = child.type  # read once: each read makes a new str
            if kind == "${" or kind == "}":
                continue
            if name is None:
                if kind == "variable_name" or kind == "special_variable_name":  # (first: the common case)
                    name = data[child.start_byte:child.end_byte].decode("utf-8", "replace")  # child.text, without a node call
                    continue
                if kind == "#" or (not child.is_named and data[child.start_byte:child.end_byte] == b"#"):
                    length = True
                    continue
                if not child.is_named and data[child.start_byte:child.end_byte] == b"!":
                    indirect = True
                    continue
                if kind == "subscript":
                    base = child.child_by_field_name("name")
                    idx = child.child_by_field_name("index")
                    name = base.text.decode("utf-8", "replace") if base is not None else "?"
                    index = self._string_of(idx, ft) if idx is not None else None
                    if index is None:
                        index = "?"
                    continue
                if kind == "word" and child.text.isdigit():
                    name = child.text.decode()
                    continue
            if not child.is_named:
                ops.append((data[child.start_byte:child.end_byte].decode("utf-8", "replace"), []))
            elif ops:
                ops[-1][1].append(child)
            else:
                ops.append(("?", [child]))
        if name is None or indirect:
            text = ft.text[loc.start:loc.end]
            return [Piece([Seg("", loc, False, f"`{text}`")], False)]
        if length:
            value = self._lookup(name, loc)
            if isinstance(value, Seg):
                return [Piece([value], False)]
            if index in ("@", "*"):
                return [Piece([Seg(str(len(value.as_fields())), loc, False)], False)]
            segs = value.as_scalar()
            if any(s.unknown for s in segs):
                return [Piece([Seg("", loc, False, f"${{#{name}}}")], False)]
            return [Piece([Seg(str(len("".join(s.text for s in segs))), loc, False)], False)]
        base = self._var_pieces(name, index, loc, quoted)
        if not ops:
            return base
        op, operand = ops[0]
        if len(ops) > 1 and op in ("/", "//", "/#", "/%", ":"):
            operand = [n for _, ns in ops for n in ns]
        if op == ":" and name in ("@", "*") and self.call_arguments and index is None:
            return self._argument_slice(operand, ft, loc, quoted)
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            is_set = self._is_set(name)
            base_segs = [s for p in base for s in p.segs]
            empty = not any(s.text for s in base_segs) and not any(s.unknown for s in base_segs)
            if op.startswith(":"):
                use_default = is_set is False or (is_set is True and empty)
            else:
                use_default = is_set is False
            if (name.isdigit() or name in ("@", "*")) and self.arguments is None and not self.call_arguments:
                use_default = True  # positional parameters: the script's own default is the value it documents
            default_pieces = self._operand_pieces(operand, ft, quoted)
            if use_default and is_set is False and _SCHEDULER_SET.match(name):
                default_pieces = [Piece([s.as_uncertain() for s in p.segs], p.split, p.field_break_before)
                                  for p in default_pieces]
            if op in (":-", "-"):
                return default_pieces if use_default else base
            if op in (":=", "="):
                if use_default:
                    segs = tuple(join_segs([s for p in default_pieces for s in p.segs]))
                    self._set(name, VarValue(scalar=segs), loc)
                    return default_pieces
                return base
            if op in (":+", "+"):
                if is_set is None:
                    return [Piece([Seg("", loc, False, f"${{{name}{op}...}}")], False)]
                return default_pieces if not use_default else []
            return base
        joined = "".join(s.text for p in base for s in p.segs) if all(
            s.unknown is None for p in base for s in p.segs) else None
        if joined is None:
            return base if op in ("^^", ",,", "^", ",") else [Piece([Seg("", loc, False, f"`{ft.text[loc.start:loc.end]}`")], False)]
        result = self._string_op(op, operand, joined, ft)
        if result is None:
            return [Piece([Seg("", loc, False, f"`{ft.text[loc.start:loc.end]}`")], False)]
        if isinstance(result, _Refused):
            return [Piece([self._refused_seg(f"`{ft.text[loc.start:loc.end]}`", result.reason, loc)], False)]
        refused = self.budget.charge(*size_of((result,), not quoted))
        if refused is not None:
            return [Piece([self._refused_seg(f"`{ft.text[loc.start:loc.end]}`", refused, loc)], False)]
        return [Piece([Seg(result, loc, False)], not quoted)]

    def _argument_slice(self, operand: list, ft: FileText, loc: Loc, quoted: bool) -> list[Piece]:
        """``"${@:2}"`` / ``"${@:2:3}"`` inside a function: its arguments from the second on (bash
        counts ``$0`` as position 0 here, so 1 is the first argument), one field each."""
        arguments = self.call_arguments[-1]
        texts = [self._string_of(n, ft) for n in operand]
        try:
            numbers = [int(t) for t in texts if t is not None and t.strip() != ""]
        except ValueError:
            numbers = []
        if not numbers or any(t is None for t in texts) or numbers[0] < 1 or (len(numbers) > 1 and numbers[1] < 0):
            # ${@:0} starts with $0, negative offsets count from the end: not followed
            return [Piece([Seg("", loc, False, f"`{ft.text[loc.start:loc.end]}`")], False)]
        start = numbers[0] - 1
        chosen = arguments[start:start + numbers[1]] if len(numbers) > 1 else arguments[start:]
        return [Piece(list(f.segs), not quoted, i > 0) for i, f in enumerate(chosen)] or [
            Piece([], True)]

    def _operand_pieces(self, operand: list, ft: FileText, quoted: bool) -> list[Piece]:
        out: list[Piece] = []
        for n in operand:
            out.extend(self._pieces(n, ft, quoted))
        return out

    def _string_op(self, op: str, operand: list, value: str, ft: FileText) -> str | _Refused | None:
        texts = [self._string_of(n, ft) for n in operand]
        if any(t is None for t in texts):
            return None
        arg = "".join(t or "" for t in texts)
        if op in ("^^",):
            return value.upper()
        if op in (",,",):
            return value.lower()
        if op == "^":
            return value[:1].upper() + value[1:]
        if op == ",":
            return value[:1].lower() + value[1:]
        if op in ("#", "##", "%", "%%"):
            # one pass over the value (shell_pattern), within the budget: trying every prefix with
            # fnmatch was quadratic, and its regular expression backtracks
            glob = Glob.of(arg)
            if not self.budget.charge_match(len(value), glob.words, distinct_characters(value) * len(glob.tokens)):
                return _Refused(self.budget.refused or "pattern matching")
            if op in ("#", "##"):
                return remove_prefix(glob, value, longest=op == "##")
            return remove_suffix(glob, value, longest=op == "%%")
        if op in ("/", "//"):
            pattern, _, repl = arg.partition("/")
            if not texts:
                return None
            # tree-sitter splits pattern and replacement into separate operand nodes
            if len(texts) >= 2:
                pattern, repl = texts[0] or "", "".join(t or "" for t in texts[1:])
            if any(c in pattern for c in "*?["):
                return None
            if not pattern:
                return value
            count = value.count(pattern) if op == "//" else min(1, value.count(pattern))
            grown = len(value) + count * (len(repl) - len(pattern))
            refused = self.budget.charge(grown, 1) if grown > len(value) else None
            if refused is not None:  # ${X//a/$X}: the result is checked before it is built
                return _Refused(refused)
            return value.replace(pattern, repl) if op == "//" else value.replace(pattern, repl, 1)
        if op == ":":
            parts = list(texts)
            try:
                nums = [int(p) for p in parts if p is not None and p.strip() != ""]
            except ValueError:
                return None
            if not nums:
                return None
            off = nums[0]
            if len(nums) > 1:
                return value[off:off + nums[1]] if nums[1] >= 0 else value[off:nums[1]]
            return value[off:]
        return None


def _call_argument(arguments: list[Field], name: str) -> VarValue:
    """``$@``, ``$*`` (an array of the arguments), ``$#`` and ``$N`` inside a function called with
    ``arguments`` (bash sets the positional parameters to them; one not given is empty)."""
    if name in ("@", "*"):
        return VarValue(array=list(arguments))
    if name == "#":
        return VarValue(scalar=(Seg(str(len(arguments)), None, False),))
    i = int(name)
    return VarValue(scalar=arguments[i - 1].segs if i <= len(arguments) else ())


@dataclass(frozen=True)
class _Refused:
    """A string operation the budget refused (its result would be too large or take too long)."""

    reason: str


_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_DQ_ESCAPE = re.compile(r'\\(?:\n|(["\\$`]))')
"""A backslash that escapes something inside double quotes: a line break (group 1 None) or a character."""
_ESCAPE = re.compile(r"\\(?:\n|(.))", re.DOTALL)
"""A backslash outside quotes: before a line break both are removed, before any other character the backslash."""


def split_at_dollar(head, tail) -> bool:
    """Whether tree-sitter-bash cut one word after a ``$``: it parses ``$a/$b.out`` (and ``$a/$b/c``,
    ``$a/$b-c``) as the concatenation ``$a/$`` followed, with no blank between, by the word ``b.out``;
    bash reads one word in which ``$b`` expands."""
    if head.type != "concatenation" or not head.children or head.children[-1].type != "$":
        return False
    if tail.start_byte != head.end_byte:
        return False
    first = tail if tail.type == "word" else (tail.children[0] if tail.type == "concatenation" and tail.children else None)
    return first is not None and first.type == "word" and _NAME.match(first.text) is not None
