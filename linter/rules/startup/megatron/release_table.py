"""Tables of Megatron-LM start-up checks that hold for a range of releases (TL600-TL629).

The launch-check audit (docs/launch-checks.md) lists every check ``validate_args`` makes at the
pinned commit of each supported release. Many hold only for some releases: a check a release
dropped (``--use-legacy-models`` refused every non-``torch`` checkpoint format in core_v0.11.0 to
core_v0.17.0), or one whose flags were renamed. A :class:`ReleaseCheck` is one such check, read
from the source of the releases it names: the conditions under which Megatron stops, the message
it stops with, ``first`` and ``last`` (inclusive; ``last`` None: upstream still makes it).

What a row decides, and why it can be trusted on the release it names:

* A check upstream no longer makes (``last`` set) runs only when the run is checked against a
  stated or located release inside the range; on the assumed upstream or a checkout of unknown
  version it says nothing (the newest code does not make it).
* A flag that is not written takes its default **in the release checked against** (the release's
  argument catalog, :mod:`trainlint.frameworks.catalog`), not upstream's: the defaults moved
  (``--ckpt-format`` became ``torch_dist`` in core_v0.9.0). A default the catalog does not record
  (a default computed in code, a flag that release does not define) leaves the row undecided.
* A row speaks only when its first option is written in the script (a combination of defaults
  is what Megatron's own tests run with), and every option it reads is known.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator

from trainlint.core.framework import framework_of
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.derive import from_checkpoint
from trainlint.rules.startup.megatron.base import MegatronRule
from trainlint.rules.startup.megatron.check_table import holds
from trainlint.adapters.megatron.arguments import COMMIT, MegatronArgs
from trainlint.rules.startup.releases import UNRELEASED, Releases, release_key

ARGS = "megatron/training/arguments.py"
OLD_ARGS = "megatron/arguments.py"
"""validate_args' file up to core_v0.5.0 (moved to megatron/training/ in core_v0.6.0)."""
MICRO = "megatron/microbatches.py"
"""The micro-batch calculator up to core_v0.5.0 (megatron/training/microbatches.py in 0.6-0.7)."""

Cond = tuple[Any, ...]
"""``(dest, op)`` or ``(dest, op, operand)``; ops: ``on`` / ``off`` (truthy / falsy), ``set`` / ``unset``
(not None / None), ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in`` / ``not in`` (a tuple),
``has`` / ``lacks`` (a list option contains / lacks the operand), ``empty`` / ``nonempty``, ``several`` (a list
of more than one),
``length !=`` (a list of another length), ``not a multiple of``. An operand may be :class:`Dest`: another
option's value."""


class Quiet(tuple):
    """A condition that only guards a row (``("fp16", "off")`` where fp16 would have turned the check
    off): it decides like any other, and the message names it only when the script writes it."""


def quiet(*cond: Any) -> Quiet:
    return Quiet(cond)


@dataclass(frozen=True)
class Dest:
    """An operand that is another option's value (``("seq_length", ">", Dest("rl_sequence_packing_bin_size"))``)."""

    name: str

_UNKNOWN = object()


@lru_cache(maxsize=1)
def _release_commits() -> dict[str, str]:
    """{release: commit} of the shipped Megatron-LM catalogs (the audit's pinned commits)."""
    index = Path(__file__).resolve().parents[3] / "data" / "frameworks" / "index.json"
    data = json.loads(index.read_text(encoding="utf-8"))
    return {c["version"]: c["commit"] for c in data["catalogs"]
            if c["family"] == "megatron" and c["variant"] == "Megatron-LM"}


@dataclass(frozen=True)
class ReleaseCheck:
    path: str
    line: int
    """The line at ``last`` (upstream's line at trainlint's commit when ``last`` is None)."""
    first: str
    last: str | None
    when: tuple[Cond, ...]
    says: str

    @property
    def releases(self) -> Releases:
        return Releases("megatron", first=self.first, last=self.last)

    def reference(self) -> str:
        commit = COMMIT if self.last is None else _release_commits()[self.last][:7]
        return f"`{self.path}:{self.line}@{commit}`"

    def applies(self, target: Any) -> bool:
        if self.last is None:
            return self.releases.includes(target)
        # only some releases make it and upstream no longer does: a stated or located release only
        if target is None or getattr(target, "family", None) != "megatron" or not target.known:
            return False
        key = release_key(getattr(target, "version", None))
        return key is not None and self.releases.includes(target)


def R(path: str, line: int, first: str, last: str | None, *when: Cond, says: str) -> ReleaseCheck:
    return ReleaseCheck(path, line, first, last, tuple(when), says)


Derive = Callable[[Callable[[str], Any], Any], Any]
"""A value validate_args computes from others: (lookup, target) -> value or _UNKNOWN."""


def _use_dist_ckpt(look: Callable[[str], Any], target: Any) -> Any:
    """core_v0.9.0 on: ``update_use_dist_ckpt``: ``args.use_dist_ckpt = args.ckpt_format != "torch"``;
    up to core_v0.8.0 the ``--use-dist-ckpt`` flag itself."""
    key = release_key(getattr(target, "version", None)) if target is not None else None
    if key is not None and key < (0, 9, 0):
        return look("use_dist_ckpt")
    fmt = look("ckpt_format")
    return _UNKNOWN if fmt is _UNKNOWN else fmt != "torch"


def _gtp_factor(look: Callable[[str], Any], target: Any) -> Any:
    """``resolve_tensor_parallel_weight_shards``: gtp_weight_remat_size = shards / TP (1 when unset)."""
    shards, tp = look("tensor_parallel_num_weight_shards"), look("tensor_model_parallel_size")
    if shards is _UNKNOWN or tp is _UNKNOWN:
        return _UNKNOWN
    if shards is None:
        return 1
    if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (shards, tp)) or shards % tp:
        return _UNKNOWN  # TL173's refusal
    return shards // tp


def _main_pattern(look: Callable[[str], Any]) -> Any:
    """The hybrid layer pattern before its first MTP separator ('/'), as hybrid_layer_allocation reads it."""
    pattern = look("hybrid_layer_pattern")
    return pattern.split("/")[0] if isinstance(pattern, str) else _UNKNOWN


def _segments(look: Callable[[str], Any], target: Any) -> Any:
    """get_hybrid_total_pipeline_segment_count: the pipe separators of the main pattern + 1."""
    main = _main_pattern(look)
    return _UNKNOWN if main is _UNKNOWN else main.count("|") + 1


def _has_pipes(look: Callable[[str], Any], target: Any) -> Any:
    main = _main_pattern(look)
    return _UNKNOWN if main is _UNKNOWN else "|" in main


def _requests_per_batch(look: Callable[[str], Any], target: Any) -> Any:
    """validate_args: requests_per_batch = grpo_prompts_per_step * grpo_group_size."""
    prompts, group = look("grpo_prompts_per_step"), look("grpo_group_size")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (prompts, group)):
        return _UNKNOWN
    return prompts * group


def _rl_samples(look: Callable[[str], Any], target: Any) -> Any:
    """num_generated_samples_per_inference_iteration = grpo_prompts_per_step * grpo_group_size * grpo_iterations."""
    per_batch, iterations = _requests_per_batch(look, target), look("grpo_iterations")
    if per_batch is _UNKNOWN or not isinstance(iterations, int) or isinstance(iterations, bool):
        return _UNKNOWN
    return per_batch * iterations


def _rl_iterations(look: Callable[[str], Any], target: Any) -> Any:
    """num_training_iterations_per_inference_iteration = samples // global batch (once it divides)."""
    samples, batch = _rl_samples(look, target), look("global_batch_size")
    if samples is _UNKNOWN or not isinstance(batch, int) or isinstance(batch, bool) or batch <= 0 or samples % batch:
        return _UNKNOWN
    return samples // batch or _UNKNOWN


def _rampup(index: int) -> Derive:
    """--rampup-batch-size <start> <increment> <samples>: one of its three numbers."""
    def pick(look: Callable[[str], Any], target: Any) -> Any:
        values = look("rampup_batch_size")
        if not isinstance(values, (list, tuple)) or len(values) != 3:
            return _UNKNOWN
        value = values[index]
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)  # the calculator calls int() on each
        return value if isinstance(value, int) and not isinstance(value, bool) else _UNKNOWN
    return pick


def _rampup_rest(look: Callable[[str], Any], target: Any) -> Any:
    """diff_batch_size = global_batch_size - start batch size."""
    start, batch = _rampup(0)(look, target), look("global_batch_size")
    if start is _UNKNOWN or not isinstance(batch, int) or isinstance(batch, bool):
        return _UNKNOWN
    return batch - start


def _spec_first(look: Callable[[str], Any], target: Any) -> Any:
    """args.spec[0] (None when --spec is not given: Megatron's index then raises a TypeError)."""
    spec = look("spec")
    if spec is _UNKNOWN:
        return _UNKNOWN
    if isinstance(spec, (list, tuple)):
        return spec[0] if spec else _UNKNOWN
    return spec


def _count(value: Any) -> Any:
    """How many values a ``nargs='+'`` option holds as TransformerConfig receives it: validate_args
    unwraps a one-element list (``arguments.py:1661-1664@d98e8a6``, core_v0.14.0 on), and a scalar
    default is one value."""
    if value is _UNKNOWN or value is None:
        return _UNKNOWN
    return len(value) if isinstance(value, (list, tuple)) else 1


def _ffn_size(look: Callable[[str], Any], target: Any) -> Any:
    """validate_args' ``--ffn-hidden-size`` when it is not given: ``int((4 * h * 2 / 3) / 64) * 64`` with
    ``--swiglu``, else ``4 * h`` (the same in every audited release)."""
    ffn = look("ffn_hidden_size")
    if ffn is not None:
        return ffn
    hidden, swiglu = look("hidden_size"), look("swiglu")
    if not isinstance(hidden, int) or isinstance(hidden, bool) or swiglu is _UNKNOWN:
        return _UNKNOWN
    return int((4 * hidden * 2 / 3) / 64) * 64 if swiglu else 4 * hidden


def _extended_tp(look: Callable[[str], Any], target: Any) -> Any:
    """TransformerConfig (core_v0.7.0-0.9.0): ``extended_tp_size = TP * EP``."""
    tp, ep = look("tensor_model_parallel_size"), look("expert_model_parallel_size")
    if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (tp, ep)):
        return _UNKNOWN
    return tp * ep


def _no_rope_length(look: Callable[[str], Any], target: Any) -> Any:
    """The length of a ``--no-rope-freq`` list pattern (an integer form is another check)."""
    from trainlint.rules.startup.megatron.layer_pattern import pattern_list

    value = look("no_rope_freq")
    if isinstance(value, (list, tuple)):
        return len(value)
    if not isinstance(value, str):
        return _UNKNOWN
    items = pattern_list(value.strip())
    return _UNKNOWN if items is None else len(items)


DERIVED: dict[str, tuple[tuple[str, ...], Derive]] = {
    "no_rope_length": (("no_rope_freq",), _no_rope_length),
    "ffn_size": (("ffn_hidden_size", "hidden_size", "swiglu"), _ffn_size),
    "extended_tp_size": (("tensor_model_parallel_size", "expert_model_parallel_size"), _extended_tp),
    "moe_lb_type_count": (("moe_router_load_balancing_type",),
                          lambda look, target: _count(look("moe_router_load_balancing_type"))),
    "moe_aux_loss_coeff_count": (("moe_aux_loss_coeff",), lambda look, target: _count(look("moe_aux_loss_coeff"))),
    "use_dist_ckpt": (("use_dist_ckpt", "ckpt_format"), _use_dist_ckpt),
    "gtp_weight_remat_size": (("tensor_parallel_num_weight_shards", "tensor_model_parallel_size"), _gtp_factor),
    "hybrid_pipeline_segments": (("hybrid_layer_pattern",), _segments),
    "hybrid_has_pipes": (("hybrid_layer_pattern",), _has_pipes),
    "rl_requests_per_batch": (("grpo_prompts_per_step", "grpo_group_size"), _requests_per_batch),
    "rl_samples_per_inference_iteration": (("grpo_prompts_per_step", "grpo_group_size", "grpo_iterations"), _rl_samples),
    "rl_iterations_per_inference_iteration": (("grpo_prompts_per_step", "grpo_group_size", "grpo_iterations",
                                               "global_batch_size"), _rl_iterations),
    "rampup_start": (("rampup_batch_size",), _rampup(0)),
    "rampup_increment": (("rampup_batch_size",), _rampup(1)),
    "rampup_samples": (("rampup_batch_size",), _rampup(2)),
    "rampup_rest": (("rampup_batch_size", "global_batch_size"), _rampup_rest),
    "spec_first": (("spec",), _spec_first),
}
"""dest -> (the written options it comes from, how)."""


_DEFAULTS: dict[int, tuple[Any, dict[str, Any]]] = {}


def _catalog_defaults(catalog: Any) -> dict[str, Any]:
    """{dest: default} of a release's argument catalog (its flags are keyed by option string); a dest
    whose flags disagree on the default, or whose default is not a literal, is left out. Made once
    per catalog."""
    kept = _DEFAULTS.get(id(catalog))
    if kept is not None and kept[0] is catalog:
        return kept[1]
    seen: dict[str, list[Any]] = {}
    for arg in catalog.args.values():
        if arg.action in ("store_true", "store_false") and arg.name.startswith(("--no-", "--disable-")) \
                and arg.dest in seen:
            continue  # the negative spelling of a pair: the positive one gives the default
        seen.setdefault(arg.dest, []).append(arg.default if arg.has_default else _UNKNOWN)
    defaults = {dest: values[0] for dest, values in seen.items()
                if values[0] is not _UNKNOWN and all(v == values[0] for v in values)}
    if len(_DEFAULTS) > 64:
        _DEFAULTS.clear()
    _DEFAULTS[id(catalog)] = (catalog, defaults)
    return defaults


class ReleaseValues:
    """The arguments of one run as the release checked against reads them."""

    def __init__(self, a: MegatronArgs) -> None:
        self.a = a
        target = a.spec.target
        self.target = target
        # the checked release's argument catalog, from the framework's one key catalog
        self.catalog = framework_of(a.spec).key_catalog(target).release() if target is not None and target.known else None
        self.loaded = from_checkpoint(a.spec)

    def raw(self, dest: str) -> Any:
        a = self.a
        if a.given(dest):
            return a.get(dest)
        if dest in a.spec.unresolved or self.loaded:
            return _UNKNOWN  # written but unknown; or --use-checkpoint-args replaces the defaults
        if self.catalog is not None:
            defaults = _catalog_defaults(self.catalog)
            return defaults.get(dest, _UNKNOWN)
        if not a.known(dest):
            return _UNKNOWN
        return a.get(dest)

    def __call__(self, dest: str) -> Any:
        if dest in DERIVED and not self.a.given(dest):
            return DERIVED[dest][1](self.raw, self.target)
        return self.raw(dest)



def _spelled(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(str(getattr(v, "name", v)) for v in value)
    return str(getattr(value, "name", value))


def _shown(a: MegatronArgs, look: ReleaseValues, dest: str, op: str, value: Any) -> str:
    """How one condition reads in the message: as written, or as the release's default."""
    if dest in DERIVED and not a.given(dest):
        parts = []
        for source in DERIVED[dest][0]:
            v = look(source)
            if a.given(source):
                parts.append(f"{a.flag(source)} {_spelled(v)}" if v is not True else a.flag(source))
            elif v is not _UNKNOWN and v is not None and v is not False and source != dest:
                parts.append(f"{a.flag(source)} {_spelled(v)} (the default)")
        return ", ".join(parts) or f"{dest} {_spelled(value)}"
    flag = a.flag(dest)
    negative = flag.startswith(("--no-", "--disable-"))
    if not a.given(dest):
        if isinstance(value, bool):
            # a store_false flag (--no-rope-fusion) on by default: it is its absence that counts
            return f"without {flag}" if value == negative else f"{flag.replace('--no-', '--', 1)} (on by default)"
        if op in ("off", "unset", "empty") or value is None or value == []:
            return f"without {flag}"
        return f"{flag} {_spelled(value)} (the default)"
    if value is True or (value is False and negative):
        return flag
    if value is None or value is False:
        return f"without {flag}"
    return f"{flag} {_spelled(value)}"


class ReleaseCheckTable(MegatronRule):
    """A family of :class:`ReleaseCheck` rows (subclasses set :attr:`checks`)."""

    checks: ClassVar[tuple[ReleaseCheck, ...]] = ()

    @classmethod
    def _by_trigger(cls) -> tuple[frozenset[str], dict[str, tuple[int, ...]]]:
        """The options that make a row worth judging (its first condition's option, or an option that
        one is derived from), and the rows (places in :attr:`checks`) of each, made once per class."""
        index = cls.__dict__.get("_by_trigger_made")
        if index is None:
            places: dict[str, list[int]] = {}
            for n, check in enumerate(cls.checks):
                head = check.when[0][0]
                for dest in dict.fromkeys((head, *(DERIVED[head][0] if head in DERIVED else ()))):
                    places.setdefault(dest, []).append(n)
            index = (frozenset(places), {dest: tuple(ns) for dest, ns in places.items()})
            cls._by_trigger_made = index
        return index

    _by_trigger_made: ClassVar[tuple | None] = None

    @classmethod
    def triggers(cls) -> frozenset[str] | None:
        """The options that make a row worth judging: :meth:`findings` judges no row when none is written
        (None for a table whose rule adds checks of its own: ``findings`` or ``check`` overridden)."""
        if cls.findings is not ReleaseCheckTable.findings or cls.check is not MegatronRule.check:
            return None
        return cls._by_trigger()[0]

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        # the first condition's option first (a.given_among, all at once): most rows' is
        # not written (nor an option it derives from); the release range (check.applies) only for the
        # rows it leaves, in their order
        triggers, places = self._by_trigger()
        written = a.given_among(triggers)
        if not written:
            return
        checks = self.checks
        target = a.spec.target
        look: ReleaseValues | None = None
        said: set[tuple[str, int, str | None]] = set()
        for n in sorted({n for dest in written for n in places[dest]}):
            check = checks[n]
            if (check.path, check.line, check.last) in said or not check.applies(target):
                continue
            look = look or ReleaseValues(a)
            values = []
            for cond in check.when:
                value = look(cond[0])
                operand = cond[2] if len(cond) > 2 else None
                if isinstance(operand, Dest):
                    operand = look(operand.name)
                if isinstance(cond, Quiet) and value is _UNKNOWN and not a.written(cond[0]):
                    continue  # a guard on an option this release does not define: nothing turned the check off
                if value is _UNKNOWN or operand is _UNKNOWN:
                    break
                if not holds(value, cond[1], operand):
                    break
                values.append((cond, value))
            else:
                said.add((check.path, check.line, check.last))
                yield self._finding(a, look, check, values)

    @staticmethod
    def _finding(a: MegatronArgs, look: ReleaseValues, check: ReleaseCheck, values: list[tuple[Cond, Any]]) -> Finding:
        dests = [d for cond, _ in values for d in ((cond[0],) if cond[0] not in DERIVED else DERIVED[cond[0]][0])]
        dests += [cond[2].name for cond, _ in values if len(cond) > 2 and isinstance(cond[2], Dest)]
        written = [d for d in dict.fromkeys(dests) if a.given(d)]
        shown = ", ".join(dict.fromkeys(_shown(a, look, cond[0], cond[1], value) for cond, value in values
                                        if not isinstance(cond, Quiet) or a.given(cond[0])))
        release = getattr(a.spec.target, "version", None)
        who = f"Megatron-LM {release}" if check.last is not None and release else "Megatron-LM"
        return Finding(f"{shown}: {who} stops with \"{check.says}\"", at=a.at(written[0]),
                       also=tuple((a.at(d), "with this option") for d in written[1:]))


def references(checks: tuple[ReleaseCheck, ...]) -> str:
    """The References section: each row's source line at the newest release that makes it."""
    lines = ["", "    ## References"]
    for check in {(c.path, c.line, c.last): c for c in checks}.values():  # one line per source check
        if check.first == UNRELEASED:
            span = "upstream only"
        elif check.last is None:
            span = f"since {check.first}"
        elif check.first == check.last:
            span = f"{check.first} only"
        else:
            span = f"{check.first} to {check.last}"
        lines.append(f"    * {check.reference()} ({span}): \"{check.says}\"")
    return "\n".join(lines) + "\n"


def document(rule: type[ReleaseCheckTable]) -> None:
    rule.__doc__ = (rule.__doc__ or "").rstrip() + "\n" + references(rule.checks)
