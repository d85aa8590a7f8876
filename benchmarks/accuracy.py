"""Accuracy of trainlint's estimator against published measurements of real training runs, through the user's path.

Every row of ../shared/calibration/published-runs.yaml and published-runs-more.yaml is written as the
files its users write (benchmarks/calibration_files.py: a Megatron-LM launch script, a Megatron-DeepSpeed
script + its DeepSpeed JSON, a GPT-NeoX YAML, a DeepSpeed JSON + the model's HF config.json), into a
temporary directory, and read and estimated by the steps of ``trainlint estimate`` (its argument parser,
project-config discovery, ``check_paths`` with the built-in adapters, ``build_context``, ``estimate``). Each
row's result is checked to be the number ``trainlint estimate --format json`` itself prints for those files.

The headline is leave-one-source-out: the global coefficients of trainlint/estimator/coefficients.py
(FITTED, each held in its documented physical range) are refitted without one source (one paper, README
or benchmark table) and that source's rows are estimated with the refit. In-sample (fitted on every
source) and the shipped coefficients are printed beside it, and the baselines the calibration README
names: a constant 65 GB for memory, the seeds' first-order formulas (seed 000: 6PD / (N x peak x 0.45) and
16 bytes/param + Korthikanti activations; seed 002: its roofline).

Like with like: throughput rows are compared through the step time (the measured TFLOP/s are converted
back to seconds with the source's own FLOP convention, or the row's tokens/s), so hardware vs model FLOPs
cancel out; memory rows measured by nvidia-smi are compared with the full estimate (CUDA context, NCCL,
allocator cache included: ``StageMemory.observed``), rows measured as torch max_reserved with the estimate without
the CUDA context and NCCL (``StageMemory.reserved``). The "does not fit" verdicts use the estimate's total, which
leaves out the cache the allocator releases before it raises out-of-memory (ALLOCATOR_CACHE).

Rows of frameworks trainlint reads no file of (Composer/llm-foundry, nanotron, torchtitan) are listed
apart and are not in any figure.

    .venv/bin/python benchmarks/accuracy.py            # rows, LOSO headline, in-sample, baselines
    .venv/bin/python benchmarks/accuracy.py --summary  # summary only
    .venv/bin/python benchmarks/accuracy.py --no-loso  # shipped coefficients only (fast)
    .venv/bin/python benchmarks/accuracy.py --fit      # print the in-sample fit, to update coefficients.py
    .venv/bin/python benchmarks/accuracy.py --kind memory   # memory rows only (about a minute, with LOSO)
    .venv/bin/python benchmarks/accuracy.py --no-loso --only 'vTrain|Bridge'   # a subset of families (fast loop)
    .venv/bin/python benchmarks/accuracy.py --no-loso --dump rows.jsonl        # inputs + breakdown per row

Exit status 2 on an internal error: a written file read with a TL999, or an estimate at the shipped
coefficients that breaks the estimator's invariants (a refit's may: those rows are skipped).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibration_files import Case, NoUserPath, Skip, vocab_of, write_case

from trainlint.estimator import closed_forms as CF
from trainlint.estimator import coefficients as C

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "calibration"
CALIBRATION = SHARED / "published-runs.yaml"
CALIBRATION_FILES = (SHARED / "published-runs.yaml", SHARED / "published-runs-more.yaml",
                     SHARED / "published-runs-2026.yaml")

__all__ = ["NoUserPath", "Skip", "main", "row_to_spec"]


def load_rows(paths: Iterable[Path] = CALIBRATION_FILES) -> list[dict]:
    rows: list[dict] = []
    for path in paths:
        if path.is_file():
            rows += yaml.safe_load(path.read_text(encoding="utf-8"))
    return rows


def run_key(row: dict) -> str:
    """The run a row measures: rows of one run (its tokens/s and its model TFLOP/s) share it."""
    return re.sub(r"-(tokens_per_s|tflops_per_gpu|tps|mem)$", "", str(row["id"]))


def family_of(row: dict) -> str:
    """Source x GPU: the unit whose signed median error the benchmark prints."""
    gpu = re.split(r"[ (]", str(row.get("gpu") or "?").strip())[0]
    return f"{source_of(row)} x {gpu}"


def source_of(row: dict) -> str:
    """The publication a row comes from (one paper, README or benchmark table): the unit left out."""
    text = str(row.get("source") or "")
    head = re.split(r"[,(]| at commit| Table| Sec", text)[0].strip()
    m = re.search(r"github\.com/([^ ]+) (\S+)", head)
    if m:
        return f"{m.group(1).split('/')[-1]}:{m.group(2).rsplit('/', 2)[-2] if '/' in m.group(2) else m.group(2)}"
    return head


# --------------------------------------------------------------------------- the user's path


def materialise(case: Case, where: Path) -> list[str]:
    """Write the case's files under ``where``; the ``trainlint estimate`` argv (absolute paths)."""
    where.mkdir(parents=True, exist_ok=True)
    for name, text in case.files.items():
        (where / name).write_text(text, encoding="utf-8")
    argv = [str(where / p) for p in case.paths]
    for word in case.argv:
        argv.append(str(where / word) if word in case.files else word)
    return argv


def read_case(argv: list[str]) -> list[tuple[Any, Any]]:
    """(spec, context) of every run in the files, by the steps ``trainlint estimate`` takes
    (trainlint/commands/estimate.py:run): its parser, project discovery, check_paths, build_context."""
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_paths
    from trainlint.cli import build_parser
    from trainlint.commands.check import parse_env
    from trainlint.project.config import discover
    from trainlint.estimator import build_context

    args = build_parser("estimate").parse_args(["estimate", *argv])
    runs = [[p.strip() for p in spec.split(",") if p.strip()] for spec in args.run]
    environment = parse_env(args.env)
    project = discover(Path(args.paths[0]), getattr(args, "config", None), getattr(args, "isolated", False))
    results = check_paths(args.paths, builtin_adapters(), runs=project.runs + runs,
                          environment={**project.environment, **environment},
                          frameworks=project.framework_settings)  # the release the project config states
    broken = [d.message for result in results for d in result.diagnostics if d.code == "TL999"]
    if broken:  # a trainlint bug on the written files: the row must not be scored as skipped
        raise InternalError(f"internal error (TL999) reading {' '.join(argv)}: {broken[0]}")
    out = []
    for result in results:
        for spec in result.specs:
            ctx = build_context(spec, gpu=args.gpu, nodes=args.nodes, gpus_per_node=args.gpus_per_node,
                                model=args.model, project=project)
            out.append((spec, ctx))
    return out


class InternalError(Exception):
    """trainlint failed on a row's files (TL999): no figure stands."""


def cli_json(argv: list[str]) -> Any:
    """The run ``trainlint estimate ARGV --format json`` prints (in this process), from its
    ``{"runs": [...]}``; None when it printed no JSON or not exactly one run (a row is one run)."""
    from trainlint.cli import main as cli_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        cli_main(["estimate", *argv, "--format", "json"])
    try:
        runs = json.loads(out.getvalue())["runs"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return None
    return runs[0] if isinstance(runs, list) and len(runs) == 1 else None


@dataclass
class Loaded:
    row: dict
    case: Case
    spec: Any
    ctx: Any
    argv: list[str]
    cli: Any = None          # the CLI's JSON for the row at the shipped coefficients


def load_cases(rows: list[dict], workdir: Path, *, check_cli: bool = True) -> tuple[list[Loaded], list[tuple[dict, str]], list[tuple[dict, str]]]:
    """Each row through the user's path: (loaded, skipped with why, rows without a user path with why)."""
    loaded: list[Loaded] = []
    skipped: list[tuple[dict, str]] = []
    no_path: list[tuple[dict, str]] = []
    with_tokens = {run_key(r) for r in rows if r["kind"] == "tokens_per_s"}
    for n, row in enumerate(rows):
        if row["kind"] == "tflops_per_gpu" and run_key(row) in with_tokens:
            skipped.append((row, "the same run's tokens/s row is scored (one measurement per run)"))
            continue
        try:
            case = write_case(row)
        except NoUserPath as why:
            no_path.append((row, str(why)))
            continue
        except Skip as why:
            skipped.append((row, str(why)))
            continue
        argv = materialise(case, workdir / f"{n:03d}")
        runs = read_case(argv)
        if len(runs) != 1:
            skipped.append((row, f"{len(runs)} runs read from the written files"))
            continue
        spec, ctx = runs[0]
        item = Loaded(row, case, spec, ctx, argv)
        if check_cli:
            item.cli = cli_json(argv)
        loaded.append(item)
    return loaded, skipped, no_path


def row_to_spec(row: dict) -> tuple[Any, Any, list[str]]:
    """One row through the user's path: (spec, context, notes). Raises Skip or NoUserPath."""
    case = write_case(row)
    with tempfile.TemporaryDirectory(prefix="trainlint-accuracy-") as tmp:
        argv = materialise(case, Path(tmp))
        runs = read_case(argv)
    if len(runs) != 1:
        raise Skip(f"{len(runs)} runs read from the written files")
    spec, ctx = runs[0]
    return spec, ctx, case.notes


# --------------------------------------------------------------------------- measured quantities


def measured_step_time(row: dict) -> float:
    meas, m, b = row["measured"], row["model"], row["batch"]
    n = row["num_gpus"]
    if meas.get("step_time_s"):
        return float(meas["step_time_s"])
    unit = str(meas.get("unit", "")).lower()
    value = float(meas["value"])
    if unit.startswith("ms per iteration"):
        return value / 1000.0
    if unit.startswith("% mfu"):
        # nanotron's get_flops: 3 x the forward matmuls (QKV, output, gated FFN, LM head) + full QK^T and AV,
        # no recompute, against the H100's 989 TFLOP/s dense BF16 (the figure's presumed peak)
        q, kv = m["hidden"], (m.get("kv_heads") or m["heads"]) * m["hidden"] // m["heads"]
        mats = 3 if m.get("swiglu") else 2
        matmul = m["layers"] * (m["hidden"] * (q + 2 * kv) + q * m["hidden"] + mats * m["hidden"] * m["ffn_hidden"])
        matmul += (vocab_of(row)[0] or 0) * m["hidden"]
        tokens = b["global"] * m["seq_len"]
        flops = 6 * matmul * tokens + 12 * m["layers"] * m["seq_len"] * q * tokens
        return flops / (value / 100 * 989e12 * n)
    if unit.startswith("tokens/s"):
        return b["global"] * m["seq_len"] / (value * n)
    what = str(meas.get("what", ""))
    vocab = vocab_of(row)[0] or 50432
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
    source: str
    kind: str            # throughput | memory
    measured: float
    unit: str
    trainlint: float
    seed000: float
    seed002: float | None
    notes: list[str] = field(default_factory=list)
    oom: bool = False
    capacity: float = 0.0
    fits: bool = True
    assumed: str = ""
    """The assumptions a "does not fit" verdict rests on (Estimate.verdict_assumptions): such a verdict is
    counted apart, as TL201 words it (a warning naming the assumption), not as "does not fit"."""

    def err(self, value: float | None) -> float | None:
        if value is None or self.oom:
            return None
        return value / self.measured - 1


def params_of(row: dict, inputs: Any = None) -> float:
    """The row's parameter count, or (null in the row) the one trainlint counts from the shape it read."""
    if row["model"].get("params_b"):
        return float(row["model"]["params_b"]) * 1e9
    from trainlint.estimator.memory import total_params

    return total_params(inputs) if inputs is not None else 0.0


def seed_memory(row: dict, inputs: Any = None) -> float:
    m, p, b = row["model"], row["parallel"], row["batch"]
    psi = params_of(row, inputs)
    zero = int(p.get("zero_stage") or 0)
    if p.get("distributed_optimizer"):
        zero = max(zero, 1)
    static = CF.static_memory_bytes(psi, zero_stage=zero, shards=p.get("dp") or (inputs.dp if inputs is not None else 1), model_parallel=p["tp"] * p["pp"])
    layer = CF.korthikanti_layer_bytes(m["seq_len"] // (p.get("cp") or 1), b["micro"], m["hidden"], m["heads"], p["tp"],
                                       sequence_parallel=bool(p.get("sequence_parallel")),
                                       recompute=row.get("recompute") or "none")
    return (static.total + layer * m["layers"]) / C.GIB


def seed_step_times(row: dict, gpu: Any, dtype: str, inputs: Any = None) -> tuple[float, float]:
    m, p, b = row["model"], row["parallel"], row["batch"]
    psi = params_of(row, inputs)
    peak = (gpu.peak_tflops(dtype) or gpu.fp16_tflops or 0) * 1e12
    tokens = b["global"] * m["seq_len"]
    n = row["num_gpus"]
    t000 = CF.seed000_step_time(psi, tokens, n, peak)
    mult = {"full": 4 / 3, "selective": 1.1}.get(row.get("recompute") or "", 1.0)
    roof = CF.seed002_roofline(psi, m["layers"], m["hidden"], tokens, p.get("dp") or (inputs.dp if inputs is not None else 1), peak_flops=peak,
                               hbm_bytes_per_s=(gpu.hbm_bandwidth_tbps or 1) * 1e12,
                               nic_bytes_per_s=(gpu.inter_node_bw_gbps or 0) * 1e9, recompute_mult=mult)
    return t000, tokens / (roof.tokens_per_s_per_gpu * n)


def evaluate(loaded: list[Loaded], *, strict: bool = False) -> tuple[list[Result], list[tuple[dict, str]]]:
    """Estimate every loaded row with the coefficients as they are now (``strict``: an estimate that
    breaks the estimator's invariants raises, else the row is listed as skipped with why)."""
    from trainlint.estimator import estimate
    from trainlint.estimator.core import InvariantError

    results: list[Result] = []
    skipped: list[tuple[dict, str]] = []
    for item in loaded:
        row = item.row
        try:
            est = estimate(item.spec, item.ctx)
            if not est.ok:
                raise Skip("estimator: missing " + ", ".join(x.field for x in est.missing))
            meas = row["measured"]
            source = source_of(row)
            if row["kind"] == "peak_memory_gb":
                unit = str(meas.get("unit"))
                # like with like: a figure logged by global rank 0 alone (nanotron's bench CSV) is the
                # first pipeline stage's memory, not the worst stage's
                worst = est.stages[0] if "rank 0 only" in str(meas.get("what") or "") else est.worst_stage
                # what the GPU showed (the allocator's releasable cache included: StageMemory.observed); a
                # figure torch's own counters logged (max_memory_reserved, or nanotron's bench CSV, which logs
                # max_memory_allocated and max_memory_reserved) has no CUDA context or NCCL buffers in it
                torch_counter = "reserved" in unit or "torch" in unit.lower()
                pred = (worst.reserved if torch_counter else worst.observed) / C.GIB
                oom = bool(meas.get("oom"))
                if meas.get("value") is None and not oom:
                    raise Skip("no measured value")
                results.append(Result(row, source, "memory", float(meas["value"] or 0), unit, pred, seed_memory(row, est.inputs), None,
                                      item.case.notes, oom=oom, capacity=est.capacity_bytes / C.GIB, fits=est.fits,
                                      assumed=_assumed(est, item.case)))
            else:
                t_meas = measured_step_time(row)
                t000, t002 = seed_step_times(row, est.inputs.gpu, est.inputs.dtype, est.inputs)
                value = float(meas["value"])
                # every prediction in the row's own unit: value x t_measured / t_predicted
                results.append(Result(row, source, "throughput", value, str(meas.get("unit")),
                                      value * t_meas / est.step_time, value * t_meas / t000, value * t_meas / t002,
                                      item.case.notes, capacity=est.capacity_bytes / C.GIB, fits=est.fits,
                                      assumed=_assumed(est, item.case)))
        except Skip as why:
            skipped.append((row, str(why)))
        except InvariantError as why:
            if strict:
                raise
            skipped.append((row, f"estimate broke its invariants: {why}"))
    return results, skipped


def _assumed(est: Any, case: Case) -> str:
    """Why a "does not fit" on this row would not be a verdict on the run: the engine facts the estimate assumed
    (Estimate.verdict_assumptions), or a run whose memory policy the written launch cannot state."""
    if case.memory_unwritten:
        return case.memory_unwritten
    assumed = "; ".join(f"{a.field} {a.value}" for a in est.verdict_assumptions)
    return f"assumed {assumed}" if assumed else ""


def cli_agreement(loaded: list[Loaded]) -> list[str]:
    """Rows whose in-process estimate differs from what ``trainlint estimate --format json`` printed."""
    from trainlint.estimator import estimate

    bad = []
    for item in loaded:
        est = estimate(item.spec, item.ctx)
        data = item.cli
        if not est.ok:
            if isinstance(data, dict) and data.get("estimate", 0) is not None:
                bad.append(f"{item.row['id']}: CLI estimated, benchmark did not")
            continue
        if not isinstance(data, dict) or "step_time_s" not in data:
            bad.append(f"{item.row['id']}: CLI printed no estimate")
            continue
        if not (math.isclose(data["step_time_s"], est.step_time, rel_tol=1e-9)
                and math.isclose(data["memory_gib"]["total"], est.worst_stage.total / C.GIB, rel_tol=1e-9)):
            bad.append(f"{item.row['id']}: CLI {data['step_time_s']:.4g} s {data['memory_gib']['total']:.4g} GiB, "
                       f"benchmark {est.step_time:.4g} s {est.worst_stage.total / C.GIB:.4g} GiB")
    return bad


# --------------------------------------------------------------------------- statistics


def _pct(x: float | None) -> str:
    return "   —  " if x is None else f"{x * 100:+6.1f}%"


def weighted_quantile(values: list[float], weights: list[float], q: float) -> float:
    if not values:
        return math.nan
    pairs = sorted(zip(values, weights))
    total = sum(w for _, w in pairs)
    acc = 0.0
    for v, w in pairs:
        acc += w
        if acc >= q * total - 1e-12:
            return v
    return pairs[-1][0]


def stats(errors: list[float]) -> dict[str, float]:
    a = [abs(e) for e in errors]
    return {"n": len(a), "median": statistics.median(a) if a else math.nan, "worst": max(a) if a else math.nan,
            "within10": sum(1 for e in a if e <= 0.10) / len(a) if a else math.nan}


def kind_rows(results: list[Result], kind: str) -> list[Result]:
    return [r for r in results if r.kind == kind and not r.oom]


def errors_of(results: list[Result], kind: str, who: str = "trainlint") -> list[float]:
    out = []
    for r in kind_rows(results, kind):
        if who == "constant 65 GB":
            out.append(65.0 / r.measured - 1)
        else:
            e = r.err(getattr(r, who))
            if e is not None:
                out.append(e)
    return out


# --------------------------------------------------------------------------- fitting


def objective(results: list[Result], kind: str) -> float:
    """Per-source weighted median + half the weighted 90th percentile of |error| (each source weighs the
    same, so the largest table does not decide alone), plus a penalty per OOM row predicted to fit (1: a
    constraint) and per completed memory row predicted above capacity (0.05)."""
    rows = kind_rows(results, kind)
    if not rows:
        return 0.0
    count: dict[str, int] = {}
    for r in rows:
        count[r.source] = count.get(r.source, 0) + 1
    errs = [abs(r.err(r.trainlint) or 0.0) for r in rows]
    weights = [1.0 / count[r.source] for r in rows]
    score = weighted_quantile(errs, weights, 0.5) + 0.5 * weighted_quantile(errs, weights, 0.9)
    if kind == "memory":
        # a recorded OOM predicted to fit is no candidate (every recorded OOM must stay caught): a penalty no
        # gain in the median outweighs; a completed run predicted above capacity costs like 5% of error
        score += sum(1.0 for r in results if r.kind == "memory" and r.oom and r.fits)
        score += sum(0.05 for r in rows if not r.fits)
    return score


FACTORS = (0.25, 0.5, 0.8, 0.9, 1.1, 1.25, 1.6)
FIT_ROWS_PER_SOURCE = 30
"""The fit sees at most this many rows of each source (an even stride through its rows, the same every
time): the objective weighs every source the same anyway, and a source of 788 rows (vTrain) would
otherwise make each of the fit's evaluations cost as much as the rest together. Every row is scored."""


def fit_sample(loaded: list[Loaded], per_source: int = FIT_ROWS_PER_SOURCE) -> list[Loaded]:
    by_source: dict[str, list[Loaded]] = {}
    for x in loaded:
        by_source.setdefault(source_of(x.row) + x.row["kind"], []).append(x)
    out: list[Loaded] = []
    for items in by_source.values():
        step = max(1, math.ceil(len(items) / per_source))
        picked = items[::step]
        # every recorded OOM is a constraint of the fit (objective), never left out of the sample
        out += picked + [x for x in items if x.row["measured"].get("oom") and x not in picked]
    return out


def _score(subset: list[Loaded], kind: str) -> float:
    """The objective at the coefficients as they are now; a candidate whose estimates break the
    estimator's invariants (MFU above 1 ...) is no candidate."""
    from trainlint.estimator.core import InvariantError

    try:
        return objective(evaluate(subset, strict=True)[0], kind)
    except InvariantError:
        return math.inf


def fit(loaded: list[Loaded], *, passes: int = 2, kinds: Iterable[str] = ("throughput", "memory")) -> dict[str, float]:
    """Coordinate search of the FITTED coefficients, each kept inside its documented range
    (coefficients.FITTED), on the given rows (a per-source sample: :func:`fit_sample`). Sets them in
    place and returns them."""
    loaded = fit_sample(loaded)
    for kind in kinds:
        subset = [x for x in loaded if (x.row["kind"] == "peak_memory_gb") == (kind == "memory")]
        if not subset:
            continue
        names = [n for n, spec in C.FITTED.items() if spec.kind == kind]
        best = _score(subset, kind)
        for _ in range(passes):
            improved = False
            for name in names:
                lo, hi = C.FITTED[name].low, C.FITTED[name].high
                base = getattr(C, name)
                candidates = sorted({min(hi, max(lo, base * f)) for f in FACTORS} - {base})
                if base == 0:
                    candidates = sorted({lo + (hi - lo) * f for f in (0.1, 0.25, 0.5)} - {base})
                for value in candidates:
                    setattr(C, name, value)
                    score = _score(subset, kind)
                    if score < best - 1e-6:
                        best, base, improved = score, value, True
                setattr(C, name, base)
            if not improved:
                break
    return {name: getattr(C, name) for name in C.FITTED}


_SHIPPED = {name: getattr(C, name) for name in C.FITTED}


def shipped_coefficients() -> dict[str, float]:
    """The FITTED coefficients as coefficients.py ships them (read when this module loaded)."""
    return dict(_SHIPPED)


@contextlib.contextmanager
def coefficients_restored():
    saved = {name: getattr(C, name) for name in C.FITTED}
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(C, name, value)


def leave_one_source_out(loaded: list[Loaded], *, passes: int = 2) -> tuple[list[Result], dict[str, dict[str, float]]]:
    """For each source: refit without it (from the shipped values), estimate its rows. Returns the
    held-out results and each refit's coefficients."""
    held: list[Result] = []
    fits: dict[str, dict[str, float]] = {}
    sources = sorted({source_of(x.row) for x in loaded})
    for source in sources:
        kinds = {("memory" if x.row["kind"] == "peak_memory_gb" else "throughput")
                 for x in loaded if source_of(x.row) == source}
        with coefficients_restored():
            fits[source] = fit([x for x in loaded if source_of(x.row) != source], passes=passes, kinds=kinds)
            held += evaluate([x for x in loaded if source_of(x.row) == source])[0]
    return held, fits


# --------------------------------------------------------------------------- report


def print_rows(results: list[Result]) -> None:
    print(f"{'row':66} {'measured':>9} {'trainlint':>9} {'err':>7} {'seed000':>9} {'err':>7} {'seed002':>9} {'err':>7}")
    for r in results:
        if r.oom:
            verdict = "predicted OOM (ok)" if not r.fits else "PREDICTED TO FIT (wrong)"
            print(f"{r.row['id'][:66]:66} {'OOM':>9} {r.trainlint:9.1f} {verdict}  capacity {r.capacity:.1f}")
            continue
        s2 = "" if r.seed002 is None else f"{r.seed002:9.1f} {_pct(r.err(r.seed002))}"
        flag = "" if r.kind != "memory" or r.fits else "  ABOVE CAPACITY"
        print(f"{r.row['id'][:66]:66} {r.measured:9.1f} {r.trainlint:9.1f} {_pct(r.err(r.trainlint))} "
              f"{r.seed000:9.1f} {_pct(r.err(r.seed000))} {s2}{flag}" + (f"  [{'; '.join(r.notes)}]" if r.notes else ""))
    print()


def _line(label: str, errs: list[float]) -> str:
    s = stats(errs)
    if not s["n"]:
        return f"  {label:34} n=  0"
    return (f"  {label:34} n={s['n']:3d}  median |err| {s['median'] * 100:5.1f}%  worst {s['worst'] * 100:6.1f}%  "
            f"within 10%: {s['within10'] * 100:5.1f}%")


def print_summary(shipped: list[Result], insample: list[Result] | None, loso: list[Result] | None) -> None:
    for kind in ("throughput", "memory"):
        print(f"{kind} ({'step time, in the row unit' if kind == 'throughput' else 'peak memory per GPU'}):")
        if loso is not None:
            print(_line("trainlint leave-one-source-out", errors_of(loso, kind)))
            errs = sorted(abs(e) for e in errors_of(loso, kind))
            if errs:
                print(f"  {'  (LOSO p90 |err|)':34} {errs[min(len(errs) - 1, int(0.9 * len(errs)))] * 100:5.1f}%")
        if insample is not None:
            print(_line("trainlint in-sample (refit, all)", errors_of(insample, kind)))
        print(_line("trainlint shipped coefficients", errors_of(shipped, kind)))
        print(_line("seed 000 first-order", errors_of(shipped, kind, "seed000")))
        if kind == "throughput":
            print(_line("seed 002 roofline", errors_of(shipped, kind, "seed002")))
        else:
            print(_line("constant 65 GB", errors_of(shipped, kind, "constant 65 GB")))
        sources = sorted({r.source for r in kind_rows(shipped, kind)})
        for source in sources:
            pick = lambda rs: [r for r in (rs or []) if r.source == source]  # noqa: E731
            parts = []
            for label, rs in (("LOSO", loso), ("in-sample", insample), ("shipped", shipped)):
                if rs is None:
                    continue
                s = stats(errors_of(pick(rs), kind))
                if s["n"]:
                    parts.append(f"{label} {s['median'] * 100:5.1f}% / {s['worst'] * 100:5.1f}%")
            print(f"    {source[:44]:44} n={len(kind_rows(pick(shipped), kind)):3d}  median/worst: " + ";  ".join(parts))
    oom = [r for r in shipped if r.oom]
    done = [r for r in shipped if r.kind == "memory" and not r.oom]
    print(f"OOM rows predicted not to fit: {sum(1 for r in oom if not r.fits)}/{len(oom)}")
    print(f"completed memory rows predicted above capacity: {sum(1 for r in done if not r.fits)}/{len(done)}")
    n_bad, n_runs, bad = does_not_fit(shipped)
    print(f"completed runs (every kind) the estimate calls \"does not fit\": {n_bad}/{n_runs} "
          f"({100 * n_bad / max(1, n_runs):.1f}%)" + (f"  e.g. {', '.join(bad[:4])}" if bad else ""))
    n_under, _, under = does_not_fit(shipped, assumed=True)
    if n_under:
        print(f"  and {n_under} more over capacity on a setting the written files do not state as the run had it "
              "(a warning naming the assumption, as TL201 words it; not a verdict on the run):")
        reasons: dict[str, list[str]] = {}
        for key in under:
            why = next((r.assumed for r in shipped if run_key(r.row) == key and r.assumed), "")
            reasons.setdefault(why, []).append(key)
        for why, keys in sorted(reasons.items()):
            print(f"    {len(keys):3d}  {why}  e.g. {keys[0]}")


def signed_median(results: list[Result]) -> float | None:
    errs = [e for r in results if (e := r.err(r.trainlint)) is not None]
    return statistics.median(errs) if errs else None


def print_families(shipped: list[Result], loso: list[Result] | None) -> None:
    """The signed median error of every family (source x GPU), for each kind: + over-predicts the
    measured quantity (throughput: too fast; memory: too much)."""
    for kind in ("throughput", "memory"):
        rows = kind_rows(shipped, kind)
        fams = sorted({family_of(r.row) for r in rows})
        print(f"signed median per family, {kind} (+ = trainlint above the measurement):")
        for fam in fams:
            mine = [r for r in rows if family_of(r.row) == fam]
            parts = [f"shipped {_pct(signed_median(mine))}"]
            if loso is not None:
                parts.insert(0, f"LOSO {_pct(signed_median([r for r in kind_rows(loso, kind) if family_of(r.row) == fam]))}")
            print(f"  {fam[:58]:58} n={len(mine):4d}  " + "  ".join(parts))
    print()


def refit_swings(full_fit: dict[str, float], refits: dict[str, dict[str, float]]) -> list[tuple[str, float, str]]:
    """(coefficient, refit / in-sample ratio, held-out source) of each fitted coefficient's largest move across the
    leave-one-source-out refits (the ratio furthest from 1 on a log scale), largest first."""
    out = []
    for name, base in full_fit.items():
        moves = [(value[name] / base, source) for source, value in refits.items() if base and value[name] > 0]
        if moves:
            ratio, source = max(moves, key=lambda m: abs(math.log(m[0])))
            out.append((name, ratio, source))
    return sorted(out, key=lambda m: -abs(math.log(m[1])))


def dump_rows(loaded: list[Loaded], results: list[Result], path: Path) -> None:
    """One JSON line per estimated row: its family, the error at the shipped coefficients, the inputs
    the formulas read and the step-time breakdown (what ``--dump`` writes)."""
    from dataclasses import fields

    from trainlint.estimator import estimate

    by_id = {id(r.row): r for r in results}
    with path.open("w", encoding="utf-8") as out:
        for item in loaded:
            r = by_id.get(id(item.row))
            if r is None:
                continue
            est = estimate(item.spec, item.ctx)
            inputs = {f.name: getattr(est.inputs, f.name) for f in fields(est.inputs)
                      if isinstance(getattr(est.inputs, f.name), (int, float, str, bool))}
            inputs["gpu"] = est.inputs.gpu.id
            out.write(json.dumps({"id": r.row["id"], "family": family_of(r.row), "kind": r.kind, "err": r.err(r.trainlint),
                                  "step_time": est.step_time, "breakdown": {**est.time.as_dict(), "flops_time": est.time.flops_time, "bytes_time": est.time.bytes_time, "net_time": est.time.net_time},
                                  "memory": {"worst_total_gib": est.worst_stage.total / C.GIB, "capacity_gib": r.capacity,
                                             "fits": r.fits, **{k: getattr(est.worst_stage, k) / C.GIB for k in
                                                                ("params", "grads", "optimizer", "activations", "buffers", "overhead")
                                                                if isinstance(getattr(est.worst_stage, k, None), (int, float))}},
                                  "inputs": inputs}) + "\n")


def does_not_fit(results: list[Result], *, assumed: bool = False) -> tuple[int, int, list[str]]:
    """(completed runs the estimate calls "does not fit", completed runs, their ids): every estimated
    row that is not a recorded OOM is a run that completed, whatever it measured; one count per run.
    A verdict that rests on an assumed engine fact (``Result.assumed``: the ZeRO stage of a DeepSpeed
    config nobody published) is no verdict on the run: counted apart (``assumed=True`` counts those)."""
    done: dict[str, bool] = {}
    under: set[str] = set()
    for r in results:
        if r.oom:
            continue
        key = run_key(r.row)
        done[key] = done.get(key, True) and r.fits
        if not r.fits and r.assumed:
            under.add(key)
    bad = sorted(k for k, ok in done.items() if not ok and ((k in under) == assumed))
    return len(bad), len(done), bad


def print_apart(skipped: list[tuple[dict, str]], no_path: list[tuple[dict, str]]) -> None:
    groups: dict[str, int] = {}
    for row, why in no_path:
        groups[f"{source_of(row)}: {why}"] = groups.get(f"{source_of(row)}: {why}", 0) + 1
    print("Rows without a user's path (no adapter for the format its users write), in no figure above:")
    for what, n in sorted(groups.items()):
        print(f"  {n:4d}  {what}")
    reasons: dict[str, list[str]] = {}
    for row, why in skipped:
        reasons.setdefault(why, []).append(row["id"])
    print("Rows skipped (a fact a user must write is not published):")
    for why, ids in sorted(reasons.items()):
        print(f"  {len(ids):4d}  {why}  (e.g. {ids[0]})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--data", action="append", help="calibration YAML (default: both files of ../shared/calibration)")
    ap.add_argument("--summary", action="store_true", help="summary only")
    ap.add_argument("--no-loso", action="store_true", help="shipped coefficients only: no refits")
    ap.add_argument("--fit", action="store_true", help="print the in-sample fit of the FITTED coefficients")
    ap.add_argument("--passes", type=int, default=2, help="coordinate-search passes per fit (default 2)")
    ap.add_argument("--kind", choices=("memory", "throughput"), help="only the rows of this kind (fast iteration on "
                    "one side; the \"does not fit\" count then covers those rows only)")
    ap.add_argument("--only", metavar="REGEX", help="only the rows whose family (source x GPU) or id matches REGEX "
                    "(a fast loop on a subset; the figures are not the headline)")
    ap.add_argument("--dump", metavar="FILE", help="write every estimated row (inputs, step-time breakdown, error) "
                    "as JSON lines to FILE, for analysis")
    args = ap.parse_args(argv)
    paths = [Path(p) for p in args.data] if args.data else list(CALIBRATION_FILES)
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"calibration file not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    rows = load_rows(paths)
    if args.kind:
        rows = [r for r in rows if (r["kind"] == "peak_memory_gb") == (args.kind == "memory")]
    if args.only:
        pattern = re.compile(args.only, re.IGNORECASE)
        rows = [r for r in rows if pattern.search(family_of(r)) or pattern.search(str(r["id"]))]
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="trainlint-accuracy-") as tmp:
            loaded, skipped, no_path = load_cases(rows, Path(tmp))
    except InternalError as exc:
        print(f"accuracy: error: {exc}; no figure is reported", file=sys.stderr)
        return 2
    t_load = time.perf_counter() - t0
    disagreements = cli_agreement(loaded)
    shipped, skipped_est = evaluate(loaded)
    skipped += skipped_est
    broken = [why for _, why in skipped_est if why.startswith("estimate broke its invariants")]
    t1 = time.perf_counter()
    insample = loso = None
    refits: dict[str, dict[str, float]] = {}
    if not args.no_loso or args.fit:
        with coefficients_restored():
            full_fit = fit(loaded, passes=args.passes)
            insample = evaluate(loaded)[0]
        if not args.no_loso:
            loso, refits = leave_one_source_out(loaded, passes=args.passes)
    t_fit = time.perf_counter() - t1
    if args.dump:
        dump_rows(loaded, shipped, Path(args.dump))
    if not args.summary:
        print_rows(shipped)
    print(f"{len(rows)} rows: {len(loaded)} through the user's path ({len(shipped)} estimated), "
          f"{len(no_path)} without one, {len(skipped)} skipped")
    print("CLI agreement: " + ("every estimated row equals `trainlint estimate --format json`" if not disagreements
                               else f"{len(disagreements)} rows differ: " + "; ".join(disagreements[:5])))
    print()
    print_summary(shipped, insample, loso)
    print()
    print_families(shipped, loso)
    if not args.summary:
        print_apart(skipped, no_path)
        print()
    if insample is not None:
        print("in-sample fit (every source) vs shipped, and each leave-one-source-out refit:")
        for name, spec in C.FITTED.items():
            per = "  ".join(f"{s.split(':')[-1][:14]}={v[name]:.3g}" for s, v in refits.items()) if refits else ""
            print(f"  {name:28} range [{spec.low:g}, {spec.high:g}]  shipped {getattr(C, name):.4g}  "
                  f"fit {full_fit[name]:.4g}  {per}")
        print()
        if refits:
            print("refit swing: the largest move of each coefficient when one source is held out (refit / in-sample "
                  "fit); a coefficient that swings stands in for physics the other sources do not pin down:")
            for name, ratio, source in refit_swings(full_fit, refits):
                print(f"  {name:28} x{ratio:5.2f}  without {source}")
            print()
    print(f"timing: {len(rows)} rows written and read through the CLI path (+ CLI JSON check) {t_load:.1f} s; "
          f"fits ({'in-sample + ' if insample is not None else ''}{len(refits)} leave-one-out) {t_fit:.1f} s")
    if broken:
        print(f"accuracy: error: {len(broken)} rows broke the estimator's invariants at the shipped coefficients, "
              f"e.g. {broken[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
