"""The Megatron argument table (from schemas/megatron.schema.json) and an argparse-like reader.

The reader follows argparse as Megatron configures it (``allow_abbrev=False``): option strings
match exactly, so ``--num_layers`` is an error in Megatron even though everyone understands it;
trainlint reports it (TL004, with the right spelling) and still reads the value so the rest of the
checks can run. ``--flag=value`` is accepted, a repeated flag keeps the last value (TL011).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, TypeGuard

from trainlint.core.diagnostics import Applicability, Diagnostic, Edit, Related, Severity
from trainlint.core.input_codes import input_diagnostic
from trainlint.core.numbers import read_int
from trainlint.core.positions import Span
from trainlint.core.framework import framework_of
from trainlint.core.spec import MEGATRON_DEEPSPEED as DEEPSPEED  # noqa: F401 - the dialect names, re-exported
from trainlint.core.spec import MEGATRON_LEGACY as LEGACY  # noqa: F401
from trainlint.core.spec import MEGATRON_LM as CURRENT
from trainlint.files.did_you_mean import did_you_mean

from trainlint.adapters.megatron.flag_table import FlagInfo, FlagTable, flag_table
from trainlint.adapters.megatron.words import Field, Loc, Seg


MAX_ARGUMENTS = 5000
"""Arguments read per command: bounds time and memory on a generated or hostile script."""


# Entry points whose arguments are exactly Megatron's own (plus what x-entry-points lists for them):
# an unknown flag there is an error. Other scripts may add arguments of their own.
CORE_ENTRY_POINTS = (
    "pretrain_gpt.py", "pretrain_bert.py", "pretrain_t5.py", "pretrain_mamba.py", "pretrain_hybrid.py",
    "pretrain_retro.py", "pretrain_ict.py", "pretrain_vision_classify.py", "pretrain_vision_classification.py",
    "pretrain_vision_dino.py", "pretrain_vision_inpaint.py", "pretrain_vlm.py", "pretrain_gpt2.py",
    "train_rl.py",
)


def entry_matches(entry: str | None, patterns: tuple[str, ...]) -> bool:
    if not entry:
        return False
    path = entry.replace("\\", "/")
    return any(path == p or path.endswith("/" + p) or (("/" not in p) and path.rsplit("/", 1)[-1] == p)
               for p in patterns)


def is_core_entry(entry: str | None) -> TypeGuard[str]:
    if not entry:
        return False
    return entry.replace("\\", "/").rsplit("/", 1)[-1] in CORE_ENTRY_POINTS


@dataclass(slots=True)  # one per argument of every command
class Setting:
    """One argument as given: the flag, its value (converted) and where both are written."""

    info: FlagInfo
    flag_text: str
    flag_field: Field
    value: Any
    value_fields: list[Field] = field(default_factory=list)
    value_loc: Loc | None = None
    unresolved: str | None = None
    invalid: bool = False
    inline: bool = False


@dataclass
class ParsedArgs:
    settings: dict[str, Setting] = field(default_factory=dict)
    """By destination; the last occurrence wins."""
    order: list[Setting] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    unknown_flags: list[str] = field(default_factory=list)
    passthrough: list[Field] = field(default_factory=list)
    """Fields whose content is unknown (``$@``, ``${EXTRA_ARGS}`` from the environment)."""
    unlisted: list[tuple[str, str | None, Span | None]] = field(default_factory=list)
    """Flags the target does not define, no misspelling and no certain error: (name, path, span),
    reported by :func:`unknown_summary`, one finding per file."""
    unlisted_why: str = ""
    unlisted_severity: Severity = Severity.WARNING
    """INFO when the entry point adds arguments of its own that trainlint could not read."""
    other_release: tuple[str, ...] = ()
    """With the Megatron version assumed: the script's flags (two or more, at upstream's own entry
    point) that upstream does not define and that misspell none it does (`--use-tfrecords`,
    `--presplit-sentences`): it is written for another release or a fork (empty: nothing says so)."""


def _looks_like_flag(text: str) -> bool:
    if not text.startswith("-") or text == "-" or text == "--":
        return False
    if text[1] == "-":
        return True  # "--x" (most words here): no number has two signs, so float() would only raise
    try:
        float(text)
        return False  # a negative number is a value
    except ValueError:
        return True


def _flag_word(f: Field, name: str) -> Loc | None:
    """Where the flag ``name`` of the field (``--flag`` or the flag of ``--flag=value``) is written
    exactly as its characters (one piece, no quote, escape or continuation inside), so that an edit
    of that place changes this word and nothing else; None when it is not: a fix is then not
    offered (issue 27)."""
    if len(f.segs) != 1:
        return None
    seg = f.segs[0]
    if seg.unknown is not None or not seg.text.startswith(name) or seg.text[len(name):len(name) + 1] not in ("", "="):
        return None
    if len(seg.text) != len(name):
        seg = seg.piece(0, len(name))
    loc = seg.loc
    if not seg.exact or loc is None or loc.end - loc.start != len(name):
        return None
    return loc


def _is_value_field(f: Field) -> bool:
    t = f.text
    if t is None:
        return not (f.segs and f.segs[0].unknown is None and f.segs[0].text.startswith("--"))
    return not _looks_like_flag(t)


class ArgReader:
    """Reads a Megatron argument list the way argparse would, reporting at source positions."""

    fast_path = True
    """Read the usual argument with :meth:`_plain` (False: every one with :meth:`_known`, for the
    tests that compare the two)."""

    def __init__(self, table: FlagTable, span_of: Callable[[Loc | None], tuple[str | None, Span | None]],
                 dialect: str, entry: str | None, default_path: str, target: Any = None) -> None:
        self.target = target
        """The :class:`~trainlint.frameworks.target.FrameworkTarget` checked against (None: assumed upstream)."""
        self.keys = framework_of("megatron").key_catalog(target)
        """The framework's one key catalog for this target (the checked release's arguments, when read)."""
        release = self.keys.release()
        if release is not None:
            from trainlint.adapters.megatron.target_flags import table_for

            table = table_for(release)
        from trainlint.frameworks.entry_args import entry_arguments

        read = entry_arguments(entry, default_path, target.path if target is not None else None)
        self.entry_read = read is not None and read.complete
        """The entry point's file was read, and what it adds to the parser is all in the table."""
        if read is not None and read.scan.args:
            from trainlint.adapters.megatron.target_flags import with_entry

            table = with_entry(table, read.scan, entry or "")
        self.table = table
        self.span_of = span_of
        self.dialect = dialect
        self.entry = entry
        self.default_path = default_path
        self.out = ParsedArgs()
        self._reported_unknown: set[tuple] = set()
        self._shape_from_checkpoint: bool | None = None
        self._given: list[Field] = []
        """The arguments :meth:`read` was given, as given."""
        self._foreign: list[str] = []
        """Flags the target does not define that are no misspelling of one it does."""
        self._site: Loc | None = None
        """Where the argument being read is written in the command (its Field's site)."""
        self._refused: list[tuple[int, int, str]] = []
        """(first, end) diagnostics index range and spelling of each flag the target keeps only to refuse."""
        self._unlisted: list[tuple[str, Loc | None]] = []
        """Flags the target does not define, no misspelling of one it does and no certain error:
        reported together by :meth:`_unknown_summary`."""

    # -------------------------------------------------------------- helpers

    def _diag(self, code: str, message: str, loc: Loc | None, severity: Severity | None = None,
              related: tuple[Related, ...] = (), fix: str | None = None,
              applicability: Applicability | None = None, edit: str | None = None,
              edit_at: Loc | None = None) -> None:
        """``edit``: the fix's new text for the word at ``edit_at`` (default ``loc``)."""
        path, span = self.span_of(loc)
        related = related + self._use_site(loc)
        diag = input_diagnostic(code, message, span or Span(1, 1, 1, 1), path=path or self.default_path,
                                severity=severity, related=related, fix=fix)
        if applicability is not None and fix:
            from dataclasses import replace

            edit_path, edit_span = (path, span) if edit_at is None else self.span_of(edit_at)
            edits = (Edit(edit_span, edit, edit_path),) if edit is not None and edit_span is not None and edit_path else ()
            diag = replace(diag, applicability=applicability, edits=edits)
        self.out.diagnostics.append(diag)

    # ------------------------------------------------------------ the target

    @property
    def _known_target(self) -> bool:
        """The version is known (source read, pinned, installed) and everything in it was read."""
        t = self.target
        return t is not None and t.known and t.complete

    def _against(self) -> str:
        """What the flag was checked against, for messages."""

        t = self.target
        if t is None or not t.known:
            commit = t.commit if t is not None and t.commit else None
            what = f"upstream Megatron-LM at {commit}" if commit else "upstream Megatron-LM"
            return f"checked against {what}, assumed"  # the file's statement says once how to state another
        if not t.complete:
            return (f"checked against {t.describe()}, whose arguments trainlint could not all read statically "
                    f"({self.keys.release().partial[0]})")
        return f"checked against {t.describe()}"

    def _removed_in(self, name: str) -> str | None:
        """For a pinned release: "was removed in core_v0.9.0" when an earlier release of the same
        variant defines the name (the only case where trainlint knows that it was removed)."""
        t = self.target
        if t is None or not t.known or not t.version or t.path is not None:
            return None
        from trainlint.frameworks.catalog import shipped_index

        # bit i of the name's mask: the family's i-th shipped release defines it
        mask = self.keys.release_masks()[1].get(name, 0)
        family = [e for e in shipped_index() if e.family == "megatron"]
        bits = [i for i, e in enumerate(family) if e.variant == t.variant]
        line = [family[i] for i in bits]
        idx = next((k for k, e in enumerate(line) if e.version == t.version), None)
        if idx is None:
            return None
        last = None
        for k in range(idx - 1, -1, -1):
            if mask >> bits[k] & 1:
                last = k
                break
        if last is None:
            return None
        return (f"`{name}` was removed from {t.variant} in {line[last + 1].version} (defined up to {line[last].version}); "
                f"{t.describe()}, which this config is checked against, exits with \"unrecognized arguments\"")

    def _renamed(self, name: str) -> list[str] | None:
        """An unknown name that upstream Megatron-LM renamed, in any spelling (a fork's ``--batch_size``
        is upstream's ``--batch-size``, replaced by ``--micro-batch-size``): the new name as the target
        spells it, when the target defines it. A closer string (``--mem-batch-size``) is not what the
        author meant."""
        hyphenated = "--" + name.lstrip("-").replace("_", "-")
        for info in flag_table().candidates(hyphenated) or ():
            replacement = (info.deprecated or {}).get("replacement")
            if not replacement or " " in replacement.strip():
                continue
            match = did_you_mean(replacement, self.table.all_flags)
            if match and match[0].lstrip("-").replace("_", "-") == replacement.lstrip("-").replace("_", "-"):
                return match
        return None

    def _fork_defining(self, name: str):
        """The fork found beside the config that defines ``name`` while the project config names
        another target (None otherwise)."""
        from trainlint.frameworks.target import TargetOrigin

        t = self.target
        if t is None or t.origin is not TargetOrigin.PROJECT_CONFIG:
            return None
        from trainlint.frameworks.locate import fork_beside

        fork = fork_beside("megatron", self.default_path)
        if fork is None or fork.path == t.path or not framework_of("megatron").key_catalog(fork).defines(name):
            return None
        return fork

    def _elsewhere(self, name: str) -> str:
        where = self.keys.defined_by(name)
        return f" ({where})" if where else ""

    def _use_site(self, loc: Loc | None) -> tuple[Related, ...]:
        """Where the word a finding is about reaches the command, when that is elsewhere than the word
        (``$GPT_ARGS``, ``"${ARGS[@]}"``, a variable of a sourced file): a related location."""
        site = self._site
        if site is None or loc is None or site is loc:
            return ()
        if site.path == loc.path and site.start <= loc.start and loc.end <= site.end:
            return ()
        return self._related("used by the command here", site)

    def _related(self, message: str, loc: Loc | None) -> tuple[Related, ...]:
        path, span = self.span_of(loc)
        if span is None:
            return ()
        return (Related(message, span, path),)

    def _choose(self, flag: str) -> FlagInfo | None:
        only = self.table.only.get(flag)
        if only is not None:
            return only
        cands = self.table.candidates(flag)
        if not cands:
            return None
        if len(cands) == 1:
            self.table.only[flag] = cands[0]
            return cands[0]
        for c in cands:
            if c.entry_points and entry_matches(self.entry, c.entry_points):
                return c
        for c in cands:
            if c.entry_points is None and (c.dialects is None or self.dialect in c.dialects):
                return c
        if not is_core_entry(self.entry):
            for c in cands:
                if c.entry_points:
                    return c  # an argument some entry point adds: the script may be one of them
        return cands[0]

    # ---------------------------------------------------------------- main

    @property
    def _shape_elsewhere(self) -> bool:
        """The sizes given are not the ones a model is built from, so trainlint's minimums (its
        own: argparse takes 0 or -1) do not apply: ``--use-checkpoint-args`` (Megatron overrides
        them with the checkpoint's), or an entry point that does not train (evaluation harnesses
        such as Megatron-DeepSpeed's tasks/eval_harness/evaluate.py replace them with the
        checkpoint's arguments; conversion tools set them from the checkpoint)."""
        if self._shape_from_checkpoint is None:
            from trainlint.adapters.megatron.entry_points import trains

            # asked only when a size breaks its minimum (rare): the whole command is searched then
            self._shape_from_checkpoint = any(f.text == "--use-checkpoint-args" for f in self._given) \
                or not trains(self.entry)
        return self._shape_from_checkpoint

    def read(self, fields: list[Field]) -> ParsedArgs:
        self._given = fields
        if len(fields) > MAX_ARGUMENTS:
            self._diag("TL012", f"the command has more than {MAX_ARGUMENTS} arguments; only the first {MAX_ARGUMENTS} are read "
                       "(a real launch command has a few hundred)", fields[MAX_ARGUMENTS].site, severity=Severity.WARNING)
            fields = fields[:MAX_ARGUMENTS]
        i = 0
        n = len(fields)
        fast = self.fast_path
        while i < n:
            f = fields[i]
            self._site = f.site
            text = f.text
            if text is None:
                i += 1
                self._unknown_word(f)
                continue
            # "--x" (most words here) is a flag without the call; _looks_like_flag decides the rest
            if not (len(text) > 2 and text.startswith("--")) and not _looks_like_flag(text):
                j = i
                while j < n and fields[j].text is not None and not _looks_like_flag(fields[j].text):
                    j += 1
                self._strays(fields, i, j)
                i = j
                continue
            # A quoted "--flag value" element (a bash array element) is split like the shell would.
            if " " in text and text.startswith("--") and " " in text.strip():
                parts = _split_field(f)
                fields = fields[:i] + parts + fields[i + 1:]
                n = len(fields)
                continue
            name, eq, inline = text.partition("=") if text.startswith("--") else (text, "", "")
            info = self.table.only.get(name)  # _choose's first answer, without the call (most flags)
            if info is None:
                info = self._choose(name)
            elif fast and not eq and info.entry_points is None and info.deprecated is None:
                after = self._plain(fields, i, info, name, f)
                if after:
                    i = after
                    continue
            spelled = name
            if info is None:
                alt = [a for a in self.table.normalised(name) if a != name]
                if alt:
                    info = self._choose(alt[0])
                    assert info is not None  # alt holds the table's own spellings: each has candidates
                    known = self._known_target
                    tail = "" if known else f" ({self._against()})"
                    if known and self._unknown_severity() is Severity.WARNING:
                        # an entry point trainlint could not read may define this spelling itself
                        known = False
                        tail = f" ({self.entry} may add it with its own argument provider)"
                    self._diag("TL004", f"unknown flag `{name}`: Megatron's argparse matches option strings exactly; "
                               f"did you mean `{alt[0]}`?{tail}", f.value_loc,
                               severity=Severity.ERROR if known else Severity.WARNING, fix=alt[0],
                               applicability=Applicability.SAFE if known else Applicability.UNSAFE,
                               edit=alt[0] if _flag_word(f, name) is not None else None, edit_at=_flag_word(f, name))
                else:
                    i = self._unknown_flag(fields, i, name, bool(eq))
                    continue
            first = len(self.out.diagnostics)
            i = self._known(fields, i, info, spelled, f, inline if eq else None)
            dep = info.deprecated
            if dep is not None and dep.get("status") in ("error", "exits") and self.dialect == CURRENT:
                self._refused.append((first, len(self.out.diagnostics), spelled))
        self._site = None
        self._written_for_another_release()
        self._unknown_summary()
        return self.out

    def _unknown_summary(self) -> None:
        """Hand the flags of this command the target does not define and that are no misspelling
        (:attr:`_unlisted`) to :func:`unknown_summary` (one finding per file, made by the adapter),
        with why that is not a certain error."""
        if not self._unlisted:
            return
        t = self.target
        describe = t.describe() if t is not None else "upstream Megatron-LM"
        own_parser = self._own_parser()
        if own_parser:
            # an entry point trainlint could not read (a converter, an exporter, a fork's task) adds
            # arguments of its own: nothing to act on, said as information
            why = (f"no arguments of {describe}; {self.entry} may add them with its own argument provider, which "
                   "trainlint could not read, so they are not judged")
            self.out.unlisted_severity = Severity.INFO
        elif not self._known_target:
            from trainlint.frameworks.target import how_to_point

            why = (f"no arguments of {describe}, the release assumed (no framework source in the project); a fork or "
                   f"another release may define them: {how_to_point('megatron')}")
        else:
            why = f"no arguments of {describe}"
        self.out.unlisted = [(name, *self.span_of(loc)) for name, loc in self._unlisted]
        self.out.unlisted_why = why

    def _written_for_another_release(self) -> None:
        """A flag upstream keeps only to refuse it (`--batch-size`, `--warmup`, `--checkpoint-activations`)
        breaks a script written for upstream; against an *assumed* upstream its TL008 is a warning
        (:meth:`_dialect_checks`), and so is the type current Megatron gives its value (TL005/TL006:
        GLM's `--warmup` is a float), whatever else the script says. The script's own flags that
        upstream does not define and that misspell none it does (two or more, at upstream's entry
        point: `--use-tfrecords`, `--presplit-sentences`) are recorded as a sign that it is written for
        another release (``other_release``), for messages only: invented names lower nothing (issue 29 G2)."""
        if self._known_target:
            return
        if len(set(self._foreign)) >= 2 and (self.entry is None or is_core_entry(self.entry)):
            self.out.other_release = tuple(sorted(set(self._foreign)))
        from dataclasses import replace

        for first, end, spelled in self._refused:
            for k in range(first, end):
                d = self.out.diagnostics[k]
                if d.severity is not Severity.ERROR or d.code not in ("TL005", "TL006"):
                    continue
                self.out.diagnostics[k] = replace(
                    d, severity=Severity.WARNING,
                    message=f"{d.message} (current Megatron-LM's type of `{spelled}`, a flag it only refuses; "
                            f"{self._against_short()}: the release that runs the script may read it otherwise)",
                    applicability=Applicability.UNSAFE if d.edits else d.applicability)

    def _unknown_severity(self) -> Severity:
        if not self._known_target:
            return Severity.WARNING  # a fork or another release may define it
        if self.entry is None or is_core_entry(self.entry) or self.entry_read:
            return Severity.ERROR
        return Severity.WARNING

    def _strays(self, fields: list[Field], i: int, j: int) -> None:
        """Words that are not flags where argparse expects one: one finding for the run of them."""
        words = [fields[k].text or "" for k in range(i, j)]
        locs = [fields[k].value_loc for k in range(i, j)]
        loc = _cover(locs) or locs[0]
        shown = " ".join(_short(w) for w in words[:4]) + (" ..." if len(words) > 4 else "")
        hint = ""
        prev = self.out.order[-1] if self.out.order else None
        if prev is not None and prev.value_fields:
            last = prev.value_fields[-1]
            if last.site is not None and fields[i].site == last.site and last.site != last.value_loc:
                hint = (f"; they come from the same word as the value of `{prev.flag_text}`: an unquoted expansion "
                        "split it (quote the expansion, e.g. \"${ARGS[@]}\")")
            elif last.value_loc and fields[i].value_loc and last.value_loc.path == fields[i].value_loc.path \
                    and any(s.loc == last.segs[0].loc for s in fields[i].segs if last.segs):
                hint = f"; word splitting cut the value of `{prev.flag_text}` into several words"
        n_words = "argument" if len(words) == 1 else f"{len(words)} arguments"
        # Megatron's parser takes no positional argument: every release refuses a stray word at its own
        # entry point (an entry point of its own may take them)
        certain = not self._own_parser()
        self._diag("TL004", f"unexpected {n_words} `{shown}`: Megatron's argparse exits with \"unrecognized "
                   f"arguments\"{hint}", loc, severity=Severity.ERROR if certain else Severity.WARNING)

    def _unknown_word(self, f: Field) -> None:
        first = f.segs[0] if f.segs else None
        if first is not None and first.unknown is None and first.text.startswith("--"):
            reason = f.unknowns[0].unknown
            key = ("flagname", f.site)
            if key not in self._reported_unknown:
                self._reported_unknown.add(key)
                self._diag("TL007", f"flag name `{_short(f.partial_text)}` is built from {reason}; trainlint cannot "
                           "check it", f.value_loc)
            self.out.passthrough.append(f)
            return
        reason = f.unknowns[0].unknown if f.unknowns else "unknown"
        pass_key = ("pass", reason, f.unknowns[0].loc if f.unknowns else None)
        self.out.passthrough.append(f)
        if pass_key in self._reported_unknown:
            return
        self._reported_unknown.add(pass_key)
        loc = f.unknowns[0].loc if f.unknowns and f.unknowns[0].loc else f.site
        self._diag("TL007", f"arguments from {reason} are only known at launch; the flags in them are not checked",
                   loc, related=self._related("passed here", f.site) if f.site != loc else ())

    def _unknown_flag(self, fields: list[Field], i: int, name: str, inline: bool) -> int:
        f = fields[i]
        removed = self._removed_in(name)
        if removed is not None:
            self._diag("TL008", removed, f.value_loc, severity=Severity.ERROR)
            return self._past_unknown(fields, i, name, inline)
        fork = self._fork_defining(name)
        suggestion = None if fork is not None else (self._renamed(name) or did_you_mean(name, self.table.all_flags))
        tail = f" (did you mean `{suggestion[0]}`?)" if suggestion else ""
        severity = self._unknown_severity()
        extra = ""
        nor = ""
        own_parser = self._own_parser()
        if own_parser:
            extra = f"; {self.entry} may add it with its own argument provider"
        elif self.entry and self.entry_read and not is_core_entry(self.entry):
            nor = f" or of {self.entry} (the arguments its own provider adds, read from it)"
        if self._known_target and not extra:
            message = (f"unknown flag `{name}`{tail}: not an argument of {self.target.describe()}{nor}, so its argparse "
                       f"exits with \"unrecognized arguments\"{self._elsewhere(name)}")
        elif self._known_target:
            message = f"unknown flag `{name}`{tail}: not an argument of {self.target.describe()}{self._elsewhere(name)}{extra}"
        else:
            message = (f"unknown flag `{name}`{tail}{self._elsewhere(name)}{extra}; {self._against()}")
        known = self._known_target
        word = _flag_word(f, name)
        typo = suggestion is not None and bool(suggestion) and _typo(name, suggestion[0])
        if not typo:
            self._foreign.append(name)
        if typo and not known and (self.entry is None or is_core_entry(self.entry)):
            # Two letters from a flag upstream defines: a misspelling, whatever the fork.
            severity = Severity.ERROR
        if fork is not None:
            # The project config names another target than the fork whose source holds this config:
            # the flag is the fork's, so say which names the target lacks without calling the run broken.
            severity = Severity.WARNING
            message += f"; {fork.describe()}, found beside the config, defines it"
        if severity is not Severity.ERROR and (not typo or own_parser) and fork is None:
            # a fork's flag, another entry point's, another release's: one finding per command
            # lists them all (issue 28: ~900 such warnings on 336 configs, all false in a sample)
            self._unlisted.append((name, f.value_loc))
            return self._past_unknown(fields, i, name, inline)
        self._diag("TL004", message, f.value_loc, severity=severity, fix=suggestion[0] if suggestion else None,
                   applicability=(Applicability.SAFE if typo and severity is Severity.ERROR else Applicability.DISPLAY)
                   if suggestion else None, edit=suggestion[0] if suggestion and word is not None else None, edit_at=word)
        return self._past_unknown(fields, i, name, inline)

    def _own_parser(self) -> bool:
        """The entry point is not Megatron's own and trainlint could not read the arguments it adds."""
        return self.entry is not None and not is_core_entry(self.entry) and not self.entry_read

    def _past_unknown(self, fields: list[Field], i: int, name: str, inline: bool) -> int:
        """Record an unknown flag and return the index after it and the values it seems to take."""
        self.out.unknown_flags.append(name)
        i += 1
        if not inline:
            while i < len(fields) and _is_value_field(fields[i]):
                i += 1
        return i

    def _known(self, fields: list[Field], i: int, info: FlagInfo, spelled: str, f: Field, inline: str | None) -> int:
        flag_loc = f.value_loc
        if info.entry_points is not None or info.deprecated is not None:  # nothing to check otherwise (most flags)
            self._dialect_checks(info, spelled, flag_loc, _flag_word(f, spelled))
        i += 1
        value_fields: list[Field] = []
        if info.takes_value:
            nargs = info.nargs
            if inline is not None:
                value_fields = [_inline_field(f, len(spelled) + 1)]
            elif nargs in (None, "?", 1):
                # _is_value_field of a known word written out: not a flag
                if i < len(fields) and ((following := fields[i].text) is None or not _looks_like_flag(following)):
                    value_fields = [fields[i]]
                    i += 1
                elif nargs != "?":
                    self._diag("TL005", f"`{spelled}` expects a value (argparse: expected one argument)", flag_loc)
                    return i
            else:
                limit = nargs if isinstance(nargs, int) else None
                while i < len(fields) and _is_value_field(fields[i]) and (limit is None or len(value_fields) < limit):
                    value_fields.append(fields[i])
                    i += 1
                if (nargs == "+" and not value_fields) or (isinstance(limit, int) and len(value_fields) < limit):
                    want = "at least one value" if nargs == "+" else f"{limit} values"
                    self._diag("TL005", f"`{spelled}` expects {want}", flag_loc)
                    return i
        elif inline is not None:
            self._diag("TL005", f"`{spelled}` takes no value (argparse: ignored explicit argument '{inline}')", flag_loc)
        setting = self._convert(info, spelled, f, value_fields, inline is not None)
        previous = self.out.settings.get(info.dest)
        if previous is not None and info.action != "append":
            first_path, first_span = self.span_of(previous.flag_field.value_loc)
            where = f"line {first_span.line}" if first_span else "earlier"
            if first_path and first_path != self.span_of(flag_loc)[0]:
                where += f" of {first_path}"
            self._diag("TL011", f"`{spelled}` is given twice (first at {where}); the last one wins",
                       flag_loc, related=self._related(f"first `{previous.flag_text}` here", previous.flag_field.value_loc))
        if previous is not None and info.action == "append" and isinstance(previous.value, list):
            setting.value = previous.value + (setting.value if isinstance(setting.value, list) else [setting.value])
        self.out.settings[info.dest] = setting
        self.out.order.append(setting)
        return i

    def _plain(self, fields: list[Field], i: int, info: FlagInfo, spelled: str, f: Field) -> int:
        """:meth:`_known` for the usual argument (most of every command), in one call and without its
        lists: a flag with one definition, nothing to check about it (no entry point, not deprecated),
        given for the first time, that is a switch or takes one written value its type accepts. The
        index after it; 0 (nothing done) otherwise, for :meth:`_known` to read it with its findings.
        The Setting is the one :meth:`_known` makes (tests/test_megatron_fast_paths.py compares them)."""
        if info.dest in self.out.settings:
            return 0  # given twice: TL011
        if info.action == "store":
            nargs = info.nargs
            if (nargs is not None and nargs != 1) or i + 1 >= len(fields):
                return 0
            vf = fields[i + 1]
            text = vf.text
            if text is None or (text[:1] == "-" and _looks_like_flag(text)):
                return 0  # known at launch only (TL007), or no value (TL005)
            value, error = _convert_one(text, info.for_dialect(self.dialect) if info.overrides else info)
            if error is not None:
                return 0  # TL005 / TL006, or a minimum the entry point may not apply
            setting = Setting(info, spelled, f, value, [vf], vf.value_loc)
            after = i + 2
        elif info.takes_value:
            return 0  # append: the values gather across occurrences
        else:
            setting = Setting(info, spelled, f, _SWITCH_VALUE.get(info.action, True), [], f.value_loc)
            after = i + 1
        self.out.settings[info.dest] = setting
        self.out.order.append(setting)
        return after

    def _dialect_checks(self, info: FlagInfo, spelled: str, loc: Loc | None, word: Loc | None = None) -> None:
        """``word``: where the flag is written as exactly its characters (a rename edits it); None: no edit."""
        if info.entry_points is not None and not entry_matches(self.entry, info.entry_points) and is_core_entry(self.entry):
            owners = ", ".join(info.entry_points[:4])
            self._diag("TL004", f"`{spelled}` is not an argument of {self.entry.rsplit('/', 1)[-1]}; only {owners} "
                       "add it", loc, severity=Severity.ERROR)
            return
        dep = info.deprecated
        if dep is None:
            return
        if dep.get("source") and self.target is not None:
            # The target's own source refuses it (its validate_args), whatever the script's dialect; a
            # replacement that is the same option renamed (its message names it) is a safe rename there
            # too, as for upstream's refusals below.
            replacement = dep.get("replacement")
            renamed = bool(replacement) and self._known_target and self._one_to_one(info, replacement)
            self._diag("TL008", f"`{spelled}` makes {self.target.describe()} fail at start-up"
                       + (f"; use `{replacement}`" if replacement else "")
                       + f". Its check: \"{dep.get('message', '')}\"", loc, severity=Severity.ERROR,
                       fix=replacement, applicability=(Applicability.SAFE if renamed else Applicability.DISPLAY)
                       if replacement else None,
                       edit=replacement if renamed and word is not None else None, edit_at=word)
            return
        if self.dialect != CURRENT:
            return  # flags of Megatron-DeepSpeed and older copies are valid there
        status = dep.get("status", "deprecated")
        replacement = dep.get("replacement")
        message = dep.get("message", "")
        severity = Severity.WARNING if status == "deprecated" else Severity.ERROR
        if status == "removed" and not self._known_target:
            # Removed from the upstream trainlint assumed; the script may target a release or a fork
            # that still has it, so this is only known to break where that is known.
            use = f"; current Megatron-LM uses `{replacement}`" if replacement else ""
            self._foreign.append(spelled)
            renamed = self._one_to_one(info, replacement)
            # The rename is right for current Megatron-LM only: unsafe while the version is assumed.
            self._diag("TL008", f"`{spelled}` is not an argument of current Megatron-LM{self._elsewhere(spelled)}{use}; "
                       f"{self._against()}", loc, severity=Severity.WARNING, fix=replacement,
                       applicability=(Applicability.UNSAFE if renamed else Applicability.DISPLAY) if replacement else None,
                       edit=replacement if renamed and word is not None else None, edit_at=word)
            return
        what = {"removed": "was removed from Megatron-LM", "exits": "makes Megatron-LM exit at start-up",
                "error": "makes Megatron-LM fail at start-up", "deprecated": "is deprecated"}.get(status, "is deprecated")
        use = f"; use `{replacement}`" if replacement else ""
        dialect_note = ""
        if info.dialects:
            dialect_note = f" (it exists in {', '.join(sorted(info.dialects))} scripts)"
        renamed = self._one_to_one(info, replacement)
        safe = Applicability.SAFE
        tail = ""
        if severity is Severity.ERROR and not self._known_target:
            # the release that refuses it is assumed: older releases read it (a 2021 script's
            # --checkpoint-activations), so this is a warning naming the assumption and the change
            severity, safe = Severity.WARNING, Applicability.UNSAFE
            since = REFUSED_SINCE.get(info.flag, "an older release or a fork may still read it")
            tail = f" [{self._against_short()}: {since}]"
        self._diag("TL008", f"`{spelled}` {what}{use}{dialect_note}. Megatron: \"{message}\"{tail}", loc, severity=severity,
                   fix=replacement, applicability=(safe if renamed else Applicability.DISPLAY) if replacement else None,
                   edit=replacement if renamed and word is not None else None, edit_at=word)

    def _against_short(self) -> str:
        t = self.target
        commit = t.commit if t is not None and t.commit else None
        return f"upstream Megatron-LM at {commit} assumed" if commit else "upstream Megatron-LM assumed"

    def _one_to_one(self, old: FlagInfo, replacement: str | None) -> bool:
        """Whether the replacement is the same option under a new name (``--batch-size`` ->
        ``--micro-batch-size``), so that renaming the word is all the fix does: one flag, taking
        the same kind of value, or both plain switches that turn something on. Not a negation
        (``--add-bias-linear`` -> ``--disable-bias-linear``) or a flag that needs a value the
        old one did not take."""
        if not replacement or " " in replacement.strip():
            return False
        new = self._choose(replacement)
        if new is None or new.deprecated is not None:
            return False
        if old.takes_value or new.takes_value:
            return old.action == new.action and old.nargs == new.nargs and old.types == new.types and \
                (old.enum or ()) == (new.enum or ())
        negations = ("--no-", "--disable-", "--no_", "--disable_")
        return old.action == new.action == "store_true" and new.dest != old.dest and \
            not any(f.startswith(negations) for f in (old.flag, new.flag))

    def _convert(self, info: FlagInfo, spelled: str, flag_field: Field, values: list[Field], inline: bool) -> Setting:
        setting = Setting(info, spelled, flag_field, None, values, inline=inline)
        if not info.takes_value:
            setting.value = _SWITCH_VALUE.get(info.action, True)
            setting.value_loc = flag_field.value_loc
            return setting
        converted: list[Any] = []
        typed = info.for_dialect(self.dialect) if info.overrides else info  # the same for each value
        for vf in values:
            if vf.text is None:
                reason = vf.unknowns[0].unknown if vf.unknowns else "unknown"
                setting.unresolved = reason
                loc = vf.unknowns[0].loc if vf.unknowns and vf.unknowns[0].loc else vf.site
                key = (info.dest, loc)
                if key not in self._reported_unknown and not _inert(info.dest):
                    self._reported_unknown.add(key)
                    self._diag("TL007", f"`{spelled}` takes its value from {reason}, known only at launch; trainlint "
                               "leaves it unset", loc,
                               related=self._related(f"`{spelled}` here", flag_field.value_loc) if loc != flag_field.value_loc else ())
                converted.append(None)
                continue
            value, error = _convert_one(vf.text, typed)
            if error == "minimum" and self._shape_elsewhere:
                # argparse takes it; the model is not built from it (a placeholder such as -1)
                setting.invalid = True
                converted.append(None)
                continue
            if error:
                setting.invalid = True
                message = _value_message(spelled, vf.text, typed, error)
                severity = None
                if error == "choice" and not self._known_target:
                    # upstream's choices; a fork may add its own (alibi, PretrainedFromHF)
                    severity, message = Severity.WARNING, f"{message} ({self._against()})"
                self._diag("TL005" if error == "type" else "TL006", message,
                           vf.value_loc, severity=severity, related=self._related(f"`{spelled}` here", flag_field.value_loc)
                           if vf.value_loc != flag_field.value_loc else ())
                converted.append(None)
                continue
            converted.append(value)
        if setting.unresolved or setting.invalid:
            setting.value = None
        elif info.nargs in (None, "?", 1) or (info.action == "append" and info.nargs is None):
            setting.value = converted[0] if converted else info.const
        else:
            setting.value = converted
        if info.action == "append" and setting.value is not None and not isinstance(setting.value, list):
            setting.value = [setting.value]
        if len(values) == 1:
            setting.value_loc = values[0].value_loc
        elif values:
            setting.value_loc = _cover([v.value_loc for v in values]) or values[0].value_loc
        return setting


REFUSED_SINCE = {
    "--checkpoint-activations": "refused since Megatron-LM's 2022 rename to --recompute-activations "
                                "(selective recomputation); earlier releases read it",
}
"""Flags upstream Megatron-LM keeps only to refuse them: since when (for the warning on a script
whose release is assumed)."""

_SWITCH_VALUE = {"store_true": True, "store_false": False, "count": 1}
"""What a flag that takes no value sets (store_const and others: True)."""


def unknown_summary(parsed: list[ParsedArgs], default_path: str) -> list[Diagnostic]:
    """One TL004 warning per file and reason for the flags of its commands that the target does not
    define and that misspell none it does (a fork's, another release's, an entry point's own): at the
    first, the others as related places (issue 28: ~900 such warnings on 336 configs, one per flag,
    all false in a sample). A likely misspelling keeps a finding of its own."""
    groups: dict[tuple[str, Severity], list[tuple[str, str | None, Span | None]]] = {}
    for p in parsed:
        if p.unlisted:
            groups.setdefault((p.unlisted_why, p.unlisted_severity), []).extend(p.unlisted)
    out = []
    for (why, severity), entries in groups.items():
        names = list(dict.fromkeys(name for name, _, _ in entries))
        shown = ", ".join(f"`{n}`" for n in names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        what = f"{len(names)} unknown flags" if len(names) > 1 else "unknown flag"
        _, path, span = entries[0]
        related = tuple(Related(f"`{name}` here", sp, pa) for name, pa, sp in entries[1:20] if sp is not None)
        out.append(input_diagnostic("TL004", f"{what} {shown}: {why}", span or Span(1, 1, 1, 1),
                                    path=path or default_path, severity=severity, related=related))
    return out


def other_release_flags(flags: tuple[str, ...]) -> tuple[str, str]:
    """The first three of a script's flags that show it is written for another release, as a
    message quotes them, and " ..." when there are more."""
    return ", ".join(f"`{n}`" for n in flags[:3]), " ..." if len(flags) > 3 else ""


def _typo(written: str, known: str) -> bool:
    """At most two letters added, dropped, changed or swapped, and not only a dash/underscore/case
    difference (forks such as Megatron-LLM accept `--num_layers`)."""
    from trainlint.files.key_edits import is_misspelling

    def norm(name: str) -> str:
        return name.replace("_", "-").lower()

    return norm(written) != norm(known) and is_misspelling(written, known)


def _cover(locs: list[Loc | None]) -> Loc | None:
    real = [loc for loc in locs if loc is not None]
    if not real or len({loc.path for loc in real}) != 1:
        return None
    return Loc(real[0].path, min(loc.start for loc in real), max(loc.end for loc in real))


def _convert_one(text: str, info: FlagInfo) -> tuple[Any, str | None]:
    types = info.types or ("string",)
    value: Any = text
    ok = False
    for t in types:
        if t == "integer":
            try:
                value = read_int(text)  # a number of any length is a value (clamped), as in JSON/YAML
                ok = True
                break
            except ValueError:
                continue
        elif t == "number":
            try:
                value = float(text)
                ok = True
                break
            except ValueError:
                continue
        elif t == "boolean":
            value = bool(text)  # argparse type=bool: any non-empty string is True
            ok = True
            break
        else:
            value = text
            ok = True
            break
    if not ok:
        return None, "type"
    if info.enum is not None and value not in info.enum:
        return value, "choice"
    if info.minimum is not None and isinstance(value, (int, float)) and value < info.minimum:
        return value, "minimum"
    return value, None


def _value_message(flag: str, text: str, info: FlagInfo, error: str) -> str:
    if error == "type":
        kind = {"integer": "an integer", "number": "a number"}.get(info.types[0] if info.types else "", "a value")
        return f"`{flag}` expects {kind}, got `{_short(text)}` (argparse: invalid {info.types[0] if info.types else ''} value)"
    if error == "minimum":
        return f"`{flag}` is `{_short(text)}`; it must be at least {info.minimum}"
    choices = ", ".join(str(c) for c in (info.enum or ())[:12])
    hint = did_you_mean(text, [str(c) for c in info.enum or ()])
    tail = f"; did you mean `{hint[0]}`?" if hint else ""
    return f"`{flag}` is `{_short(text)}`; expected one of {choices}{tail}"


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _inline_field(f: Field, cut: int) -> Field:
    """The value part of ``--flag=value`` as its own field with its own position."""
    segs: list[Seg] = []
    pos = 0
    for s in f.segs:
        length = len(s.text) if s.unknown is None else 0
        if pos + length <= cut and s.unknown is None:
            pos += length
            continue
        if s.unknown is None and pos < cut:
            segs.append(s.piece(cut - pos, length))
        else:
            segs.append(s)
        pos += length
    return Field(tuple(segs), f.site, f.uncertain)


def _split_field(f: Field) -> list[Field]:
    from trainlint.adapters.megatron.words import Piece, split_pieces

    return split_pieces([Piece(list(f.segs), split=True)], f.site, f.uncertain)


# Destinations whose value trainlint never uses: file system paths, names and logging
# targets. An unknown value there ($1, $(pwd)) changes no estimate and no check, so it is not
# worth a TL007 (the corpus had ~450 such infos, mostly --load/--save/--data-path).
_INERT_SUFFIXES = ("_path", "_paths", "_dir", "_file", "_files", "_name", "_prefix", "_project", "_entity",
                   "_exp_name", "_checkpoint", "_config", "_host", "_port")
_INERT = {"load", "save", "data_path", "tokenizer_model", "vocab_file", "merge_file", "seed", "exit_interval",
          "log_interval", "save_interval", "eval_interval", "eval_iters", "split"}


def _inert(dest: str) -> bool:
    return dest in _INERT or dest.endswith(_INERT_SUFFIXES) or dest.startswith(("wandb_", "tensorboard_", "log_"))
