"""``trainlint suggest``: the layout search (issue 6).

The search uses the estimator's own memory and time; the modified specs resolve to the inputs the search
assumed; seed 000's 13B exercise gets a layout that fits in 80 GB; no suggestion introduces a
launch-time (TL1xx) finding; for every calibration run the best suggestion is at least as fast
as the run as published; the JSON shape, --allow-batch-change, --fix/--vary and the price ranking.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from pathlib import Path

import pytest

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_source
from trainlint.cli import main
from trainlint.estimator import build_context, estimate, estimate_inputs
from trainlint.layout import SearchOptions, search
from trainlint.layout.candidate import candidate_spec, layout_changes
from trainlint.estimator.memory import stage_kinds, stage_layers, stage_memory, static_floor, worst_stage_total
from trainlint.estimator.performance import stage_microbatch
from trainlint.project.engine import startup_rules
from trainlint.layout.startup_check import startup_findings
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry
from trainlint.layout.search import InputsFactory, prepare
from trainlint.layout.space import build_space
from trainlint.adapters.engine import set_engine
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.files.sources import SourceText
from trainlint.core.spec import MEGATRON_LM, TrainingSpec

from conftest import CALIBRATION, EXAMPLES, SHARED_ABSENT, calibration_rows

F = Provenance(Origin.FILE, path="run.sh", key="--x")

CHANGE_KEYS = {"parallel.tensor", "parallel.pipeline", "parallel.virtual_pipeline", "parallel.context", "parallel.data",
               "parallel.sequence_parallel", "parallel.zero_stage", "parallel.distributed_optimizer",
               "parallel.pipeline_engine", "batch.micro_batch", "batch.grad_accum", "batch.global_batch",
               "memory.recompute", "memory.recompute_method", "memory.recompute_num_layers"}
"""The keys /work/notes/layout-interface.md documents for the writeback."""

# seed 000's exercise: "a 13B model with TP=4, ZeRO-3 across 32 GPUs, batch=8, sequence=4096,
# hidden=5120, layers=40" (40 heads), in the two formats that can say TP and ZeRO/sharding.
NEOX_13B = """\
# seed 000 exercise: 13B, TP 4, ZeRO-3 over 32 GPUs, batch 8, sequence 4096
{
  "pipe_parallel_size": 0,
  "model_parallel_size": 4,
  "num_layers": 40,
  "hidden_size": 5120,
  "num_attention_heads": 40,
  "seq_length": 4096,
  "max_position_embeddings": 4096,
  "attention_config": [[["flash"], 40]],
  "train_micro_batch_size_per_gpu": 8,
  "gradient_accumulation_steps": 1,
  "zero_optimization": {"stage": 3},
  "precision": "bfloat16",
  "bf16": {"enabled": true},
}
"""
MEGATRON_13B = """\
#!/bin/bash
torchrun --nproc_per_node 8 --nnodes 4 pretrain_gpt.py \\
    --tensor-model-parallel-size 4 \\
    --num-layers 40 --hidden-size 5120 --num-attention-heads 40 \\
    --seq-length 4096 --max-position-embeddings 4096 \\
    --micro-batch-size 8 --global-batch-size 64 \\
    --use-distributed-optimizer --bf16 --use-flash-attn
"""
DS_13B = json.dumps({"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
                     "tensor_parallel": {"autotp_size": 4}, "zero_optimization": {"stage": 2}, "bf16": {"enabled": True}})


@pytest.fixture(scope="module")
def rules():
    return default_startup_rules()


def default_startup_rules():
    """The TL1xx rules of the built-in and installed plugins (as a session without a project config
    passes them to the search)."""
    return startup_rules(build_registry(create_host()))


def load(path: str, text: str):
    result = check_source(SourceText(path, text), builtin_adapters())
    assert result.specs, result.diagnostics
    return result


def context(spec, **kw):
    return build_context(spec, **kw)


def synthetic(framework="megatron", *, world, model=None, gpu="h100-sxm", **fields) -> tuple[TrainingSpec, object]:
    spec = TrainingSpec(framework=framework, path="run.sh", dialect=MEGATRON_LM if framework == "megatron" else "")
    defaults = {"precision.dtype": "bf16", "cluster.world_size": world, "batch.micro_batch": 1}
    for name, value in {**defaults, **fields}.items():
        spec.set(name, Value(value, F))
    set_engine(spec)
    return spec, build_context(spec, gpu=gpu, model=model)


def one_t() -> tuple[TrainingSpec, object]:
    """Narayanan et al. 2021, Table 1, the 1T row: 128 layers, hidden 25600, 160 heads, seq 2048,
    global batch 3072, TP 8 x PP 64 on 3072 A100s, full recompute."""
    return synthetic(world=3072, gpu="a100-80gb", **{
        "model.num_layers": 128, "model.hidden_size": 25600, "model.num_attention_heads": 160, "model.seq_length": 2048,
        "model.max_position_embeddings": 2048, "model.vocab_size": 51200, "parallel.tensor": 8, "parallel.pipeline": 64,
        "batch.global_batch": 3072, "precision.dtype": "fp16", "memory.recompute": "full",
        "memory.recompute_method": "uniform", "memory.recompute_num_layers": 1})


def cases() -> list[tuple[str, TrainingSpec, object]]:
    """(name, spec, context) of configs in every format."""
    out = []
    for name, text, kw in (("neox13b.yml", NEOX_13B, {}), ("mega13b.sh", MEGATRON_13B, {}), ("ds13b.json", DS_13B, {})):
        spec = load(name, text).specs[0]
        out.append((name, spec, context(spec, model="gpt3-13b", nodes=4, gpu="a100-80gb", **kw)))
    for path, kw in (("megatron_llama2_70b_oom.sh", {}), ("megatron_gpt_2.7b_network_bound.sh", {}),
                     ("neox_zero2_pipeline.yml", {"model": "gpt-neox-20b", "nodes": 4}),
                     ("neox_1-3B.yml", {"model": "pythia-1.4b", "nodes": 2}),
                     ("deepspeed_zero3_offload.json", {"model": "llama2-13b", "nodes": 2})):
        p = EXAMPLES / path
        spec = load(str(p), p.read_text(encoding="utf-8")).specs[0]
        out.append((path, spec, context(spec, **kw)))
    spec, ctx = one_t()
    out.append(("1T", spec, ctx))
    spec, ctx = synthetic(world=64, model="mixtral-8x7b", **{"batch.global_batch": 256, "model.seq_length": 4096,
                                                              "parallel.tensor": 2, "parallel.expert": 8})
    out.append(("mixtral", spec, ctx))
    return out


CASES = cases()


# ------------------------------------------------------------------------------- one estimator


def per_stage_step_time(i) -> float:
    """The step time walking every pipeline stage (a reference for the estimator's per-kind walk)."""
    from trainlint.estimator import coefficients as C
    from trainlint.estimator.memory import stage_expert_params_per_gpu, stage_params_per_gpu
    from trainlint.estimator.performance import data_parallel, host_wait_s, layer_costs, optimizer_time

    stages = [stage_microbatch(i, s, layers) for s, layers in enumerate(stage_layers(i))]
    wait = host_wait_s(i, layer_costs(i))  # the GPU's wait for the host per layer per micro-batch
    launch = [layers * wait for layers in stage_layers(i)]
    totals = [c.total + tp + p2p + C.MICROBATCH_OVERHEAD_S + launch[k] for k, (c, tp, p2p, _) in enumerate(stages)]
    w = max(range(len(stages)), key=lambda k: totals[k])
    compute, tp, p2p, bwd = stages[w]
    n_max, fullest = max((stage_params_per_gpu(i, s, layers), layers) for s, layers in enumerate(stage_layers(i)))
    n_expert = stage_expert_params_per_gpu(i, fullest)  # the routed experts' share, exchanged over expert DP
    bubble = (i.pp - 1) / i.vpp * sum(totals) / len(totals) if i.pp > 1 else 0.0
    return (i.grad_accum * (compute.total + C.MICROBATCH_OVERHEAD_S + launch[w] + tp + p2p) + bubble
            + data_parallel(i, n_max, totals[w], totals[w] * bwd.total / compute.total, n_expert)  # backward's wall time
            + optimizer_time(i, n_max, n_expert) + C.STEP_OVERHEAD_S)


@pytest.mark.parametrize("name, spec, ctx", CASES, ids=[c[0] for c in CASES])
def test_search_uses_the_estimators_own_numbers(name, spec, ctx):
    """The search's memory and time per layout are the estimator's: the worst-stage shortcut equals
    the full per-stage memory, the static floor bounds it, the per-kind time equals a walk of every stage."""
    _, base = prepare(spec, ctx)
    assert base is not None
    space = build_space(spec, base)
    factory = InputsFactory(spec, base)
    rng = random.Random(7)
    structures = list(space.structures())
    checked = 0
    for tp, pp, vpp, cp, dp in rng.sample(structures, min(25, len(structures))):
        for zero, _, _ in space.zero_values(pp):
            for dist in space.dist_opt:
                s = factory.structure(tp, pp, vpp, cp, dp, space.sp_for(tp), zero, dist)
                for recompute in space.recompute:
                    for micro, ga, gb in list(space.batches(dp, pp, vpp))[:3]:
                        i = factory.point(s, micro, ga, gb, recompute)
                        real = estimate_inputs(i)
                        assert worst_stage_total(i) == pytest.approx(max(st.total for st in stage_memory(i)), rel=1e-12)
                        assert real.worst_stage.total == pytest.approx(worst_stage_total(i), rel=1e-12)
                        assert real.step_time == pytest.approx(per_stage_step_time(i), rel=1e-9)
                        assert static_floor(s) <= real.worst_stage.total * (1 + 1e-9)
                        checked += 1
    assert checked > 0


def test_stage_kinds_cover_every_stage():
    base = prepare(CASES[0][1], CASES[0][2])[1]
    for layers in (1, 7, 24, 30, 80, 96, 128):
        for pp in range(1, min(layers, 40) + 1):
            i = dataclasses.replace(base, layers=layers, pp=pp)
            kinds = stage_kinds(i)
            expanded = [layers_ for _, layers_, count in kinds for _ in range(count)]
            assert expanded == stage_layers(i)
            assert [s for s, _, _ in kinds] == sorted(s for s, _, _ in kinds)
            assert worst_stage_total(i) == pytest.approx(max(st.total for st in stage_memory(i)), rel=1e-12)
            assert estimate_inputs(i).step_time == pytest.approx(per_stage_step_time(i), rel=1e-9)


@pytest.mark.parametrize("name, spec, ctx", CASES, ids=[c[0] for c in CASES])
def test_modified_specs_resolve_to_the_searched_inputs(name, spec, ctx, rules):
    """What the search assumed for a layout is what `trainlint estimate` reads from the modified
    spec: the suggestions' real estimates are of the layouts shown."""
    result = search(spec, ctx, SearchOptions(top=8), rules=rules)
    assert result.suggestions, name
    _, base = prepare(spec, ctx)
    factory = InputsFactory(spec, base)
    for sg in result.suggestions:
        lay = sg.layout
        s = factory.structure(lay.tp, lay.pp, lay.vpp, lay.cp, lay.dp, lay.sp, lay.zero, lay.dist_opt)
        assumed = factory.point(s, lay.micro, lay.grad_accum, lay.global_batch, lay.recompute)
        real = sg.estimate.inputs
        for f in dataclasses.fields(real):
            if f.name != "assumptions":
                assert getattr(real, f.name) == getattr(assumed, f.name), (name, f.name, lay)
        assert set(sg.changes) <= CHANGE_KEYS
        # the spec estimated is the spec the changes describe
        assert estimate(candidate_spec(spec, base, layout_changes(spec, base, result.space.current, lay), lay),
                        ctx).tokens_per_s == pytest.approx(sg.estimate.tokens_per_s, rel=1e-12)


# ----------------------------------------------------------------------------- seed 000


@pytest.mark.parametrize("name, text", [("neox13b.yml", NEOX_13B), ("mega13b.sh", MEGATRON_13B)])
def test_seed000_13b_best_suggestion_fits_in_80gb(name, text, rules):
    spec = load(name, text).specs[0]
    ctx = context(spec, model="gpt3-13b", nodes=4, gpu="a100-80gb")
    result = search(spec, ctx, SearchOptions(), rules=rules)
    assert result.current.ok and not result.current.fits  # the seed: "This does not fit in 80 GB"
    best = result.best
    assert best is not None
    assert best.estimate.capacity_bytes == pytest.approx(80 * 2**30)
    assert best.estimate.worst_stage.total <= 0.90 * best.estimate.capacity_bytes
    assert best.estimate.fits
    assert not startup_findings(best.spec, rules) - startup_findings(spec, rules)


# --------------------------------------------------------------------------- launch rules


def _structural(spec, sg) -> None:
    i, lay = sg.estimate.inputs, sg.layout
    assert (lay.tp, lay.pp, lay.vpp, lay.cp, lay.dp, lay.micro) == (i.tp, i.pp, i.vpp, i.cp, i.dp, i.micro)
    assert i.heads % i.tp == 0 and (i.kv_heads % i.tp == 0 or i.tp % i.kv_heads == 0)
    assert i.tp <= i.gpus_per_node
    assert i.world == i.tp * i.pp * i.cp * i.dp
    assert i.global_batch == i.micro * i.grad_accum * i.dp
    if spec.framework == "megatron":
        assert i.layers % (i.pp * i.vpp) == 0
        if i.vpp > 1:
            assert i.grad_accum % i.pp == 0  # interleaving: micro-batches a multiple of PP
    if spec.framework in ("deepspeed", "neox") and i.pp > 1:
        assert i.zero <= 1
    if i.cp > 1:
        assert i.seq % (2 * i.cp) == 0
    assert sg.estimate.worst_stage.total <= 0.90 * sg.estimate.capacity_bytes


@pytest.mark.parametrize("name, spec, ctx", CASES, ids=[c[0] for c in CASES])
def test_no_suggestion_violates_a_launch_rule(name, spec, ctx, rules):
    before = startup_findings(spec, rules)
    # with the launch rules in the search, and without them (the structural filters alone)
    for with_rules in (rules, None):
        result = search(spec, ctx, SearchOptions(top=10), rules=with_rules)
        assert result.suggestions, name
        for sg in result.suggestions:
            new = startup_findings(sg.spec, rules) - before
            assert not new, (name, sg.layout, new)
            _structural(spec, sg)


def test_examples_get_suggestions_from_the_cli(capsys):
    code = main(["suggest", str(EXAMPLES / "megatron_llama2_70b_oom.sh"), "--isolated", "--top", "3"])
    out = capsys.readouterr().out
    assert code == 0
    assert "now  TP 8 PP 4" in out and "OVER" in out
    assert "--tensor-model-parallel-size" in out or "--pipeline-model-parallel-size" in out
    assert out.count("change:") == 3


# ----------------------------------------------------------------------------- calibration


@pytest.mark.slow
def test_calibration_best_suggestion_at_least_as_run(accuracy, rules):
    rows = calibration_rows()
    if not rows:
        pytest.skip(f"calibration data not found at {CALIBRATION} ({SHARED_ABSENT})")
    checked = 0
    for row in rows:
        try:
            spec, ctx, _ = accuracy.row_to_spec(row)
        except accuracy.Skip:
            continue
        current = estimate(spec, ctx)
        if not current.ok:
            continue
        fraction = current.worst_stage.total / current.capacity_bytes
        # At the default headroom where the run as published stays under it, and otherwise at a
        # headroom just above its own memory: the as-run layout is then in the searched space.
        for headroom in sorted({0.90, max(0.90, fraction * 1.0001)}):
            if fraction > headroom:
                continue
            result = search(spec, ctx, SearchOptions(top=1, headroom=headroom), rules=rules)
            assert result.best is not None, row["id"]
            assert result.best.estimate.tokens_per_s >= current.tokens_per_s * (1 - 1e-9), row["id"]
            checked += 1
    assert checked >= 50


# ------------------------------------------------------------------------------ options, CLI


def suggest_json(capsys, *argv: str) -> tuple[int, object]:
    code = main(["suggest", *argv, "--format", "json", "--isolated"])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.fixture
def neox13b(tmp_path: Path) -> Path:
    p = tmp_path / "neox13b.yml"
    p.write_text(NEOX_13B, encoding="utf-8")
    return p


def test_json_shape(capsys, neox13b):
    code, data = suggest_json(capsys, str(neox13b), "--model", "gpt3-13b", "--nodes", "4", "--gpu", "a100-80gb", "--top", "4")
    assert code == 0
    assert set(data) >= {"path", "label", "framework", "gpu", "world_size", "current", "headroom", "ranking",
                         "global_batch", "suggestions", "search", "notes"}
    assert data["framework"] == "neox" and data["world_size"] == 32 and data["gpu"] == "a100-80gb"
    assert data["ranking"] == "tokens_per_s" and data["global_batch"] == "fixed" and data["headroom"] == 0.9
    current = data["current"]
    assert set(current) >= {"layout", "memory_gib", "capacity_gib", "memory_fraction", "fits_headroom", "mfu",
                            "step_time_s", "tokens_per_s", "bound"}
    assert current["fits_headroom"] is False and current["layout"]["tp"] == 4 and current["layout"]["zero_stage"] == 3
    assert len(data["suggestions"]) == 4
    speeds = []
    for rank, sg in enumerate(data["suggestions"], 1):
        assert sg["rank"] == rank
        assert set(sg) >= {"rank", "is_current", "layout", "changes", "diff", "memory_gib", "capacity_gib", "mfu",
                           "step_time_s", "tokens_per_s", "bound", "speedup", "fits_headroom"}
        assert set(sg["layout"]) == {"tp", "pp", "vpp", "cp", "dp", "micro_batch", "grad_accum", "global_batch",
                                     "recompute", "zero_stage", "distributed_optimizer", "sequence_parallel"}
        assert set(sg["changes"]) <= CHANGE_KEYS and sg["fits_headroom"] is True
        assert all(isinstance(d, str) for d in sg["diff"])
        assert sg["speedup"] == pytest.approx(sg["tokens_per_s"] / current["tokens_per_s"])
        speeds.append(sg["tokens_per_s"])
    assert all(speeds[j] <= speeds[i] * 1.0101 for i in range(len(speeds)) for j in range(i + 1, len(speeds)))
    assert data["search"]["space_points"] >= data["search"]["feasible"] > 0
    assert "model_parallel_size" in " ".join(data["suggestions"][0]["diff"]) or data["suggestions"][0]["changes"]


def test_global_batch_held_unless_allowed(rules):
    # 7B on 3072 GPUs with a global batch of 1024: no layout divides it (3072 = 3 x 1024 and
    # Llama-2-7B's 32 layers and heads have no factor 3), so only --allow-batch-change helps.
    spec, ctx = synthetic(world=3072, model="llama2-7b", **{"batch.global_batch": 1024, "model.seq_length": 4096})
    fixed = search(spec, ctx, SearchOptions(), rules=rules)
    assert fixed.suggestions == []
    loose = search(spec, ctx, SearchOptions(batch_tolerance=0.25), rules=rules)
    assert loose.suggestions
    for sg in loose.suggestions:
        i = sg.estimate.inputs
        assert 0.75 * 1024 <= i.global_batch <= 1.25 * 1024
        assert sg.changes["batch.global_batch"] == i.global_batch
    # a config whose batch divides: the global batch never moves without the option
    spec, ctx = synthetic(world=64, model="llama2-7b", **{"batch.global_batch": 512, "model.seq_length": 4096})
    result = search(spec, ctx, SearchOptions(top=10), rules=rules)
    assert result.suggestions and all(sg.estimate.inputs.global_batch == 512 for sg in result.suggestions)
    assert all("batch.global_batch" not in sg.changes for sg in result.suggestions)


def test_allow_batch_change_cli(capsys, tmp_path):
    code, data = suggest_json(capsys, str(EXAMPLES / "megatron_llama2_70b_oom.sh"), "--allow-batch-change", "0.1")
    assert code == 0 and data["global_batch"] == {"tolerance": 0.1}
    assert all(abs(sg["layout"]["global_batch"] - 1024) <= 102.4 for sg in data["suggestions"])


def test_price_ranking(capsys, neox13b, rules):
    argv = [str(neox13b), "--model", "gpt3-13b", "--nodes", "4", "--gpu", "a100-80gb", "--top", "5"]
    _, by_speed = suggest_json(capsys, *argv)
    _, by_price = suggest_json(capsys, *argv, "--price-per-gpu-hour", "2.0")
    assert by_price["ranking"] == "cost_per_token"
    costs = [sg["cost_per_million_tokens"] for sg in by_price["suggestions"]]
    assert all(costs[j] >= costs[i] / 1.0101 for i in range(len(costs)) for j in range(i + 1, len(costs)))
    for sg in by_price["suggestions"]:  # 32 GPUs x $2/h / tokens per second, per million tokens
        assert sg["cost_per_million_tokens"] == pytest.approx(2.0 * 32 / 3600 / sg["tokens_per_s"] * 1e6)
    assert by_price["current"]["cost_per_million_tokens"] > costs[0]
    # with the world size fixed, cost per token ranks like tokens/s
    assert [sg["layout"] for sg in by_price["suggestions"]] == [sg["layout"] for sg in by_speed["suggestions"]]


def test_fix_and_vary(rules):
    spec = load("mega13b.sh", MEGATRON_13B).specs[0]
    ctx = context(spec, model="gpt3-13b", nodes=4, gpu="a100-80gb")
    fixed = search(spec, ctx, SearchOptions(top=5, fix=frozenset({"tp", "pp"})), rules=rules)
    assert fixed.suggestions
    assert all(sg.layout.tp == 4 and sg.layout.pp == 1 for sg in fixed.suggestions)
    only = search(spec, ctx, SearchOptions(top=5, vary=frozenset({"micro", "recompute"})), rules=rules)
    assert only.suggestions
    for sg in only.suggestions:
        assert set(sg.changes) <= {"batch.micro_batch", "memory.recompute", "memory.recompute_method",
                                   "memory.recompute_num_layers", "parallel.sequence_parallel"}
    neox = load("neox13b.yml", NEOX_13B).specs[0]
    result = search(neox, context(neox, model="gpt3-13b", nodes=4, gpu="a100-80gb"),
                    SearchOptions(vary=frozenset({"cp", "micro"})), rules=rules)
    assert any("cannot express cp" in note for note in result.notes)
    assert all(sg.layout.cp == 1 for sg in result.suggestions)


def test_cli_usage_errors(capsys):
    for bad in (["--headroom", "1.5"], ["--fix", "warp"], ["--price-per-gpu-hour", "-1"]):
        with pytest.raises(SystemExit) as exc:
            main(["suggest", str(EXAMPLES / "megatron_llama2_70b_oom.sh"), "--isolated", *bad])
        assert exc.value.code == 2
    assert main(["suggest", str(EXAMPLES / "megatron_llama2_70b_oom.sh"), "--isolated", "--top", "0"]) == 2
    assert main(["suggest", "no/such/file.sh"]) == 2
    capsys.readouterr()
    code = main(["suggest", str(EXAMPLES / "deepspeed_zero3_offload.json"), "--isolated"])
    assert code == 1 and "cannot estimate" in capsys.readouterr().out


def test_one_t_search_counts(rules):
    """The benchmark's space (benchmarks/suggest_speed.py times it): tens of thousands of layouts,
    most pruned without an estimate, a handful estimated for real."""
    spec, ctx = one_t()
    result = search(spec, ctx, SearchOptions(), rules=rules)
    s = result.stats
    assert s.space_points > 10_000
    assert s.evaluated < s.space_points / 5
    assert s.checked <= 20 and result.best is not None
    assert result.best.estimate.tokens_per_s > result.current.tokens_per_s


# ------------------------------------------------------------------------------- writeback


def test_writeback_round_trip(rules, tmp_path):
    """When the writeback exists: the rewritten file, read again, is the suggested layout and
    passes the launch rules."""
    writeback = pytest.importorskip("trainlint.layout.writeback")
    for name, text, _kw in (("neox13b.yml", NEOX_13B, {}), ("mega13b.sh", MEGATRON_13B, {}), ("ds13b.json", DS_13B, {})):
        result = load(name, text)
        spec = result.specs[0]
        ctx = context(spec, model="gpt3-13b", nodes=4, gpu="a100-80gb")
        found = search(spec, ctx, SearchOptions(top=3), rules=rules)
        for sg in found.suggestions:
            texts = writeback.rewrite(result, spec, dict(sg.changes))
            new_text = texts.get(name, text) if sg.changes else text
            again = load(name, new_text).specs[0]
            assert not startup_findings(again, rules) - startup_findings(spec, rules), (name, sg.layout)
            re_est = estimate(again, context(again, model="gpt3-13b", nodes=4, gpu="a100-80gb"))
            assert re_est.ok
            assert re_est.tokens_per_s == pytest.approx(sg.estimate.tokens_per_s, rel=1e-9), (name, sg.changes)


# --------------------------------------------------------------------- fix hints, fallbacks

MEGATRON_70B_TP2 = """\
#!/bin/bash
torchrun --nproc_per_node 8 --nnodes 4 pretrain_gpt.py \\
    --num-layers 80 --hidden-size 8192 --num-attention-heads 64 --group-query-attention --num-query-groups 8 \\
    --ffn-hidden-size 28672 --swiglu --seq-length 4096 --max-position-embeddings 4096 \\
    --micro-batch-size 1 --global-batch-size 512 --bf16 --use-flash-attn \\
    --tensor-model-parallel-size 2
"""


def test_oom_fix_hint_quotes_the_layout_search(capsys, tmp_path):
    """70B at TP 2 on 32 GPUs: no single flag brings it under the headroom; TL201 quotes the
    whole layout trainlint suggest finds, with the flags to write."""
    p = tmp_path / "run.sh"
    p.write_text(MEGATRON_70B_TP2, encoding="utf-8")
    code = main(["check", str(p), "--isolated", "--gpu", "h100-sxm", "--model", "llama2-70b", "--select", "TL201", "--format", "json"])
    diags = [d for f in json.loads(capsys.readouterr().out)["files"] for d in f["diagnostics"]]
    assert code == 1 and [d["code"] for d in diags] == ["TL201"]
    fix = diags[0]["fix"]
    assert fix.startswith("no single change brings it under 90%; trainlint suggest: ")
    assert "--pipeline-model-parallel-size" in fix and " GiB" in fix and "x tokens/s" in fix
    spec = load("run.sh", MEGATRON_70B_TP2).specs[0]
    best = search(spec, context(spec, model="llama2-70b"), SearchOptions(top=1), rules=default_startup_rules()).best
    assert ", ".join(best.spelled) in fix


BAD_WORLD = """\
#!/bin/bash
torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py \\
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \\
    --seq-length 4096 --max-position-embeddings 4096 \\
    --micro-batch-size 2 --global-batch-size 256 --bf16 --use-flash-attn \\
    --tensor-model-parallel-size 3 --pipeline-model-parallel-size 2
"""


def test_a_layout_that_does_not_divide_the_world_is_still_searched(rules):
    spec = load("bad.sh", BAD_WORLD).specs[0]
    before = {code for code, _ in startup_findings(spec, rules)}
    assert {"TL101", "TL104"} <= before
    result = search(spec, context(spec, model="llama2-7b"), SearchOptions(top=3), rules=rules)
    assert not result.current.ok and result.suggestions
    assert any("cannot be estimated" in note for note in result.notes)
    for sg in result.suggestions:
        assert sg.changes["parallel.tensor"] != 3 and sg.layout.tp in (1, 2, 4, 8)
        assert not {code for code, _ in startup_findings(sg.spec, rules)} & {"TL101", "TL104"}
        assert sg.estimate.inputs.world == 16


def test_write_to(capsys, tmp_path):
    """--write-to writes suggestion --pick N in the config's own format (through the writeback
    module; without it the command says so and exits 2)."""
    import importlib.util

    src, out = tmp_path / "run.sh", tmp_path / "suggested.sh"
    src.write_text(MEGATRON_13B, encoding="utf-8")
    argv = [str(src), "--isolated", "--model", "gpt3-13b", "--gpu", "a100-80gb", "--top", "2"]
    _, data = suggest_json(capsys, *argv)
    code = main(["suggest", *argv, "--write-to", str(out), "--pick", "2"])
    err = capsys.readouterr().err
    if importlib.util.find_spec("trainlint.layout.writeback") is None:
        assert code == 2 and "not available" in err and not out.exists()
        return
    assert code == 0 and out.is_file() and src.read_text(encoding="utf-8") == MEGATRON_13B
    again = load(str(out), out.read_text(encoding="utf-8")).specs[0]
    result = estimate(again, context(again, model="gpt3-13b", gpu="a100-80gb"))
    assert result.tokens_per_s == pytest.approx(data["suggestions"][1]["tokens_per_s"], rel=1e-9)


def _spec_of(text: str, name: str = "run.sh"):
    result = check_source(SourceText(name, text), builtin_adapters())
    assert result.specs, result.diagnostics
    return result.specs[0]


def test_fingerprint_ignores_positions_but_not_values():
    text = (Path(__file__).resolve().parents[1] / "examples" / "megatron_llama2_70b_oom.sh").read_text()
    same = _spec_of(text).fingerprint()
    assert _spec_of("# a comment that moves every line\n" + text).fingerprint() == same
    assert "--tensor-model-parallel-size" in text
    changed = text.replace("--micro-batch-size 4", "--micro-batch-size 2")
    assert changed != text
    assert _spec_of(changed).fingerprint() != same


@dataclasses.dataclass
class _FakeBest:
    label: str
    spec: object = None
    is_current: bool = False


def _fake_search(calls, answer):
    """A stand-in for trainlint.layout.search.search: reads the micro batch (through the traced spec LayoutAdvice
    passes), asks the launch check of one finalist, and answers ``answer(worth, calls)`` (a label, or None)."""

    class Stats:
        below_worth = False

    class Result:
        def __init__(self, best):
            self.best, self.stats = best, Stats()
            self.stats.below_worth = best is None

    def fake(spec, ctx, options, **kwargs):
        calls.append(options.worth)
        spec.value("batch.micro_batch")
        label = answer(options.worth, len(calls))
        if label is None:
            return Result(None)
        assert not kwargs["launch_refused"](lambda s: s)
        return Result(_FakeBest(label))

    return fake


def test_layout_hint_is_memoised_on_the_values(monkeypatch):
    """The language server re-lints on every edit: an edit that leaves the fields the search reads as
    they were reuses the whole-layout search; one that changes them searches again. The memo
    belongs to one session (its estimator and rules): another session searches on its own."""
    layout_search = sys.modules["trainlint.layout.search"]  # the package exports a function of that name
    from trainlint.rules.estimation.fixes import LayoutAdvice

    calls: list = []
    monkeypatch.setattr(layout_search, "search", _fake_search(calls, lambda worth, n: f"layout {n}"))
    text = (Path(__file__).resolve().parents[1] / "examples" / "megatron_llama2_70b_oom.sh").read_text()
    advice = LayoutAdvice(object(), list)
    first = advice(_spec_of(text), 0.9)
    assert advice(_spec_of("# moved\n" + text), 0.9).label == first.label == "layout 1"
    assert len(calls) == 1
    advice(_spec_of(text.replace("--micro-batch-size 4", "--micro-batch-size 2")), 0.9)
    advice(_spec_of(text), 0.8)  # another headroom
    LayoutAdvice(object(), list)(_spec_of(text), 0.9)  # another session (another --gpu, say)
    assert len(calls) == 4


def test_a_layout_hint_stopped_by_worth_is_not_the_whole_answer(monkeypatch):
    """TL301 asks only for a layout faster than its threshold: a search stopped because none can
    be (None) is kept for that threshold alone, never given to a rule that needs the whole answer
    (TL201's hint); a whole answer serves every threshold."""
    layout_search = sys.modules["trainlint.layout.search"]  # the package exports a function of that name
    from trainlint.rules.estimation.fixes import LayoutAdvice

    calls: list = []
    monkeypatch.setattr(layout_search, "search",
                        _fake_search(calls, lambda worth, n: None if worth is not None else "the best layout"))
    spec = _spec_of((Path(__file__).resolve().parents[1] / "examples" / "megatron_llama2_70b_oom.sh").read_text())
    advice = LayoutAdvice(object(), list)
    assert advice(spec, 0.9, None, 1e6) is None
    assert advice(spec, 0.9, None, 1e6) is None and calls == [1e6]
    assert advice(spec, 0.9).label == "the best layout" and calls == [1e6, None]
    assert advice(spec, 0.9, None, 2e6).label == "the best layout" and len(calls) == 2
