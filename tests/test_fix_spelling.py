"""Fix hints are spelled by the run's adapter, and only for changes the target framework version
can express (``Adapter.expressible``): never a flag the version lacks (issue 19, Deliver 2)."""

from __future__ import annotations

import dataclasses

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_source
from trainlint.frameworks.catalog import load_shipped
from trainlint.frameworks.target import FrameworkTarget, TargetOrigin
from trainlint.layout.candidate import adapter_of
from trainlint.rules.estimation.fixes import communication_candidates, memory_candidates, throughput_candidates
from trainlint.files.sources import SourceText

LEGACY = """\
#! /bin/bash
python pretrain_gpt2.py \\
       --num-layers 24 --hidden-size 1024 --num-attention-heads 16 --batch-size 8 \\
       --seq-length 1024 --max-position-embeddings 1024 --train-iters 320000 \\
       --lr 0.00015 --checkpoint-activations --fp16
"""

CURRENT = """\
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 \\
    --max-position-embeddings 2048 --micro-batch-size 4 --global-batch-size 256 --bf16 \\
    {extra}
"""

MEGATRON_DEEPSPEED = """\
deepspeed --num_gpus 8 pretrain_gpt.py \\
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 \\
    --max-position-embeddings 2048 --micro-batch-size 4 --global-batch-size 256 --bf16 \\
    --checkpoint-activations --deepspeed --deepspeed_config ds.json
"""


def spec_of(text: str, name: str = "run.sh"):
    result = check_source(SourceText(name, text), builtin_adapters())
    assert result.specs, result.diagnostics
    return result.specs[0]


def all_candidates(spec):
    adapters = builtin_adapters()
    return [*memory_candidates(spec, adapters), *throughput_candidates(spec, adapters),
            *communication_candidates(spec, adapters)]


def test_legacy_megatron_is_offered_no_flag_it_lacks():
    """Megatron-LM v1.1.5 copies have --checkpoint-activations, not --recompute-granularity,
    --use-distributed-optimizer or --overlap-grad-reduce: none of them is proposed."""
    spec = spec_of(LEGACY)
    assert spec.dialect == "legacy" and spec.value("memory.recompute") == "full"
    expressible = adapter_of(spec).expressible(spec)
    assert "selective" not in expressible and "dist-opt" not in expressible and "overlap" not in expressible
    spellings = " | ".join(c.spelling for c in all_candidates(spec))
    for flag in ("--recompute-granularity", "--use-distributed-optimizer", "--overlap-grad-reduce", "--sequence-parallel"):
        assert flag not in spellings, spellings
    assert not any(c.spec.value("memory.recompute") == "selective" for c in all_candidates(spec))


def test_current_megatron_gets_selective_recompute_and_the_optimizer_flags():
    spec = spec_of(CURRENT.format(extra=""))
    by_target = {}
    for c in memory_candidates(spec, builtin_adapters()):
        by_target.setdefault(c.target, []).append(c.spelling)
    assert by_target["memory.recompute"][0] == "--recompute-granularity selective"
    assert by_target["memory.recompute"][1] == ("--recompute-granularity full, --recompute-method uniform, "
                                                "--recompute-num-layers 1")
    assert by_target["parallel.distributed_optimizer"] == ["--use-distributed-optimizer"]
    overlap = [c for c in communication_candidates(spec, builtin_adapters()) if "overlap" in c.spelling]
    assert [c.spelling for c in overlap] == ["--overlap-grad-reduce"]
    assert overlap[0].spec.engine.dp_overlap.value is True


def test_selective_instead_of_full_drops_the_old_flag_as_the_writer_does():
    """Full recompute written with its method and layers: the hint to go selective also drops the
    flags that only full recompute reads (the writer's edit, spelled)."""
    spec = spec_of(CURRENT.format(extra="--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"))
    (selective,) = [c for c in throughput_candidates(spec, builtin_adapters()) if c.target == "memory.recompute"]
    assert selective.spelling == ("--recompute-granularity selective, drop --recompute-method, "
                                  "drop --recompute-num-layers (instead of full)")


def test_megatron_deepspeed_follows_its_version():
    """Megatron-DeepSpeed of unknown version: no selective recompute (bigscience's copy has no
    --recompute-granularity); pointed at a version that has it (microsoft's main), it is offered
    and spelled as the writer writes it (the old --checkpoint-activations goes)."""
    spec = spec_of(MEGATRON_DEEPSPEED)
    assert spec.dialect == "megatron-deepspeed"
    assert "selective" not in adapter_of(spec).expressible(spec)
    assert spec.value("memory.recompute") == "full"
    assert not [c for c in throughput_candidates(spec, builtin_adapters()) if c.spec.value("memory.recompute") == "selective"]
    catalog = load_shipped("megatron-megatron-deepspeed-main.json")
    known = dataclasses.replace(spec)
    known.target = FrameworkTarget("megatron", "Megatron-DeepSpeed", "main", TargetOrigin.PROJECT_CONFIG, catalog=catalog)
    assert "selective" in adapter_of(known).expressible(known)
    (selective,) = [c for c in throughput_candidates(known, builtin_adapters()) if c.target == "memory.recompute"]
    assert selective.spelling.startswith("--recompute-granularity selective, drop --checkpoint-activations")


def test_deepspeed_json_hints_in_its_own_keys():
    spec = spec_of('{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, '
                   '"zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}', "ds_config.json")
    spellings = [c.spelling for c in communication_candidates(spec, builtin_adapters())]
    assert '"zero_optimization": {"overlap_comm": true}' in spellings
    assert '"gradient_accumulation_steps": 4 (a larger global batch)' in spellings
    assert '"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1 (fewer, larger micro-batches)' in spellings
