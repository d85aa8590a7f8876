"""One training run written as the files a user would write, in four formats, and read back
through trainlint's adapters exactly as ``trainlint check`` / ``estimate`` read a user's files.

* :func:`write_megatron_lm`: a launch script running Megatron-LM's ``pretrain_gpt.py`` with
  ``torchrun`` (Megatron's own optimizer; ZeRO >= 1 becomes ``--use-distributed-optimizer``, the
  nearest thing Megatron-LM has);
* :func:`write_megatron_deepspeed`: a Megatron-DeepSpeed launch script (``deepspeed`` launcher,
  ``--deepspeed --deepspeed_config ds_config.json --zero-stage N``) and its DeepSpeed JSON;
* :func:`write_neox`: a GPT-NeoX YAML (DeepSpeed keys inline, as NeoX configs carry them);
* :func:`write_bridge`: a Megatron-Bridge ConfigContainer YAML as ``to_yaml`` dumps it (``_target_``
  objects for dtypes and enums); it states no world size (a Bridge YAML does not), so its run is
  estimated with the run's nodes and GPUs per node given, as ``--nodes`` / ``--gpus-per-node`` would.

Used by tests/test_engine_invariants.py (property tests) and benchmarks/cross_format.py; nothing
here runs a framework. Each writer takes a :class:`Run` and a directory and returns the path a user
would pass to trainlint.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from trainlint.files.checker import check_file
from trainlint.core.spec import TrainingSpec

FORMATS = ("megatron-lm", "megatron-deepspeed", "neox", "bridge")
WORLD_NOT_STATED = frozenset({"bridge"})
"""Formats whose file does not state the world size: estimated with ``nodes`` / ``gpus_per_node`` given."""


@dataclass(frozen=True)
class Run:
    """A run in framework-neutral terms (what the three files must all say)."""

    layers: int = 8
    hidden: int = 1024
    heads: int = 16
    vocab: int = 51200
    seq: int = 2048
    tp: int = 1
    pp: int = 1
    dp: int = 8
    micro: int = 1
    accum: int = 1
    zero: int = 0
    recompute: str = "none"        # none | full
    offload: str = "none"          # none | cpu (optimizer offload, DeepSpeed formats only)
    dtype: str = "bf16"            # bf16 | fp16
    flash: bool = True
    experts: int = 1               # 1: dense
    top_k: int = 1
    expert_interval: int = 1
    ep: int = 1
    gpus_per_node: int = 8
    core: tuple[tuple[str, object], ...] = ()
    """Megatron-Core fields only the two Megatron-Core formats write (Megatron-LM script, Bridge YAML), as
    Bridge spells them (``model.num_layers_in_first_pipeline_stage``): each written in the Megatron-LM script
    as the argument the Bridge adapter reads the field as (adapters/bridge/keys.py), so a difference between
    the two is the field mapping's."""

    @property
    def world(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def global_batch(self) -> int:
        return self.micro * self.accum * self.dp

    @property
    def nodes(self) -> int:
        return max(1, self.world // self.gpus_per_node)

    @property
    def per_node(self) -> int:
        return min(self.world, self.gpus_per_node)

    def to_dict(self) -> dict:
        return asdict(self)


def _write(path: str, text: str) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def _model_flags(run: Run) -> list[str]:
    flags = [f"--num-layers {run.layers}", f"--hidden-size {run.hidden}", f"--num-attention-heads {run.heads}",
             f"--seq-length {run.seq}", f"--max-position-embeddings {run.seq}", f"--vocab-size {run.vocab}",
             "--make-vocab-size-divisible-by 1",
             f"--tensor-model-parallel-size {run.tp}", f"--pipeline-model-parallel-size {run.pp}",
             f"--micro-batch-size {run.micro}", f"--global-batch-size {run.global_batch}", f"--{run.dtype}"]
    return flags


def _script(launcher: str, flags: list[str]) -> str:
    body = " \\\n    ".join(flags)
    return f"#!/bin/bash\n{launcher} pretrain_gpt.py \\\n    {body}\n"


def write_megatron_lm(run: Run, directory: str) -> str:
    """Megatron-LM (current): flash attention unless told otherwise, --recompute-granularity full."""
    flags = _model_flags(run)
    if run.zero >= 1:
        flags.append("--use-distributed-optimizer")
    if run.recompute == "full":
        flags += ["--recompute-granularity full", "--recompute-method uniform", "--recompute-num-layers 1"]
    if not run.flash:
        flags.append("--attention-backend unfused")
    if run.experts > 1:
        flags += [f"--num-experts {run.experts}", f"--moe-router-topk {run.top_k}",
                  f"--expert-model-parallel-size {run.ep}", f"--moe-layer-freq {run.expert_interval}"]
    flags += core_flags(run)
    launcher = f"torchrun --nproc_per_node {run.per_node} --nnodes {run.nodes}"
    return _write(os.path.join(directory, "megatron_lm.sh"), _script(launcher, flags))


def core_flags(run: Run) -> list[str]:
    """``run.core`` as Megatron-LM flags: the dest the Bridge field maps to, spelled by the argument's first
    flag in trainlint's Megatron-LM schema (a true switch alone, a list as its words)."""
    from trainlint.adapters.bridge.keys import KEYS
    from trainlint.schemas import load_schema

    props = load_schema("megatron")["properties"]
    dest_of = {k.path: k.dest for k in KEYS}
    out = []
    for path, value in run.core:
        flag = props[dest_of[path]]["x-flags"][0]
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            out.append(f"{flag} {' '.join(map(str, value))}")
        elif value is not False:
            out.append(f"{flag} {value}")
    return out


def deepspeed_json(run: Run) -> dict:
    zero: dict = {"stage": run.zero}
    if run.offload != "none" and run.zero >= 1:
        zero["offload_optimizer"] = {"device": run.offload}
    return {"train_batch_size": run.global_batch, "train_micro_batch_size_per_gpu": run.micro,
            "gradient_accumulation_steps": run.accum, "zero_optimization": zero,
            "bf16" if run.dtype == "bf16" else "fp16": {"enabled": True}, "gradient_clipping": 1.0}


def write_megatron_deepspeed(run: Run, directory: str) -> str:
    """Megatron-DeepSpeed with --deepspeed: DeepSpeed's engine (ZeRO / BF16_Optimizer from the JSON),
    unfused attention unless --use-flash-attn-v2, --checkpoint-activations for full recompute."""
    _write(os.path.join(directory, "ds_config.json"), json.dumps(deepspeed_json(run), indent=2) + "\n")
    flags = _model_flags(run)
    if run.recompute == "full":
        flags.append("--checkpoint-activations")
    if run.flash:
        flags.append("--use-flash-attn-v2")
    if run.experts > 1:
        flags += [f"--num-experts {run.experts}", f"--topk {run.top_k}", f"--moe-expert-parallel-size {run.ep}",
                  f"--expert-interval {run.expert_interval}"]
    if run.pp == 1:
        flags.append("--no-pipeline-parallel")
    flags += ["--deepspeed", "--deepspeed_config ds_config.json", f"--zero-stage {run.zero}"]
    launcher = f"deepspeed --num_nodes {run.nodes} --num_gpus {run.per_node}"
    return _write(os.path.join(directory, "megatron_deepspeed.sh"), _script(launcher, flags))


def write_neox(run: Run, directory: str) -> str:
    """GPT-NeoX YAML: pipe_parallel_size = PP (the PipelineEngine even at 1 stage, as NeoX does for
    pipe_parallel_size >= 1), attention_config flash or global, checkpoint_activations."""
    zero = deepspeed_json(run)["zero_optimization"]
    lines = [
        f"num_layers: {run.layers}", f"hidden_size: {run.hidden}", f"num_attention_heads: {run.heads}",
        f"seq_length: {run.seq}", f"max_position_embeddings: {run.seq}", f"padded_vocab_size: {run.vocab}",
        f"model_parallel_size: {run.tp}", f"pipe_parallel_size: {run.pp}",
        f"train_micro_batch_size_per_gpu: {run.micro}", f"gradient_accumulation_steps: {run.accum}",
        f"train_batch_size: {run.global_batch}",
        f"zero_optimization: {json.dumps(zero)}",
        ("bf16: {enabled: true}" if run.dtype == "bf16" else "fp16: {enabled: true}"),
        f"precision: {'bfloat16' if run.dtype == 'bf16' else 'fp16'}",
        f"checkpoint_activations: {'true' if run.recompute == 'full' else 'false'}",
        "checkpoint_num_layers: 1",
        f"attention_config: [[[\"{'flash' if run.flash else 'global'}\"], {run.layers}]]",
        f"global_num_gpus: {run.world}", f"num_gpus: {run.per_node}",
    ]
    if run.experts > 1:
        lines += [f"moe_num_experts: {run.experts}", f"moe_top_k: {run.top_k}",
                  f"moe_expert_interval: {run.expert_interval}"]
    return _write(os.path.join(directory, "neox.yml"), "\n".join(lines) + "\n")


def write_bridge(run: Run, directory: str) -> str:
    """Megatron-Bridge: the same Megatron-Core run as :func:`write_megatron_lm`, spelled as a ConfigContainer
    dump (model / train / optimizer / ddp sections)."""
    dtype = "torch.bfloat16" if run.dtype == "bf16" else "torch.float16"
    model = [f"num_layers: {run.layers}", f"hidden_size: {run.hidden}", f"num_attention_heads: {run.heads}",
             f"seq_length: {run.seq}", f"max_position_embeddings: {run.seq}", f"vocab_size: {run.vocab}",
             "make_vocab_size_divisible_by: 1", f"tensor_model_parallel_size: {run.tp}",
             f"pipeline_model_parallel_size: {run.pp}", f"bf16: {'true' if run.dtype == 'bf16' else 'false'}",
             f"fp16: {'true' if run.dtype == 'fp16' else 'false'}", "params_dtype:", f"  _target_: {dtype}", "  _call_: false"]
    if run.recompute == "full":
        model += ["recompute_granularity: full", "recompute_method: uniform", "recompute_num_layers: 1"]
    if not run.flash:
        model += ["attention_backend:", "  _target_: megatron.core.transformer.enums.AttnBackend", "  _call_: true",
                  "  _args_: [3]", "  _name_: unfused"]
    if run.experts > 1:
        model += [f"num_moe_experts: {run.experts}", f"moe_router_topk: {run.top_k}",
                  f"expert_model_parallel_size: {run.ep}", f"moe_layer_freq: {run.expert_interval}"]
    sections: dict[str, list[str]] = {"model": model, "optimizer": [], "ddp": []}
    for path, value in run.core:
        section, _, name = path.partition(".")
        shown = json.dumps(list(value)) if isinstance(value, (list, tuple)) else json.dumps(value)
        sections.setdefault(section, []).append(f"{name}: {shown}")
    lines = ["_target_: megatron.bridge.training.config.ConfigContainer", "model:",
             "  _target_: megatron.bridge.models.gpt_provider.GPTModelProvider", *("  " + m for m in model),
             "train:", f"  micro_batch_size: {run.micro}", f"  global_batch_size: {run.global_batch}", "  train_iters: 1000",
             "optimizer:", f"  use_distributed_optimizer: {'true' if run.zero >= 1 else 'false'}",
             *("  " + m for m in sections["optimizer"]),
             "ddp:", f"  use_distributed_optimizer: {'true' if run.zero >= 1 else 'false'}",
             *("  " + m for m in sections["ddp"]),
             "dataset:", f"  seq_length: {run.seq}"]
    return _write(os.path.join(directory, "run_config.yaml"), "\n".join(lines) + "\n")


WRITERS = {"megatron-lm": write_megatron_lm, "megatron-deepspeed": write_megatron_deepspeed, "neox": write_neox, "bridge": write_bridge}


def write(run: Run, fmt: str, directory: str) -> str:
    os.makedirs(directory, exist_ok=True)
    return WRITERS[fmt](run, directory)


def _adapters() -> list:
    """The built-in adapters and Megatron-Bridge's (registered as a built-in plugin), new for each read as
    ``check_file`` is given them by a session."""
    from trainlint.adapters import builtin_adapters
    from trainlint.adapters.bridge.framework import adapter

    return [*builtin_adapters(), adapter()]


def read(path: str) -> tuple[list[TrainingSpec], list]:
    """The specs and diagnostics trainlint's adapters give for ``path`` (as ``trainlint check`` reads it)."""
    result = check_file(path, _adapters())
    return list(result.specs), list(result.diagnostics)


def read_one(path: str) -> TrainingSpec:
    specs, diagnostics = read(path)
    if len(specs) != 1:
        raise ValueError(f"{path}: expected one run, read {len(specs)}: "
                         + "; ".join(f"{d.code} {d.message}" for d in diagnostics[:5]))
    return specs[0]
