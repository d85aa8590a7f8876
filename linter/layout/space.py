"""What can be searched for a run: the layout dimensions each framework can express, and the
structural constraints every framework checks at start-up (cheap filters applied before any
estimate).

Framework by framework (what a config of that format can say):

* **Megatron-LM** (current): TP, PP, virtual stages (interleaving), CP, micro batch (the
  accumulation is derived from the global batch), recompute none / selective / full, the
  distributed optimizer; sequence parallelism is switched on with TP > 1 (it only saves memory
  and time in the estimate) unless ``--distribute-saved-activations`` forbids it.
* **Megatron-DeepSpeed / older Megatron-LM copies**: TP, PP, micro batch, recompute none / full
  (the ZeRO stage lives in the DeepSpeed JSON next to the script and is kept).
* **GPT-NeoX**: ``model_parallel_size`` (TP), ``pipe_parallel_size`` (PP; 0 runs without
  DeepSpeed's pipeline engine, which ZeRO 2/3 need), micro batch and accumulation, full recompute
  (``checkpoint_activations``; NeoX has no selective recompute), ZeRO stage 0-3. No CP, no
  interleaving.
* **DeepSpeed JSON**: micro batch and accumulation, ZeRO stage. TP and PP only when the JSON
  already has ``tensor_parallel.autotp_size`` / ``pipeline.stages`` (otherwise they are decided by
  the model code, which the JSON does not show). Activation checkpointing is called from model
  code: not searched.
* **FSDP** (torchtitan-style specs, e.g. calibration rows): TP, PP, CP, micro batch, recompute;
  the sharding (ZeRO-3 equivalent) is kept.

Expert parallelism, the world size and the precision are kept as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Any, Iterator, Sequence

from trainlint.estimator.inputs import Inputs
from trainlint.core.provenance import Origin
from trainlint.core.framework import framework_of
from trainlint.core.framework import raw_sequence_parallel
from trainlint.core.framework import data_parallel_size
from trainlint.core.spec import TrainingSpec

DIMENSIONS = ("tp", "pp", "vpp", "cp", "micro", "recompute", "zero", "dist-opt")
"""Names accepted by --fix / --vary (``batch`` is an alias of ``micro``)."""

RECOMPUTE_ORDER = ("none", "selective", "full")


@dataclass(frozen=True)
class Layout:
    """One point of the search space."""

    tp: int
    pp: int
    vpp: int
    cp: int
    dp: int
    micro: int
    grad_accum: int
    global_batch: int
    recompute: str
    zero: int
    dist_opt: bool
    sp: bool
    pipeline_engine: bool | None = None
    """NeoX only: whether DeepSpeed's PipelineEngine is engaged (pipe_parallel_size >= 1)."""

    def short(self) -> str:
        parts = [f"TP {self.tp}", f"PP {self.pp}"]
        if self.vpp > 1:
            parts.append(f"VP {self.vpp}")
        if self.cp > 1:
            parts.append(f"CP {self.cp}")
        parts += [f"DP {self.dp}", f"micro {self.micro}", f"GA {self.grad_accum}"]
        parts.append(f"recompute {self.recompute}")
        return " ".join(parts)

    def as_dict(self) -> dict:
        return {"tp": self.tp, "pp": self.pp, "vpp": self.vpp, "cp": self.cp, "dp": self.dp, "micro_batch": self.micro,
                "grad_accum": self.grad_accum, "global_batch": self.global_batch, "recompute": self.recompute,
                "zero_stage": self.zero, "distributed_optimizer": self.dist_opt, "sequence_parallel": self.sp}


@dataclass
class Space:
    """The values each dimension may take for one run, and the constraints between them."""

    framework: str
    world: int
    gpus_per_node: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    seq: int
    global_batch: int
    tp: list[int]
    pp: list[int]
    cp: list[int]
    recompute: list[str]
    zero: list[int]
    dist_opt: list[bool]
    interleave: bool
    """Virtual pipeline stages may be searched (Megatron-LM)."""
    vary_micro: bool
    batch_tolerance: float | None
    """None: the global batch is held fixed; else the fraction it may move by."""
    megatron_kv_rule: bool
    """Query groups may divide TP as well as be a multiple of it (Megatron's rule)."""
    sp_policy: str
    """"tp": on with TP > 1 (Megatron-LM); "keep" (may drop it at TP 1) or "fixed": as the config writes it."""
    current_sp: bool
    """Sequence parallelism as the config writes it (whatever the TP)."""
    neox_engine: bool | None
    experts: int = 1
    ep: int = 1
    etp_follows_tp: bool = True
    etp: int = 1
    max_micro: int = 64
    pipeline_engine: str = ""
    """Which DeepSpeed pipeline-engine rule bounds ZeRO (:attr:`trainlint.core.framework.SearchPolicy.pipeline_engine`)."""
    ds_pipeline_engine: bool = False
    """"wrapped" (Megatron-DeepSpeed): DeepSpeed's pipeline engine is engaged (no --no-pipeline-parallel)."""
    expert_grid: bool = False
    """The expert grid (EP x ETP x PP) must divide the world (Megatron-Core's MoE)."""
    interleave_needs_pp_multiple: bool = False
    """With interleaving, the accumulation steps must be a multiple of the pipeline size."""
    dist_opt_switch: bool = False
    """The distributed optimizer is a switch of the run (a change only where there is DP to shard over)."""
    bf16_accum_guard: bool = False
    """bf16 on DeepSpeed's pipeline engine without fp32 gradient accumulation (TL134, TL180)."""
    notes: list[str] = field(default_factory=list)
    current: Layout | None = None
    _vpp_cache: dict[int, list[int]] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ structure

    def tp_ok(self, tp: int) -> bool:
        if self.heads % tp or self.ffn % tp:
            return False
        if self.megatron_kv_rule:
            if self.kv_heads % tp and tp % self.kv_heads:
                return False
        elif self.kv_heads < self.heads and self.kv_heads % tp:
            return False
        return True

    def vpp_values(self, pp: int) -> list[int]:
        cur = self.current
        keep = cur.vpp if cur is not None and cur.pp == pp and pp > 1 else 1
        if not self.interleave or pp <= 1:
            return [keep]
        found = self._vpp_cache.get(pp)
        if found is None:
            found = self._vpp_cache[pp] = sorted(set(_divisors(self.layers // pp)) | {keep})
        return found

    def structures(self) -> Iterator[tuple[int, int, int, int, int]]:
        """(TP, PP, VP, CP, DP) that divide the world and the model."""
        for tp in self.tp:
            for pp in self.pp:
                for cp in self.cp:
                    model = tp * pp * cp
                    dp = data_parallel_size(self.world, model)
                    if dp is None:
                        continue
                    if self.experts > 1 and self.expert_grid:
                        etp = tp if self.etp_follows_tp else self.etp
                        if self.world % (self.ep * etp * pp) or (dp * cp * tp) % (self.ep * etp):
                            continue
                    for vpp in self.vpp_values(pp):
                        yield tp, pp, vpp, cp, dp

    def batches(self, dp: int, pp: int, vpp: int) -> Iterator[tuple[int, int, int]]:
        """(micro, accumulation, global batch), micro ascending."""
        step_pp = pp if (vpp > 1 and self.interleave_needs_pp_multiple) else 1  # interleaving: M % PP == 0
        g = self.global_batch
        if self.batch_tolerance is None:
            if not self.vary_micro:
                cur = self.current
                micros = [cur.micro] if cur is not None else [1]
            else:
                micros = [m for m in range(1, min(self.max_micro, g // dp) + 1) if (g // dp) % m == 0] if g % dp == 0 else []
            for m in micros:
                if g % (m * dp):
                    continue
                ga = g // (m * dp)
                if ga % step_pp:
                    continue
                yield m, ga, g
            return
        low, high = g * (1 - self.batch_tolerance), g * (1 + self.batch_tolerance)
        if self.vary_micro:
            micros = sorted({m for m in range(1, self.max_micro + 1) if m & (m - 1) == 0 or g % m == 0}
                            | ({self.current.micro} if self.current else set()))
        else:
            micros = [self.current.micro if self.current else 1]
        for m in micros:
            unit = m * dp * step_pp
            below = (g // unit) * unit
            seen = set()
            for total in (below, below + unit):
                if total < 1 or total in seen or not low <= total <= high:
                    continue
                seen.add(total)
                yield m, total // (m * dp), total

    def sp_for(self, tp: int) -> bool:
        """Sequence parallelism at ``tp``: on with TP > 1 where the search switches it ("tp"),
        else as the config writes it (which the estimator, like the frameworks, ignores at TP 1)."""
        if self.sp_policy == "tp":
            return tp > 1
        return self.current_sp and tp > 1

    def zero_values(self, pp: int) -> list[tuple[int, bool | None, int | None]]:
        """(ZeRO stage, NeoX pipeline engine, most accumulation steps) allowed with ``pp`` stages.

        DeepSpeed's pipeline engine refuses ZeRO >= 2 (TL110); NeoX engages it at
        pipe_parallel_size >= 1. In bf16 without fp32 gradient accumulation the engine is
        flagged with ZeRO >= 1 by NeoX (TL180) and with accumulation over several micro-batches
        without ZeRO by DeepSpeed (TL134): those layouts are not offered."""
        out: list[tuple[int, bool | None, int | None]] = []
        guard = self.bf16_accum_guard
        for z in self.zero:
            if self.pipeline_engine == "switch":  # NeoX: a layout choice at PP 1
                if pp > 1:
                    engine = True
                elif z >= 2:
                    engine = False
                else:
                    cur = self.current
                    engine = bool(self.neox_engine) if cur is not None and cur.pp == 1 and not guard else False
                if engine and z >= 2:
                    continue
                if engine and guard:
                    if z >= 1:
                        continue
                    out.append((z, engine, 1))
                    continue
                out.append((z, engine, None))
                continue
            if self.pipeline_engine == "stages" and pp > 1:
                if z >= 2:
                    continue
                out.append((z, None, 1 if guard and z == 0 else None))
                continue
            if self.pipeline_engine == "wrapped" and z >= 2 and (pp > 1 or self.ds_pipeline_engine):
                # Megatron-DeepSpeed builds GPTModelPipe (DeepSpeed's pipeline engine) unless
                # --no-pipeline-parallel, at PP 1 too; the engine refuses ZeRO >= 2 (TL110)
                continue
            out.append((z, None, None))
        return out


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _expressible(spec: TrainingSpec, adapters: Sequence[Any]) -> frozenset[str] | None:
    from trainlint.layout.changes import adapter_of

    adapter = adapter_of(spec, adapters)
    return adapter.expressible(spec) if adapter is not None else None



def build_space(spec: TrainingSpec, base: Inputs, *, fix: AbstractSet[str] = frozenset(), vary: set[str] | None = None,
                batch_tolerance: float | None = None, max_micro: int = 64, written: Layout | None = None,
                adapters: Sequence[Any] = ()) -> Space:
    """The search space of ``spec`` (``base``: its resolved inputs). ``written``: the layout the
    file writes when it cannot be estimated itself (``base`` is then a neutral layout). What the
    format can express is its adapter's answer (``Adapter.expressible``; the adapter named by the
    run's framework, among ``adapters``, else the built-in and installed ones)."""
    fw = spec.framework
    framework = framework_of(spec)
    searchable = set(_expressible(spec, adapters) or {"micro"})
    expressible = frozenset(searchable)  # what the format can write, before --vary / --fix narrow the search
    notes = []
    if vary is not None:
        unknown = vary - searchable
        if unknown:
            notes.append(f"{fw} configs cannot express {', '.join(sorted(unknown))}: not searched")
        searchable &= vary
    searchable -= fix

    i = base
    policy = framework.search_policy(spec, base, searchable, expressible)
    gpn = i.gpus_per_node
    cur_engine = policy.current_pipeline_engine
    current = Layout(i.tp, i.pp, i.vpp, i.cp, i.dp, i.micro, i.grad_accum, i.global_batch, i.recompute, i.zero,
                     i.dist_opt, i.sp, cur_engine)
    if written is not None:
        current = Layout(written.tp, written.pp, written.vpp, written.cp, -1, written.micro, written.grad_accum,
                         written.global_batch, i.recompute, i.zero, i.dist_opt, i.sp, cur_engine)

    def values(dim: str, candidates: list, cur) -> list:
        if dim not in searchable:
            return [cur]
        return sorted(set(candidates) | {cur}, key=lambda x: (str(type(x)), x))

    tp_cands = [t for t in _divisors(i.heads) if t <= gpn and gpn % t == 0 and i.world % t == 0]
    pp_cands = [p for p in _divisors(i.layers) if i.world % p == 0]
    cp_cands = [c for c in _divisors(i.world) if c > 1 and i.seq % (2 * c) == 0] + [1]
    rec_cands = list(policy.recompute)
    zero_cands = list(policy.zero)
    space = Space(
        framework=fw, world=i.world, gpus_per_node=gpn, layers=i.layers, heads=i.heads, kv_heads=i.kv_heads,
        ffn=i.ffn if not i.moe else i.moe_ffn, seq=i.seq,
        global_batch=written.global_batch if written is not None and written.global_batch > 0 else i.global_batch,
        tp=list(values("tp", tp_cands, i.tp)),
        pp=values("pp", pp_cands, i.pp),
        cp=values("cp", cp_cands, i.cp),
        recompute=values("recompute", rec_cands, i.recompute),
        zero=values("zero", zero_cands, i.zero),
        dist_opt=values("dist-opt", [False, True], i.dist_opt),
        interleave="vpp" in searchable,
        vary_micro="micro" in searchable,
        batch_tolerance=batch_tolerance,
        megatron_kv_rule=policy.kv_divides_or_multiple,
        sp_policy=policy.sp_policy, current_sp=raw_sequence_parallel(spec), neox_engine=cur_engine,
        experts=i.experts, ep=i.ep, etp_follows_tp=spec.parallel.expert_tensor is None
        or spec.parallel.expert_tensor.provenance.origin is not Origin.FILE, etp=i.etp,
        max_micro=max(max_micro, i.micro), notes=notes + policy.notes, current=current,
        pipeline_engine=policy.pipeline_engine, ds_pipeline_engine=policy.ds_pipeline_engine,
        bf16_accum_guard=policy.bf16_accum_guard, expert_grid=policy.expert_grid,
        interleave_needs_pp_multiple=policy.interleave_needs_pp_multiple,
        dist_opt_switch=framework.distributed_optimizer_switch(spec),
    )
    space.tp = [t for t in space.tp if t == i.tp or space.tp_ok(t)]
    if policy.pp_divides_layers:
        space.pp = [p for p in space.pp if p == i.pp or i.layers % p == 0]
    return space
