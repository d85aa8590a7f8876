"""Which specs the estimate describes well enough for a rule to act on it.

The estimator models a decoder-only transformer (dense or MoE) whose parameters all train. A run
that departs from that in a way that moves memory or time a lot (Mamba layers in a hybrid
pattern, a frozen language model, a vision encoder the config only names) still gets an
estimate, but a finding built on it would be a guess: the rules stay silent and TL900 says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from trainlint.framework import framework_of
from trainlint.spec import TrainingSpec


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


class _Lazy:
    """A pattern compiled on its first search: only a Megatron-LM entry point is ever searched, and
    compiling these four costs ~0.5 ms of every start (a DeepSpeed JSON check included)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def search(self, text: str) -> re.Match[str] | None:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return self._compiled.search(text)


# Megatron-LM entry points that do not train: text generation servers and samplers
# (tools/run_text_generation_server.py, generate_samples_gpt.py), inference, checkpoint conversion,
# quantization and pruning (examples/post_training/modelopt), tasks/ (zero-shot evaluation, or
# downstream fine-tuning of classification heads: tasks/main.py --task RACE | MNLI | LAMBADA ...), and
# dataset tools that parse Megatron's arguments only to build the dataset (Megatron-DeepSpeed's
# data_efficiency/analyze_data.py, tools/preprocess_data*.py): no model is built, so no GPU memory.
_NOT_TRAINING_ENTRY = _Lazy(
    r"(^|/)(tasks/(\w+/)?main|\w*text_generation\w*|generate_samples\w*|\w*_inference\w*|\w*inference_server\w*|"
    r"convert\w*|\w*quantize\w*|prune|export\w*|\w*_eval\w*|evaluate\w*|analyze_data|preprocess_data\w*)\.py$")

# Architectures (spec.model.architecture) whose layers the estimator does not describe.
_ARCHITECTURES = {
    "bert": "an encoder (BERT) model: the estimator models a GPT decoder (no masked-LM and pooler heads)",
    "t5": "an encoder-decoder (T5) model: the estimator models a GPT decoder (no decoder cross-attention)",
    "mamba": "Mamba (state-space) layers are not modelled",
    "hybrid": "Mamba layers of a hybrid model are not modelled",
    "other": "layers other than transformer attention (RWKV, gMLP, vision) are not modelled",
}

# The same, by name (main's reading): anything generating, running inference, quantising, exporting,
# converting or evaluating that is not a pretrain_* script.
_NOT_TRAINING_NAME = _Lazy(
    r"(^|[/.])(\w*(generat|inference|text_gen|ptq|quantiz|export|convert|evaluat)\w*)(\.py)?$", re.IGNORECASE)


# Entry points that rewrite checkpoints (convert formats, merge or split model-parallel partitions):
# they set the world size Megatron's checks see themselves ("Arguments do sanity checks on the world
# size, but we don't care, so trick it into thinking we are plenty of processes": WORLD_SIZE or
# margs.world_size = TP x PP in Megatron's tools/checkpoint loaders and savers, WORLD_SIZE=TP in front
# of merge_mp_partitions.py), so the processes launched say nothing about the parallel layout.
_CHECKPOINT_TOOL = _Lazy(
    r"(^|/)(\w*convert\w*|merge_mp\w*|\w*_mp_partitions|split_mp\w*|\w*checkpoint_util\w*|loader_\w+|saver_\w+)\.py$")


def trains(entry: str | None) -> bool:
    """Whether a Megatron entry point trains (None: no entry point named, assumed to)."""
    if not entry:
        return True
    return not (_NOT_TRAINING_ENTRY.search(entry) or _CHECKPOINT_TOOL.search(entry) or (
        _NOT_TRAINING_NAME.search(entry) and "pretrain" not in entry.rsplit("/", 1)[-1]))


def rewrites_checkpoints(entry: str | None) -> bool:
    """A checkpoint conversion tool: it sets its own world size (see _CHECKPOINT_TOOL)."""
    return entry is not None and bool(_CHECKPOINT_TOOL.search(entry.replace("\\", "/")))


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


def usable_estimate(spec: TrainingSpec, estimate: Any) -> Any:
    """``estimate`` when a rule may act on it: made (not MissingInputs) and for a spec the
    estimator models; None otherwise."""
    from trainlint.estimator.inputs import unjudged

    if not getattr(estimate, "ok", False) or unmodelled(spec) or unjudged(estimate):
        return None
    return estimate
