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


def _with_setting(spec: TrainingSpec, key: str, value: Any) -> TrainingSpec:
    modified = copy.deepcopy(spec)
    modified.settings[key] = _fix_value(value, key)
    return modified


def _ints(*values: Any) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def throughput_candidates(spec: TrainingSpec) -> Iterator[Candidate]:
    """Changes that may raise MFU: less recompute, bigger GEMMs, a smaller bubble, less TP."""
    fw = spec.framework
    if fw == "megatron" and spec.value("memory.recompute") == "full":
        yield Candidate("--recompute-granularity selective (instead of full)", "memory.recompute",
                        _with(spec, memory__recompute="selective", memory__recompute_method=None,
                              memory__recompute_num_layers=None))
    micro, accum = spec.value("batch.micro_batch"), spec.value("batch.grad_accum")
    if _ints(micro, accum) and accum % 2 == 0:
        yield Candidate(_micro_spelling(fw, micro * 2), "batch.micro_batch",
                        _with(spec, batch__micro_batch=micro * 2, batch__grad_accum=accum // 2))
    pipeline = spec.value("parallel.pipeline", 1)
    if _ints(micro) and micro > 1 and _ints(pipeline) and pipeline > 1:
        changes: dict[str, Any] = {"batch__micro_batch": micro // 2}
        if _ints(accum):
            changes["batch__grad_accum"] = accum * 2
        yield Candidate(_micro_spelling(fw, micro // 2) + " (more micro-batches in the pipeline)", "batch.micro_batch",
                        _with(spec, **changes))
    layers = spec.value("model.num_layers")
    if fw == "megatron" and _ints(pipeline, layers) and pipeline > 2 and spec.value("parallel.virtual_pipeline", 1) in (1, None) \
            and layers % (pipeline * 2) == 0:
        yield Candidate(f"--num-layers-per-virtual-pipeline-stage {layers // (pipeline * 2)}", "parallel.pipeline",
                        _with(spec, parallel__virtual_pipeline=2))
    tp, world = spec.value("parallel.tensor", 1), spec.value("cluster.world_size")
    if fw in ("megatron", "neox") and _ints(tp, world) and tp > 1:
        narrower = tp // 2
        layout = narrower * (pipeline if _ints(pipeline) else 1) * spec.value("parallel.context", 1)
        if world % layout == 0:
            spelling = f"--tensor-model-parallel-size {narrower}" if fw == "megatron" else f"model_parallel_size: {narrower}"
            yield Candidate(spelling, "parallel.tensor",
                            _with(spec, parallel__tensor=narrower, parallel__data=world // layout))


def communication_candidates(spec: TrainingSpec) -> Iterator[Candidate]:
    """Changes that hide or shrink data-parallel traffic."""
    fw = spec.framework
    accum, global_batch = spec.value("batch.grad_accum"), spec.value("batch.global_batch")
    if _ints(accum, global_batch):
        if fw == "megatron":
            spelling = f"--global-batch-size {global_batch * 2}"
        elif fw == "neox":
            spelling = f"gradient_accumulation_steps: {accum * 2}"
        else:
            spelling = f"\"gradient_accumulation_steps\": {accum * 2}, \"train_batch_size\": {global_batch * 2}"
        yield Candidate(spelling + " (a larger global batch)", "batch.global_batch",
                        _with(spec, batch__grad_accum=accum * 2, batch__global_batch=global_batch * 2))
    if fw == "megatron":
        setting = spec.settings.get("overlap_grad_reduce")
        if setting is None or not setting.value:
            yield Candidate("--overlap-grad-reduce", "parallel.distributed_optimizer",
                            _with_setting(spec, "overlap_grad_reduce", True))
    elif fw in ("deepspeed", "neox"):
        setting = spec.settings.get("zero_optimization.overlap_comm")
        if setting is None or not setting.value:
            spelling = "\"overlap_comm\": true in zero_optimization" if fw == "deepspeed" else "zero_optimization: {overlap_comm: true}"
            yield Candidate(spelling, "parallel.zero_stage", _with_setting(spec, "zero_optimization.overlap_comm", True))
    tp, heads, world = spec.value("parallel.tensor", 1), spec.value("model.num_attention_heads"), spec.value("cluster.world_size")
    per_node = spec.value("cluster.gpus_per_node", 8)
    if fw in ("megatron", "neox") and _ints(tp, heads, world, per_node) and heads % (tp * 2) == 0 and tp * 2 <= per_node:
        layout = tp * 2 * spec.value("parallel.pipeline", 1) * spec.value("parallel.context", 1)
        if world % layout == 0:
            spelling = f"--tensor-model-parallel-size {tp * 2}" if fw == "megatron" else f"model_parallel_size: {tp * 2}"
            yield Candidate(spelling + " (fewer data-parallel replicas)", "parallel.tensor",
                            _with(spec, parallel__tensor=tp * 2, parallel__data=world // layout))
    stage = spec.value("parallel.zero_stage")
    if fw in ("deepspeed", "neox") and _ints(stage) and stage >= 2:
        for lower in range(stage - 1, 0, -1):  # ZeRO-3 gathers parameters every micro-batch; 2 and 1 do not
            key = "\"zero_optimization\": {\"stage\": %d}" if fw == "deepspeed" else "zero_optimization: {stage: %d}"
            yield Candidate(key % lower, "parallel.zero_stage", _with(spec, parallel__zero_stage=lower))
    micro = spec.value("batch.micro_batch")
    if _ints(micro, accum) and accum % 2 == 0:
        yield Candidate(_micro_spelling(fw, micro * 2) + " (fewer, larger micro-batches)", "batch.micro_batch",
                        _with(spec, batch__micro_batch=micro * 2, batch__grad_accum=accum // 2))


def point_at(spec: TrainingSpec, *targets: str) -> str | None:
    """The first of ``targets`` whose value is written in a file (a finding belongs there)."""
    from trainlint.provenance import first_span

    for target in targets:
        if first_span(spec.get(target))[1] is not None:
            return target
    return None


def final_changes(chain: list[Candidate]) -> tuple[list[Candidate], str]:
    """The changes a chain amounts to (micro 4 -> 2 -> 1 is "micro 1") and how to write them."""
    final = list({c.target: c for c in chain}.values())
    return final, " and ".join(c.spelling for c in final)
