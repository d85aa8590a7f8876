"""Same run, same estimate: random layouts written in four formats, read by the adapters, estimated.

    .venv/bin/python benchmarks/cross_format.py            # 150 layouts, seed 0
    .venv/bin/python benchmarks/cross_format.py -n 300 --seed 3 --gpu h100-sxm

Each layout (TP / PP / DP / ZeRO 0-3 / recompute / micro / accumulation / optimizer offload / MoE /
flash or not / bf16 or fp16) is written by :mod:`run_writer` as a Megatron-LM script, a
Megatron-DeepSpeed script + DeepSpeed JSON, a GPT-NeoX YAML and a Megatron-Bridge ConfigContainer YAML, each read back through trainlint's
adapters as a user's files are, and estimated with only ``--gpu`` given. Printed: the count of
disagreements per kind (target 0 for every kind):

* ``no-estimate``: a format gives no estimate (or an internal error) for a valid run;
* ``batch``: the batch triple (micro, accumulation, global) differs from the run's in some format;
* ``tokens-per-step``: tokens per step != micro x accumulation x DP x seq;
* ``mfu``: MFU outside (0, 1];
* ``memory MDS/NeoX``, ``tokens/s MDS/NeoX``: Megatron-DeepSpeed and NeoX (both DeepSpeed's engine)
  more than 5% apart;
* ``memory LM``, ``tokens/s LM``: Megatron-LM more than 5% from the DeepSpeed formats where the
  engines coincide (fp16 at ZeRO 0: FP16_Optimizer and Megatron's fp16 optimizer keep the same
  bytes and all-reduce the same fp16 gradients);
* ``memory Bridge/LM``, ``tokens/s Bridge/LM``, ``batch Bridge/LM``: the Megatron-Bridge YAML and the
  Megatron-LM script of the same run are one Megatron-Core run: any difference in the batch triple, the
  memory or tokens/s (beyond rounding, 1e-9) counts;
* ``settings Bridge/LM``, ``fields Bridge/LM`` (the ``--core`` layouts: Megatron-Core fields only those two
  formats write, ``Run.core``): a field read as another value than the Megatron-LM argument it maps to, or
  any typed field of the two specs differing (the world-derived ones aside);
* ``memory grows``: the per-GPU memory grows when the ZeRO stage grows (Megatron-DeepSpeed and NeoX)
  or when the distributed optimizer is turned on (Megatron-LM), at DP >= 2, leaving out the
  engine's communication buffers (their size is the user's ``reduce_bucket_size`` etc., not the
  stage's doing).

Printed beside them, not counted as disagreements: how often the *total* with buffers grows with the
stage. It does, in DeepSpeed as in the estimate, for small models: ZeRO-1/2 allocate reduce and
all-gather buckets (5e8 elements by default) that BF16_Optimizer at ZeRO 0 does not, and ZeRO-3's
live-parameter and reduce buffers can exceed what sharding the 16-bit weights saves; at DP 1,
ZeRO-1 (2 + 2 + 16 bytes per parameter) holds more than BF16_Optimizer (2 + 4 + 12).

Exit status 1 when any kind disagrees; 2 on an internal error (a written run the adapters do not read
as one run, e.g. a TL999).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import tempfile
from typing import Any
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_writer import FORMATS, WORLD_NOT_STATED, Run, read_one, write

from trainlint.estimator import InvariantError, build_context, estimate

TOLERANCE = 0.05
KINDS = ("no-estimate", "batch", "tokens-per-step", "mfu", "memory MDS/NeoX", "tokens/s MDS/NeoX", "memory LM",
         "tokens/s LM", "batch Bridge/LM", "memory Bridge/LM", "tokens/s Bridge/LM", "settings Bridge/LM",
         "fields Bridge/LM", "memory grows")
WORLD_FIELDS = frozenset({"cluster.world_size", "cluster.gpus_per_node", "cluster.nodes", "parallel.data", "batch.grad_accum"})
"""Typed fields a Bridge YAML cannot state (it gives no world size) and those derived from it."""
SAME_ENGINE = 1e-9
"""Bridge and Megatron-LM run the same Megatron-Core code: their estimates must be equal, not close."""


def random_run(rng: random.Random) -> Run:
    """A layout every framework accepts: TP divides the heads, PP the layers, world <= 8 or whole
    nodes of 8, ZeRO >= 2 only without pipeline parallelism (DeepSpeed's pipeline engine refuses
    it), offload only with ZeRO, MoE only with ZeRO <= 1 (NeoX refuses MoE with ZeRO 2/3) and
    one expert-parallel rank (NeoX has no expert-parallel setting)."""
    while True:
        tp = rng.choice([1, 2, 4, 8])
        pp = rng.choice([1, 1, 2, 4])
        dp = rng.choice([1, 2, 4, 8, 16])
        world = tp * pp * dp
        if world > 8 and world % 8:
            continue
        if world > 256:
            continue
        zero = rng.choice([0, 1, 2, 3]) if pp == 1 else rng.choice([0, 1])
        experts = rng.choice([1, 1, 1, 8])
        if experts > 1 and zero > 1:
            zero = rng.choice([0, 1])
        return Run(
            layers=rng.choice([8, 16, 24, 32]), hidden=rng.choice([1024, 2048, 4096]), heads=rng.choice([16, 32]),
            seq=rng.choice([1024, 2048, 4096]), vocab=51200, tp=tp, pp=pp, dp=dp, micro=rng.choice([1, 2, 4]),
            accum=rng.choice([1, 2, 4, 8]) * (pp if pp > 1 else 1), zero=zero,
            recompute=rng.choice(["none", "full"]), offload=rng.choice(["none", "cpu"]) if zero >= 1 else "none",
            dtype=rng.choice(["bf16", "bf16", "fp16"]), flash=rng.choice([True, False]), experts=experts,
            top_k=rng.choice([1, 2]) if experts > 1 else 1, expert_interval=rng.choice([1, 2]) if experts > 1 else 1)


def random_core_run(rng: random.Random) -> Run:
    """A Megatron-Core layout with fields only Megatron-LM and Bridge write (``Run.core``), from the Bridge
    field mapping (adapters/bridge/core_fields.json): an uneven first pipeline stage, multi-latent
    attention, shared experts, selective recompute of chosen modules, sequence parallelism, DDP buckets."""
    base = random_run(rng)
    core: list[tuple[str, object]] = []
    if base.pp >= 2:
        firsts = [n for n in range(1, base.layers) if (base.layers - n) % (base.pp - 1) == 0 and n != base.layers // base.pp]
        if firsts:
            core.append(("model.num_layers_in_first_pipeline_stage", rng.choice(firsts)))
    if rng.random() < 0.4:
        core += [("model.multi_latent_attention", True), ("model.kv_lora_rank", 512), ("model.qk_head_dim", 128),
                 ("model.qk_pos_emb_head_dim", 64), ("model.v_head_dim", 128)]
        if rng.random() < 0.5:
            core.append(("model.q_lora_rank", 1536))
    if base.experts > 1 and rng.random() < 0.5:
        core.append(("model.moe_shared_expert_intermediate_size", rng.choice([1024, 2048])))
    if base.recompute == "none" and rng.random() < 0.5:
        core += [("model.recompute_granularity", "selective"),
                 ("model.recompute_modules", rng.choice([["core_attn"], ["core_attn", "mlp"], ["layernorm", "mla_up_proj"]]))]
    if base.tp > 1 and rng.random() < 0.5:
        core.append(("model.sequence_parallel", True))
    if rng.random() < 0.3:
        core.append(("ddp.num_buckets", rng.choice([2, 4])))
    return dataclasses.replace(base, core=tuple(core), dtype="bf16")


def core_disagreements(run: Run, workdir: str, gpu: str = "a100-80gb") -> dict[str, str]:
    """Kind -> what disagreed between the Megatron-LM script and the Bridge YAML of a :func:`random_core_run`
    (the DeepSpeed formats do not write its Megatron-Core fields, so they are not compared)."""
    found: dict[str, str] = {}
    ests: dict[str, Any] = {}
    specs: dict[str, Any] = {}
    for fmt in ("megatron-lm", "bridge"):
        spec = specs[fmt] = _read(write(run, fmt, str(Path(workdir) / fmt)))
        world = {"nodes": run.nodes, "gpus_per_node": run.per_node} if fmt in WORLD_NOT_STATED else {}
        try:
            ests[fmt] = estimate(spec, build_context(spec, gpu=gpu, **world))
        except InvariantError as exc:
            ests[fmt] = exc
        if not getattr(ests[fmt], "ok", False):
            found["no-estimate"] = f"{fmt}: {ests[fmt]}"
    if found:
        return found
    from trainlint.adapters.bridge.keys import KEYS

    dest_of = {k.path: k.dest for k in KEYS}
    for path, _ in run.core:  # the argument each field is read as: the same value from both files
        a, b = specs["megatron-lm"].settings.get(dest_of[path]), specs["bridge"].settings.get(dest_of[path])
        if a is None or b is None or a.value != b.value:
            found["settings Bridge/LM"] = f"{path} ({dest_of[path]}): {b and b.value!r} vs {a and a.value!r}"
    typed = [{n: v.value for n, v in specs[fmt].items() if n not in WORLD_FIELDS and n != "run.train_iters"}
             for fmt in ("megatron-lm", "bridge")]
    if typed[0] != typed[1]:
        diff = sorted(k for k in set(typed[0]) | set(typed[1]) if typed[0].get(k) != typed[1].get(k))
        found["fields Bridge/LM"] = ", ".join(f"{k}: {typed[1].get(k)!r} vs {typed[0].get(k)!r}" for k in diff[:4])
    bridge, lm = ests["bridge"], ests["megatron-lm"]
    found.update(bridge_vs_lm(bridge, lm))
    return found


def _read(path: str):
    """The one run of a written file; UnreadRun when the adapters read none (a TL999 among them)."""
    try:
        return read_one(path)
    except ValueError as exc:
        raise UnreadRun(str(exc)) from None


def estimates(run: Run, workdir: str, gpu: str) -> dict[str, object]:
    """Each format's estimate of ``run`` (an Estimate, MissingInputs, or the InvariantError)."""
    out: dict[str, object] = {}
    for fmt in FORMATS:
        spec = _read(write(run, fmt, str(Path(workdir) / fmt)))
        world = {"nodes": run.nodes, "gpus_per_node": run.per_node} if fmt in WORLD_NOT_STATED else {}
        try:
            out[fmt] = estimate(spec, build_context(spec, gpu=gpu, **world))
        except InvariantError as exc:
            out[fmt] = exc
    return out


def _apart(a: float, b: float) -> bool:
    return abs(a - b) > TOLERANCE * max(abs(a), abs(b))


def lm_coincides(run: Run) -> bool:
    """Megatron-LM's optimizer keeps the same bytes as DeepSpeed's for this run (the steady ones: at the
    optimizer step DeepSpeed's FP16_Optimizer holds 8 bytes of fp32 gradients per parameter, Megatron's
    4, so the memory is compared where the step does not set the peak: :func:`step_sets_peak`)."""
    return run.dtype == "fp16" and run.zero == 0


def step_sets_peak(e: Any) -> bool:
    """The optimizer step's fp32 gradients outgrow the activations on the worst stage."""
    return "step_grad_copy" in e.worst_stage.detail


def bridge_vs_lm(bridge: Any, lm: Any) -> dict[str, str]:
    """Where the Bridge estimate of a run parts from the Megatron-LM one (the same engine: held to
    SAME_ENGINE): the batch triple and DP, the memory of the worst stage, tokens/s."""
    found: dict[str, str] = {}
    if (bridge.inputs.micro, bridge.inputs.grad_accum, bridge.inputs.global_batch, bridge.inputs.dp) != \
            (lm.inputs.micro, lm.inputs.grad_accum, lm.inputs.global_batch, lm.inputs.dp):
        found["batch Bridge/LM"] = f"{(bridge.inputs.micro, bridge.inputs.grad_accum, bridge.inputs.global_batch)} vs " \
                                   f"{(lm.inputs.micro, lm.inputs.grad_accum, lm.inputs.global_batch)}"
    if abs(bridge.worst_stage.total - lm.worst_stage.total) > SAME_ENGINE * lm.worst_stage.total:
        found["memory Bridge/LM"] = f"{bridge.worst_stage.total / 2**30:.4f} vs {lm.worst_stage.total / 2**30:.4f} GiB"
    if abs(bridge.tokens_per_s - lm.tokens_per_s) > SAME_ENGINE * lm.tokens_per_s:
        found["tokens/s Bridge/LM"] = f"{bridge.tokens_per_s:,.1f} vs {lm.tokens_per_s:,.1f}"
    return found


def disagreements(run: Run, workdir: str, gpu: str = "a100-80gb") -> dict[str, str]:
    """Kind -> what disagreed, for one run (empty: every format agrees)."""
    found: dict[str, str] = {}
    ests = estimates(run, workdir, gpu)
    for fmt, e in ests.items():
        if not getattr(e, "ok", False):
            found["no-estimate"] = f"{fmt}: {e if isinstance(e, Exception) else [m.what for m in e.missing]}"
    if found:
        return found
    seq = run.seq
    for fmt, e in ests.items():
        i = e.inputs
        if (i.micro, i.grad_accum, i.global_batch) != (run.micro, run.accum, run.global_batch):
            found["batch"] = f"{fmt}: {(i.micro, i.grad_accum, i.global_batch)} != {(run.micro, run.accum, run.global_batch)}"
        if e.tokens_per_step != i.micro * i.grad_accum * i.dp * seq or i.dp != run.dp:
            found["tokens-per-step"] = f"{fmt}: {e.tokens_per_step} with DP {i.dp}"
        if not 0 < e.mfu <= 1:
            found["mfu"] = f"{fmt}: {e.mfu}"
    mds, neox, lm = ests["megatron-deepspeed"], ests["neox"], ests["megatron-lm"]
    if _apart(mds.worst_stage.total, neox.worst_stage.total):
        found["memory MDS/NeoX"] = f"{mds.worst_stage.total / 2**30:.2f} vs {neox.worst_stage.total / 2**30:.2f} GiB"
    if _apart(mds.tokens_per_s, neox.tokens_per_s):
        found["tokens/s MDS/NeoX"] = f"{mds.tokens_per_s:,.0f} vs {neox.tokens_per_s:,.0f}"
    if lm_coincides(run):
        if not (step_sets_peak(lm) or step_sets_peak(mds)) and _apart(lm.worst_stage.total, mds.worst_stage.total):
            found["memory LM"] = f"{lm.worst_stage.total / 2**30:.2f} vs {mds.worst_stage.total / 2**30:.2f} GiB"
        if _apart(lm.tokens_per_s, mds.tokens_per_s):
            found["tokens/s LM"] = f"{lm.tokens_per_s:,.0f} vs {mds.tokens_per_s:,.0f}"
    bridge = ests["bridge"]
    found.update(bridge_vs_lm(bridge, lm))
    grows, with_buffers = memory_grows(run, workdir, gpu, ests)
    if grows:
        found["memory grows"] = grows
    if with_buffers:
        found["total with buffers grows (info)"] = with_buffers
    return found


def without_buffers(e) -> float:
    """The worst stage's total without the engine's communication buffers (and their fragmentation)."""
    from trainlint.estimator import coefficients as C

    w = e.worst_stage
    return w.total - w.buffers * (1 + C.ALLOCATOR_FRAGMENTATION)


def memory_grows(run: Run, workdir: str, gpu: str, now: dict[str, object]) -> tuple[str, str]:
    """('', '') when one more ZeRO stage (or the distributed optimizer) does not raise the memory
    (first: without the communication buffers, at DP >= 2; second: the total, for information)."""
    stage = run.zero + 1
    if stage > (3 if run.pp == 1 else 1) or (run.experts > 1 and stage > 1):
        return "", ""
    more = dataclasses.replace(run, zero=stage)
    ests = estimates(more, str(Path(workdir) / "more"), gpu)
    grows = total = ""
    for fmt, e in ests.items():
        if fmt in ("megatron-lm", "bridge") and run.zero >= 1:
            continue  # the same Megatron-LM script (ZeRO >= 1 is the distributed optimizer already)
        if not getattr(e, "ok", False):
            continue
        before = now[fmt]
        if run.dp >= 2 and without_buffers(e) > without_buffers(before) * (1 + 1e-9):
            grows = grows or (f"{fmt}: ZeRO {run.zero} -> {stage}: {without_buffers(before) / 2**30:.2f} -> "
                              f"{without_buffers(e) / 2**30:.2f} GiB without buffers")
        if e.worst_stage.total > before.worst_stage.total * (1 + 1e-9):
            total = total or (f"{fmt}: ZeRO {run.zero} -> {stage}: {before.worst_stage.total / 2**30:.2f} -> "
                              f"{e.worst_stage.total / 2**30:.2f} GiB (buffers {before.worst_stage.buffers / 2**30:.2f}"
                              f" -> {e.worst_stage.buffers / 2**30:.2f})")
    return grows, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=150, help="layouts (default 150)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpu", default="a100-80gb")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every disagreement")
    parser.add_argument("--core", type=int, default=50,
                        help="Megatron-Core layouts with fields only Megatron-LM and Bridge write (default 50)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    counts: Counter[str] = Counter()
    features: Counter[str] = Counter()
    examples: dict[str, tuple[Run, str]] = {}
    try:
        measured = _measure(args, rng, counts, features, examples)
    except UnreadRun as exc:
        print(f"cross_format: error: internal error: {exc}; no figure is reported", file=sys.stderr)
        return 2
    core_fields = measured
    _print(args, counts, features, examples, core_fields)
    total = sum(counts.values())
    print(f"total: {total}")
    return 1 if total else 0


class UnreadRun(Exception):
    """A written run that trainlint's adapters do not read as one run (a TL999, or no spec)."""


def _measure(args: argparse.Namespace, rng: random.Random, counts: Counter, features: Counter,
             examples: dict) -> Counter:
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.n):
            run = random_run(rng)
            features.update([f"ZeRO {run.zero}", f"recompute {run.recompute}", f"offload {run.offload}",
                             "MoE" if run.experts > 1 else "dense", "PP>1" if run.pp > 1 else "PP=1",
                             "TP>1" if run.tp > 1 else "TP=1", "flash" if run.flash else "unfused", run.dtype])
            for kind, detail in disagreements(run, str(Path(tmp) / str(k)), args.gpu).items():
                counts[kind] += 1
                examples.setdefault(kind, (run, detail))
                if args.verbose:
                    print(f"  {kind}: {detail}  [{run}]")
        core_fields: Counter[str] = Counter()
        for k in range(args.core):
            run = random_core_run(rng)
            core_fields.update(path for path, _ in run.core)
            for kind, detail in core_disagreements(run, str(Path(tmp) / f"core{k}"), args.gpu).items():
                counts[kind] += 1
                examples.setdefault(kind, (run, detail))
                if args.verbose:
                    print(f"  {kind}: {detail}  [{run}]")
    return core_fields


def _print(args: argparse.Namespace, counts: Counter, features: Counter, examples: dict, core_fields: Counter) -> None:
    print(f"{args.n} layouts written as Megatron-LM, Megatron-DeepSpeed (+ JSON), NeoX and Megatron-Bridge files, read by the adapters, "
          f"estimated on {args.gpu} (seed {args.seed})")
    print("  layouts: " + ", ".join(f"{k} {v}" for k, v in sorted(features.items())))
    print(f"{args.core} more Megatron-Core layouts as a Megatron-LM script and a Bridge YAML only, with "
          + ", ".join(f"{k} {v}" for k, v in sorted(core_fields.items())))
    print("disagreements per kind:")
    for kind in KINDS:
        print(f"  {kind:<20} {counts[kind]}")
    info = "total with buffers grows (info)"
    print(f"not counted: the total with the engine's buffers grows with the ZeRO stage in {counts.pop(info, 0)} layouts "
          "(small models: ZeRO buckets / ZeRO-3 live parameters, see the module docstring)")
    for kind, (run, detail) in examples.items():
        print(f"  e.g. {kind}: {detail}\n       {run}")


if __name__ == "__main__":
    sys.exit(main())
