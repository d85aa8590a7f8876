"""``trainlint.layout.writeback``: a layout written back into the input's own format.

Golden before/after texts per format (literal values, variables, ``${VAR:-default}``, added and
removed flags and keys, the DeepSpeed batch triple, a NeoX multi-file run, refusals), then a
round trip over examples/ and the real-config corpus: every rewritten file, read again through
its adapter, has the new value and every other setting unchanged.
"""

from __future__ import annotations

import re

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from trainlint.adapters import builtin_adapters
from trainlint.adapters.base import LoadContext
from trainlint.files.checker import check_paths, check_source
from trainlint.core.results import FileResult
from trainlint.layout.writeback import WritebackError, rewrite, rewrite_files
from trainlint.files.safe_write import write_back
from trainlint.files.sources import SourceText, read_source

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(path: Path | str, *, run: list[Path] | None = None, env: dict[str, str] | None = None,
         texts: dict[str, str] | None = None) -> FileResult:
    """Check a file (or a multi-file run), reading ``texts`` instead of the disk where given."""
    texts = texts or {}

    def read(p: str) -> SourceText:
        return SourceText(p, texts[p]) if p in texts else read_source(p)

    files = [str(p) for p in run] if run else [str(path)]
    context = LoadContext(extra_paths=files[1:], read=read, environment=env or {})
    return check_source(read(files[0]), builtin_adapters(), context)


def put(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def rewritten(path: Path, changes: dict[str, Any], index: int = 0, **kw: Any) -> dict[str, str]:
    result = load(path, **kw) if not kw.get("run") else load(kw["run"][0], **kw)
    return rewrite(result, result.specs[index], changes, environment=kw.get("env"))


def one(path: Path, changes: dict[str, Any], **kw: Any) -> str:
    out = rewritten(path, changes, **kw)
    assert list(out) == [str(path)], out.keys()
    return out[str(path)]


# ===================================================================== DeepSpeed JSON

DS_HJSON = """\
{
  // batch: 8 GPUs
  "train_batch_size": 256,
  "train_micro_batch_size_per_gpu": 4,
  "gradient_accumulation_steps": 8,
  "bf16": {"enabled": true},
  "zero_optimization": {
    "stage": 1,   # ZeRO-1 for now
    "overlap_comm": true
  },
}
"""


def test_deepspeed_literal_replace_keeps_comments_and_layout(tmp_path):
    path = put(tmp_path, "ds_config.json", DS_HJSON)
    assert one(path, {"parallel.zero_stage": 2}) == DS_HJSON.replace('"stage": 1,', '"stage": 2,')


def test_deepspeed_batch_triple_stays_consistent(tmp_path):
    """DeepSpeed asserts train_batch_size = micro x accumulation x world: the file writes all
    three, the micro batch changes, so the accumulation follows (global held)."""
    path = put(tmp_path, "ds_config.json", DS_HJSON)
    new = one(path, {"batch.micro_batch": 8})
    assert new == DS_HJSON.replace('"train_micro_batch_size_per_gpu": 4', '"train_micro_batch_size_per_gpu": 8') \
        .replace('"gradient_accumulation_steps": 8', '"gradient_accumulation_steps": 4')
    # with a new data-parallel size the global batch follows when the accumulation is given too
    new = one(path, {"batch.micro_batch": 2, "batch.grad_accum": 8, "parallel.data": 4})
    assert '"train_batch_size": 64,' in new and '"train_micro_batch_size_per_gpu": 2,' in new
    assert '"gradient_accumulation_steps": 8,' in new


def test_deepspeed_adds_missing_keys_in_the_files_style(tmp_path):
    text = """\
{
    "train_batch_size": 32,
    "fp16": {
        "enabled": true
    },
    "zero_optimization": {
        "overlap_comm": true
    }
}
"""
    path = put(tmp_path, "ds_config.json", text)
    new = one(path, {"parallel.zero_stage": 3, "batch.micro_batch": 2, "batch.grad_accum": 2})
    assert new == """\
{
    "train_batch_size": 32,
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 2,
    "fp16": {
        "enabled": true
    },
    "zero_optimization": {
        "overlap_comm": true,
        "stage": 3
    }
}
"""
    # an object that is not there is created, multi-line like the file's other objects
    path = put(tmp_path, "ds2.json", '{\n    "train_batch_size": 32,\n    "fp16": {\n        "enabled": true\n    }\n}\n')
    assert one(path, {"parallel.zero_stage": 2}) == (
        '{\n    "train_batch_size": 32,\n    "fp16": {\n        "enabled": true\n    },\n'
        '    "zero_optimization": {\n        "stage": 2\n    }\n}\n')
    # one-line file: one-line insert
    path = put(tmp_path, "ds3.json", '{"train_batch_size": 32, "fp16": {"enabled": true}}')
    assert one(path, {"parallel.zero_stage": 1}) == \
        '{"train_batch_size": 32, "fp16": {"enabled": true}, "zero_optimization": {"stage": 1}}'


def test_deepspeed_auto_stays_auto_unless_changed(tmp_path):
    text = '{\n  "train_batch_size": "auto",\n  "train_micro_batch_size_per_gpu": "auto",\n  "zero_optimization": {"stage": 2}\n}\n'
    path = put(tmp_path, "ds_config.json", text)
    assert one(path, {"parallel.zero_stage": 3}) == text.replace('"stage": 2', '"stage": 3')
    assert one(path, {"batch.micro_batch": 4}) == text.replace(
        '"train_micro_batch_size_per_gpu": "auto"', '"train_micro_batch_size_per_gpu": 4')


def test_deepspeed_refuses_a_template_placeholder(tmp_path):
    path = put(tmp_path, "ds_config_TEMPLATE.json", '{\n  "train_micro_batch_size_per_gpu": MB_SIZE,\n  "zero_optimization": {"stage": 1}\n}\n')
    with pytest.raises(WritebackError, match=r"ds_config_TEMPLATE.json:2:37: `train_micro_batch_size_per_gpu` is template placeholder MB_SIZE"):
        rewritten(path, {"batch.micro_batch": 2})


def test_deepspeed_cannot_express_recompute(tmp_path):
    path = put(tmp_path, "ds_config.json", DS_HJSON)
    with pytest.raises(WritebackError, match=r"no setting for memory.recompute"):
        rewritten(path, {"memory.recompute": "full"})
    assert rewritten(path, {"memory.recompute": "none", "parallel.context": 1}) == {}  # what it already does


def test_crlf_and_bom_are_kept(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_bytes(b"\xef\xbb\xbf{\r\n  \"train_batch_size\": 64,\r\n  \"zero_optimization\": {\"stage\": 1}\r\n}\r\n")
    new = one(path, {"parallel.zero_stage": 2})
    # rewrite gives the text as the readers normalise it; the write puts the BOM and CRLF back
    assert new == "{\n  \"train_batch_size\": 64,\n  \"zero_optimization\": {\"stage\": 2}\n}\n"
    (f,) = rewrite_files(load(path), load(path).specs[0], {"parallel.zero_stage": 2})
    write_back(f.path, f.text, f.original_hash)
    assert path.read_bytes() == b"\xef\xbb\xbf{\r\n  \"train_batch_size\": 64,\r\n  \"zero_optimization\": {\"stage\": 2}\r\n}\r\n"


# ============================================================================ NeoX YAML

NEOX_FLOW = """\
# GPT-NeoX 1.3B
{
  # parallelism
  "pipe_parallel_size": 1,
  "model_parallel_size": 1,

  "num_layers": 24,
  "hidden_size": 2048,
  "num_attention_heads": 16,
  "seq_length": 2048,
  "max_position_embeddings": 2048,

  "train_micro_batch_size_per_gpu": 8,
  "gradient_accumulation_steps": 2,
  "zero_optimization": {"stage": 1, "overlap_comm": true},
  "checkpoint_activations": false,
}
"""


def test_neox_flow_style_replace_and_add(tmp_path):
    path = put(tmp_path, "1-3B.yml", NEOX_FLOW)
    new = one(path, {"parallel.tensor": 2, "parallel.pipeline": 1, "parallel.pipeline_engine": False,
                     "parallel.zero_stage": 2, "batch.micro_batch": 4, "batch.grad_accum": 4,
                     "memory.recompute": "full", "memory.recompute_num_layers": 2,
                     "parallel.sequence_parallel": True})
    assert new == """\
# GPT-NeoX 1.3B
{
  # parallelism
  "pipe_parallel_size": 0,
  "model_parallel_size": 2,
  "sequence_parallel": true,

  "num_layers": 24,
  "hidden_size": 2048,
  "num_attention_heads": 16,
  "seq_length": 2048,
  "max_position_embeddings": 2048,

  "train_micro_batch_size_per_gpu": 4,
  "gradient_accumulation_steps": 4,
  "zero_optimization": {"stage": 2, "overlap_comm": true},
  "checkpoint_activations": true,
  "checkpoint_num_layers": 2,
}
"""


NEOX_BLOCK = """\
# model
num-layers: 24
hidden-size: 2048
num-attention-heads: 16
seq-length: 2048
max-position-embeddings: 2048
pipe-parallel-size: 2
model-parallel-size: 1
"""

NEOX_TRAIN = """\
train_micro_batch_size_per_gpu: 4   # per GPU
gradient_accumulation_steps: 2
train_iters: 1000
"""


def test_neox_block_style_keeps_the_files_spelling(tmp_path):
    path = put(tmp_path, "model.yml", NEOX_BLOCK)
    new = one(path, {"parallel.tensor": 2, "parallel.zero_stage": 1, "memory.recompute": "full"})
    assert new == """\
# model
num-layers: 24
hidden-size: 2048
num-attention-heads: 16
seq-length: 2048
max-position-embeddings: 2048
pipe-parallel-size: 2
model-parallel-size: 2
zero-optimization:
  stage: 1
  allgather_partitions: true
  reduce_scatter: true
  allgather_bucket_size: 500000000
  overlap_comm: false
  reduce_bucket_size: 500000000
  contiguous_gradients: false
checkpoint-activations: true
"""


def test_neox_multi_file_run_writes_where_the_key_is(tmp_path):
    model, train = put(tmp_path, "model.yml", NEOX_BLOCK), put(tmp_path, "train.yml", NEOX_TRAIN)
    out = rewritten(model, {"parallel.tensor": 4, "batch.micro_batch": 8, "batch.global_batch": 256},
                    run=[model, train])
    assert out == {
        str(model): NEOX_BLOCK.replace("model-parallel-size: 1", "model-parallel-size: 4"),
        str(train): NEOX_TRAIN.replace("train_micro_batch_size_per_gpu: 4   # per GPU",
                                       "train_micro_batch_size_per_gpu: 8   # per GPU")
                              .replace("gradient_accumulation_steps: 2\n",
                                       "gradient_accumulation_steps: 2\ntrain_batch_size: 256\n"),
    }


def test_neox_refusals(tmp_path):
    path = put(tmp_path, "1-3B.yml", NEOX_FLOW)
    with pytest.raises(WritebackError, match="no selective recompute"):
        rewritten(path, {"memory.recompute": "selective"})
    tune = put(tmp_path, "tune.yml", NEOX_FLOW.replace('{"stage": 1, "overlap_comm": true}', '{"stage": [0, 1, 2]}'))
    with pytest.raises(WritebackError, match=r"tune.yml:15:.*zero_optimization.stage.*autotuning"):
        rewritten(tune, {"parallel.zero_stage": 2})
    with pytest.raises(WritebackError, match=r"no setting for parallel.context"):
        rewritten(path, {"parallel.context": 2})


def test_neox_none_removes_the_key(tmp_path):
    text = NEOX_FLOW.replace('"checkpoint_activations": false,', '"checkpoint_activations": true,\n  "checkpoint_num_layers": 2,')
    path = put(tmp_path, "1-3B.yml", text)
    assert one(path, {"memory.recompute_num_layers": None}) == text.replace('  "checkpoint_num_layers": 2,\n', "")


# ==================================================================== Megatron scripts

MEGATRON_CONTINUED = """\
#!/bin/bash
TP=2
MBS=${MBS:-1}
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --num-layers 24 \\
    --hidden-size 2048 \\
    --num-attention-heads 16 \\
    --seq-length 2048 \\
    --max-position-embeddings 2048 \\
    --tensor-model-parallel-size $TP \\
    --micro-batch-size ${MBS} \\
    --global-batch-size 64 \\
    --train-iters 1000 \\
    --bf16 \\
    --sequence-parallel
"""


def test_megatron_literal_replace(tmp_path):
    path = put(tmp_path, "run.sh", MEGATRON_CONTINUED)
    assert one(path, {"batch.global_batch": 128}) == MEGATRON_CONTINUED.replace(
        "--global-batch-size 64", "--global-batch-size 128")


def test_megatron_variable_assignment_and_default(tmp_path):
    """TP=2 is read only by the flag: its assignment changes. MBS=${MBS:-1}: the default."""
    path = put(tmp_path, "run.sh", MEGATRON_CONTINUED)
    assert one(path, {"parallel.tensor": 4, "batch.micro_batch": 2}) == MEGATRON_CONTINUED.replace(
        "TP=2", "TP=4").replace("MBS=${MBS:-1}", "MBS=${MBS:-2}")


def test_megatron_default_in_the_argument_itself(tmp_path):
    text = MEGATRON_CONTINUED.replace("--micro-batch-size ${MBS}", '--micro-batch-size "${MICRO:-4}"')
    path = put(tmp_path, "run.sh", text)
    assert one(path, {"batch.micro_batch": 1}) == text.replace('"${MICRO:-4}"', '"${MICRO:-1}"')


def test_megatron_variable_used_elsewhere_changes_only_the_flag(tmp_path):
    text = MEGATRON_CONTINUED.replace("#!/bin/bash\n", "#!/bin/bash\n").replace(
        "TP=2\n", 'TP=2\nCKPT=checkpoints/tp${TP}\necho "TP=$TP"\n')
    path = put(tmp_path, "run.sh", text)
    assert one(path, {"parallel.tensor": 8}) == text.replace("--tensor-model-parallel-size $TP", "--tensor-model-parallel-size 8")


def test_megatron_add_and_remove_in_a_continued_command(tmp_path):
    """A new flag goes after the related one as a \\-continued line; removing the last line of
    the command takes the backslash off the line that now ends it; a flag of the same kind as one
    that goes away takes its place."""
    path = put(tmp_path, "run.sh", MEGATRON_CONTINUED)
    # next to the last parallelism flag, which ends the command: before it, continued
    assert one(path, {"parallel.pipeline": 2, "parallel.distributed_optimizer": True}) == MEGATRON_CONTINUED.replace(
        "    --sequence-parallel\n",
        "    --pipeline-model-parallel-size 2 \\\n    --use-distributed-optimizer \\\n    --sequence-parallel\n")
    # after a continued line: a continued line after it
    text = MEGATRON_CONTINUED.replace("    --sequence-parallel\n", "    --sequence-parallel \\\n    --fp16\n")
    path2 = put(tmp_path, "run2.sh", text)
    assert one(path2, {"parallel.pipeline": 2}) == text.replace(
        "    --sequence-parallel \\\n", "    --sequence-parallel \\\n    --pipeline-model-parallel-size 2 \\\n")
    assert one(path, {"parallel.sequence_parallel": False}) == MEGATRON_CONTINUED.replace(
        "    --bf16 \\\n    --sequence-parallel\n", "    --bf16\n")
    assert one(path, {"parallel.sequence_parallel": False, "parallel.pipeline": 2}) == MEGATRON_CONTINUED.replace(
        "--sequence-parallel", "--pipeline-model-parallel-size 2")
    # the related flag is the last line: the new one goes before it, continued
    assert one(path, {"parallel.distributed_optimizer": True}) == MEGATRON_CONTINUED.replace(
        "    --sequence-parallel\n", "    --use-distributed-optimizer \\\n    --sequence-parallel\n")


MEGATRON_ARRAYS = """\
#!/bin/bash
GPUS_PER_NODE=8

MODEL_ARGS=(
    --num-layers 32
    --hidden-size 4096
    --num-attention-heads 32
    --seq-length 4096
    --max-position-embeddings 4096
)

PARALLEL_ARGS=(
    --tensor-model-parallel-size 2
    --pipeline-model-parallel-size 2   # two stages
    --sequence-parallel
    --use-distributed-optimizer)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 128
    --recompute-activations
    --bf16
)

torchrun --nproc_per_node $GPUS_PER_NODE pretrain_gpt.py \\
    "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" "${TRAINING_ARGS[@]}"
"""


def test_megatron_add_remove_in_bash_arrays(tmp_path):
    path = put(tmp_path, "run.sh", MEGATRON_ARRAYS)
    new = one(path, {"parallel.context": 2, "parallel.sequence_parallel": False, "parallel.distributed_optimizer": False,
                     "memory.recompute": "full", "memory.recompute_method": "uniform",
                     "memory.recompute_num_layers": 1})
    assert new == MEGATRON_ARRAYS.replace("""\
    --pipeline-model-parallel-size 2   # two stages
    --sequence-parallel
    --use-distributed-optimizer)
""", """\
    --pipeline-model-parallel-size 2   # two stages
    --context-parallel-size 2
)
""").replace("""\
    --recompute-activations
""", """\
    --recompute-granularity full
    --recompute-method uniform
    --recompute-num-layers 1
""")


def test_megatron_recompute_none_and_selective(tmp_path):
    path = put(tmp_path, "run.sh", MEGATRON_ARRAYS)
    assert one(path, {"memory.recompute": "none"}) == MEGATRON_ARRAYS.replace("    --recompute-activations\n", "")
    # the old selective flag becomes the modern one
    assert one(path, {"memory.recompute": "selective"}) == MEGATRON_ARRAYS.replace(
        "--recompute-activations", "--recompute-granularity selective")


def test_megatron_virtual_pipeline(tmp_path):
    text = MEGATRON_ARRAYS.replace("--pipeline-model-parallel-size 2   # two stages",
                                   "--pipeline-model-parallel-size 2   # two stages\n    --num-layers-per-virtual-pipeline-stage 4")
    path = put(tmp_path, "run.sh", text)
    # 32 layers, PP 4, 2 chunks per rank: 4 layers per virtual stage
    assert one(path, {"parallel.pipeline": 4, "parallel.virtual_pipeline": 2}) == text.replace(
        "--pipeline-model-parallel-size 2 ", "--pipeline-model-parallel-size 4 ")
    assert one(path, {"parallel.virtual_pipeline": 1}) == MEGATRON_ARRAYS
    path = put(tmp_path, "plain.sh", MEGATRON_ARRAYS)
    assert "--num-virtual-stages-per-pipeline-rank 2\n" in one(path, {"parallel.virtual_pipeline": 2})


def test_megatron_quoted_words(tmp_path):
    text = """\
#!/bin/bash
TP=2
ARGS=(
    "--num-layers" "24"
    "--hidden-size 1024"
    --num-attention-heads 16
    "--tensor-model-parallel-size" "$TP"
    "--sequence-parallel"
    "--micro-batch-size=2"
    --seq-length 1024 --max-position-embeddings 1024)
torchrun pretrain_gpt.py "${ARGS[@]}"
"""
    path = put(tmp_path, "run.sh", text)
    assert one(path, {"parallel.tensor": 4, "parallel.sequence_parallel": False, "batch.micro_batch": 4}) == \
        text.replace("TP=2", "TP=4").replace('    "--sequence-parallel"\n', "").replace("=2\"", "=4\"")
    # a new array element after the related one
    assert one(path, {"batch.global_batch": 64}) == text.replace(
        '"--micro-batch-size=2"', '"--micro-batch-size=2"\n    --global-batch-size 64')
    # a related flag that is not first on its line: the new flag joins it inline
    path = put(tmp_path, "inline.sh", "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 "
                                      "--micro-batch-size 2 --seq-length 128 --max-position-embeddings 128\n")
    assert one(path, {"batch.global_batch": 64}) == (
        "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 "
        "--micro-batch-size 2 --global-batch-size 64 --seq-length 128 --max-position-embeddings 128\n")


def test_megatron_string_with_line_continuations(tmp_path):
    text = """\
#!/bin/bash
BATCHSIZE=4
LOGDIR="logs/b${BATCHSIZE}"
gpt_options=" \\
        --num-layers 24 \\
        --hidden-size 1024 \\
        --num-attention-heads 16 \\
        --seq-length 1024 \\
        --max-position-embeddings 1024 \\
        --micro-batch-size $BATCHSIZE \\
        --tensor-model-parallel-size 1 \\
        --sequence-parallel
"
torchrun pretrain_gpt.py $gpt_options
"""
    path = put(tmp_path, "run.sh", text)
    assert one(path, {"batch.micro_batch": 8, "parallel.tensor": 2, "parallel.sequence_parallel": False}) == \
        text.replace("--micro-batch-size $BATCHSIZE", "--micro-batch-size 8").replace(
            "--tensor-model-parallel-size 1 \\\n        --sequence-parallel\n", "--tensor-model-parallel-size 2\n")


def test_megatron_refusals_name_the_value_and_where(tmp_path):
    text = MEGATRON_CONTINUED.replace("TP=2", "TP=$1").replace("--global-batch-size 64",
                                                                "--global-batch-size $((MBS * 64))")
    path = put(tmp_path, "run.sh", text)
    with pytest.raises(WritebackError, match=r"`--tensor-model-parallel-size` \(.*run.sh:2:4\) takes its value "
                                              r"from \$1 \(a positional parameter\)"):
        rewritten(path, {"parallel.tensor": 4})
    with pytest.raises(WritebackError, match=r"`--global-batch-size`.*computed by the arithmetic expression "
                                              r"`\$\(\(MBS \* 64\)\)` at .*run.sh:12:25"):
        rewritten(path, {"batch.global_batch": 128})
    with pytest.raises(WritebackError, match="unknown change key"):
        rewritten(path, {"parallel.tensr": 2})


def test_megatron_environment_values_are_not_rewritten(tmp_path):
    text = MEGATRON_CONTINUED.replace("TP=2\n", "")
    path = put(tmp_path, "run.sh", text)
    with pytest.raises(WritebackError, match="environment variable TP"):
        rewritten(path, {"parallel.tensor": 4}, env={"TP": "2"})


def test_megatron_two_runs_sharing_a_flag(tmp_path):
    text = """\
#!/bin/bash
COMMON="--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 --sequence-parallel"
torchrun pretrain_gpt.py $COMMON --micro-batch-size 1
torchrun pretrain_gpt.py $COMMON --micro-batch-size 2
"""
    path = put(tmp_path, "run.sh", text)
    # a flag of this run only: fine
    assert one(path, {"batch.micro_batch": 4}) == text.replace("--micro-batch-size 1", "--micro-batch-size 4")
    with pytest.raises(WritebackError, match=r"sequence_parallel of the other run pretrain_gpt.py at line 4"):
        rewritten(path, {"parallel.sequence_parallel": False})


def test_megatron_legacy_recompute_flags(tmp_path):
    text = """\
#!/bin/bash
python pretrain_gpt2.py \\
       --model-parallel-size 1 \\
       --num-layers 24 --hidden-size 1024 --num-attention-heads 16 \\
       --batch-size 8 \\
       --seq-length 1024 --max-position-embeddings 1024 \\
       --fp16
"""
    path = put(tmp_path, "pretrain_gpt2.sh", text)
    assert one(path, {"memory.recompute": "full", "memory.recompute_method": "uniform",
                      "memory.recompute_num_layers": 2, "batch.micro_batch": 4}) == text.replace(
        "--batch-size 8", "--batch-size 4").replace(
        "--model-parallel-size 1 \\\n",
        "--model-parallel-size 1 \\\n       --checkpoint-activations \\\n       --checkpoint-num-layers 2 \\\n")
    with pytest.raises(WritebackError, match="without selective recompute"):
        rewritten(path, {"memory.recompute": "selective"})


def test_megatron_deepspeed_config_follows(tmp_path):
    """Megatron-DeepSpeed: the --deepspeed_config JSON repeats the batch sizes and holds the
    ZeRO stage; it is rewritten with the script."""
    put(tmp_path, "ds_config.json", '{\n  "train_batch_size": 256,\n  "train_micro_batch_size_per_gpu": 4,\n'
                                    '  "zero_optimization": {"stage": 1}\n}\n')
    text = """\
#!/bin/bash
deepspeed pretrain_gpt.py \\
    --num-layers 24 --hidden-size 1024 --num-attention-heads 16 \\
    --seq-length 1024 --max-position-embeddings 1024 \\
    --micro-batch-size 4 --global-batch-size 256 \\
    --deepspeed --deepspeed_config ds_config.json
"""
    path = put(tmp_path, "run.sh", text)
    out = rewritten(path, {"batch.micro_batch": 8, "parallel.zero_stage": 2})
    assert out == {
        str(path): text.replace("--micro-batch-size 4", "--micro-batch-size 8"),
        str(tmp_path / "ds_config.json"): '{\n  "train_batch_size": 256,\n  "train_micro_batch_size_per_gpu": 8,\n'
                                          '  "zero_optimization": {"stage": 2}\n}\n',
    }


def test_megatron_flags_sharing_a_line(tmp_path):
    """Removing every flag of a line removes the line; removing one of several keeps the others."""
    text = """\
#!/bin/bash
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --num-layers 32 --hidden-size 2560 --num-attention-heads 32 \\
    --seq-length 2048 --max-position-embeddings 2048 \\
    --micro-batch-size 1 --global-batch-size 256 \\
    --use-distributed-optimizer --recompute-granularity full \\
    --recompute-method uniform --recompute-num-layers 1 \\
    --train-iters 100000 --bf16
"""
    path = put(tmp_path, "run.sh", text)
    assert one(path, {"memory.recompute": "none", "memory.recompute_method": None,
                      "memory.recompute_num_layers": None}) == text.replace(
        "--use-distributed-optimizer --recompute-granularity full", "--use-distributed-optimizer").replace(
        "    --recompute-method uniform --recompute-num-layers 1 \\\n", "")
    # next to the related flag, which shares its line with others: a continued line before it
    assert one(path, {"parallel.tensor": 2}) == text.replace(
        "--micro-batch-size 1 --global-batch-size 256 \\\n    --use-distributed-optimizer",
        "--micro-batch-size 1 --global-batch-size 256 \\\n    --tensor-model-parallel-size 2 \\\n"
        "    --use-distributed-optimizer")


def test_megatron_here_document_deepspeed_config(tmp_path):
    text = """\
#!/bin/bash
GBS=256
cat <<EOT > ds_config.json
{
  "train_batch_size": $GBS,
  "train_micro_batch_size_per_gpu": 4,
  "zero_optimization": {"stage": 1}
}
EOT
deepspeed pretrain_gpt.py \\
    --num-layers 24 --hidden-size 1024 --num-attention-heads 16 \\
    --seq-length 1024 --max-position-embeddings 1024 \\
    --micro-batch-size 4 --global-batch-size $GBS \\
    --deepspeed --deepspeed_config ds_config.json
"""
    path = put(tmp_path, "run.sh", text)
    assert one(path, {"parallel.zero_stage": 2, "batch.micro_batch": 2}) == text.replace(
        '{"stage": 1}', '{"stage": 2}').replace(
        '"train_micro_batch_size_per_gpu": 4', '"train_micro_batch_size_per_gpu": 2').replace(
        "--micro-batch-size 4", "--micro-batch-size 2")
    with pytest.raises(WritebackError, match=r"DeepSpeed config at .*run.sh:5:23 is written by a here-document that "
                                              "expands shell variables"):
        rewritten(path, {"batch.global_batch": 512})


# ------------------------------------------------------------------- Megatron MODEL_ARGS

MODEL_ARGS_YAML = """\
ENV_VARS:
  CUDA_DEVICE_MAX_CONNECTIONS: 1
MODEL_ARGS:
  --num-layers: 24
  --hidden-size: 1024
  --num-attention-heads: 16
  --seq-length: 512
  --max-position-embeddings: 512
  --micro-batch-size: 4
  --global-batch-size: 128
  --tensor-model-parallel-size: 1
  --pipeline-model-parallel-size: 4
  --num-layers-per-virtual-pipeline-stage: 2
  --save: ${CHECKPOINT_SAVE_PATH}
"""


def test_megatron_model_args_yaml(tmp_path):
    path = put(tmp_path, "model_config.yaml", MODEL_ARGS_YAML)
    assert one(path, {"parallel.tensor": 2, "batch.micro_batch": 2, "parallel.sequence_parallel": True,
                      "parallel.virtual_pipeline": 1}) == MODEL_ARGS_YAML.replace(
        "--micro-batch-size: 4", "--micro-batch-size: 2").replace(
        "--tensor-model-parallel-size: 1", "--tensor-model-parallel-size: 2").replace(
        "  --num-layers-per-virtual-pipeline-stage: 2\n", "  --sequence-parallel: true\n")


# ================================================================= round trips

_RELATED = {
    "batch.micro_batch": {"micro_batch_size", "batch_size", "train_micro_batch_size_per_gpu",
                          "gradient_accumulation_steps", "train_batch_size", "deepspeed:train_micro_batch_size_per_gpu",
                          "deepspeed:gradient_accumulation_steps", "deepspeed:train_batch_size",
                          "deepspeed:batch.micro_batch", "deepspeed:batch.grad_accum", "deepspeed:batch.global_batch",
                          "deepspeed:parallel.data"},
    "parallel.tensor": {"tensor_model_parallel_size", "model_parallel_size", "tensor_parallel.autotp_size"},
}


def _values(settings: dict) -> dict[str, Any]:
    return {k: v.value for k, v in settings.items()}


def check_round_trip(result: FileResult, index: int, key: str, new_value: int) -> dict[str, str]:
    """Rewrite one field, read the new text(s) again: the field has the new value; the settings
    not related to it, and the other runs of the file, are unchanged."""
    spec = result.specs[index]
    out = rewrite(result, spec, {key: new_value})
    assert out, (result.path, key)
    run = [Path(p) for p in result.run] if result.run else None
    again = load(result.path, run=run, texts=out)
    new = again.specs[index]
    assert new.value(key) == new_value, (result.path, key, new.get(key))
    before, after = _values(spec.settings), _values(new.settings)
    related = _RELATED[key]
    for name in set(before) | set(after):
        if name in related or name.startswith("deepspeed:batch") or (name.startswith("deepspeed:") and "batch" in name):
            continue
        assert before.get(name) == after.get(name), (result.path, key, name, before.get(name), after.get(name))
    for i, (old_spec, new_spec) in enumerate(zip(result.specs, again.specs)):
        if i != index:
            assert _values(old_spec.settings) == _values(new_spec.settings), (result.path, i)
    return out


def _candidates(result: FileResult):
    for i, spec in enumerate(result.specs):
        for key in ("batch.micro_batch", "parallel.tensor"):
            entry = spec.get(key)
            if entry is None or not isinstance(entry.value, int) or isinstance(entry.value, bool):
                continue
            if result.format == "deepspeed" and entry.provenance.origin.value != "file":
                continue  # a DeepSpeed JSON has a TP only with tensor_parallel.autotp_size
            yield i, key, max(entry.value, 1) * 2


def test_examples_round_trip():
    done = 0
    for path in sorted(p for p in EXAMPLES.iterdir() if p.is_file()):  # examples/bridge/: tests/test_bridge_writer.py
        result = load(path)
        for index, key, value in _candidates(result):
            check_round_trip(result, index, key, value)
            done += 1
    assert done >= 8


@pytest.mark.slow
def test_corpus_round_trip(corpus_dir: Path):
    """Every corpus config whose spec has a micro batch or TP: micro batch and TP doubled, read
    again. Either it round-trips or it is refused with a WritebackError (counted by reason)."""
    with (corpus_dir / "MANIFEST.tsv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    counts: Counter = Counter()
    reasons: Counter = Counter()
    for row in rows:
        result = check_paths([str(corpus_dir / row["path"])], builtin_adapters())[0]
        for index, key, value in _candidates(result):
            try:
                check_round_trip(result, index, key, value)
            except WritebackError as exc:
                counts[(result.format, key, "refused")] += 1
                message = str(exc)
                shares = re.search(r"of the other run .* changed from (\d+) to (\d+)$", message)
                if shares:
                    # refused because another run of the script takes the same value: it would get the
                    # very same change (so the runs share the setting), not some unrelated edit
                    assert int(shares.group(2)) == value, message
                reasons["computed by an expression" if "expression" in message else
                        "value from $1 / unset variable" if "takes its value from" in message else
                        "after rewriting, the value of the other run changed" if "of the other run" in message
                        else message[:60]] += 1
                continue
            counts[(result.format, key, "written")] += 1
    written = sum(n for (_f, _k, what), n in counts.items() if what == "written")
    refused = sum(n for (_f, _k, what), n in counts.items() if what == "refused")
    print(f"\ncorpus writeback round trip: {written} written, {refused} refused")
    for k, n in sorted(counts.items()):
        print("  ", *k, n)
    for reason, n in reasons.most_common():
        print("   refused:", reason, n)
    # A script whose runs share the value (NVLM's interactive torchrun and batch srun branches both
    # take ${OPTIONS}) is refused on purpose: the edit would change the other run too. That is the
    # write-back's safety check doing its job, not a value it cannot write: counted apart, each checked
    # above to be the same change reaching the other run.
    shared = reasons["after rewriting, the value of the other run changed"]
    assert written >= 400 and refused - shared <= 0.02 * (written + refused)


def test_a_script_is_read_again_once_to_write_a_change_back(tmp_path, monkeypatch):
    """The round trip's reading of the original text is the writer's own (``Writer.reading``): writing a
    change back into a launch script evaluates the original once more (the writer) and the rewritten text
    once (the check), not the original twice."""
    import trainlint.adapters.megatron.adapter as megatron

    path = put(tmp_path, "run.sh", "torchrun pretrain_gpt.py --num-layers 24 --hidden-size 2048 "
                                   "--num-attention-heads 16 --seq-length 2048 --micro-batch-size 4 "
                                   "--global-batch-size 256 --tensor-model-parallel-size 2\n")
    result = load(path)
    texts: list[str] = []
    evaluate = megatron.load_script
    monkeypatch.setattr(megatron, "load_script", lambda source, *a, **k: texts.append(source.text) or evaluate(source, *a, **k))
    new = rewrite(result, result.specs[0], {"batch.micro_batch": 2})
    assert "--micro-batch-size 2" in new[str(path)]
    assert texts == [path.read_text(), new[str(path)]]
