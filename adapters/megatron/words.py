"""Words of a launch script after static expansion, each piece with the place it was written.

A :class:`Field` is one argument as the shell would pass it to the program (after expansion and
word splitting). It is a tuple of :class:`Seg` pieces: literal text with its source location, or
an unknown piece (``$1``, ``$(cmd)``) with the reason it is unknown. Nothing here runs anything.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

_IFS_WORD = re.compile(r"[^ \t\n]+")
_IFS = re.compile(r"[ \t\n]")


# Loc, Seg and Field are values: nothing changes one after it is made (a changed value is a new one,
# Seg.piece, Field.with_site), and they are hashed (eq and hash over every field, as a frozen
# dataclass's). They are not declared frozen: a frozen dataclass's __init__ must go around its own
# __setattr__ (object.__setattr__ per field, or writing into self.__dict__, which turns the
# instance's attribute values into a dict of its own), and the reading of one launch script makes
# hundreds of them. Plain attribute stores keep the values inline in the instance: making, reading
# and freeing one costs about two thirds of what it did (-10% of the instructions of the shell
# reader over the corpus's scripts, issue 33). Everything else (eq, hash, repr, fields(), replace(),
# pickling) is the dataclass's own; tests/test_shell_fast_paths.py checks the hash and equality.


@dataclass(unsafe_hash=True, init=False)
class Loc:
    """Where some characters were written: a file and character offsets (end exclusive)."""

    path: str
    start: int
    end: int

    def __init__(self, path: str, start: int, end: int) -> None:
        self.path = path
        self.start = start
        self.end = end


class _computed_once:
    """A property computed on first use and then stored on the instance, like
    ``functools.cached_property`` but without its per-access lock (Python < 3.12), which cost
    more than the values it caches: these are read ~100,000 times over the corpus."""

    def __init__(self, compute: Callable[[Any], Any]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = self.compute(instance)
        instance.__dict__[self.name] = value  # later reads find it there and skip this
        return value


@dataclass(unsafe_hash=True, init=False)
class Seg:
    text: str
    loc: Loc | None = None
    exact: bool = False
    """True when ``text`` maps one-to-one onto the source characters at ``loc`` (no quotes or
    escapes in between), so a split piece can get its own precise sub-span."""
    unknown: str | None = None
    """Why this piece is not known statically (``$1``, ``$(hostname)``); ``text`` is then ''."""
    env: str | None = None
    """The name of the variable when the value came from the user's declared environment."""
    uncertain: bool = False
    """Assigned inside a branch whose condition trainlint could not decide."""
    runs: tuple[Run, ...] | None = None
    """For text read from source with characters removed (a ``\\<newline>`` continuation, the
    backslash of an escape): where each stretch of ``text`` that maps one-to-one onto the source
    starts, so that :meth:`piece` gives a word of such a string its own span. None: ``exact`` says
    all there is (one-to-one, or no map known: the whole ``loc``)."""

    def __init__(self, text: str, loc: Loc | None = None, exact: bool = False, unknown: str | None = None,
                 env: str | None = None, uncertain: bool = False, runs: tuple[Run, ...] | None = None) -> None:
        self.text = text
        self.loc = loc
        self.exact = exact
        self.unknown = unknown
        self.env = env
        self.uncertain = uncertain
        self.runs = runs

    def piece(self, start: int, end: int) -> Seg:
        """The characters ``text[start:end]`` as a Seg with the narrowest location known: its own
        span when the text maps onto the source (``exact``, or through ``runs``); a piece over a
        removed character gets the span covering it, not exact (editing it would edit that too)."""
        loc = self.loc
        if loc is not None and self.exact:
            loc = Loc(loc.path, loc.start + start, loc.start + end)
        elif loc is not None and self.runs is not None:
            return _mapped_piece(self, loc, start, end)
        # built directly: dataclasses.replace inspects the fields on every call (~100,000 calls per corpus)
        return Seg(self.text[start:end], loc, self.exact, self.unknown, self.env, self.uncertain)

    def as_uncertain(self) -> Seg:
        """The same piece, assigned inside a branch trainlint could not decide (built directly, as :meth:`piece`)."""
        return Seg(self.text, self.loc, self.exact, self.unknown, self.env, True, self.runs)


class Run(NamedTuple):
    """A stretch of a Seg's text that is written one-to-one in the source: text offset ``text``
    (relative to the Seg's text) is source offset ``source``. ``escaped``: the character before
    the run was removed as an escape (``\\"``), so the run's first character is written with it.
    A tuple (not a dataclass): runs are searched with :func:`bisect.bisect_right` on plain tuples."""

    text: int
    source: int
    escaped: bool = False


_PAST = sys.maxsize

_tuple_new = tuple.__new__
"""``_tuple_new(Run, (text, source, escaped))`` is ``Run(text, source, escaped)`` (what the named tuple's
own ``__new__`` does, less its Python-level call): for the Runs made per escape and per word."""


def _run_at(runs: tuple[Run, ...], offset: int) -> int:
    """The index of the run holding text offset ``offset`` (a string of thousands of continued
    lines has as many runs: a binary search, comparing tuples in C)."""
    return max(bisect_right(runs, (offset, _PAST)) - 1, 0)


def _mapped_piece(seg: Seg, loc: Loc, start: int, end: int) -> Seg:
    runs = seg.runs
    assert runs is not None
    text = seg.text[start:end]
    first = _run_at(runs, start)
    head = runs[first]
    source_start = head.source + start - head.text
    if end <= start:
        return Seg(text, Loc(loc.path, source_start, source_start), True, seg.unknown, seg.env, seg.uncertain)
    last = _run_at(runs, end - 1)
    tail = runs[last]
    source_end = tail.source + end - 1 - tail.text + 1
    lead_escape = head.escaped and start == head.text
    if lead_escape:
        source_start -= 1  # the backslash written before the first character belongs to it
    if first == last and not lead_escape:
        return Seg(text, Loc(loc.path, source_start, source_end), True, seg.unknown, seg.env, seg.uncertain)
    inner = (Run(0, head.source + start - head.text, lead_escape),
             *(Run(r.text - start, r.source, r.escaped) for r in runs[first + 1:last + 1]))
    return Seg(text, Loc(loc.path, source_start, source_end), False, seg.unknown, seg.env, seg.uncertain, inner)


def _mapped_words(seg: Seg, spans: list[tuple[int, int]]) -> list[Seg]:
    """``seg.piece(start, end)`` for each of ``spans`` (non-empty, in text order, not overlapping)
    of a Seg mapped through its runs (a string with continued lines: the words of
    ``"--a 1 \\<newline> --b 2"``): the Segs :func:`_mapped_piece` makes, with the run of each
    word found by walking the runs once instead of two binary searches per word."""
    runs = seg.runs
    loc = seg.loc
    assert runs is not None and loc is not None
    text, path, unknown, env, uncertain = seg.text, loc.path, seg.unknown, seg.env, seg.uncertain
    last_run = len(runs) - 1
    out: list[Seg] = []
    k = 0  # the run holding the current offset: the last whose text offset is at or before it
    for start, end in spans:
        while k < last_run and runs[k + 1].text <= start:
            k += 1
        first = k
        head = runs[first]
        source_start = head.source + start - head.text
        while k < last_run and runs[k + 1].text < end:
            k += 1
        tail = runs[k]
        source_end = tail.source + end - tail.text
        lead_escape = head.escaped and start == head.text
        if lead_escape:
            source_start -= 1  # the backslash written before the first character belongs to it
        if first == k and not lead_escape:
            out.append(Seg(text[start:end], Loc(path, source_start, source_end), True, unknown, env, uncertain))
            continue
        inner = (_tuple_new(Run, (0, head.source + start - head.text, lead_escape)),
                 *[_tuple_new(Run, (r.text - start, r.source, r.escaped)) for r in runs[first + 1:k + 1]])
        out.append(Seg(text[start:end], Loc(path, source_start, source_end), False, unknown, env, uncertain, inner))
    return out


def without_chars(seg: Seg, drop: str) -> Seg:
    """``seg`` with the characters of ``drop`` removed (the quotes of an eval'd string), each
    remaining character keeping its place when ``seg`` knows it (exact, or through its runs)."""
    loc = seg.loc
    text = "".join(ch for ch in seg.text if ch not in drop)
    if loc is None or seg.unknown is not None or not (seg.exact or seg.runs is not None):
        return Seg(text, loc, False, seg.unknown, seg.env, seg.uncertain)
    runs: list[Run] = []
    out = 0
    previous = None
    last = -1  # the source offset of the last character kept
    for index, ch in enumerate(seg.text):
        if ch in drop:
            previous = None
            continue
        one = seg.piece(index, index + 1)
        assert one.loc is not None
        escaped = not one.exact  # written with the backslash before it
        source = one.loc.start + 1 if escaped else one.loc.start
        if previous is None or escaped or source != previous + 1:
            runs.append(Run(out, source, escaped))
        previous = last = source
        out += 1
    if not runs:
        return Seg(text, loc, False, None, seg.env, seg.uncertain)
    first = runs[0]
    place = Loc(loc.path, first.source - 1 if first.escaped else first.source, last + 1)
    if len(runs) == 1 and not first.escaped and place.end - place.start == len(text):
        return Seg(text, place, True, None, seg.env, seg.uncertain)  # one stretch: exact
    return Seg(text, place, False, None, seg.env, seg.uncertain, tuple(runs))


def unescaped_seg(raw: str, loc: Loc, pattern: re.Pattern[str]) -> Seg:
    """``raw`` (the source text at ``loc``) with the escapes ``pattern`` matches removed, as a Seg
    that knows where each remaining character is written. ``pattern``'s group 1 is the escaped
    character kept (None or empty: the match is removed, a ``\\<newline>``)."""
    out: list[str] = []
    base = loc.start
    runs: list[Run] = [_tuple_new(Run, (0, base, False))]
    pos = 0
    length = 0
    for match in pattern.finditer(raw):
        a, b = match.span()
        out.append(raw[pos:a])
        length += a - pos
        kept = match.group(1)
        if kept:
            runs.append(_tuple_new(Run, (length, base + b - len(kept), True)))
            out.append(kept)
            length += len(kept)
        else:
            runs.append(_tuple_new(Run, (length, base + b, False)))
        pos = b
    out.append(raw[pos:])
    # a run that starts where the next one does holds no character (two removals in a row): the later counts
    kept_runs: list[Run] = []
    for run in runs:
        if kept_runs and kept_runs[-1].text == run.text:
            kept_runs.pop()
        kept_runs.append(run)
    return Seg("".join(out), loc, False, runs=tuple(kept_runs))


@dataclass(unsafe_hash=True, init=False)
class Field:
    segs: tuple[Seg, ...]
    site: Loc | None = None
    """Where the word that produced this field is written in the command or array."""
    uncertain: bool = False
    """Assigned inside a branch whose condition trainlint could not decide."""

    def __init__(self, segs: tuple[Seg, ...], site: Loc | None = None, uncertain: bool = False) -> None:
        self.segs = segs
        self.site = site
        self.uncertain = uncertain
        if len(segs) == 1:
            # most fields are one piece, and nearly every field's text and place are read (the
            # command's words, every flag and value): stored now, they are plain attribute reads
            # later instead of calls to the descriptors below (the same values they compute)
            only = segs[0]
            self.text = only.text if only.unknown is None else None
            self.value_loc = only.loc if only.loc is not None and (only.text or only.unknown) else site

    @_computed_once  # a Field never changes (a value, of tuples)
    def known(self) -> bool:
        return self.text is not None

    @_computed_once  # a Field never changes (a value, of tuples)
    def text(self) -> str | None:
        """The field's characters; None when a piece is unknown (a one-piece field has it from __init__)."""
        segs = self.segs
        for s in segs:  # a loop, not all(generator): read for every field of every command
            if s.unknown is not None:
                return None
        return "".join([s.text for s in segs])

    @property
    def partial_text(self) -> str:
        """The text with each unknown piece shown as its reason, for messages and path tails."""
        return "".join(s.text if s.unknown is None else s.unknown for s in self.segs)

    @property
    def known_tail(self) -> str:
        """The known text after the last unknown piece (``${DIR}/pretrain_gpt.py`` -> ``/pretrain_gpt.py``)."""
        out: list[str] = []
        for s in reversed(self.segs):
            if s.unknown is not None:
                break
            out.append(s.text)
        return "".join(reversed(out))

    @property
    def unknowns(self) -> list[Seg]:
        return [s for s in self.segs if s.unknown is not None]

    @_computed_once  # a Field never changes (a value, of tuples)
    def value_loc(self) -> Loc | None:
        """The literal where the value was written; for a value assembled from several places,
        the word itself."""
        locs = {s.loc for s in self.segs if s.loc is not None and (s.text or s.unknown)}
        if len(locs) == 1:  # every piece with characters written at one place
            return next(iter(locs))
        if not locs:
            return self.site
        # Several literals: when they are adjacent pieces of one word, cover them all.
        paths = {loc.path for loc in locs}
        if len(paths) == 1 and self.site is not None and self.site.path in paths:
            starts = min(loc.start for loc in locs)
            ends = max(loc.end for loc in locs)
            if self.site.start <= starts and ends <= self.site.end:
                return Loc(self.site.path, starts, ends)
        return self.site

    def with_site(self, site: Loc | None) -> Field:
        return Field(self.segs, site, self.uncertain)


def join_segs(segs: list[Seg]) -> list[Seg]:
    """Drop empty known pieces (they carry no characters)."""
    return [s for s in segs if s.unknown is not None or s.text]


@dataclass
class Piece:
    """A part of a word before splitting: quoted parts are never split, unquoted expansions are."""

    segs: list[Seg]
    split: bool
    field_break_before: bool = False
    """``"${A[@]}"``: each array element is its own field even inside quotes."""


def split_pieces(pieces: list[Piece], site: Loc | None, uncertain: bool = False) -> list[Field]:
    """Bash word splitting over the pieces of one word: IFS whitespace in unquoted expansions
    separates fields; quoted text never does. A word made only of empty unquoted expansions
    produces no field at all."""
    if len(pieces) == 1:
        only = pieces[0]
        if not only.split:
            # one literal or quoted part (most words): exactly one field, nothing to split
            return [Field(tuple(only.segs), site, uncertain)]
        if len(only.segs) == 1:
            # one unquoted expansion of one piece (`--num-layers $LAYERS`): the loop below keeps an
            # unknown piece, or a known one without IFS whitespace whose place is as long as its text,
            # whole, as the one field
            seg = only.segs[0]
            if seg.unknown is not None:
                return [Field((seg,), site, uncertain)]
            text = seg.text
            loc = seg.loc
            if text and _IFS.search(text) is None and (loc is None or not seg.exact or loc.end - loc.start == len(text)):
                return [Field((seg,), site, uncertain)]
    unsplit: list[Seg] = []
    for piece in pieces:
        if piece.split or piece.field_break_before:
            break
        unsplit.extend(piece.segs)
    else:  # only quoted or literal parts ("$A/x", "--a=$B"): one field of all their pieces
        return [Field(tuple(unsplit), site, uncertain)]
    # This runs for every word of a script, so the loop is written out flat: a field is ended
    # ("flushed") inline rather than by a nested function, and a piece without IFS whitespace is
    # taken whole instead of through the regular expression.
    fields: list[list[Seg]] = []
    current: list[Seg] = []
    has_content = False  # quoted text (even empty) makes a field exist
    for piece in pieces:
        if piece.field_break_before and (current or has_content):
            fields.append(current)
            current, has_content = [], False
        if not piece.split:
            current.extend(piece.segs)
            has_content = True
            continue
        for seg in piece.segs:
            if seg.unknown is not None:
                current.append(seg)
                continue
            text = seg.text
            if not text:
                continue
            if _IFS.search(text) is None:
                # the whole piece: the same Seg when seg.piece(0, len) would equal it (not exact, or
                # its place as long as its text), which is almost always
                loc = seg.loc
                whole = loc is None or not seg.exact or loc.end - loc.start == len(text)
                current.append(seg if whole else seg.piece(0, len(text)))
                continue
            # each run of IFS whitespace ends the field; each run of other characters is a piece
            pos = 0
            spans = [match.span() for match in _IFS_WORD.finditer(text)]
            if seg.loc is not None and not seg.exact and seg.runs is not None:
                words = _mapped_words(seg, spans)  # a string with continued lines: its runs walked once
            else:
                words = [seg.piece(start, end) for start, end in spans]
            for (start, end), word in zip(spans, words, strict=True):
                if start > pos and (current or has_content):
                    fields.append(current)
                    current, has_content = [], False
                current.append(word)
                pos = end
            if pos < len(text) and (current or has_content):
                fields.append(current)
                current, has_content = [], False
    if current or has_content:
        fields.append(current)
    return [Field(tuple(f), site, uncertain) for f in fields]


def literal_field(text: str, loc: Loc | None, exact: bool = True) -> Field:
    return Field((Seg(text, loc, exact),), loc)


@dataclass
class VarValue:
    """A shell variable: a scalar (one field's pieces, unsplit) or an indexed array of fields."""

    scalar: tuple[Seg, ...] | None = None
    array: list[Field] | None = None
    uncertain: bool = False
    assigned_at: Loc | None = None

    @property
    def is_array(self) -> bool:
        return self.array is not None

    def as_scalar(self) -> tuple[Seg, ...]:
        if self.array is not None:
            return self.array[0].segs if self.array else ()
        return self.scalar or ()

    def as_fields(self) -> list[Field]:
        if self.array is not None:
            return list(self.array)
        return [Field(self.scalar or (), self.assigned_at, self.uncertain)]


@dataclass
class Unknown:
    reason: str
    loc: Loc | None = None

    def seg(self) -> Seg:
        return Seg("", self.loc, False, self.reason)


@dataclass
class EnvMap:
    """Variables by name. Copies are shallow: values are never mutated in place."""

    values: dict[str, VarValue] = field(default_factory=dict)

    def copy(self) -> EnvMap:
        return EnvMap(dict(self.values))


def argv_fields(argv: list[str], path: str) -> list[Field]:
    """An argument list (``trainlint run``, ``load_argv``) as fields, located in the words joined
    by single spaces: the text diagnostics about a command line refer to."""
    fields = []
    pos = 0
    for word in argv:
        loc = Loc(path, pos, pos + len(word))
        fields.append(Field((Seg(word, loc, True),), loc))
        pos += len(word) + 1
    return fields
