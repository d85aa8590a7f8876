"""Accuracy of trainlint's estimator against published measurements of real training runs.

Reads ../shared/calibration/published-runs.yaml (relative to the repository), turns every usable
row into a TrainingSpec + EstimateContext from the row's own fields (the same conversion for
every row), and prints, per row, estimate / measurement / relative error for trainlint and,
side by side, for the seeds' first-order formulas:

* seed 000: step time = 6 P D / (N x peak x 0.45); memory = 16 bytes/param split as seed 001's
  3D-parallel formula + Korthikanti activations (no overhead);
* seed 002: the roofline u x min(compute, HBM, network) tokens/s per GPU (u = 0.75, alpha 16,
  c_act 6, recompute multiplier 4/3 full, 1.1 selective);
* memory: a constant 65 GB.

Like with like: throughput rows are compared through the step time (the measured TFLOP/s are
converted back to seconds with the source's own FLOP convention, stated in the row, or the step
time the row gives), so hardware vs model FLOPs cancel out; memory rows measured by nvidia-smi are
compared with the full estimate (CUDA context, NCCL, allocator cache included), rows measured as
torch max_reserved with the estimate minus the CUDA context and NCCL buffers.

    .venv/bin/python benchmarks/accuracy.py            # table + summary
    .venv/bin/python benchmarks/accuracy.py --summary  # summary only
    .venv/bin/python benchmarks/accuracy.py --fit      # coordinate search of the global coefficients
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from trainlint.catalog import GPU, find_gpu, gpu_from_dict, load_gpus, load_model_presets
from trainlint.estimator import build_context, estimate
from trainlint.estimator import closed_forms as CF
from trainlint.estimator import coefficients as C
from trainlint.provenance import Origin, Provenance, Value
from trainlint.spec import TrainingSpec

CALIBRATION = Path(__file__).resolve().parents[1].parent / "shared" / "calibration" / "published-runs.yaml"
ROW = Provenance(Origin.FILE, path="published-runs.yaml", key="row")


def v(x: Any) -> Value:
    return Value(x, ROW)


class Skip(Exception):
    pass


# --------------------------------------------------------------------------- row -> spec


def _gpu(row: dict) -> GPU:
    text = str(row["gpu"])
    name = re.sub(r"\(.*?\)", "", text)
    mem = re.search(r"(\d+)\s*GB", text)
    family = re.search(r"(A100|H100|H200|B200|V100|MI300X|L4)", name, re.I)
    if not family:
        raise Skip(f"GPU {text!r} not in the catalog")
    fam = family.group(1).lower()
    if fam == "a100":
        gid = "a100-80gb" if (mem and mem.group(1) == "80") else "a100-40gb" if mem else None
        if gid is None:
            raise Skip("A100 without memory size")
        return find_gpu(gid)
    base = find_gpu({"h100": "h100-sxm"}.get(fam, fam))
    if mem and abs(float(mem.group(1)) - base.memory_gb) > 1:
        # the row states a different memory size than the catalog part: same chip, that memory
        raw = {k: getattr(base, k) for k in ("name", "vendor", "architecture", "form_factor", "bf16_tflops", "fp16_tflops",
                                             "fp8_tflops", "tf32_tflops", "fp32_tflops", "hbm_bandwidth_tbps",
                                             "intra_node_bw_gbps", "inter_node_bw_gbps", "gpus_per_node")}
        raw["memory_gb"] = float(mem.group(1))
        raw["memory_gib"] = float(mem.group(1)) * 0.99
        return gpu_from_dict(f"{base.id}-{mem.group(1)}gb", raw)
    return base


def _vocab(row: dict) -> tuple[int, str]:
    m = row["model"]
    if m.get("vocab"):
        return int(m["vocab"]), ""
    hint = m.get("vocab_hint")
    if hint:
        found = re.search(r"(\d+(?:\.\d+)?)\s*([kK]?)", str(hint))
        if found:
            n = float(found.group(1)) * (1000 if found.group(2) else 1)
            return int(n), "vocab from vocab_hint"
    for preset in load_model_presets().values():
        if (preset.num_layers, preset.hidden_size, preset.num_attention_heads) == (m["layers"], m["hidden"], m["heads"]):
            return preset.vocab_size, f"vocab of preset {preset.id} (same layers/hidden/heads)"
    raise Skip("vocabulary size unknown")


def row_to_spec(row: dict) -> tuple[TrainingSpec, Any, list[str]]:
    notes: list[str] = []
    m, p, b = row["model"], row["parallel"], row["batch"]
    for key, where in (("layers", m), ("hidden", m), ("heads", m), ("seq_len", m)):
        if where.get(key) is None:
            raise Skip(f"model.{key} unknown")
    for key in ("tp", "pp", "dp"):
        if p.get(key) is None:
            raise Skip(f"parallel.{key} unknown")
    if b.get("micro") is None or b.get("global") is None:
        raise Skip("micro or global batch unknown")
    precision = str(row.get("precision") or "")
    if not precision:
        raise Skip("precision unknown")
    vocab, vnote = _vocab(row)
    if vnote:
        notes.append(vnote)
    gpu = _gpu(row)
    framework_text = str(p.get("framework") or "") + " " + precision
    if p.get("fsdp_degree") or p.get("fsdp"):
        fw = "fsdp"
    elif "deepspeed" in framework_text.lower() or (p.get("zero_stage") or 0) >= 1:
        fw = "deepspeed"
    else:
        fw = "megatron"
    spec = TrainingSpec(framework=fw, path=row["id"], label=row["id"])
    sm = spec.model
    sm.num_layers, sm.hidden_size, sm.num_attention_heads = v(m["layers"]), v(m["hidden"]), v(m["heads"])
    sm.num_kv_heads = v(m.get("kv_heads") or m["heads"])
    if m.get("ffn_hidden"):
        sm.ffn_hidden_size = v(m["ffn_hidden"])
    if m.get("swiglu") is not None:
        sm.gated_mlp = v(bool(m["swiglu"]))
    sm.vocab_size = v(vocab)
    sm.seq_length = v(m["seq_len"])
    if m.get("untied_embeddings") is not None:
        sm.tied_embeddings = v(not m["untied_embeddings"])
    sp = spec.parallel
    sp.tensor, sp.pipeline, sp.data = v(p["tp"]), v(p["pp"]), v(p["dp"])
    if p.get("vpp"):
        sp.virtual_pipeline = v(p["vpp"])
    sp.context = v(p.get("cp") or 1)
    if p.get("ep"):
        sp.expert = v(p["ep"])
    if p.get("sequence_parallel") is not None:
        sp.sequence_parallel = v(bool(p["sequence_parallel"]))
    if p.get("zero_stage") is not None:
        sp.zero_stage = v(int(p["zero_stage"]))
    elif fw == "fsdp":
        sp.zero_stage = v(3)
    if p.get("distributed_optimizer") is not None:
        sp.distributed_optimizer = v(bool(p["distributed_optimizer"]))
    spec.batch.micro_batch, spec.batch.global_batch = v(b["micro"]), v(b["global"])
    spec.cluster.world_size = v(row["num_gpus"])
    low = precision.lower()
    spec.precision.dtype = v("bf16" if "bf16" in low else "fp16" if "fp16" in low else "fp32")
    if "float8" in low or "fp8" in low:
        spec.precision.fp8 = v("e4m3")
    if row.get("recompute"):
        spec.memory.recompute = v(row["recompute"])
    if p.get("overlap_grad_reduce") is not None:
        spec.settings["overlap_grad_reduce"] = v(bool(p["overlap_grad_reduce"]))
    elif str(p.get("ddp_impl") or "") == "torch":
        spec.settings["overlap_grad_reduce"] = v(True)  # torch DDP all-reduces buckets during backward
    if p.get("tp_comm_overlap") is not None:
        spec.settings["tp_comm_overlap"] = v(bool(p["tp_comm_overlap"]))
    from trainlint.adapters.engine import set_engine

    set_engine(spec)  # the engine fields, by the same rules the adapters apply
    table = load_gpus()
    table[gpu.id] = gpu
    ctx = build_context(spec, gpu=None)
    ctx.gpu = Value(gpu, ROW)
    ctx.gpus = table
    return spec, ctx, notes


# --------------------------------------------------------------------------- measured quantities


def measured_step_time(row: dict) -> float:
    meas, m, b = row["measured"], row["model"], row["batch"]
    n = row["num_gpus"]
    if meas.get("step_time_s"):
        return float(meas["step_time_s"])
    unit = str(meas.get("unit", "")).lower()
    value = float(meas["value"])
    if unit.startswith("tokens/s"):
        return b["global"] * m["seq_len"] / (value * n)
    what = str(meas.get("what", ""))
    vocab, _ = _vocab(row)
    if "96*B*s*l*h^2" in what or "incl. recompute" in what:
        full = row.get("recompute") == "full"
        flops = CF.narayanan_flops_per_step(b["global"], m["seq_len"], m["layers"], m["hidden"], vocab, recompute_full=full)
    elif "model FLOPs" in what:
        flops = CF.narayanan_flops_per_step(b["global"], m["seq_len"], m["layers"], m["hidden"], vocab, recompute_full=False)
    else:
        raise Skip("FLOP convention of the measurement unknown")
    return flops / (value * 1e12 * n)


@dataclass
class Result:
    row: dict
    kind: str            # throughput | memory
    measured: float
    unit: str
    trainlint: float
    seed000: float
    seed002: float | None
    notes: list[str]
    oom: bool = False
    capacity: float = 0.0
    fits: bool = True

    def err(self, value: float | None) -> float | None:
        if value is None or self.oom:
            return None
        return value / self.measured - 1


def _seed_params(row: dict) -> float:
    return float(row["model"]["params_b"]) * 1e9


def seed_memory(row: dict) -> float:
    m, p, b = row["model"], row["parallel"], row["batch"]
    psi = _seed_params(row)
    zero = int(p.get("zero_stage") or (3 if p.get("fsdp_degree") else 0))
    if p.get("distributed_optimizer"):
        zero = max(zero, 1)
    static = CF.static_memory_bytes(psi, zero_stage=zero, shards=p["dp"], model_parallel=p["tp"] * p["pp"])
    layer = CF.korthikanti_layer_bytes(m["seq_len"] // (p.get("cp") or 1), b["micro"], m["hidden"], m["heads"], p["tp"],
                                       sequence_parallel=bool(p.get("sequence_parallel")),
                                       recompute=row.get("recompute") or "none")
    return (static.total + layer * m["layers"]) / C.GIB


def seed_step_times(row: dict, gpu: GPU, dtype: str) -> tuple[float, float]:
    m, p, b = row["model"], row["parallel"], row["batch"]
    psi = _seed_params(row)
    peak = (gpu.peak_tflops(dtype) or gpu.fp16_tflops or 0) * 1e12
    tokens = b["global"] * m["seq_len"]
    n = row["num_gpus"]
    t000 = CF.seed000_step_time(psi, tokens, n, peak)
    mult = {"full": 4 / 3, "selective": 1.1}.get(row.get("recompute") or "", 1.0)
    roof = CF.seed002_roofline(psi, m["layers"], m["hidden"], tokens, p["dp"], peak_flops=peak,
                               hbm_bytes_per_s=(gpu.hbm_bandwidth_tbps or 1) * 1e12,
                               nic_bytes_per_s=(gpu.inter_node_bw_gbps or 0) * 1e9, recompute_mult=mult)
    return t000, tokens / (roof.tokens_per_s_per_gpu * n)


def evaluate(rows: list[dict]) -> tuple[list[Result], list[tuple[str, str]]]:
    results: list[Result] = []
    skipped: list[tuple[str, str]] = []
    for row in rows:
        try:
            spec, ctx, notes = row_to_spec(row)
            est = estimate(spec, ctx)
            if not est.ok:
                raise Skip("estimator: missing " + ", ".join(x.field for x in est.missing))
            kind = row["kind"]
            meas = row["measured"]
            if kind == "peak_memory_gb":
                unit = str(meas.get("unit"))
                worst = est.worst_stage
                pred = (worst.reserved if "reserved" in unit else worst.total) / C.GIB
                oom = bool(meas.get("oom"))
                if meas.get("value") is None and not oom:
                    raise Skip("no measured value")
                results.append(Result(row, "memory", float(meas["value"] or 0), unit, pred, seed_memory(row), None,
                                      notes, oom=oom, capacity=est.capacity_bytes / C.GIB, fits=est.fits))
            else:
                t_meas = measured_step_time(row)
                t000, t002 = seed_step_times(row, ctx.gpu.value, est.inputs.dtype)
                value = float(meas["value"])
                # express every prediction in the row's own unit: value x t_measured / t_predicted
                results.append(Result(row, "throughput", value, str(meas.get("unit")),
                                      value * t_meas / est.step_time, value * t_meas / t000, value * t_meas / t002, notes))
        except Skip as why:
            skipped.append((row["id"], str(why)))
    return results, skipped


# --------------------------------------------------------------------------- summary


def _pct(x: float | None) -> str:
    return "   —  " if x is None else f"{x * 100:+6.1f}%"


def quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return math.nan
    k = (len(s) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def stats(errors: list[float]) -> dict[str, float]:
    a = [abs(e) for e in errors]
    return {"n": len(a), "median": statistics.median(a) if a else math.nan, "p90": quantile(a, 0.9),
            "within10": sum(1 for e in a if e <= 0.10) / len(a) if a else math.nan}


def summary(results: list[Result]) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for kind in ("throughput", "memory"):
        rows = [r for r in results if r.kind == kind and not r.oom]
        out[kind] = {"trainlint": stats([r.err(r.trainlint) for r in rows]),  # type: ignore[misc]
                     "seed000": stats([r.err(r.seed000) for r in rows])}  # type: ignore[misc]
        if kind == "throughput":
            out[kind]["seed002"] = stats([r.err(r.seed002) for r in rows])  # type: ignore[misc]
        else:
            out[kind]["constant 65 GB"] = stats([65.0 / r.measured - 1 for r in rows])
    return out


def print_report(results: list[Result], skipped: list[tuple[str, str]], *, rows_too: bool = True) -> None:
    if rows_too:
        print(f"{'row':64} {'measured':>9} {'trainlint':>9} {'err':>7} {'seed000':>9} {'err':>7} {'seed002':>9} {'err':>7}")
        for r in results:
            if r.oom:
                verdict = "predicted OOM (ok)" if not r.fits else "PREDICTED TO FIT (wrong)"
                print(f"{r.row['id'][:64]:64} {'OOM':>9} {r.trainlint:9.1f} {verdict}  capacity {r.capacity:.1f}")
                continue
            s2 = "" if r.seed002 is None else f"{r.seed002:9.1f} {_pct(r.err(r.seed002))}"
            flag = "" if r.kind != "memory" or r.fits else "  ABOVE CAPACITY"
            print(f"{r.row['id'][:64]:64} {r.measured:9.1f} {r.trainlint:9.1f} {_pct(r.err(r.trainlint))} "
                  f"{r.seed000:9.1f} {_pct(r.err(r.seed000))} {s2}{flag}"
                  + (f"  [{'; '.join(r.notes)}]" if r.notes else ""))
        print()
        for rid, why in skipped:
            print(f"skipped {rid}: {why}")
        print()
    for kind, by in summary(results).items():
        print(f"{kind}:")
        for who, s in by.items():
            print(f"  {who:16} n={s['n']:3d}  median |err| {s['median'] * 100:5.1f}%  p90 {s['p90'] * 100:5.1f}%  "
                  f"within 10%: {s['within10'] * 100:5.1f}%")
    oom = [r for r in results if r.oom]
    done = [r for r in results if r.kind == "memory" and not r.oom]
    print(f"OOM rows predicted not to fit: {sum(1 for r in oom if not r.fits)}/{len(oom)}")
    print(f"completed rows predicted above capacity: {sum(1 for r in done if not r.fits)}/{len(done)}")


# --------------------------------------------------------------------------- fitting


TIME_COEFFS = ("GEMM_PEAK_FRACTION", "ATTENTION_PEAK_FRACTION", "ELEMENTWISE_BYTES_PER_HIDDEN", "MICROBATCH_OVERHEAD_S",
               "INTRA_NODE_LINK_FRACTION", "FP8_GEMM_SPEEDUP", "STEP_OVERHEAD_S", "DP_OVERLAP_FRACTION",
               "ZERO3_OVERLAP_FRACTION")
MEMORY_COEFFS = ("ALLOCATOR_FRAGMENTATION", "NCCL_GIB_PER_COMMUNICATOR", "CUDA_CONTEXT_GIB", "ACTIVATION_WORKSPACE_LAYERS")


def _objective(rows: list[dict], kind: str) -> float:
    results, _ = evaluate(rows)
    s = summary(results)[kind]["trainlint"]
    penalty = 0.0
    if kind == "memory":
        penalty = sum(0.05 for r in results if r.kind == "memory" and (r.oom == r.fits))
    return s["median"] + 0.5 * s["p90"] + penalty


def fit(rows: list[dict]) -> None:
    """Coordinate search of the global coefficients (in place, for this process only)."""
    usable = [r for r in rows if r.get("confidence") != "low"]
    for kind, names in (("throughput", TIME_COEFFS), ("memory", MEMORY_COEFFS)):
        subset = [r for r in usable if (r["kind"] == "peak_memory_gb") == (kind == "memory")]
        best = _objective(subset, kind)
        for _ in range(3):
            for name in names:
                base = getattr(C, name)
                for factor in (0.5, 0.7, 0.85, 0.93, 1.07, 1.15, 1.3, 1.6, 2.0):
                    setattr(C, name, base * factor)
                    score = _objective(subset, kind)
                    if score < best - 1e-6:
                        best, base = score, base * factor
                    setattr(C, name, base)
        print(f"{kind}: objective {best:.4f}")
        for name in names:
            print(f"  {name} = {getattr(C, name):.4g}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(CALIBRATION))
    ap.add_argument("--summary", action="store_true", help="summary only")
    ap.add_argument("--fit", action="store_true", help="coordinate search of the global coefficients, then report")
    ap.add_argument("--holdout", metavar="PREFIX",
                    help="with --fit: fit without the rows whose id starts with PREFIX, report only on those rows")
    args = ap.parse_args(argv)
    path = Path(args.data)
    if not path.is_file():
        print(f"calibration file not found: {path}", file=sys.stderr)
        return 2
    rows = yaml.safe_load(path.read_text(encoding="utf-8"))
    if args.fit:
        fit([r for r in rows if not (args.holdout and r["id"].startswith(args.holdout))])
        if args.holdout:
            rows = [r for r in rows if r["id"].startswith(args.holdout)]
    results, skipped = evaluate(rows)
    print_report(results, skipped, rows_too=not args.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
