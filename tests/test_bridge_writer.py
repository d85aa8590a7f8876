"""The Megatron-Bridge writer (issue 31, Deliver 5): layout changes written into a ConfigContainer YAML
(in place, or under the field's section) and into a recipe launch line (the override's value, or a new
``section.key=value`` at the end of the override list), each verified by reading the file again."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainlint.files.checker import check_file
from trainlint.cli import main
from trainlint.layout.writeback import WritebackError, rewrite
from trainlint.project.plugins import create_host
from trainlint.project.registry import build_registry

ADAPTERS = build_registry(create_host(entry_points=False)).adapters
REPO = Path(__file__).resolve().parents[1]

YAML = """\
# a run_config.yaml
model:
  num_layers: 32  # layers
  hidden_size: 4096
  num_attention_heads: 32
  seq_length: 4096
  tensor_model_parallel_size: &tp 1   # TP
  recompute_granularity: 'selective'
train:
  micro_batch_size: 4
  global_batch_size: 256
dataset:
  seq_length: 4096
"""


def _write(tmp_path: Path, name: str, text: str, changes: dict) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = check_file(str(path), ADAPTERS)
    assert result.format == "bridge"
    out = rewrite(result, result.specs[0], changes, adapters=ADAPTERS)
    [new] = out.values()
    again = tmp_path / ("again-" + name)
    again.write_text(new, encoding="utf-8")
    spec = check_file(str(again), ADAPTERS).specs[0]
    for key, value in changes.items():
        want = None if value in ("none", 1) and key in ("memory.recompute", "parallel.virtual_pipeline") else value
        got = spec.value(key)
        assert got == want or (want is None and got in (None, "none", 1)), (key, got)
    return new


def test_yaml_values_replaced_in_place(tmp_path: Path) -> None:
    new = _write(tmp_path, "run_config.yaml", YAML,
                 {"parallel.tensor": 4, "memory.recompute": "full", "batch.micro_batch": 2})
    assert "  tensor_model_parallel_size: &tp 4   # TP\n" in new  # the anchor and the comment stay
    assert "  recompute_granularity: 'full'\n" in new  # the quoting stays
    assert "  micro_batch_size: 2\n" in new
    assert new.replace("&tp 4", "&tp 1").replace("'full'", "'selective'").replace("micro_batch_size: 2",
                                                                               "micro_batch_size: 4") == YAML


def test_yaml_missing_fields_go_under_their_section(tmp_path: Path) -> None:
    new = _write(tmp_path, "run_config.yaml", YAML,
                 {"parallel.pipeline": 2, "parallel.distributed_optimizer": True, "batch.global_batch": 128})
    lines = new.splitlines()
    # under model:, at the section's indentation, after its last field
    assert lines[lines.index("  recompute_granularity: 'selective'") + 1] == "  pipeline_model_parallel_size: 2"
    assert "  global_batch_size: 128" in lines
    assert new.endswith("optimizer:\n  use_distributed_optimizer: true\n")  # a section the file has not: added


def test_yaml_flow_section(tmp_path: Path) -> None:
    text = YAML.replace("train:\n  micro_batch_size: 4\n  global_batch_size: 256\n",
                        "train: {micro_batch_size: 4, global_batch_size: 256}\n")
    new = _write(tmp_path, "run_config.yaml", text, {"batch.micro_batch": 1, "parallel.context": 2})
    assert "train: {micro_batch_size: 1, global_batch_size: 256}\n" in new
    assert "  context_parallel_size: 2\n" in new


def test_yaml_anchor_shared_by_an_alias_is_refused(tmp_path: Path) -> None:
    """Changing `&tp 1` would change every `*tp` too: the round trip refuses it (nothing is written)."""
    text = YAML.replace("  recompute_granularity: 'selective'\n", "  expert_tensor_parallel_size: *tp\n")
    path = tmp_path / "run_config.yaml"
    path.write_text(text, encoding="utf-8")
    result = check_file(str(path), ADAPTERS)
    with pytest.raises(WritebackError):
        rewrite(result, result.specs[0], {"parallel.tensor": 2}, adapters=ADAPTERS)


LAUNCH = """\
#!/bin/bash
torchrun --nproc_per_node=8 scripts/training/run_recipe.py \\
    --recipe llama3_8b_pretrain_2gpu_h100_bf16_config -tp 2 \\
    "model.context_parallel_size=2" train.micro_batch_size='4' > train.log
"""


def test_launch_overrides_replaced_and_added(tmp_path: Path) -> None:
    new = _write(tmp_path, "train.sh", LAUNCH,
                 {"parallel.tensor": 4, "parallel.context": 1, "batch.micro_batch": 1, "memory.recompute": "full"})
    last = new.splitlines()[3]
    assert last == ("    \"model.context_parallel_size=1\" train.micro_batch_size='1' "
                    "model.recompute_granularity=full > train.log")
    assert "-tp 4" in new  # the option that sets TP (no KEY=VALUE override for it)


def test_launch_new_override_quoted_as_the_others(tmp_path: Path) -> None:
    text = LAUNCH.replace(" > train.log", " 'train.global_batch_size=256'")
    new = _write(tmp_path, "train.sh", text, {"parallel.pipeline": 2})
    assert new.splitlines()[3].endswith("'train.global_batch_size=256' 'model.pipeline_model_parallel_size=2'")


def test_launch_value_from_the_shell_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "train.sh"
    path.write_text(LAUNCH.replace("-tp 2", "model.tensor_model_parallel_size=$TP"), encoding="utf-8")
    result = check_file(str(path), ADAPTERS)
    with pytest.raises(WritebackError, match=r"\$TP"):
        rewrite(result, result.specs[0], {"parallel.tensor": 4}, adapters=ADAPTERS)


def test_examples_round_trip(tmp_path: Path) -> None:
    done = 0
    for path in sorted((REPO / "examples" / "bridge").iterdir()):
        result = check_file(str(path), ADAPTERS)
        for index, spec in enumerate(result.specs):
            micro = spec.value("batch.micro_batch")
            if not isinstance(micro, int):
                continue
            out = rewrite(result, spec, {"batch.micro_batch": micro * 2}, adapters=ADAPTERS)
            copy = tmp_path / path.name
            copy.write_text(next(iter(out.values())), encoding="utf-8")
            assert check_file(str(copy), ADAPTERS).specs[index].value("batch.micro_batch") == micro * 2
            done += 1
    assert done >= 3


def test_suggest_write_to_writes_a_bridge_yaml(tmp_path: Path, capsys) -> None:
    path = tmp_path / "run_config.yaml"
    path.write_text(YAML.replace("  hidden_size: 4096\n", "  hidden_size: 4096\n  vocab_size: 32000\n  bf16: true\n"), encoding="utf-8")
    out = tmp_path / "chosen.yaml"
    code = main(["suggest", "--isolated", "--gpu", "h100-sxm", "--nodes", "1", "--gpus-per-node", "8",
                 "--write-to", str(out), str(path)])
    capsys.readouterr()
    assert code == 0 and out.exists()
    written = out.read_text(encoding="utf-8")
    assert written != path.read_text(encoding="utf-8")
    assert "# a run_config.yaml\n" in written and "  num_layers: 32  # layers\n" in written
    assert check_file(str(out), ADAPTERS).format == "bridge"
