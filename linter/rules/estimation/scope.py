"""Which specs the estimate describes well enough for a rule to act on it.

The estimator models a decoder-only transformer (dense or MoE) whose parameters all train. A run
that departs from that in a way that moves memory or time a lot (Mamba layers in a hybrid
pattern, a frozen language model, a vision encoder the config only names) still gets an
estimate, but a finding built on it would be a guess: the rules stay silent and TL900 says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainlint.adapters.megatron.entry_points import trains
from trainlint.core.framework import framework_of
from trainlint.core.spec import TrainingSpec


@dataclass(frozen=True)
class Unmodelled:
    """A setting (or entry point) the estimator does not model, and what an estimate would get wrong."""

    setting: str
    """The setting (or entry point) as written."""
    why: str
    """What the estimate would get wrong."""
    training: bool = True
    """False: the entry point does not train at all (inference, evaluation, conversion): `estimate`
    prints no training estimate for it."""


# Architectures (spec.model.architecture) whose layers the estimator does not describe.
_ARCHITECTURES = {
    "bert": "an encoder (BERT) model: the estimator models a GPT decoder (no masked-LM and pooler heads)",
    "t5": "an encoder-decoder (T5) model: the estimator models a GPT decoder (no decoder cross-attention)",
    "mamba": "Mamba (state-space) layers are not modelled",
    "hybrid": "Mamba layers of a hybrid model are not modelled",
    "other": "layers other than transformer attention (RWKV, gMLP, vision) are not modelled",
}

def unmodelled(spec: TrainingSpec) -> list[Unmodelled]:
    """What in ``spec`` the estimator does not model (empty when the estimate can be trusted)."""
    out: list[Unmodelled] = []
    entry = spec.entry_point or ""
    mode = spec.run.mode
    if mode is not None and mode.value == "inference":
        return [Unmodelled("MODE: inference", "the launcher runs these arguments for inference: it does not train, "
                                              "and a training estimate would not describe it", training=False)]
    if not trains(entry):
        task = spec.run.task
        what = f" (--task {task.value})" if task is not None and isinstance(task.value, str) else ""
        return [Unmodelled(entry, f"this entry point{what} generates, evaluates, converts, quantizes or prepares data: it does not "
                                  "train, and a training estimate would not describe it", training=False)]
    arch = spec.model.architecture
    if arch is not None and arch.value in _ARCHITECTURES:
        out.append(Unmodelled(entry or f"architecture {arch.value}", _ARCHITECTURES[arch.value]))
    # the adapters name what of their format the estimator does not model (run.unmodelled,
    # run.other_model, run.launch_only): Megatron-LM's hybrid patterns, frozen LM, FSDP, ...
    r = spec.run
    if r.unmodelled is not None:
        out.extend(Unmodelled(flag, why) for flag, why in r.unmodelled.value)
    if r.other_model is not None and (arch is None or arch.value not in _ARCHITECTURES):
        flag, why = r.other_model.value
        out.append(Unmodelled(flag, why))
    why = framework_of(spec).unmodelled_entry(entry)  # a multimodal entry point of the framework's
    if why is not None:
        out.append(Unmodelled(entry, why))
    if r.launch_only is not None:
        out.extend(Unmodelled(flag, why) for flag, why in r.launch_only.value)
    return out


def usable(spec: TrainingSpec, ctx: Any) -> Any:
    """:func:`usable_estimate` of the run's own estimate (``ctx.estimate``), asked once for the rules of
    one run (~12 of them ask): kept in ``ctx.shared``, the engine's dict for the rules of one spec."""
    return usable_in(spec, ctx.estimate, ctx.shared)


def usable_in(spec: TrainingSpec, estimate: Any, shared: dict[str, Any] | None) -> Any:
    """:func:`usable_estimate`, kept in ``shared`` (a rule's ``ctx.shared``; None: not kept) for the
    same spec and estimate (compared by identity)."""
    if shared is None:
        return usable_estimate(spec, estimate)
    kept = shared.get(_USABLE)
    if kept is not None and kept[0] is spec and kept[1] is estimate:
        return kept[2]
    found = usable_estimate(spec, estimate)
    shared[_USABLE] = (spec, estimate, found)
    return found


_USABLE = "scope.usable"


def usable_estimate(spec: TrainingSpec, estimate: Any) -> Any:
    """``estimate`` when a rule may act on it: made (not MissingInputs) and for a spec the
    estimator models; None otherwise."""
    from trainlint.estimator.inputs import unjudged

    if not getattr(estimate, "ok", False) or unmodelled(spec) or unjudged(estimate):
        return None
    return estimate
