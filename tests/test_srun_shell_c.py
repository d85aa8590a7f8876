"""srun starting ``sh -c "${run_cmd}"`` after options trainlint cannot read (a placeholder, a path
built from `pwd`): the string is the command each task runs (sh(1): -c "read commands from the
command_string operand"), and srun's tasks come from the #SBATCH allocation (sbatch(1): srun inside
the job inherits --nodes and --ntasks-per-node). Megatron-LM's examples/pretrain_gpt3_175B.sh."""

from __future__ import annotations

from trainlint.adapters import builtin_adapters
from trainlint.checker import check_paths

SCRIPT = """#!/bin/bash
#SBATCH <SLURM OPTIONS> --nodes=16 --exclusive --ntasks-per-node=8 --job-name=gpt
DIR=`pwd`
DATETIME=`date +'date_%y-%m-%d_time_%H-%M-%S'`
options=" --tensor-model-parallel-size 8 --pipeline-model-parallel-size 2 --num-layers 32 --hidden-size 4096 \\
  --num-attention-heads 32 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 \\
  --global-batch-size 512 --fp16"
run_cmd="python -u ${DIR}/pretrain_gpt.py $@ ${options}"
srun -l --container-image "nvcr.io/nvidia/pytorch:24.01-py3" --container-mounts "<DIRECTORIES TO MOUNT>" \\
     --output=$DIR/logs/%x_%j_$DATETIME.log sh -c "${run_cmd}"
"""


def test_srun_sh_c_after_unreadable_options_is_the_launch(tmp_path):
    path = tmp_path / "pretrain_gpt3.sh"
    path.write_text(SCRIPT)
    (result,) = check_paths([str(path)], builtin_adapters())
    (spec,) = result.specs
    assert spec.entry_point and spec.entry_point.endswith("pretrain_gpt.py")
    assert spec.cluster.world_size.value == 16 * 8
    assert spec.parallel.tensor.value == 8 and spec.parallel.pipeline.value == 2
