"""A static evaluator for the bash that launch scripts are written in.

It walks the tree-sitter-bash syntax tree, keeps shell variables (scalars and arrays) with the
place every character was written, expands words the way bash would (quotes, ``${VAR:-x}``,
``$((...))``, ``"${A[@]}"``, word splitting) and records every simple command with its expanded
arguments. It never runs anything: command substitutions, ``$1``, ``$@`` and variables the script
does not set stay *unknown* (with the reason), and the caller reports them.

Policies (documented in the adapter's docstring too):

* ``if``/``case``: a condition that can be decided from known values picks its branch; when it
  cannot be decided, the first branch whose condition is not known to be false is followed for
  the values, and assignments in it are marked *uncertain*. Commands in the other branches are
  still collected (on a copy of the variables), so every training invocation is found.
* loops: the body is evaluated once, with the loop variable unknown.
* functions: evaluated where they are called, with the call's words as ``$1``, ``$@``, ``$#``
  (so ``run() { "$@"; }; run torchrun ...`` is the torchrun launch); a function never called is
  evaluated once at the end, on a copy of the variables, to find invocations in it.
* command substitutions are unknown, except those that only compute a path (``$(dirname P)``,
  ``$(cd D && pwd)``) or print known words (``$(echo torchrun)``).
* values and pattern matches are bounded by one budget (:mod:`.shell_budget`): a value past it is
  unknown, with the reason.
* ``source``/``.``: the file is read (never run) relative to the script and evaluated in place.
* ``eval``: a string known statically is split into words and treated as commands; quotes inside
  it are removed, ``&&``, ``||``, ``;``, ``&`` and pipes separate commands, and a redirection
  ends the words of its command (an approximation of bash's second parse); an unknown string is
  reported (TL012).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from trainlint.core import cancel
from trainlint.core.diagnostics import Diagnostic, Severity
from trainlint.core.input_codes import input_diagnostic
from trainlint.core.positions import Span
from trainlint.files.sources import SourceText, UnreadableSource

from trainlint.adapters.megatron.shell_arithmetic import Arithmetic
from trainlint.adapters.megatron import shell_memo, shell_text
from trainlint.adapters.megatron.shell_budget import MAX_MATCH_WORK, MAX_TOTAL_CHARS, MAX_TOTAL_PIECES, ShellBudget
from trainlint.adapters.megatron.shell_conditions import Conditions
from trainlint.adapters.megatron.shell_expansion import _ESCAPE, WordExpansion, split_at_dollar
from trainlint.adapters.megatron.shell_text import MAX_NESTING, FileText, _parser
from trainlint.adapters.megatron.words import (
    EnvMap,
    Field,
    Loc,
    Piece,
    Seg,
    VarValue,
    join_segs,
    split_pieces,
    unescaped_seg,
    without_chars,
)

if TYPE_CHECKING:  # pragma: no cover - imported on first parse (start-up time)
    from tree_sitter import Node

MAX_SOURCE_DEPTH = 4


MAX_CALL_DEPTH = 8
MAX_COMMANDS = 20000
MAX_STEPS = 20_000
"""Evaluation steps (statements, word expansions, function calls, sourced files) for one script and
everything it sources (the corpus's largest script takes 397): a generated bomb (functions calling functions,
``source`` fan-out, millions of assignments) stops here with a TL012 error instead of running for minutes."""
FOLLOW_STEPS = 5_000
"""After this many steps function calls and ``source`` are no longer followed (TL012), so the rest
of the file is still read once, in linear time, and a launch line after a bomb is still found."""
MAX_SCRIPT_BYTES = 1024 * 1024
"""A script (or a sourced file) larger than this is not parsed (TL012 error): tree-sitter takes ~1 s
and ~150 MB per MB of short statements, and the corpus's largest launch script is 10 KB."""
MAX_WORDS = 5000
"""Words of one command evaluated (flags.MAX_ARGUMENTS reports the cut): bounds a generated script."""


@dataclass
class Command:
    """One simple command after expansion."""

    fields: list[Field]
    loc: Loc
    prefix: dict[str, Field] = field(default_factory=dict)
    """Assignments written before the command (``NCCL_DEBUG=INFO torchrun ...``)."""
    in_loop: Loc | None = None
    via_eval: bool = False
    uncertain: bool = False


@dataclass
class Assignment:
    name: str
    value: VarValue
    loc: Loc


@dataclass
class ShellResult:
    commands: list[Command]
    assignments: list[Assignment]
    env: EnvMap
    diagnostics: list[Diagnostic]
    files: dict[str, FileText]
    virtual_files: dict[str, tuple[Field, Loc]]
    """Files the script writes with a here-document (``cat <<EOF > ds_config.json``), by path as
    written: the expanded body and where it is."""

    def span(self, loc: Loc | None) -> Span | None:
        if loc is None:
            return None
        ft = self.files.get(loc.path)
        if ft is None:
            return None
        return ft.index.span(loc.start, loc.end)


_COMMAND_BREAKS = {"||", "&&", ";", "&", "|", "|&"}
"""Words of an eval'd string that end one command and start the next."""
_STOP_WORDS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>>", "&>", "&>>", "2>&1", "1>&2", ">&2", "|&"}


class _OutOfSteps(Exception):
    """MAX_STEPS reached: the evaluation stops (``run`` reports where)."""


class _TooDeep(Exception):
    """MAX_NESTING reached inside one top-level statement: that statement is skipped (TL002)."""

    def __init__(self, loc: Loc) -> None:
        super().__init__()
        self.loc = loc


class ShellEvaluator(Conditions, WordExpansion, Arithmetic):
    """Walks the syntax tree: statements, control flow, assignments and commands here; conditions,
    word expansion and arithmetic in their mixins (:mod:`.shell_conditions`, :mod:`.shell_expansion`,
    :mod:`.shell_arithmetic`); the parsed text in :mod:`.shell_text`."""

    def __init__(
        self,
        root: SourceText,
        read: Callable[[str], SourceText],
        environment: dict[str, str] | None = None,
    ) -> None:
        self.root_path = root.path
        self.read = read
        self.environment = dict(environment or {})
        self.arguments = _positional(self.environment)
        """The script's arguments ($1, $2...) when the user gave them (`run -- bash x.sh a b`, --env 1=a):
        then an argument not given is empty, as in bash; None: unknown, the script's defaults are used."""
        from trainlint.adapters.megatron.slurm import slurm_environment

        self.slurm = slurm_environment(root.text, root.path)
        """SLURM_NNODES, SLURM_GPUS_PER_NODE, ... as sbatch sets them from the script's #SBATCH lines
        (located there); the user's --env wins over them, the script's own assignments over both."""
        self.files: dict[str, FileText] = {}
        self.env = EnvMap()
        self.commands: list[Command] = []
        self.assignments: list[Assignment] = []
        self.diagnostics: list[Diagnostic] = []
        self.functions: dict[str, tuple[object, FileText]] = {}
        self.called: set[str] = set()
        self.virtual_files: dict[str, tuple[Field, Loc]] = {}
        self._root = root
        self._source_stack: list[str] = []
        self._call_depth = 0
        self._uncertain = 0
        self._quiet = 0
        self._loop: Loc | None = None
        self._steps = 0
        self._depth = 0
        self._not_followed: Loc | None = None
        self.call_arguments: list[list[Field]] = []
        """The arguments of each function call being evaluated (innermost last): $1, $@ there."""
        self.budget = ShellBudget()
        """What the evaluation has built and matched: repeated values and pattern matches stop there."""
        self._budget_reported = False
        self._memo = shell_memo.active()
        """Where the language server keeps the root script's statements between reads (:mod:`.shell_memo`)."""
        self._reads: set[str] | None = None
        """While a top-level statement is recorded for the memo: the variables it read..."""
        self._writes: set[str] | None = None
        """... the ones it set or unset (None: nothing is recorded) ..."""
        self._before: dict[str, Any] = {}
        """... and the value each of them had before it (shell_memo.MISSING: unset), taken when the
        statement first read or set it (until then every copy of the variables has it as it came in)."""
        self._impure = False
        """The statement being recorded did something a replay cannot repeat (a call, `source`, a function definition)."""

    # ----------------------------------------------------------------- entry

    def run(self) -> ShellResult:
        try:
            self._eval_file(self._root, None)
            # Functions that are defined but never called may still hold the training command.
            for name, (body, ft) in list(self.functions.items()):
                if name in self.called:
                    continue
                saved = self.env
                self.env = self.env.copy()
                self._quiet += 1
                try:
                    self._call_depth += 1
                    self._stmt(body, ft)
                except _TooDeep:
                    pass  # reported where the function is defined, when the file was read
                finally:
                    self._call_depth -= 1
                    self._quiet -= 1
                    self.env = saved
        except _OutOfSteps:
            pass
        return self.result()

    def result(self) -> ShellResult:
        return ShellResult(self.commands, self.assignments, self.env, self.diagnostics, self.files,
                           self.virtual_files)

    def _eval_file(self, source: SourceText, at: Loc | None) -> None:
        if len(source.text) > MAX_SCRIPT_BYTES:
            ft = FileText.of(source.path, source.text[:0])
            self.files.setdefault(source.path, ft)
            where = self._span(at) if at is not None else None
            self.diagnostics.append(input_diagnostic(
                "TL012", f"the script is {len(source.text) / 1e6:.1f} MB; trainlint does not evaluate shell scripts "
                f"over {MAX_SCRIPT_BYTES // 1024 // 1024} MB (a launch script is a few KB), so its commands are not "
                "checked", where or Span.point(1, 1), path=at.path if at is not None else source.path,
                severity=Severity.ERROR))
            return
        ft = FileText.of(source.path, source.text)
        self.files[source.path] = ft
        if "\x00" in source.text:
            self._report_nul(ft)
        memo = None
        if self._memo is not None and at is None and source.path == self.root_path:
            memo = self._memo.file(source.path, self._memo_context())
            tree = memo.parse(_parser(), ft.data)
        else:
            tree = _parser().parse(ft.data)
        root = tree.root_node
        if root.has_error:
            self._report_errors(root, ft)
            # tree-sitter's error recovery depends on the text around a statement, not only on its own:
            # a text with a syntax error is read in full, and its statements are not kept
            memo = None
        self._source_stack.append(os.path.abspath(source.path))
        entries = memo.entries if memo is not None else {}
        shift = memo.shift_to(ft.text, ft.data) if memo is not None else None
        kept: dict[tuple, shell_memo.Entry] = {}
        try:
            for node in root.children:
                if len(self.commands) > MAX_COMMANDS:
                    break
                try:
                    if memo is None:
                        kind = node.type  # read once, handed on (each read makes a new str)
                        if kind != "comment":  # a comment does nothing (most top-level nodes of a script)
                            self._stmt(node, ft, kind)
                    else:
                        self._memo_stmt(node, ft, entries, kept, shift)
                except _TooDeep as exc:
                    self.diagnostics.append(input_diagnostic(
                        "TL002", f"shell syntax: nesting too deep (more than {MAX_NESTING} levels of groups, "
                        "subshells, expansions or arithmetic); this command is not read", self._span(exc.loc),
                        path=exc.loc.path))
            if memo is not None:
                memo.keep(kept, ft.text, ft.data)
        finally:
            self._source_stack.pop()

    # ------------------------------------------------------------- bounds

    def _step(self, node, ft: FileText) -> None:
        self._steps += 1
        if not self._steps & 63 or self._steps > MAX_STEPS:
            self._step_checks(node, ft)

    def _step_checks(self, node, ft: FileText) -> None:
        """What :meth:`_step` does every 64 steps and past MAX_STEPS (callers that count a step
        inline, on the hot path, call this at the same steps)."""
        if not self._steps & 63:
            cancel.check()  # a lint the language server no longer wants stops here (every 64 steps: cheap)
        if self._steps > MAX_STEPS:
            loc = self._loc(node, ft)
            self.diagnostics.append(input_diagnostic(
                "TL012", f"the script takes more than {MAX_STEPS:,} evaluation steps (statements, expansions, "
                "function calls, sourced files); trainlint stops reading it here, and the commands after "
                "this point are not checked", self._span(loc), path=loc.path, severity=Severity.ERROR))
            raise _OutOfSteps

    def _may_follow(self, what: str, loc: Loc) -> bool:
        """False once FOLLOW_STEPS are used: calls and ``source`` are then skipped (one TL012)."""
        if self._steps <= FOLLOW_STEPS:
            return True
        if self._not_followed is None:
            self._not_followed = loc
            self.diagnostics.append(input_diagnostic(
                "TL012", f"after {FOLLOW_STEPS:,} evaluation steps, function calls and `source` are no longer "
                f"followed (from this {what} on); the variables and commands in them are not checked",
                self._span(loc), path=loc.path, severity=Severity.ERROR))
        return False

    def _budget_refused(self, reason: str, loc: Loc) -> None:
        """The first expansion or match the budget refuses: one TL012 there (the others are unknown
        pieces a flag's TL007 names)."""
        if self._budget_reported or self._quiet:
            return
        self._budget_reported = True
        self.diagnostics.append(input_diagnostic(
            "TL012", f"{reason}: trainlint builds shell values up to a limit (a launch script's are a few KB), so "
            "this value and the ones built from it are unknown", self._span(loc), path=loc.path,
            severity=Severity.WARNING))

    def _enter(self, node, ft: FileText) -> None:
        self._depth += 1
        if self._depth > MAX_NESTING:
            self._depth -= 1
            raise _TooDeep(self._loc(node, ft))

    # ------------------------------------------------------------- the memo

    def _memo_context(self) -> tuple:
        """What any statement may read without naming it in the script: a change forgets the memo
        (the ``#SBATCH`` allocation is compared per variable read, as the script's own are)."""
        return (self.root_path, tuple(sorted(self.environment.items())), self.arguments)

    def _note_read(self, name: str) -> None:
        """A variable the statement being recorded reads (see :meth:`_record`)."""
        assert self._reads is not None
        self._reads.add(name)
        if name not in self._before:
            self._before[name] = self.env.values.get(name, shell_memo.MISSING)

    def _note_write(self, name: str) -> None:
        """A variable the statement being recorded sets or unsets, before it does."""
        assert self._writes is not None
        self._writes.add(name)
        if name not in self._before:
            self._before[name] = self.env.values.get(name, shell_memo.MISSING)

    def _memo_stmt(self, node, ft: FileText, entries: dict[tuple, shell_memo.Entry],
                   kept: dict[tuple, shell_memo.Entry], shift: shell_memo.Shift | None) -> None:
        """A top-level statement of the root script, replayed from the memo when it may be (see
        :mod:`.shell_memo`), else evaluated and, when it can be replayed later, recorded. ``shift``:
        the edit since the entries' text (None: no offset or line changed), when there is one."""
        kind = node.type
        if not node.is_named or kind in ("comment", "function_definition"):
            self._stmt(node, ft)
            return
        start, end = node.start_byte, node.end_byte
        first, last = ft.char(start), ft.char(end)
        line, column = ft.index.position(first)
        key = (kind, start, first, line, column, ft.text[first:last],
               _within(ft.placeholders, first, last), _within(ft.quoted_placeholders, first, last))
        if shift is None or last <= shift.start:  # before the edit: written at the same place
            entry = entries.get(key)
            if entry is not None and self._replayable(entry):
                self._replay(entry)
                kept[key] = entry
                return
        else:
            old_key = shift.old_key(key)
            entry = entries.get(old_key) if old_key is not None else None
            if entry is not None and not entry.diagnostics:
                moved = self._moved(entry, shift)
                if moved is not None:
                    self._replay(moved)
                    kept[key] = moved
                    return
        recorded = self._record(node, ft, line, line + ft.text.count("\n", first, last))
        if recorded is not None:
            kept[key] = recorded

    def _record(self, node, ft: FileText, first_line: int, last_line: int) -> shell_memo.Entry | None:
        functions = tuple(self.functions)
        commands, assignments, diagnostics = len(self.commands), len(self.assignments), len(self.diagnostics)
        steps, budget = self._steps, self.budget
        chars, pieces, work, refused = budget.chars, budget.pieces, budget.match_work, budget.refused
        reported, not_followed = self._budget_reported, self._not_followed
        virtual = dict(self.virtual_files) if self.virtual_files else None
        self._reads, self._writes, self._before, self._impure = set(), set(), {}, False
        try:
            self._stmt(node, ft)
        finally:
            reads, writes, before, impure = self._reads, self._writes, self._before, self._impure
            self._reads = self._writes = None
        values = self.env.values
        if (impure or refused is not None or budget.refused is not None or self._budget_reported != reported
                or self._not_followed is not not_followed or self._steps > FOLLOW_STEPS
                or len(self.commands) >= MAX_COMMANDS):
            return None
        added = self.diagnostics[diagnostics:]
        for diag in added:  # a location outside the statement may move while the statement stays
            if diag.path != ft.path or not (first_line <= diag.span.line and diag.span.end_line <= last_line):
                return None
        missing = shell_memo.MISSING
        changed = []
        for name in writes:
            after = values.get(name, missing)
            if after is not before[name]:
                changed.append((name, after))
        slurm = self.slurm
        return shell_memo.Entry(
            reads=tuple((name, before[name], slurm.get(name)) for name in reads), functions=functions,
            writes=tuple(changed), commands=tuple(self.commands[commands:]),
            assignments=tuple(self.assignments[assignments:]), diagnostics=tuple(added),
            virtual_files=tuple((k, v) for k, v in self.virtual_files.items() if virtual is None or virtual.get(k) is not v),
            steps=self._steps - steps, chars=budget.chars - chars, pieces=budget.pieces - pieces,
            match_work=budget.match_work - work)

    def _replayable(self, entry: shell_memo.Entry) -> bool:
        """Whether evaluating the statement now would do exactly what ``entry`` recorded."""
        values = self.env.values
        missing = shell_memo.MISSING
        slurm = self.slurm
        for name, before, allocated in entry.reads:
            now = values.get(name, missing)
            if now is not before and (now is missing or before is missing or now != before):
                return False
            if (allocated is not None or slurm) and slurm.get(name) != allocated:
                return False  # an #SBATCH line the variable's value comes from changed
        return self._within_bounds(entry)

    def _within_bounds(self, entry: shell_memo.Entry) -> bool:
        """The same functions are defined, and the evaluation's bounds leave room for all ``entry`` used."""
        budget = self.budget
        return (entry.functions == tuple(self.functions) and budget.refused is None
                and self._steps + entry.steps <= FOLLOW_STEPS
                and len(self.commands) + len(entry.commands) < MAX_COMMANDS
                and budget.chars + entry.chars <= MAX_TOTAL_CHARS and budget.pieces + entry.pieces <= MAX_TOTAL_PIECES
                and budget.match_work + entry.match_work <= MAX_MATCH_WORK)

    def _moved(self, entry: shell_memo.Entry, shift: shell_memo.Shift) -> shell_memo.Entry | None:
        """``entry`` (a statement the edit only moved) moved to its new place, when it may be replayed."""
        values = self.env.values
        missing = shell_memo.MISSING
        slurm = self.slurm
        reads = []
        for name, before, allocated in entry.reads:
            now = values.get(name, missing)
            if not shift.same(now, before):
                return None
            if (allocated is not None or slurm) and slurm.get(name) != allocated:
                return None  # an #SBATCH line the variable's value comes from changed (or moved)
            reads.append((name, now, allocated))
        if not self._within_bounds(entry):
            return None
        try:
            return shift.entry(entry, tuple(reads))
        except shell_memo.Unmappable:
            return None  # it holds a location the edit touched: evaluated

    def _replay(self, entry: shell_memo.Entry) -> None:
        values = self.env.values
        for name, after in entry.writes:
            if after is shell_memo.MISSING:
                values.pop(name, None)
            else:
                values[name] = after
        self.commands.extend(entry.commands)
        self.assignments.extend(entry.assignments)
        self.diagnostics.extend(entry.diagnostics)
        self.virtual_files.update(entry.virtual_files)
        self._steps += entry.steps
        budget = self.budget
        budget.chars += entry.chars
        budget.pieces += entry.pieces
        budget.match_work += entry.match_work

    # ----------------------------------------------------------- diagnostics

    def _loc(self, node, ft: FileText) -> Loc:
        table = ft._char_of_byte
        if table is None:  # ASCII text (most scripts): no byte -> character lookup
            return Loc(ft.path, node.start_byte, node.end_byte)
        # the table has an entry for every byte offset of the parsed data, its end included
        return Loc(ft.path, table[node.start_byte], table[node.end_byte])

    def _span(self, loc: Loc) -> Span:
        return self.files[loc.path].index.span(loc.start, loc.end)

    def _diag(self, code: str, message: str, loc: Loc, severity: Severity | None = None) -> None:
        if self._quiet:
            return
        self.diagnostics.append(input_diagnostic(code, message, self._span(loc), path=loc.path, severity=severity))

    def _report_nul(self, ft: FileText) -> None:
        """A NUL byte in a script: bash refuses the file when one is on its first line within 80
        bytes ("cannot execute binary file", bash's check_binary_file), and otherwise drops it and
        runs the script, which trainlint then reads the same way."""
        at = ft.text.index("\x00")
        first_line_end = ft.text.find("\n")
        refused = at < 80 and (first_line_end < 0 or at < first_line_end)
        count = ft.text.count("\x00")
        what = "a NUL byte" if count == 1 else f"{count:,} NUL bytes (the first here)"
        if refused:
            message = (f"{what} on the first line: bash refuses to run the file (\"cannot execute binary file\"); "
                       "remove it")
        else:
            message = (f"{what} in the script: bash drops it and runs the script, and so does trainlint's reading; "
                       "other tools may stop at it, remove it")
        self.diagnostics.append(input_diagnostic("TL002", message, ft.index.span(at, at + 1), path=ft.path,
                                                 severity=Severity.ERROR if refused else Severity.WARNING))

    def _report_errors(self, root, ft: FileText) -> None:
        found: list[Node] = []
        stack = [root]
        while stack and len(found) < 5:
            node = stack.pop()
            if node.type == "ERROR" or node.is_missing:
                found.append(node)
                continue
            if node.has_error:
                stack.extend(reversed(node.children))
        for node in found:
            loc = self._loc(node, ft)
            if node.is_missing:
                loc = Loc(ft.path, loc.start, loc.start)
                what = f"missing `{node.type}`"
            else:
                snippet = ft.text[loc.start:loc.end].split("\n", 1)[0][:40]
                what = f"cannot parse `{snippet}`"
            # tree-sitter-bash may also fail on valid but unusual bash: a warning, not an error.
            end = loc.end if loc.end > loc.start else loc.start + 1
            self.diagnostics.append(input_diagnostic(
                "TL002", f"shell syntax: {what}; the arguments in this part are not checked",
                ft.index.span(loc.start, min(end, loc.start + max(1, len(ft.text[loc.start:end].split("\n", 1)[0])))),
                path=ft.path, severity=Severity.WARNING))

    # ----------------------------------------------------------- statements

    def _block(self, nodes: Iterable, ft: FileText) -> None:
        commands = self.commands
        for node in nodes:
            if len(commands) > MAX_COMMANDS:
                return
            kind = node.type  # read once, handed on (each read makes a new str)
            if kind != "comment":  # a comment does nothing: no call for it
                self._stmt(node, ft, kind)

    def _stmt(self, node, ft: FileText, kind: str | None = None) -> None:
        """``kind``: the node's type when the caller has read it already."""
        if kind is None:
            kind = node.type
        if kind in ("comment", ";", "&", ";;", "\n") or not node.is_named:
            return
        # _step and _enter written out: this runs for every statement
        steps = self._steps = self._steps + 1
        if not steps & 63 or steps > MAX_STEPS:
            self._step_checks(node, ft)
        if self._depth >= MAX_NESTING:
            raise _TooDeep(self._loc(node, ft))
        self._depth += 1
        try:
            handler = _STATEMENTS.get(kind)
            if handler is not None:
                handler(self, node, ft)
            else:
                self._other_stmt(kind, node, ft)
        finally:
            self._depth -= 1

    def _other_stmt(self, kind: str, node, ft: FileText) -> None:
        """A statement _STATEMENTS has no handler for."""
        if kind == "ERROR":
            # Evaluate what tree-sitter could recognise inside the unparseable part.
            self._block(node.named_children, ft)
            return
        # Anything else (test commands, arithmetic commands, ...) has no effect on values.

    def _program(self, node, ft: FileText) -> None:
        self._block(node.children, ft)

    def _compound(self, node, ft: FileText) -> None:
        self._block(node.named_children, ft)

    def _subshell(self, node, ft: FileText) -> None:
        saved = self.env
        self.env = self.env.copy()
        try:
            self._block(node.named_children, ft)
        finally:
            self.env = saved

    def _list(self, node, ft: FileText) -> None:
        self._block(node.named_children, ft)

    def _negated(self, node, ft: FileText) -> None:
        self._block(node.named_children, ft)

    def _redirected(self, node, ft: FileText) -> None:
        body = node.child_by_field_name("body")
        heredoc = None
        target = None
        for child in node.children:
            if child.type == "heredoc_redirect":
                heredoc = child
                for sub in child.named_children:
                    if sub.type == "file_redirect":
                        target = sub
            elif child.type == "file_redirect" and child.child_by_field_name("destination") is not None:
                op = child.children[0].text.decode("utf-8", "replace") if child.children else ""
                if op in (">", ">>", ">|"):
                    target = target or child
        if body is not None:
            self._stmt(body, ft)
        if heredoc is not None and target is not None:
            self._capture_heredoc(heredoc, target, ft)

    def _capture_heredoc(self, heredoc, target, ft: FileText) -> None:
        dest = target.child_by_field_name("destination")
        if dest is None:
            return
        fields = self._word_fields(dest, ft)
        if len(fields) != 1 or fields[0].text is None:
            return
        body = next((c for c in heredoc.children if c.type == "heredoc_body"), None)
        if body is None:
            return
        start_tok = next((c for c in heredoc.children if c.type == "heredoc_start"), None)
        quoted = start_tok is not None and any(q in start_tok.text.decode("utf-8", "replace") for q in "'\"\\")
        loc = self._loc(body, ft)
        if quoted:
            segs: list[Seg] = [Seg(ft.text[loc.start:loc.end], loc, True)]
        else:
            segs = []
            pos = body.start_byte
            for child in body.children:
                if child.start_byte > pos:
                    segs.append(self._raw_seg(ft, pos, child.start_byte))
                if child.type in ("simple_expansion", "expansion", "command_substitution", "arithmetic_expansion"):
                    for piece in self._expansion_pieces(child, ft, quoted=True):
                        segs.extend(piece.segs)
                elif child.type == "heredoc_content":
                    segs.append(self._raw_seg(ft, child.start_byte, child.end_byte))
                else:
                    segs.append(self._raw_seg(ft, child.start_byte, child.end_byte))
                pos = child.end_byte
            if pos < body.end_byte:
                segs.append(self._raw_seg(ft, pos, body.end_byte))
        self.virtual_files[fields[0].text] = (Field(tuple(join_segs(segs)), loc), loc)

    def _raw_seg(self, ft: FileText, start_byte: int, end_byte: int) -> Seg:
        start, end = ft.char(start_byte), ft.char(end_byte)
        return Seg(ft.text[start:end], Loc(ft.path, start, end), True)

    def _pipeline(self, node, ft: FileText) -> None:
        self._block(node.named_children, ft)

    def _function_def(self, node, ft: FileText) -> None:
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name is not None and body is not None:
            self._impure = True  # the memo keeps no syntax node: a statement that defines one is evaluated each time
            self.functions[name.text.decode("utf-8", "replace")] = (body, ft)

    def _assignments(self, node, ft: FileText) -> None:
        for child in node.named_children:
            if child.type == "variable_assignment":
                self._assign(child, ft)

    def _declaration(self, node, ft: FileText) -> None:
        keyword = node.children[0].text.decode("utf-8", "replace") if node.children else ""
        options = ""
        for child in node.named_children:
            if child.type == "word" and child.text.startswith(b"-"):
                options += child.text.decode("utf-8", "replace")
        for child in node.named_children:
            if child.type == "variable_assignment":
                if "A" in options:
                    nm = child.child_by_field_name("name")
                    if nm is not None:
                        self._set(nm.text.decode("utf-8", "replace"),
                                  VarValue(scalar=(Seg("", None, False, "an associative array"),)), self._loc(child, ft))
                    continue
                self._assign(child, ft)
            elif child.type == "variable_name" and keyword in ("local", "declare", "typeset"):
                name = child.text.decode("utf-8", "replace")
                if self._reads is not None:
                    self._note_read(name)
                    self._note_write(name)
                if name not in self.env.values:
                    self.env.values[name] = VarValue(scalar=(), assigned_at=self._loc(child, ft))

    def _if(self, node, ft: FileText) -> None:
        branches: list[tuple[list, list]] = []
        else_body: list | None = None
        conds: list = []
        body: list = []
        seen_then = False
        for child in node.children:
            kind = child.type
            if kind == "then":
                seen_then = True
            elif kind == "elif_clause":
                sub_conds: list = []
                sub_body: list = []
                sub_then = False
                for sub in child.children:
                    if sub.type == "then":
                        sub_then = True
                    elif sub.is_named and sub.type != "comment":
                        (sub_body if sub_then else sub_conds).append(sub)
                branches.append((sub_conds, sub_body))
            elif kind == "else_clause":
                else_body = [c for c in child.named_children if c.type != "comment"]
            elif child.is_named and kind != "comment":
                (body if seen_then else conds).append(child)
        branches.insert(0, (conds, body))
        self._branches(node, ft, branches, else_body)

    def _branches(self, node, ft: FileText, branches: list[tuple[list, list]], else_body: list | None) -> None:
        chosen: int | None = None
        certain = True
        for idx, (conds, _body) in enumerate(branches):
            verdict = self._condition(conds, ft)
            if verdict is True:
                chosen = idx
                break
            if verdict is None:
                chosen, certain = idx, False
                break
        all_bodies = [b for _, b in branches] + ([else_body] if else_body is not None else [])
        if chosen is None:
            chosen = len(branches) if else_body is not None else None
        if not certain and any(self._assigns_in(b) for b in all_bodies):
            first_line = self._span(self._loc(node, ft)).line
            taken = all_bodies[chosen] if chosen is not None and chosen < len(all_bodies) else []
            where = f" (line {self._span(self._loc(taken[0], ft)).line})" if taken else ""
            self._diag("TL012", f"the condition at line {first_line} is not known statically; trainlint follows "
                       f"its first possible branch{where} for the values assigned in it",
                       self._loc(node.children[0], ft))
        self._walk_branches(all_bodies, chosen, certain, ft)

    def _assigns_in(self, nodes: list | None) -> bool:
        if not nodes:
            return False
        stack = list(nodes)
        while stack:
            n = stack.pop()
            if n.type in ("variable_assignment", "variable_assignments"):
                return True
            stack.extend(n.named_children)
        return False

    def _case(self, node, ft: FileText) -> None:
        value_node = node.child_by_field_name("value")
        value = self._string_of(value_node, ft) if value_node is not None else None
        items = [c for c in node.named_children if c.type == "case_item"]
        branches: list[tuple[list, list]] = []
        chosen: int | None = None
        certain = True
        for idx, item in enumerate(items):
            patterns = []
            body = []
            seen_paren = False
            for i, child in enumerate(item.children):
                fname = item.field_name_for_child(i)
                if fname == "value" and not seen_paren:
                    patterns.append(child)
                elif child.type == ")":
                    seen_paren = True
                elif seen_paren and child.is_named and fname != "termination":
                    body.append(child)
            branches.append((patterns, body))
            if chosen is None:
                if value is None:
                    chosen, certain = idx, False
                else:
                    for pat in patterns:
                        ptext = self._string_of(pat, ft)
                        if ptext is None:
                            chosen, certain = idx, False
                            break
                        matched = self._matches(value, ptext)
                        if matched is None:
                            chosen, certain = idx, False
                            break
                        if matched:
                            chosen = idx
                            break
        if value is None and value_node is not None and self._from_arguments(value_node, ft):
            # `case $1 in --no-deepspeed) ... *) ...`: the script's own arguments. Read as run
            # without them (the values it documents, as for ${1:-default}): the value is empty, so
            # only a pattern that matches "" (`*)`) runs, and the defaults set before stand.
            empty = None
            for idx, (patterns, _body) in enumerate(branches):
                texts = [self._string_of(p, ft) for p in patterns]
                if any(t is not None and self._matches("", t) for t in texts):
                    empty = idx
                    break
            self._walk_branches([b for _, b in branches], empty, False, ft)
            return
        if not certain and any(self._assigns_in(b) for _, b in branches):
            self._diag("TL012", "the `case` value is not known statically; trainlint follows its first branch "
                       "for the values assigned in it", self._loc(node.children[0], ft))
        self._walk_branches([b for _, b in branches], chosen, certain, ft)

    def _from_arguments(self, node, ft: FileText) -> bool:
        """The word's only unknowns are the script's positional parameters (``$1``, ``$key`` set from it)."""
        segs = [s for p in self._pieces(node, ft, quoted=True) for s in p.segs if s.unknown is not None]
        return bool(segs) and all("positional parameter" in (s.unknown or "") for s in segs)

    def _walk_branches(self, bodies: list, chosen: int | None, certain: bool, ft: FileText) -> None:
        """Evaluate the chosen branch for real (its values marked uncertain unless the condition
        was decided) and the others quietly on a copy of the environment, so that their commands
        are still found but their assignments do not leak."""
        for idx, body in enumerate(bodies):
            if body is None:
                continue
            if idx == chosen:
                if not certain:
                    self._uncertain += 1
                try:
                    self._block(body, ft)
                finally:
                    if not certain:
                        self._uncertain -= 1
            else:
                saved = self.env
                self.env = self.env.copy()
                self._quiet += 1
                try:
                    self._block(body, ft)
                finally:
                    self._quiet -= 1
                    self.env = saved

    def _loop_stmt(self, node, ft: FileText) -> None:
        var = node.child_by_field_name("variable")
        loc = self._loc(node, ft)
        if var is not None:
            name = var.text.decode("utf-8", "replace")
            self._set(name, VarValue(scalar=(Seg("", self._loc(var, ft), False, f"${name} (a loop variable)"),)),
                      self._loc(var, ft), record=False)
        body = node.child_by_field_name("body")
        saved_loop = self._loop
        self._loop = self._loop or Loc(loc.path, loc.start, self._loc(node.children[0], ft).end)
        self._uncertain += 1
        try:
            if body is not None:
                self._block(body.named_children, ft)
        finally:
            self._uncertain -= 1
            self._loop = saved_loop

    # ------------------------------------------------------------ assignment

    def _set(self, name: str, value: VarValue, loc: Loc, record: bool = True) -> None:
        if self._uncertain:
            value.uncertain = True
            if value.array is not None:
                value.array = [Field(tuple([g.as_uncertain() for g in f.segs]), f.site, True) for f in value.array]
            if value.scalar is not None:
                value.scalar = tuple([g.as_uncertain() for g in value.scalar])
        value.assigned_at = value.assigned_at or loc
        if self._writes is not None:
            self._note_write(name)
        self.env.values[name] = value
        if record and not self._quiet:
            self.assignments.append(Assignment(name, value, loc))

    def _unset_command(self, node, ft: FileText) -> None:
        for c in node.named_children:
            if c.type in ("variable_name", "word"):
                self._unset(c.text.decode("utf-8", "replace"))

    def _unset(self, name: str) -> None:
        if self._writes is not None:
            self._note_write(name)
        self.env.values.pop(name, None)

    def _assign(self, node, ft: FileText, apply: bool = True) -> tuple[str, VarValue] | None:
        name_node = node.child_by_field_id(shell_text.NAME_FIELD)
        value_node = node.child_by_field_id(shell_text.VALUE_FIELD)
        if name_node is None:
            return None
        # `+=` right after the name (the grammar: name, `=` or `+=`, value): read from the bytes, not
        # by making a node of every child
        append = ft.data.startswith(b"+=", name_node.end_byte)
        table = ft._char_of_byte
        if table is None:  # self._loc(node, ft), written out (every assignment)
            loc = Loc(ft.path, node.start_byte, node.end_byte)
        else:
            loc = Loc(ft.path, table[node.start_byte], table[node.end_byte])
        index: int | None = None
        if name_node.type == "subscript":
            base = name_node.child_by_field_name("name")
            idx_node = name_node.child_by_field_name("index")
            name = base.text.decode("utf-8", "replace") if base is not None else name_node.text.decode()
            idx_text = self._string_of(idx_node, ft) if idx_node is not None else None
            try:
                index = int(idx_text) if idx_text is not None else None
            except ValueError:
                index = None
            if index is None:
                self._set(name, VarValue(scalar=(Seg("", loc, False, f"${name} (an array element with an unknown index)"),)), loc)
                return None
        else:
            name = ft.data[name_node.start_byte:name_node.end_byte].decode("utf-8", "replace")  # node.text, without a node call
        if self._reads is not None:
            self._note_read(name)
        old = self.env.values.get(name)
        value_kind = value_node.type if value_node is not None else None  # read once (each read makes a new str)
        if value_node is None:
            new = VarValue(scalar=())
        elif value_kind == "array":
            elements = self._fields_of_words(value_node.named_children, ft, rejoin=False)
            if append and old is not None:
                base = old.as_fields() if old.is_array else ([Field(old.scalar or (), old.assigned_at)] if old.scalar else [])
                new = VarValue(array=base + elements)
            else:
                new = VarValue(array=elements)
        else:
            if (value_kind == "word" or value_kind == "number") and self._depth < MAX_NESTING:
                # a literal (`A=8`, `A=/path`): its one piece, as _pieces makes it (a literal has no
                # nesting to count), without the pieces and the joining (_loc and _literal_at written out)
                start, end = value_node.start_byte, value_node.end_byte
                if table is not None:
                    start, end = table[start], table[end]
                raw = ft.text[start:end]
                value_loc = Loc(ft.path, start, end)
                seg = Seg(raw, value_loc, True) if "\\" not in raw else unescaped_seg(raw, value_loc, _ESCAPE)
                segs: tuple[Seg, ...] = (seg,) if seg.text or seg.unknown is not None else ()
            else:
                pieces = self._pieces(value_node, ft, quoted=True, kind=value_kind)
                # An assignment is one word: bash joins the elements of "${A[@]}" in it with spaces.
                joined: list[Seg] = []
                for p in pieces:
                    if p.field_break_before and joined:
                        joined.append(Seg(" ", None, False))
                    joined.extend(p.segs)
                segs = tuple(join_segs(joined))
            if index is not None:
                arr = old.as_fields() if old is not None and old.is_array else (
                    [Field(old.scalar or (), old.assigned_at)] if old is not None and old.scalar else [])
                while len(arr) <= index:
                    arr.append(Field((), loc))
                arr[index] = Field(segs, self._loc(value_node, ft))
                new = VarValue(array=arr)
            elif append and old is not None:
                if old.is_array:
                    arr = old.as_fields()
                    if arr:
                        arr[0] = Field(arr[0].segs + segs, arr[0].site)
                    else:
                        arr = [Field(segs, loc)]
                    new = VarValue(array=arr)
                else:
                    new = VarValue(scalar=tuple(old.scalar or ()) + segs)
            else:
                new = VarValue(segs)
        if apply:
            self._set(name, new, loc)
        return name, new

    # --------------------------------------------------------------- command

    def _command(self, node, ft: FileText) -> None:
        name_node = node.child_by_field_id(shell_text.NAME_FIELD)
        if name_node is None:
            # Only assignments: they apply to the shell itself.
            for child in node.children:
                if child.type == "variable_assignment":
                    self._assign(child, ft)
            return
        prefix: dict[str, Field] = {}
        name_start = name_node.start_byte
        # a node starts where its first child does: the name first (most commands), no prefix to look at
        if node.start_byte < name_start:
            for child in node.children:  # assignments written before the command name (redirections are skipped)
                if child.start_byte >= name_start:
                    break
                if child.type == "variable_assignment":
                    result = self._assign(child, ft, apply=False)
                    if result is not None:
                        nm, value = result
                        prefix[nm] = Field(value.as_scalar(), self._loc(child, ft))
        # the name, then the arguments in order (asked by field id: no field name looked up per child)
        words = [name_node, *node.children_by_field_id(shell_text.ARGUMENT_FIELD)]
        if len(words) > MAX_WORDS:
            self._diag("TL012", f"the command has {len(words)} words; only the first {MAX_WORDS} are read "
                       "(a real launch command has a few hundred)", self._loc(words[MAX_WORDS], ft))
            words = words[:MAX_WORDS]
        fields = self._fields_of_words(words, ft, rejoin=True)
        if not fields:
            return
        loc = self._loc(node, ft)
        self._dispatch(fields, loc, prefix, ft, node)

    def _fields_of_words(self, words: list, ft: FileText, rejoin: bool) -> list[Field]:
        """The fields of ``words`` (a command's, an array's elements; comments skipped), each as
        :meth:`_word_fields` gives it; ``rejoin``: a word tree-sitter-bash cut after a ``$`` is read
        as one (:func:`split_at_dollar`, a command's words)."""
        fields: list[Field] = []
        i = 0
        count = len(words)
        # _word_fields' literal case (most words: `--num-layers`, `24`) written out below; these do
        # not change while the words are expanded
        literal_ok = self._depth < MAX_NESTING
        table, path, text = ft._char_of_byte, ft.path, ft.text
        uncertain = bool(self._uncertain)
        while i < count:
            word = words[i]
            kind = word.type  # read once here, handed on (each read makes a new str)
            if (kind == "word" or kind == "number") and literal_ok:
                # = self._word_fields(word, ft, kind): its step, then the literal's one field
                steps = self._steps = self._steps + 1
                if not steps & 63 or steps > MAX_STEPS:
                    self._step_checks(word, ft)
                start, end = word.start_byte, word.end_byte
                if table is not None:
                    start, end = table[start], table[end]
                loc = Loc(path, start, end)
                raw = text[start:end]
                fields.append(Field((Seg(raw, loc, True) if "\\" not in raw else unescaped_seg(raw, loc, _ESCAPE),),
                                    loc, uncertain))
                i += 1
                continue
            if kind == "comment":
                i += 1
                continue
            # split_at_dollar's first test (a concatenation) made here: most words are not one
            if rejoin and kind == "concatenation" and i + 1 < count and split_at_dollar(word, words[i + 1]):
                fields.extend(self._rejoined_fields(word, words[i + 1], ft))
                i += 2
                continue
            fields.extend(self._word_fields(word, ft, kind))
            i += 1
        return fields

    def _dispatch(self, fields: list[Field], loc: Loc, prefix: dict[str, Field], ft: FileText, node=None,
                  via_eval: bool = False) -> None:
        head = fields[0].text
        args = fields[1:]
        if head in ("source", "."):
            if args:
                self._source(args[0], loc)
            return
        if head == "eval":
            self._eval(args, loc, prefix)
            return
        if head == "export" or head == "readonly":
            return
        if head == "unset":
            for a in args:
                if a.text and not a.text.startswith("-"):
                    self._unset(a.text)
            return
        if head == "read":
            for a in args:
                t = a.text
                if t and not t.startswith("-") and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t):
                    self._set(t, VarValue(scalar=(Seg("", a.site, False, f"${t} (read at run time)"),)), loc)
            return
        if head in self.functions:
            # deeper calls (recursion) are not followed, and are not programs either
            if self._call_depth >= MAX_CALL_DEPTH or not self._may_follow("call", loc):
                return
            self._impure = True  # a call evaluates a syntax node of its own: not replayed
            self.called.add(head)
            body, fft = self.functions[head]
            self._call_depth += 1
            self.call_arguments.append(args)  # `run() { "$@"; }; run torchrun ...`: the launch is seen
            try:
                self._stmt(body, fft)
            finally:
                self.call_arguments.pop()
                self._call_depth -= 1
            return
        if len(self.commands) >= MAX_COMMANDS:
            self.diagnostics.append(input_diagnostic(
                "TL012", f"the script runs more than {MAX_COMMANDS:,} commands; trainlint stops reading it here, "
                "and the commands after this point are not checked", self._span(loc), path=loc.path,
                severity=Severity.ERROR))
            raise _OutOfSteps
        self.commands.append(Command(fields, loc, prefix, self._loop, via_eval, bool(self._uncertain)))

    def _source(self, target: Field, loc: Loc) -> None:
        self._impure = True  # another file, read again each time: not replayed
        base = os.path.dirname(self.root_path)
        here = os.path.dirname(loc.path)
        candidates: list[str] = []
        text = target.text
        if text is not None:
            if os.path.isabs(text):
                candidates.append(text)
            else:
                candidates += [os.path.join(here, text), os.path.join(base, text)]
        else:
            tail = target.known_tail.lstrip("/")
            if tail:
                d = here
                for _ in range(4):
                    candidates.append(os.path.join(d, tail))
                    d = os.path.dirname(d)
        if len(self._source_stack) > MAX_SOURCE_DEPTH:
            self._diag("TL012", "`source` nested too deeply; not followed", loc)
            return
        if not self._may_follow("`source`", loc):
            return
        from trainlint.files.containment import contained, outside_message, roots_for

        roots = roots_for(self.root_path)
        for cand in candidates:
            norm = os.path.normpath(cand)
            if os.path.abspath(norm) in self._source_stack:
                return
            if not contained(norm, roots):
                if os.path.exists(norm):
                    self._diag("TL012", outside_message("sourced file", text or norm, roots), target.value_loc or loc)
                    return
                continue
            try:
                source = self.read(norm)
            except UnreadableSource:
                continue
            except OSError:
                continue
            self._eval_file(source, loc)
            return
        where = target.value_loc or loc
        if text is not None:
            looked = ", ".join(sorted({os.path.dirname(c) or "." for c in candidates}))
            self._diag("TL013", f"sourced file `{text}` not found (looked in {looked}); the variables it sets are unknown", where)
        else:
            self._diag("TL012", f"`source {target.partial_text}`: the path is not known statically; the variables it "
                       "sets are unknown", where)

    def _eval(self, args: list[Field], loc: Loc, prefix: dict[str, Field]) -> None:
        if not args:
            return
        # Re-split the string (bash parses it again). A list operator (`cd $REPO && pwd && python
        # ...`) or a pipe starts another command, each dispatched on its own; a redirection ends
        # the words of the command it belongs to.
        pieces: list[Piece] = []
        for i, a in enumerate(args):
            pieces.append(Piece(list(a.segs), True, i > 0))
        fields = split_pieces(pieces, loc)
        commands: list[list[Field]] = [[]]
        redirected = False
        for f in fields:
            t = f.text
            if t is not None and t in _COMMAND_BREAKS:
                commands.append([])
                redirected = False
            elif redirected or (t is not None and (t in _STOP_WORDS or t.startswith(("2>", "1>", ">", "&>", "|")))):
                redirected = True
            else:
                commands[-1].append(_dequote(f))
        commands = [c for c in commands if c]
        if not commands or commands[0][0].text is None:
            what = args[0].partial_text[:40]
            self._diag("TL012", f"`eval` of a string that is not known statically (`{what}`); the arguments behind it "
                       "are not checked", loc)
            return
        for out in commands:
            if out[0].text is not None:
                self._dispatch(out, loc, prefix, self.files[loc.path], via_eval=True)


def _dequote(f: Field) -> Field:
    """Remove the quote characters an eval'd string carries (``--data-path "$X"``)."""
    for s in f.segs:  # a loop, not any(generator): this runs for every word of an eval'd string
        if s.unknown is None and ('"' in s.text or "'" in s.text):
            break
    else:
        return f  # nothing to remove: the same field (and the text it has worked out already)
    out = []
    for s in f.segs:
        if s.unknown is None and ('"' in s.text or "'" in s.text):
            # the rest of the word keeps its place, character by character, where it is known
            out.append(without_chars(s, "\"'"))
        else:
            out.append(s)
    return Field(tuple(out), f.site, f.uncertain)


# handlers by node type; what a handler returns is not used here
_STATEMENTS: dict[str, Callable[[ShellEvaluator, Any, FileText], object]] = {
    "program": ShellEvaluator._program,
    "command": ShellEvaluator._command,
    "variable_assignment": ShellEvaluator._assign,  # (its result, for its other callers, is not used here)
    "variable_assignments": ShellEvaluator._assignments,
    "declaration_command": ShellEvaluator._declaration,
    "unset_command": ShellEvaluator._unset_command,
    "if_statement": ShellEvaluator._if,
    "case_statement": ShellEvaluator._case,
    "for_statement": ShellEvaluator._loop_stmt,
    "c_style_for_statement": ShellEvaluator._loop_stmt,
    "while_statement": ShellEvaluator._loop_stmt,
    "compound_statement": ShellEvaluator._compound,
    "subshell": ShellEvaluator._subshell,
    "list": ShellEvaluator._list,
    "pipeline": ShellEvaluator._pipeline,
    "negated_command": ShellEvaluator._negated,
    "redirected_statement": ShellEvaluator._redirected,
    "function_definition": ShellEvaluator._function_def,
}


def _within(places: dict[int, int], start: int, end: int) -> tuple[tuple[int, int], ...]:
    """The placeholders (start -> end offsets) inside ``start:end`` (none in most scripts)."""
    if not places:
        return ()
    return tuple((a, b) for a, b in places.items() if start <= a and b <= end)


def _positional(environment: dict[str, str]) -> tuple[str, ...] | None:
    """``{"1": "a", "3": "c"}`` -> ("a", "", "c"): the arguments a user gave by number; None without any."""
    numbers = [int(k) for k in environment if k.isdigit() and k != "0"]
    if not numbers:
        return None
    return tuple(environment.get(str(i), "") for i in range(1, min(max(numbers), 256) + 1))


def evaluate(source: SourceText, read: Callable[[str], SourceText], environment: dict[str, str] | None = None) -> ShellResult:
    """Evaluate ``source`` (see the module docstring); bounded by MAX_STEPS and MAX_NESTING."""
    evaluator = ShellEvaluator(source, read, environment)
    try:
        return evaluator.run()
    except RecursionError:  # a recursion MAX_NESTING does not count: still a diagnostic, not a crash
        evaluator.diagnostics.append(input_diagnostic(
            "TL002", "shell syntax: nesting too deep; the script is read only up to here", path=source.path))
        return evaluator.result()
