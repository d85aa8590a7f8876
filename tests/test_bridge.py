"""Megatron-Bridge as a format (issue 31, Deliver 5): ConfigContainer YAML, recipe launch lines with
Hydra overrides, the recipe catalog read statically, and the claim that a Bridge run is read as the
Megatron-LM script of the same run (same typed fields, same estimate)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from cross_format import core_disagreements, disagreements, random_core_run, random_run
from run_writer import read_one, write

from trainlint.adapters.bridge.adapter import BridgeAdapter
from trainlint.adapters.bridge.launch import find_launches, hydra_value
from trainlint.cli import main

REPO = Path(__file__).resolve().parents[1]
WORLD_FIELDS = {"cluster.world_size", "cluster.gpus_per_node", "cluster.nodes", "parallel.data", "batch.grad_accum"}
"""What a Bridge YAML cannot say (it states no world size) and what is derived from it."""


@pytest.mark.parametrize("seed", range(3))
def test_a_bridge_yaml_is_read_as_the_megatron_lm_script_of_the_same_run(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    for k in range(8):
        run = random_run(rng)
        lm = read_one(write(run, "megatron-lm", str(tmp_path / f"{k}lm")))
        bridge = read_one(write(run, "bridge", str(tmp_path / f"{k}br")))
        assert bridge.framework == "megatron" and bridge.format == "bridge" and bridge.dialect == lm.dialect
        a = {n: v.value for n, v in lm.items() if n not in WORLD_FIELDS}
        b = {n: v.value for n, v in bridge.items() if n not in WORLD_FIELDS | {"run.train_iters"}}
        assert a == b, run


@pytest.mark.parametrize("seed", range(2))
def test_same_estimate_as_megatron_lm(seed: int, tmp_path: Path) -> None:
    rng = random.Random(100 + seed)
    for k in range(6):
        run = random_run(rng)
        found = disagreements(run, str(tmp_path / str(k)))
        bridge_kinds = {kind: why for kind, why in found.items() if "Bridge" in kind or "bridge" in why}
        assert not bridge_kinds, (run, bridge_kinds)


@pytest.mark.parametrize("seed", range(2))
def test_megatron_core_fields_only_lm_and_bridge_write_agree(seed: int, tmp_path: Path) -> None:
    """The field mapping (core_fields.json): an uneven first stage, MLA, shared experts, selective recompute
    modules, sequence parallelism, DDP buckets written in both files read as the same arguments and run."""
    rng = random.Random(200 + seed)
    written = 0
    for k in range(8):
        run = random_core_run(rng)
        written += len(run.core)
        assert not core_disagreements(run, str(tmp_path / str(k))), run
    assert written > 0


LAUNCH = """#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node=8 --nnodes 2 scripts/training/run_recipe.py \\
    --recipe llama3_8b_pretrain_2gpu_h100_bf16_config -tp 2 \\
    model.tensor_model_parallel_size=4 train.micro_batch_size=2 optimizer.lr=1e-4 ~model.fp8 $EXTRA
"""


def test_launch_line_overrides_and_their_positions() -> None:
    [launch] = find_launches(LAUNCH)
    assert launch.recipe is not None and launch.recipe.text == "llama3_8b_pretrain_2gpu_h100_bf16_config"
    assert launch.nproc_per_node is not None and launch.nproc_per_node[0] == 8
    assert launch.nnodes is not None and launch.nnodes[0] == 2
    assert launch.env["CUDA_DEVICE_MAX_CONNECTIONS"][0] == "1"
    paths = [(o.path, o.value, o.op) for o in launch.overrides]
    # the convenience option first, the KEY=VALUE words after it (they win on the same field)
    assert paths == [("model.tensor_model_parallel_size", 2, ""), ("model.tensor_model_parallel_size", 4, ""),
                     ("train.micro_batch_size", 2, ""), ("optimizer.lr", 1e-4, ""), ("model.fp8", None, "~")]
    line5 = LAUNCH.splitlines()[4]
    tp = launch.overrides[1]
    assert (tp.span.line, tp.span.column) == (5, line5.index("=4") + 2)
    assert (tp.key_span.line, tp.key_span.column) == (5, line5.index("model.tensor") + 1)
    assert [w.raw for w in launch.unknown] == ["$EXTRA"]


def test_launch_spec(tmp_path: Path) -> None:
    from trainlint.adapters.base import LoadContext
    from trainlint.files.sources import read_source

    path = tmp_path / "train.sh"
    path.write_text(LAUNCH, encoding="utf-8")
    result = BridgeAdapter().load(read_source(str(path)), LoadContext())
    [spec] = result.specs
    assert spec.value("parallel.tensor") == 4  # the KEY=VALUE override, not -tp 2 nor the recipe's 1
    assert spec.parallel.tensor is not None and spec.parallel.tensor.provenance.span is not None
    assert spec.parallel.tensor.provenance.span.line == 5
    assert spec.value("parallel.context") == 2  # the recipe's (a base value, no position of its own)
    assert spec.value("cluster.world_size") == 16
    assert spec.value("parallel.data") == 16 // (4 * 2)
    assert spec.value("engine.device_max_connections") == "1"
    assert spec.value("model.num_layers") == 32  # meta-llama/Meta-Llama-3-8B through the model preset
    assert "override $EXTRA" in spec.unresolved


@pytest.mark.parametrize("text, value", [("1e-4", 1e-4), ("8", 8), ("True", True), ("false", False), ("null", None),
                                         ("[8, 2]", [8, 2]), ("'a2a+p2p'", "a2a+p2p"), ("bf16_mixed", "bf16_mixed")])
def test_hydra_values(text: str, value: object) -> None:
    assert hydra_value(text) == value


def test_recipe_catalog_reads_literals_helpers_and_computed_fields() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    from build_bridge_recipes import build

    files = {
        "src/megatron/bridge/recipes/common.py":
            "def _pretrain_common():\n"
            "    cfg = ConfigContainer(train=TrainingConfig(global_batch_size=32, micro_batch_size=2),\n"
            "                          checkpoint=CheckpointConfig(save=some_dir))\n"
            "    return cfg\n",
        "src/megatron/bridge/recipes/x/h100/m.py":
            "from megatron.bridge.recipes.common import _pretrain_common\n"
            "SEQ = 16384\n"
            "def _layout(model_cfg):\n"
            "    if model_cfg.pipeline_model_parallel_size > 1:\n"
            "        model_cfg.pipeline_model_parallel_layout = [['embedding'], ['loss']]\n"
            "def m_pretrain_config():\n"
            "    cfg = _pretrain_common()\n"
            "    cfg.model = AutoBridge.from_hf_pretrained('org/M-7B').get_model_config()\n"
            "    cfg.model.tensor_model_parallel_size = 4\n"
            "    cfg.dataset.seq_length = SEQ\n"
            "    cfg.train.global_batch_size = 256\n"
            "    cfg.model.pipeline_dtype = torch.bfloat16\n"
            "    cfg.model.context_parallel_size = compute_cp()\n"
            "    _layout(cfg.model)\n"
            "    return cfg\n",
    }
    recipe = build(files, "abc")["recipes"]["m_pretrain_config"]
    assert recipe["hf_model"] == "org/M-7B"
    assert recipe["values"]["model.tensor_model_parallel_size"] == 4
    assert recipe["values"]["dataset.seq_length"] == 16384
    assert recipe["values"]["train.global_batch_size"] == 256  # the recipe's own, over the helper's 32
    assert recipe["values"]["train.micro_batch_size"] == 2  # from the helper
    assert set(recipe["computed"]) == {"checkpoint.save", "model.context_parallel_size",
                                       "model.pipeline_model_parallel_layout"}


@pytest.mark.parametrize("name, text, mine", [
    ("run_config.yaml", "model:\n  num_layers: 2\ntrain:\n  micro_batch_size: 1\noptimizer:\n  lr: 1\nddp:\n  x: 1\n", True),
    ("c.yaml", "_target_: megatron.bridge.training.config.ConfigContainer\nmodel: {}\n", True),
    ("neox.yml", "num_layers: 2\nhidden_size: 8\ntrain_micro_batch_size_per_gpu: 1\n", False),
    ("run.sh", "#!/bin/bash\ntorchrun pretrain_gpt.py --num-layers 2\n", False),
    ("run.sh", "#!/bin/bash\npython scripts/training/run_recipe.py --recipe x_config train.train_iters=2\n", True),
])
def test_sniff(name: str, text: str, mine: bool) -> None:
    assert (BridgeAdapter().sniff(name, text) > 0) is mine


def test_fix_hints_are_spelled_as_overrides(tmp_path: Path, capsys) -> None:
    path = tmp_path / "run_config.yaml"
    path.write_text("model:\n  _target_: megatron.bridge.models.llama.Llama3ModelProvider70B\n  num_layers: 80\n"
                    "  hidden_size: 8192\n  ffn_hidden_size: 28672\n  num_attention_heads: 64\n  num_query_groups: 8\n"
                    "  seq_length: 8192\n  vocab_size: 128256\n  gated_linear_unit: true\n  bf16: true\n"
                    "  tensor_model_parallel_size: 1\ntrain:\n  micro_batch_size: 1\n  global_batch_size: 64\n"
                    "  train_iters: 100\nddp:\n  use_distributed_optimizer: true\ndataset:\n  seq_length: 8192\n",
                    encoding="utf-8")
    code = main(["check", "--isolated", "--format", "json", "--gpu", "h100-sxm", "--nodes", "2", "--gpus-per-node", "8",
                 "--select", "TL201",
                 str(path)])
    out = json.loads(capsys.readouterr().out)
    [finding] = [d for f in out["files"] for d in f["diagnostics"] if d["code"] == "TL201"]
    assert code == 1
    assert (finding["line"], finding["column"]) != (1, 1)
    assert "model.tensor_model_parallel_size=" in json.dumps(finding)
    assert "--tensor-model-parallel-size" not in json.dumps(finding)


def test_core_checks_name_the_bridge_field_and_megatron_core(tmp_path: Path, capsys) -> None:
    """A Megatron-Core check on a Bridge run names the ConfigContainer fields (also one the file does
    not write) and Megatron-Core, which raises it when Bridge builds the TransformerConfig."""
    path = tmp_path / "run_config.yaml"
    path.write_text("model:\n  _target_: megatron.bridge.models.llama.Llama3ModelProvider8B\n  num_layers: 8\n"
                    "  hidden_size: 1024\n  num_attention_heads: 16\n  num_query_groups: 8\n  seq_length: 2048\n"
                    "  experimental_attention_variant: gated_delta_net\n  tensor_model_parallel_size: 1\n"
                    "train:\n  micro_batch_size: 1\n  global_batch_size: 8\n  train_iters: 10\n", encoding="utf-8")
    main(["check", "--isolated", "--format", "json", "--select", "TL635", str(path)])
    out = json.loads(capsys.readouterr().out)
    [finding] = [d for f in out["files"] for d in f["diagnostics"] if d["code"] == "TL635"]
    assert "model.experimental_attention_variant gated_delta_net" in finding["message"]
    assert "without model.linear_attention_freq" in finding["message"]
    assert "Megatron-Core stops with" in finding["message"] and "--" not in finding["message"]


def test_examples_are_read_as_bridge_runs() -> None:
    from trainlint.files.checker import check_file
    from trainlint.project.plugins import create_host
    from trainlint.project.registry import build_registry

    adapters = build_registry(create_host(entry_points=False)).adapters
    for path in sorted((REPO / "examples" / "bridge").iterdir()):
        result = check_file(str(path), adapters)
        assert result.format == "bridge", path
        assert result.specs and all(s.value("model.num_layers") for s in result.specs), path


MTP_RUN = ("model:\n  num_layers: 4\n  hidden_size: 1024\n  num_attention_heads: 16\n  seq_length: 2048\n"
           "  vocab_size: 32000\n  bf16: true\n  mtp_num_layers: 1\n{extra}train:\n  micro_batch_size: 1\n"
           "  global_batch_size: 64\n  train_iters: 100\ndataset:\n  seq_length: 2048\n")


def _codes(capsys, path: Path) -> list[str]:
    main(["check", "--isolated", "--format", "json", "--gpu", "h100-sxm", "--nodes", "1", "--gpus-per-node", "8", str(path)])
    out = json.loads(capsys.readouterr().out)
    return [d["code"] for f in out["files"] for d in f["diagnostics"]]


def test_megatron_lm_argument_checks_do_not_judge_a_bridge_run(tmp_path: Path, capsys) -> None:
    """Bridge builds Megatron-Core's configs itself and never calls Megatron-LM's validate_args: the
    MTP / position-embedding check of validate_args (TL609) judges the Megatron-LM script, not the Bridge
    YAML, neither on a field it leaves to the provider (Megatron-LM's argparse default is not Bridge's)
    nor on one it writes."""
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
                      "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 "
                      "--global-batch-size 64 --bf16 --mtp-num-layers 1 --position-embedding-type learned_absolute\n",
                      encoding="utf-8")
    assert "TL609" in _codes(capsys, script)
    for extra in ("", "  position_embedding_type: learned_absolute\n"):
        path = tmp_path / "run_config.yaml"
        path.write_text(MTP_RUN.format(extra=extra), encoding="utf-8")
        codes = _codes(capsys, path)
        assert not [c for c in codes if c.startswith("TL6") and c < "TL670"], codes


def test_megatron_core_checks_judge_a_bridge_run_on_what_it_writes(tmp_path: Path, capsys) -> None:
    """A TransformerConfig check (transformer_config.py:2856 at d98e8a6: full recompute only with a
    full-iteration CUDA graph) is made whatever builds the config: it judges the Bridge YAML that writes
    the offending fields, and not one that leaves the graph to its default."""
    extra = "  cuda_graph_impl: local\n  recompute_granularity: full\n  recompute_method: uniform\n  recompute_num_layers: 1\n"
    path = tmp_path / "run_config.yaml"
    path.write_text(MTP_RUN.format(extra=extra).replace("  mtp_num_layers: 1\n", ""), encoding="utf-8")
    assert "TL167" in _codes(capsys, path)
    path.write_text(MTP_RUN.format(extra=extra.replace("  cuda_graph_impl: local\n", "")).replace("  mtp_num_layers: 1\n", ""),
                    encoding="utf-8")
    assert "TL167" not in _codes(capsys, path)
