"""Golden tests: the SLURM_* variables sbatch sets from a script's #SBATCH directives.

sbatch(1), OUTPUT ENVIRONMENT VARIABLES: SLURM_JOB_NUM_NODES (and SLURM_NNODES) = --nodes/-N,
SLURM_NTASKS_PER_NODE = --ntasks-per-node, SLURM_GPUS_PER_NODE = --gpus-per-node, SLURM_NTASKS
(= SLURM_NPROCS) = --ntasks/-n; SLURM_GPUS_ON_NODE = the GPUs allocated on the node (--gres=gpu:N).
A user's --env wins; the script's own assignment wins over both."""

from __future__ import annotations

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron import MegatronAdapter
from trainlint.adapters.megatron.slurm import slurm_environment
from trainlint.core.provenance import Origin
from trainlint.files.sources import SourceText

CMD = ('CMD="pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 '
       '--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 --tensor-model-parallel-size 2"\n')

JOB = ("#!/bin/bash\n"
       "#SBATCH --job-name=gpt\n"
       "#SBATCH --nodes=4\n"
       "#SBATCH --ntasks-per-node=1\n"
       "#SBATCH --gres=gpu:8\n"
       "\n"
       "GPUS_PER_NODE=8\n"
       'LAUNCHER="python -u -m torch.distributed.run --nnodes $SLURM_NNODES --nproc_per_node $GPUS_PER_NODE '
       '--rdzv_backend c10d"\n'
       + CMD +
       'srun --jobid $SLURM_JOBID bash -c "$LAUNCHER $CMD"\n')


def load(text: str, environment: dict[str, str] | None = None):
    (spec,) = MegatronAdapter().load(SourceText("/x/job.sh", text), LoadContext(environment=environment or {})).specs
    return spec


def test_variables_from_the_directives():
    text = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=h100:8\n"
            "#SBATCH -n16\necho\n")
    env = {name: field.text for name, field in slurm_environment(text, "/x/j.sh").items()}
    assert env == {"SLURM_NNODES": "2", "SLURM_JOB_NUM_NODES": "2", "SLURM_NTASKS_PER_NODE": "8",
                   "SLURM_GPUS_PER_NODE": "8", "SLURM_GPUS_ON_NODE": "8", "SLURM_NTASKS": "16", "SLURM_NPROCS": "16"}
    assert slurm_environment("#!/bin/bash\necho hi\n", "/x/j.sh") == {}


def test_gres_sets_gpus_on_node_but_not_gpus_per_node():
    env = slurm_environment("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:4\necho\n", "/x/j.sh")
    assert env["SLURM_GPUS_ON_NODE"].text == "4" and "SLURM_GPUS_PER_NODE" not in env


def test_directives_after_the_first_command_are_not_read():
    assert slurm_environment("#!/bin/bash\necho\n#SBATCH --nodes=4\n", "/x/j.sh") == {}


def test_launcher_in_a_string_resolves_the_world_size_from_sbatch_nodes():
    spec = load(JOB)
    assert spec.cluster.nodes.value == 4 and spec.cluster.gpus_per_node.value == 8
    assert spec.cluster.world_size.value == 32
    prov = spec.cluster.nodes.provenance
    assert prov.origin is Origin.FILE and prov.path == "/x/job.sh"
    assert prov.span.line == 3  # the #SBATCH --nodes=4 line


def test_env_wins_over_the_directive():
    spec = load(JOB, {"SLURM_NNODES": "2"})
    assert spec.cluster.nodes.value == 2 and spec.cluster.world_size.value == 16
    assert spec.cluster.nodes.provenance.origin is not Origin.FILE and "SLURM_NNODES" in spec.cluster.nodes.provenance.note


def test_the_scripts_own_assignment_wins():
    spec = load(JOB.replace("GPUS_PER_NODE=8\n", "GPUS_PER_NODE=8\nSLURM_NNODES=1\n"))
    assert spec.cluster.nodes.value == 1 and spec.cluster.world_size.value == 8


def test_without_directives_the_variable_stays_unknown():
    text = "\n".join(line for line in JOB.splitlines() if not line.startswith("#SBATCH")) + "\n"
    spec = load(text)
    assert spec.cluster.world_size is None
