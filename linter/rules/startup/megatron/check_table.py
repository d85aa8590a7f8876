"""TL167-TL175: Megatron-LM / Megatron-Core checks of option combinations found by the launch-check
audit (docs/launch-checks.md) that no other rule made: CUDA graphs, activation offloading, MoE
dispatch and overlap, model variants (MTP, mHC, Householder, MLA), RL options, checkpoint and data
options, weight shards.

Most are "option A needs (or excludes) option B" and are written as tables of :class:`Check`: the
conditions under which Megatron stops, transcribed from the source line each names, the message it
stops with, and the first release that makes it (from the audit: the oldest pinned release whose
source has the check; ``main``: only upstream after the newest release). A check runs only when
its first option is written in the script, every option it reads is known (written and resolved,
or left to Megatron's default), and the release checked against makes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.derive import from_checkpoint
from trainlint.rules.startup.megatron.base import MegatronRule
from trainlint.adapters.megatron.arguments import COMMIT, MegatronArgs
from trainlint.rules.startup.releases import Releases, release_key


MPC = "megatron/core/model_parallel_config.py"


Cond = tuple[Any, ...]


"""``(dest, op)`` or ``(dest, op, operand)``; ops: ``on`` / ``off`` (truthy / falsy), ``set`` / ``unset``
(not None / None), ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in`` / ``not in`` (a tuple),
``not a multiple of`` (another option's value, named by its dest),
``has`` / ``lacks`` (a list option contains / lacks the operand), ``empty`` / ``nonempty``."""


_DERIVED = {
    # validate_args: `if args.cpu_offloading_num_layers > 0: args.cpu_offloading = True`
    "cpu_offloading": ("cpu_offloading_num_layers", lambda n: isinstance(n, int) and n > 0),
}


@dataclass(frozen=True)
class Check:
    path: str
    line: int
    first: str
    """The first release that makes the check (``core_v0.18.0``; ``main``: upstream only)."""
    when: tuple[Cond, ...]
    says: str
    """What Megatron stops with (its message, or the assertion when it has none)."""
    last: str | None = None
    """The last release that makes it (None: every later release and upstream)."""


def release_stated(target: Any) -> bool:
    """The run names a release (stated or located), not an assumed upstream or a checkout of
    unknown version: a check that only older releases make is judged only then."""
    return target is not None and bool(getattr(target, "known", False)) and \
        release_key(getattr(target, "version", None)) is not None


_SET_BEFORE = {
    # validate_args, before every check of these tables (arguments.py:1201 at d98e8a6; the same in
    # core_v0.18.0 and core_v0.19.0): fp16 with dynamic loss scaling (no --loss-scale) turns the NaN
    # check off, since NaNs are the loss scaler's signal
    "check_for_nan_in_loss_and_grad": lambda a, value: bool(value) and not (a.get("fp16") and not a.get("loss_scale")),
}


def _value(a: MegatronArgs, dest: str) -> Any:
    if dest in _DERIVED:
        source, derive = _DERIVED[dest]
        return derive(a.get(source))
    if dest in _SET_BEFORE:
        return _SET_BEFORE[dest](a, a.get(dest))
    return a.get(dest)


def _holds(a: MegatronArgs, cond: Cond) -> bool | None:
    dest, op = cond[0], cond[1]
    operand = cond[2] if len(cond) > 2 else None
    if op == "not a multiple of":  # the operand names the argument whose value divides
        operand = a.get(operand) if isinstance(operand, str) else None
    return holds(_value(a, dest), op, operand)


def holds(value: Any, op: str, operand: Any) -> bool | None:
    """Whether ``value`` meets ``op`` (with ``operand``), as both check tables read a condition; None when
    it cannot be told (a comparison of other than two numbers). An enum member compares by its name."""
    if op == "on":
        return bool(value)
    if op == "off":
        return not value
    if op == "set":
        return value is not None
    if op == "unset":
        return value is None
    if op in ("empty", "nonempty"):
        empty = value is None or (isinstance(value, (list, tuple, str)) and len(value) == 0)
        return empty if op == "empty" else not empty
    if op == "several":
        return isinstance(value, (list, tuple)) and len(value) > 1
    if op == "length !=":
        return isinstance(value, (list, tuple)) and len(value) != operand
    if op in ("has", "lacks"):
        items = value if isinstance(value, (list, tuple)) else ([] if value is None else [value])
        items = [getattr(i, "name", i) for i in items]
        return (operand in items) if op == "has" else (operand not in items)
    value = getattr(value, "name", value)  # an enum member compares by its name
    if op == "==":
        return value == operand
    if op == "!=":
        return value != operand
    if op in ("in", "not in"):
        inside = value in tuple(operand or ())
        return inside if op == "in" else not inside
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if op == "not a multiple of":
        ok = isinstance(operand, int) and not isinstance(operand, bool) and operand > 0
        return None if not ok or not isinstance(value, int) else value % operand != 0
    if not isinstance(operand, (int, float)):
        return None
    return {"<": value < operand, "<=": value <= operand, ">": value > operand, ">=": value >= operand}[op]


def _shown(a: MegatronArgs, cond: Cond) -> str:
    dest, op = cond[0], cond[1]
    if dest in _DERIVED:
        source = _DERIVED[dest][0]
        return f"{a.flag(source)} {a.get(source)}"
    flag, value = a.flag(dest), _value(a, dest)
    if op in ("off", "unset", "empty") or value is None:
        return f"without {flag}"
    if op == "not a multiple of":
        return f"{flag} {value} (not a multiple of {a.flag(cond[2])} {a.get(cond[2])})"
    if op == "on" and isinstance(value, bool):
        # a store_false flag (--no-check-for-nan-in-loss-and-grad) on by default: it is its absence that counts
        return f"without {flag}" if not a.given(dest) and flag.startswith(("--no-", "--disable-")) else flag
    if isinstance(value, (list, tuple)):
        return f"{flag} {' '.join(map(str, value))}"
    return f"{flag} {value}"


CORE_CONFIGS = frozenset({MPC, "megatron/core/transformer/transformer_config.py"})
"""The rows Megatron-Core's config objects make, whatever builds them: the only rows a run that builds
the configs directly (``TrainingSpec.core_configs_only``: Megatron-Bridge) is judged by."""


class CheckTable(MegatronRule):
    """A family of :class:`Check` rows (subclasses set :attr:`checks`)."""

    checks: ClassVar[tuple[Check, ...]] = ()
    core_config_check = True  # row by row: see CORE_CONFIGS

    @classmethod
    def _rows(cls) -> tuple[tuple[Check, str, tuple[str, ...], Releases], ...]:
        """Each check with what depends on the check alone, made once per class (not once per row
        and run): its first condition's dest, every dest it reads (a derived option by its source,
        then the operands of ``not a multiple of``) and its releases."""
        rows = cls.__dict__.get("_rows_made")
        if rows is None:
            made = []
            for check in cls.checks:
                dests = [_DERIVED[c[0]][0] if c[0] in _DERIVED else c[0] for c in check.when]
                dests += [c[2] for c in check.when if c[1] == "not a multiple of"]
                made.append((check, check.when[0][0], tuple(dests),
                             Releases("megatron", first=check.first, last=check.last)))
            rows = tuple(made)
            cls._rows_made = rows
        return rows

    _rows_made: ClassVar[tuple | None] = None

    @classmethod
    def _by_first(cls) -> tuple[frozenset[str], dict[str, tuple[int, ...]]]:
        """The rows' first options, and the rows (their places in :meth:`_rows`) of each, made once per class."""
        index = cls.__dict__.get("_by_first_made")
        if index is None:
            places: dict[str, list[int]] = {}
            for n, row in enumerate(cls._rows()):
                places.setdefault(row[2][0], []).append(n)
            index = (frozenset(places), {dest: tuple(ns) for dest, ns in places.items()})
            cls._by_first_made = index
        return index

    _by_first_made: ClassVar[tuple | None] = None

    @classmethod
    def triggers(cls) -> frozenset[str] | None:
        """The rows' first options: :meth:`findings` judges no row whose first option is not written
        (None for a table whose rule adds checks of its own: ``findings`` or ``check`` overridden)."""
        if cls.findings is not CheckTable.findings or cls.check is not MegatronRule.check:
            return None
        return cls._by_first()[0]

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        # most rows' first option is not written: only the rows whose first option is (a.given_among:
        # all the first options at once), in their order
        heads, places = self._by_first()
        written = a.given_among(heads)
        if not written:
            return
        rows = self._rows()
        target = a.spec.target
        # --use-checkpoint-args: the checkpoint's arguments replace the defaults (and most flags), so a
        # row is judged only on options the script writes
        loaded = from_checkpoint(a.spec)
        said: set[tuple[str, int]] = set()
        core_only = a.spec.core_configs_only
        for n in sorted(n for dest in written for n in places[dest]):
            check, head, dests, releases = rows[n]
            if (check.path, check.line) in said or (core_only and check.path not in CORE_CONFIGS):
                continue  # one finding per source check (several rows spell one `or`)
            if not a.known(*dests) or (loaded and not all(a.given(d) for d in dests)):
                continue
            if not releases.includes(target):
                continue
            if check.last is not None and not release_stated(target):
                continue  # a check later releases dropped: only when the run states or locates such a release
            if not all(_holds(a, c) for c in check.when):
                continue
            said.add((check.path, check.line))
            others = tuple((a.at(d), "with this option") for d in dict.fromkeys(dests[1:]) if a.given(d))
            shown = dict.fromkeys(_shown(a, c) for c in check.when)
            # a run that only builds Megatron-Core's configs (Megatron-Bridge) meets the check there
            who = "Megatron-Core" if core_only else "Megatron-LM"
            yield Finding(f"{', '.join(shown)}: {who} stops with \"{check.says}\"",
                          at=a.at(dests[0] if head not in _DERIVED else _DERIVED[head][0]), also=others)


def _references(checks: tuple[Check, ...]) -> str:
    lines = ["", "    ## References"]
    for check in checks:
        first = "upstream only" if check.first == "main" else \
            (f"{check.first} to {check.last}" if check.last else f"since {check.first}")
        lines.append(f"    * `{check.path}:{check.line}@{COMMIT}` ({first}): \"{check.says}\"")
    return "\n".join(lines) + "\n"


def _C(path: str, line: int, first: str, *when: Cond, says: str, last: str | None = None) -> Check:
    return Check(path, line, first, tuple(when), says, last)


def with_references(rule: type) -> type:
    """Class decorator: appends the ``## References`` of the rule's :attr:`checks` (each row's source
    line) to its documentation."""
    rule.__doc__ = (rule.__doc__ or "").rstrip() + "\n" + _references(rule.checks)  # type: ignore[attr-defined]
    return rule
