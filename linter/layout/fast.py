"""The estimator's memory and time for one layout, computed on as few pipeline stages as possible
and with everything that does not change between layouts computed once.

``estimate_inputs`` walks every pipeline stage (memory and time per stage), so one estimate at
PP 64 costs ~1 ms, and a search of tens of thousands of layouts cannot afford it. Here:

* the stages of a layout come in at most four kinds (the first stage, middle stages with one
  layer more or not, the last stage) whose numbers are identical within a kind; the worst
  stage's memory is that of the first or the last stage (the first holds at least as many
  layers, micro-batches in flight and parameters as any middle stage);
* what depends only on the structure (TP, PP, VP, CP, DP, ZeRO / distributed optimizer:
  parameters, gradients, optimizer states, buffers, NCCL) is computed once per structure
  (:class:`Structure`); per-layer costs are cached by what they depend on (TP, CP, micro batch,
  SP), so each GEMM shape is timed once per search.

The assembly follows :func:`trainlint.estimator.memory.stage_memory`,
:func:`~trainlint.estimator.memory.stage_activation_bytes`,
:func:`trainlint.estimator.performance.stage_microbatch` and
:func:`~trainlint.estimator.performance.step_time` line by line, calling the estimator's own
functions for every formula (GEMM times, attention, collectives, parameter counts, ZeRO bytes);
Cost objects are linear, so their totals combine the same way. The results equal the
estimator's up to the order of floating-point additions (tests/test_suggest.py checks it on
many layouts), and the search ranks its finalists with the real estimator anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainlint.estimator import coefficients as C
from trainlint.estimator.inputs import Inputs
from trainlint.estimator.memory import (buffer_bytes, communicator_count, in_flight, layer_activation_bytes, layer_input_bytes,
                                        op_sac_layer_bytes, stage_params_per_gpu, static_bytes)
from trainlint.estimator.performance import (Cost, attention_backward, data_parallel, gemm, hbm, layer_forward, link_bw,
                                             optimizer_time, tp_comm_per_layer)


def stage_kinds(i: Inputs) -> list[tuple[int, int, int]]:
    """(a representative stage, its layers, how many stages are like it), in stage order."""
    base, extra = divmod(i.layers, i.pp)
    last = i.pp - 1
    kinds = [(0, base + (1 if extra > 0 else 0), 1)]
    if last == 0:
        return kinds
    longer = max(0, min(extra, last) - 1)  # middle stages 1..extra-1 hold one layer more
    if longer:
        kinds.append((1, base + 1, longer))
    shorter = last - 1 - longer
    if shorter:
        kinds.append((1 + longer, base, shorter))
    kinds.append((last, base + (1 if last < extra else 0), 1))
    return kinds


def derive(source: Inputs, **fields) -> Inputs:
    """``dataclasses.replace`` without running ``__init__`` again (Inputs has no validation): ~10x faster."""
    out = object.__new__(Inputs)
    out.__dict__.update(source.__dict__)
    out.__dict__.update(fields)
    return out


@dataclass
class Structure:
    """What a layout's memory and time share with every micro batch and recompute mode."""

    inputs: Inputs
    kinds: list[tuple[int, int, int]]
    params: list[float]
    """Parameters per GPU of each stage kind."""
    n_max: float
    static_first: float
    """Parameters + gradients + optimizer states + buffers of the first stage, bytes."""
    static_last: float
    fixed: float
    """CUDA context + NCCL buffers, bytes (outside the allocator: no fragmentation)."""

    @property
    def memory_floor(self) -> float:
        """A lower bound of the worst stage whatever the micro batch and recompute."""
        return max(self.static_first, self.static_last) * (1 + C.ALLOCATOR_FRAGMENTATION) + self.fixed


class FastModel:
    """Memory and step time of many layouts of one run, with caches."""

    def __init__(self) -> None:
        self._layer: dict[tuple, tuple[float, float, float]] = {}
        self._logits: dict[tuple, tuple[float, float]] = {}
        self._tp: dict[tuple, float] = {}
        self._acts: dict[tuple, tuple[float, float, float, float]] = {}

    # ---------------------------------------------------------------- structure

    def structure(self, s: Inputs) -> Structure:
        kinds = stage_kinds(s)
        params = [stage_params_per_gpu(s, stage, layers) for stage, layers, _ in kinds]
        last = s.pp - 1

        def static(k: int) -> float:
            n = params[k]
            p, g, o = static_bytes(s, n)
            return p + g + o + buffer_bytes(s, n)

        first = static(0)
        fixed = C.CUDA_CONTEXT_GIB * C.GIB + C.NCCL_GIB_PER_COMMUNICATOR * C.GIB * communicator_count(s)
        return Structure(s, kinds, params, max(params), first, static(len(kinds) - 1) if last > 0 else first, fixed)

    # ---------------------------------------------------------------- memory

    def _layer_acts(self, i: Inputs) -> tuple[float, float, float, float]:
        """(full layer, layer without scores, torchtitan op-SAC layer, checkpointed input) bytes."""
        key = (i.tp, i.cp, i.micro, i.sp, i.etp)
        found = self._acts.get(key)
        if found is None:
            full = layer_activation_bytes(i, keep_scores=not i.flash)
            no_scores = full if i.flash else layer_activation_bytes(i, keep_scores=False)
            sac = op_sac_layer_bytes(i) if i.owner == "fsdp" else 0.0
            found = self._acts[key] = (full, no_scores, sac, layer_input_bytes(i))
        return found

    def activations(self, i: Inputs, stage: int, layers: int) -> float:
        """memory.stage_activation_bytes(i, stage, layers)[0]."""
        full, no_scores, sac, checkpoint = self._layer_acts(i)
        if i.recompute == "selective":
            stored_layer = sac if i.owner == "fsdp" else no_scores
        else:
            stored_layer = full
        if i.recompute == "full":
            n_rec = min(layers, i.recompute_layers)
            if i.recompute_method == "block":
                stored = n_rec * checkpoint + (layers - n_rec) * stored_layer
                group = 1
            else:
                stored = -(-layers // max(1, n_rec)) * checkpoint
                group = n_rec
            workspace = C.ACTIVATION_WORKSPACE_LAYERS * group * full
        else:
            stored = layers * stored_layer
            workspace = C.ACTIVATION_WORKSPACE_LAYERS * (full - stored_layer)
        flight = in_flight(i, stage)
        total = flight * stored + workspace
        sb = i.seq / i.cp * i.micro
        rep = i.tp if i.sp else 1
        if stage == 0:
            total += flight * (sb * i.hidden / rep + i.act_bytes * sb * i.hidden / rep)
        if stage == i.pp - 1:
            total += C.LOGITS_BYTES_PER_ELEMENT * sb * i.vocab / i.tp + i.act_bytes * sb * i.hidden
        return total

    def memory(self, st: Structure, i: Inputs) -> float:
        """The estimate's worst_stage.total for ``i`` (a point of structure ``st``)."""
        grow = 1 + C.ALLOCATOR_FRAGMENTATION
        first = (st.static_first + self.activations(i, 0, st.kinds[0][1])) * grow + st.fixed
        if i.pp == 1:
            return first
        return max(first, (st.static_last + self.activations(i, i.pp - 1, st.kinds[-1][1])) * grow + st.fixed)

    # ---------------------------------------------------------------- time

    def _layer_time(self, i: Inputs) -> tuple[float, float, float]:
        """(linear + elementwise, attention forward, attention backward) seconds of one layer."""
        key = (i.tp, i.cp, i.micro, i.sp, i.etp)
        found = self._layer.get(key)
        if found is None:
            lin, attn = layer_forward(i)
            found = self._layer[key] = (lin.total, attn.total, attention_backward(i, attn).total)
        return found

    def _logits_time(self, i: Inputs) -> tuple[float, float]:
        """(output-layer GEMMs + cross-entropy, their backward) seconds on the last stage."""
        key = (i.tp, i.cp, i.micro)
        found = self._logits.get(key)
        if found is None:
            m = i.micro * i.seq / i.cp
            gemms = gemm(i, m, i.hidden, i.vocab / i.tp).scale(3.0)
            ce = Cost(0.0, 16 * m * i.vocab / i.tp / hbm(i))
            found = self._logits[key] = ((gemms + ce).total, gemms.scale(2 / 3).total)
        return found

    def _tp_comm(self, i: Inputs) -> float:
        key = (i.tp, i.cp, i.micro, i.recompute == "full", i.etp)
        found = self._tp.get(key)
        if found is None:
            found = self._tp[key] = tp_comm_per_layer(i)
        return found

    def stage(self, i: Inputs, last: bool, layers: int) -> tuple[float, float, float, float]:
        """(compute, exposed TP, p2p, backward) seconds of one micro-batch on a stage
        (performance.stage_microbatch)."""
        lin, attn, attn_bwd = self._layer_time(i)
        fwd = lin + attn
        bwd = 2.0 * lin + attn_bwd
        extra = fwd if i.recompute == "full" else attn if i.recompute == "selective" else 0.0
        compute = (fwd + bwd + extra) * layers
        backward = (bwd + extra) * layers
        if last:
            logits, logits_bwd = self._logits_time(i)
            compute += logits
            backward += logits_bwd
        tp = layers * self._tp_comm(i)
        p2p = 0.0
        if i.pp > 1:
            msg = i.act_bytes * (i.micro * i.seq / i.cp) * i.hidden / (i.tp if i.sp else 1)
            p2p = 2 * i.vpp * (msg / link_bw(i, i.tp * i.cp * i.dp * 2) + C.COLLECTIVE_LATENCY_S)
        return compute, tp, p2p, backward

    def step_seconds(self, st: Structure, i: Inputs) -> float:
        """The estimate's step_time (performance.step_time)."""
        best: tuple[float, float, float, float, float] | None = None
        total_sum = 0.0
        done: dict[tuple[int, bool], tuple[float, float, float, float]] = {}
        last_stage = i.pp - 1
        for stage, layers, count in st.kinds:
            key = (layers, stage == last_stage)
            parts = done.get(key)
            if parts is None:
                parts = done[key] = self.stage(i, stage == last_stage, layers)
            compute, tp, p2p, bwd = parts
            total = compute + tp + p2p + C.MICROBATCH_OVERHEAD_S
            total_sum += total * count
            if best is None or total > best[0]:
                best = (total, compute, tp, p2p, bwd)
        assert best is not None
        total, compute, tp, p2p, bwd = best
        m = i.grad_accum
        bubble = (i.pp - 1) / i.vpp * (total_sum / i.pp) if i.pp > 1 else 0.0
        dp = data_parallel(i, st.n_max, total, bwd)
        opt = optimizer_time(i, st.n_max)
        return m * (compute + C.MICROBATCH_OVERHEAD_S) + m * tp + bubble + m * p2p + dp + opt + C.STEP_OVERHEAD_S


def worst_stage_bytes(i: Inputs) -> float:
    """The estimate's worst_stage.total, without the per-stage walk."""
    model = FastModel()
    return model.memory(model.structure(i), i)


def step_seconds(i: Inputs) -> float:
    """The estimate's step_time, without the per-stage walk."""
    model = FastModel()
    return model.step_seconds(model.structure(i), i)
