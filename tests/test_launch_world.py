"""Golden tests: the world size a launch script gives (Slurm allocation, arrays joined inside a
command string) and the run inputs estimate takes when the config lacks them.

Facts: sbatch reads #SBATCH directives before the first command (sbatch(1)); srun inside the
allocation starts --ntasks-per-node tasks on each of --nodes nodes (srun(1)); in a bash assignment
X="... ${A[@]} ..." is not word-split and "${A[@]}" expands to the elements joined by spaces
(bash(1), Arrays and Parameter Expansion).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron import MegatronAdapter
from trainlint.adapters.megatron.slurm import sbatch_allocation
from trainlint.estimator import build_context, estimate
from trainlint.estimator.inputs import unjudged
from trainlint.core.provenance import Origin
from trainlint.files.sources import SourceText
from conftest import estimate_run

ARGS = ("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 "
        "--max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 256 --bf16")


def load(text: str, path: str = "/x/job.sh"):
    result = MegatronAdapter().load(SourceText(path, text), LoadContext())
    return result


def test_sbatch_directives_before_the_first_command():
    text = ("#!/bin/bash\n#SBATCH --nodes=16\n#SBATCH --ntasks-per-node=4 # one per GPU\n"
            "#SBATCH --gres=gpu:a100:4\n\necho go\n#SBATCH --nodes=2\n")
    alloc = sbatch_allocation(text, "/x/job.sh")
    assert {k: f.text for k, f in alloc.items()} == {"nodes": "16", "ntasks_per_node": "4", "gpus_per_node": "4"}
    loc = alloc["nodes"].segs[0].loc
    assert text[loc.start:loc.end] == "16"
    assert sbatch_allocation("#!/bin/bash\n#SBATCH -N 8 --gpus-per-node=h100:8\n", "j")["gpus_per_node"].text == "8"
    assert sbatch_allocation("#!/bin/bash\n#SBATCH <SLURM OPTIONS> --nodes=128 --exclusive\n", "j")["nodes"].text == "128"


def test_srun_of_python_runs_the_allocation_tasks():
    text = ("#!/bin/bash\n#SBATCH --nodes=16\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n"
            f"srun python pretrain_gpt.py {ARGS}\n")
    (spec,) = load(text).specs
    assert spec.cluster.world_size.value == 64
    assert spec.cluster.nodes.provenance.origin is Origin.FILE and spec.cluster.nodes.provenance.span.line == 2


def test_srun_of_torchrun_keeps_torchrun_processes_per_node():
    text = ("#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:8\n"
            f"srun torchrun --nproc_per_node 8 --nnodes 4 pretrain_gpt.py {ARGS}\n")
    (spec,) = load(text).specs
    assert spec.cluster.world_size.value == 32


def test_torchrun_alone_in_a_batch_script_does_not_take_the_allocation():
    text = "#!/bin/bash\n#SBATCH --nodes=16\n" + f"torchrun --nproc_per_node 8 pretrain_gpt.py {ARGS}\n"
    (spec,) = load(text).specs
    assert spec.cluster.world_size.value == 8  # torchrun's default --nnodes 1 on the batch host


def test_arrays_expanded_inside_a_command_string_are_joined_with_spaces():
    text = ("#!/bin/bash\nMODEL_ARGS=(--num-layers 32 --hidden-size 4096 --num-attention-heads 32)\n"
            "TRAIN_ARGS=(--seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --bf16)\n"
            'CMD="python pretrain_gpt.py ${MODEL_ARGS[@]} ${TRAIN_ARGS[@]}"\n'
            'srun -N 2 --ntasks-per-node 8 bash -c "$CMD"\n')
    result = load(text)
    assert not [d for d in result.diagnostics if d.code == "TL004"]
    (spec,) = result.specs
    assert (spec.model.num_layers.value, spec.model.hidden_size.value, spec.model.seq_length.value) == (32, 4096, 4096)
    assert spec.cluster.world_size.value == 16


def spec_of(text: str):
    (spec,) = load("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py " + text + "\n").specs
    return spec


def test_no_sequence_length_takes_the_position_embeddings_stated_and_unjudged():
    spec = spec_of("--num-layers 2 --hidden-size 256 --num-attention-heads 4 --max-position-embeddings 2048 "
                   "--micro-batch-size 1")
    est = estimate(spec, build_context(spec))
    assert est.ok and est.inputs.seq == 2048
    assert [a.field for a in unjudged(est)] == ["model.seq_length"]
    est = estimate(spec, build_context(spec, seq_length=1024))
    assert est.inputs.seq == 1024 and not unjudged(est)


def test_no_batch_at_all_assumes_micro_batch_one_and_the_flags_set_it():
    spec = spec_of("--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 1024")
    est = estimate(spec, build_context(spec))
    assert est.ok and est.inputs.micro == 1 and [a.field for a in unjudged(est)] == ["batch.micro_batch"]
    est = estimate(spec, build_context(spec, micro_batch=4, grad_accum=2))
    assert (est.inputs.micro, est.inputs.grad_accum, est.inputs.global_batch) == (4, 2, 64)
    assert not unjudged(est)
    stated = spec_of("--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 1024 --micro-batch-size 2")
    assert estimate(stated, build_context(stated, micro_batch=4)).inputs.micro == 2  # the config wins


def test_estimate_flags_fill_a_bare_deepspeed_json(tmp_path: Path):
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                              "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}))
    out = subprocess.run([sys.executable, "-m", "trainlint", "estimate", "--isolated", "--format", "json",
                          "--model", "llama2-7b", "--nodes", "1", "--micro-batch-size", "4", "--grad-accum", "2",
                          "--seq-length", "2048", str(ds)], capture_output=True, text=True, timeout=120)
    data = estimate_run(out.stdout)
    assert data.get("estimate", 1) is not None, out.stdout
    fields = {a["field"]: a for a in data["assumptions"]}
    assert fields["batch.micro_batch"]["value"] == 4 and fields["batch.micro_batch"]["origin"] == "cli"
    assert fields["model.seq_length"]["value"] == 2048
