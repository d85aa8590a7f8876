"""Candidate changes to a spec, spelled as the user would write them, and their re-estimates.

A fix hint is never a canned sentence: each candidate is applied to a copy of the spec and
re-estimated in the same GPU and model context, and the hint quotes the resulting numbers.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from trainlint.provenance import Origin, Provenance, Value
from trainlint.spec import TrainingSpec


@dataclass(frozen=True)
class Candidate:
    spelling: str
    """How the user writes the change in this format ("--recompute-granularity selective")."""
    target: str
    """The spec field the change is about: where the finding points."""
    spec: TrainingSpec


def _fix_value(value: Any, note: str) -> Value:
    return Value(value, Provenance(Origin.ASSUMED, note=f"candidate fix: {note}"))


def _with(spec: TrainingSpec, **fields: Any) -> TrainingSpec:
    modified = copy.deepcopy(spec)
    for dotted, value in fields.items():
        modified.set(dotted.replace("__", "."), _fix_value(value, dotted))
    return modified


def _micro_spelling(framework: str, value: int) -> str:
    if framework == "megatron":
        return f"--micro-batch-size {value}"
    if framework == "neox":
        return f"train_micro_batch_size_per_gpu: {value}"
    return f"\"train_micro_batch_size_per_gpu\": {value}"


def memory_candidates(spec: TrainingSpec) -> Iterator[Candidate]:
    """Changes that lower memory per GPU, cheapest in throughput first."""
    fw = spec.framework
    recompute = spec.value("memory.recompute", "none")
    if fw == "megatron" and recompute in (None, "none"):
        yield Candidate("--recompute-granularity selective", "memory.recompute",
                        _with(spec, memory__recompute="selective"))
    if fw in ("megatron", "neox") and recompute != "full":
        spelling = ("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
                    if fw == "megatron" else "checkpoint_activations: true")
        yield Candidate(spelling, "memory.recompute",
                        _with(spec, memory__recompute="full", memory__recompute_method="uniform",
                              memory__recompute_num_layers=1))
    micro = spec.value("batch.micro_batch")
    if isinstance(micro, int) and micro > 1:
        smaller = micro // 2
        changes: dict[str, Any] = {"batch__micro_batch": smaller}
        accum = spec.value("batch.grad_accum")
        if isinstance(accum, int):
            changes["batch__grad_accum"] = accum * micro // smaller
        yield Candidate(_micro_spelling(fw, smaller), "batch.micro_batch", _with(spec, **changes))
    tp, heads, world = spec.value("parallel.tensor", 1), spec.value("model.num_attention_heads"), spec.value("cluster.world_size")
    per_node = spec.value("cluster.gpus_per_node", 8)
    if fw in ("megatron", "neox") and all(isinstance(x, int) for x in (tp, heads, world, per_node)):
        wider = tp * 2
        layout = wider * spec.value("parallel.pipeline", 1) * spec.value("parallel.context", 1)
        if heads % wider == 0 and wider <= per_node and world % layout == 0:
            spelling = f"--tensor-model-parallel-size {wider}" if fw == "megatron" else f"model_parallel_size: {wider}"
            changes = {"parallel__tensor": wider, "parallel__data": world // layout}
            if fw == "megatron" and wider > 1:
                changes["parallel__sequence_parallel"] = True
                spelling += " --sequence-parallel"
            yield Candidate(spelling, "parallel.tensor", _with(spec, **changes))
    if fw == "megatron" and not spec.value("parallel.distributed_optimizer", False):
        yield Candidate("--use-distributed-optimizer", "parallel.distributed_optimizer",
                        _with(spec, parallel__distributed_optimizer=True))
    if fw in ("deepspeed", "neox"):
        stage = spec.value("parallel.zero_stage", 0)
        pipeline = spec.value("parallel.pipeline_engine", False)
        ceiling = 1 if pipeline else 3  # ZeRO >= 2 refuses the pipeline engine (TL110)
        if isinstance(stage, int) and stage < ceiling:
            key = "\"zero_optimization\": {\"stage\": %d}" if fw == "deepspeed" else "zero_optimization: {stage: %d}"
            yield Candidate(key % (stage + 1), "parallel.zero_stage", _with(spec, parallel__zero_stage=stage + 1))


def search(spec: TrainingSpec, candidates: Callable[[TrainingSpec], Iterator[Candidate]],
           estimator: Callable[[TrainingSpec], Any], accept: Callable[[Any], bool],
           score: Callable[[Any], float], max_steps: int = 5) -> tuple[list[Candidate], Any] | None:
    """The smallest change that resolves a finding: first every single candidate, in order of
    cost; when none is enough, the best one (lowest ``score``) is kept and the search goes on
    from there, up to ``max_steps`` changes. Returns the chain and its estimate."""
    chain: list[Candidate] = []
    current = spec
    for _ in range(max_steps):
        best: tuple[float, Candidate, Any] | None = None
        for candidate in candidates(current):
            result = estimator(candidate.spec)
            if not getattr(result, "ok", False):
                continue
            if accept(result):
                return chain + [candidate], result
            value = score(result)
            if best is None or value < best[0]:
                best = (value, candidate, result)
        if best is None:
            return None
        chain.append(best[1])
        current = best[1].spec
    return None
