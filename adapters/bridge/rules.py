"""Megatron-Bridge's own launch-time checks (``ConfigContainer.validate()`` and the sub-configs'
``finalize()`` in ``src/megatron/bridge/training/config.py``), one rule per concern, and TL116
(``CUDA_DEVICE_MAX_CONNECTIONS``), which Megatron-Core runs need whatever the format.

Each reads the ConfigContainer's fields as written (``spec.settings["bridge:<path>"]``), with Bridge's
dataclass defaults where a field is not written; facts are quoted with the line of config.py at the
Megatron-Bridge commit of the shipped recipe catalog.
"""

from __future__ import annotations

from typing import Any, Iterator

from trainlint.diagnostics import Severity
from trainlint.provenance import Value
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.spec import MEGATRON_LM, TrainingSpec

from trainlint.adapters.bridge.build import FORMAT, SETTING_PREFIX

CONFIG_PY = "src/megatron/bridge/training/config.py"


class _Fields:
    """A Bridge run's fields as written, with Bridge's defaults."""

    def __init__(self, spec: TrainingSpec) -> None:
        self.spec = spec

    def entry(self, path: str) -> Value | None:
        return self.spec.settings.get(SETTING_PREFIX + path)

    def get(self, path: str, fallback: Any = None) -> Any:
        entry = self.entry(path)
        return fallback if entry is None else entry.value

    def at(self, *paths: str) -> Value | None:
        return next((e for e in (self.entry(p) for p in paths) if e is not None), None)


class BridgeRule(Rule):
    frameworks = ("megatron",)
    release_dependent = True
    """Quoted from Megatron-Bridge's config.py at one commit; another release may check differently."""

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if spec.format != FORMAT:
            return iter(())
        return self.findings(_Fields(spec))

    def findings(self, f: _Fields) -> Iterator[Finding]:  # pragma: no cover - interface
        raise NotImplementedError


def _positive_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class TrainingLength(BridgeRule):
    """## What it does
    Checks how a Megatron-Bridge run states its length and its learning-rate schedule, as
    `TrainingConfig.finalize`, `SchedulerConfig.finalize` and
    `ConfigContainer._validate_training_scheduler_compatibility` / `_calculate_scheduler_steps` do: exactly
    one of `train.train_iters`, `train.train_samples`, `train.num_epochs`; no iteration-based scheduler
    fields (`lr_decay_iters`, `lr_warmup_iters`, `lr_wsd_decay_iters`) with sample-based ones; not
    `lr_warmup_fraction` together with `lr_warmup_iters` / `lr_warmup_samples`; `scheduler.max_steps`
    positive and at least `train.train_iters`.

    ## Why is this bad?
    Each is an `AssertionError` or `ValueError` inside `pretrain()`, after the job has waited for its GPUs.

    ## Example
    ```yaml
    train:
      train_iters: 1000
      train_samples: 512000
    ```

    ## Fix
    Keep one way of stating the length, and schedule fields of the same kind.
    """

    code = "TL670"
    name = "bridge-training-length"
    summary = "a Bridge run's length or LR schedule stated two ways, or a schedule shorter than the run"

    def findings(self, f: _Fields) -> Iterator[Finding]:
        modes = [p for p in ("train.train_iters", "train.train_samples", "train.num_epochs") if f.get(p) is not None]
        if len(modes) > 1:
            yield Finding(f"{' and '.join('`' + m + '`' for m in modes)} are both given: Bridge stops with \"Cannot "
                          f"specify more than one of train_iters, train_samples, or num_epochs\" ({CONFIG_PY}, "
                          "TrainingConfig.finalize)", at=f.at(modes[1]), also=((f.at(modes[0]), "also given here"),))
        elif not modes and f.entry("train.train_iters") is not None:
            yield Finding("none of `train.train_iters`, `train.train_samples`, `train.num_epochs` is set: Bridge stops "
                          "with \"One of train_iters, train_samples, or num_epochs must be provided\"",
                          at=f.at("train.train_iters"))
        for path in ("train.train_iters", "train.train_samples"):
            v = f.get(path)
            if _positive_int(v) and v <= 0:
                yield Finding(f"`{path}` is {v}: the run has no steps (\"train_samples must be positive\" / "
                              "\"lr_decay_steps must be > 0\")", at=f.at(path))
        iters = [p for p in ("scheduler.lr_decay_iters", "scheduler.lr_wsd_decay_iters") if f.get(p) is not None] + \
            [p for p in ("scheduler.lr_warmup_iters",) if f.get(p, 0) not in (0, None)]
        samples = [p for p in ("scheduler.lr_decay_samples", "scheduler.lr_wsd_decay_samples") if f.get(p) is not None] + \
            [p for p in ("scheduler.lr_warmup_samples",) if f.get(p, 0) not in (0, None)]
        if iters and samples:
            yield Finding(f"iteration-based `{iters[0]}` and sample-based `{samples[0]}` scheduler fields together: "
                          "Bridge stops with \"Cannot mix iteration-based and sample-based scheduler fields\" "
                          "(SchedulerConfig.finalize)", at=f.at(samples[0]), also=((f.at(iters[0]), "iteration field"),))
        elif f.get("train.train_samples") is not None and iters:
            yield Finding(f"sample-based training (`train.train_samples`) with `{iters[0]}`: Bridge stops with \"Use "
                          "lr_*_samples for sample-based training\" (_validate_training_scheduler_compatibility)",
                          at=f.at(iters[0]), also=((f.at("train.train_samples"), "sample-based here"),))
        elif f.get("train.train_iters") is not None and f.get("train.train_samples") is None and samples:
            yield Finding(f"iteration-based training (`train.train_iters`) with `{samples[0]}`: Bridge stops with \"Use "
                          "lr_*_iters for iteration-based training\" (_validate_training_scheduler_compatibility)",
                          at=f.at(samples[0]), also=((f.at("train.train_iters"), "iteration-based here"),))
        if f.get("scheduler.lr_warmup_fraction") is not None and (iters or samples) and \
                any(p.startswith("scheduler.lr_warmup_") for p in iters + samples):
            warm = next(p for p in iters + samples if p.startswith("scheduler.lr_warmup_"))
            yield Finding(f"`scheduler.lr_warmup_fraction` with `{warm}`: Bridge stops with \"Cannot specify "
                          "lr_warmup_fraction with lr_warmup_iters or lr_warmup_samples\"",
                          at=f.at("scheduler.lr_warmup_fraction"), also=((f.at(warm), "also a warmup"),))
        max_steps, train_iters = f.get("scheduler.max_steps"), f.get("train.train_iters")
        if _positive_int(max_steps) and max_steps <= 0:
            yield Finding(f"`scheduler.max_steps` is {max_steps}: Bridge stops with \"scheduler.max_steps must be "
                          "positive\"", at=f.at("scheduler.max_steps"))
        elif _positive_int(max_steps) and _positive_int(train_iters) and max_steps < train_iters:
            yield Finding(f"`scheduler.max_steps` {max_steps} is below `train.train_iters` {train_iters}: Bridge stops "
                          "with \"scheduler.max_steps ... must be greater than or equal to train.train_iters\"",
                          at=f.at("scheduler.max_steps"), also=((f.at("train.train_iters"), "train_iters here"),))


class SequenceLengths(BridgeRule):
    """## What it does
    Checks that a ConfigContainer YAML gives the model and the dataset the same sequence length
    (`ConfigContainer.validate`: "Please ensure sequence length configuration in model config and dataset
    config match").

    ## Why is this bad?
    `pretrain()` stops with an `AssertionError` before the first step. (`run_recipe.py` copies
    `dataset.seq_length` into `model.seq_length` after the overrides, so a recipe launch line cannot
    disagree; a YAML given to your own script can.)

    ## Example
    ```yaml
    model:
      seq_length: 8192
    dataset:
      seq_length: 4096
    ```

    ## Fix
    Give both the same value.
    """

    code = "TL671"
    name = "bridge-sequence-length"
    summary = "model.seq_length and dataset.seq_length differ"

    def findings(self, f: _Fields) -> Iterator[Finding]:
        model, data = f.entry("model.seq_length"), f.entry("dataset.seq_length")
        if f.spec.label.startswith("run_recipe.py") or model is None or data is None:
            return
        if _positive_int(model.value) and _positive_int(data.value) and model.value != data.value:
            yield Finding(f"`model.seq_length` {model.value} != `dataset.seq_length` {data.value}: Bridge stops with "
                          "\"Please ensure sequence length configuration in model config and dataset config match\"",
                          at=data, also=((model, "model's sequence length"),))


class PrecisionFlags(BridgeRule):
    """## What it does
    Checks the precision switches as `_validate_mixed_precision_consistency` does: not both `bf16` and
    `fp16` on the model, nor on the optimizer; with `optimizer.use_precision_aware_optimizer`, the
    optimizer's `bf16` / `fp16` must match the model's.

    ## Why is this bad?
    An `AssertionError` in `ConfigContainer.validate()`, before the first step.

    ## Example
    ```yaml
    model:
      bf16: true
      fp16: true
    ```

    ## Fix
    Keep one of the two, the same on the model and the optimizer.
    """

    code = "TL672"
    name = "bridge-precision-flags"
    summary = "bf16 and fp16 both on, or the optimizer's precision not the model's with a precision-aware optimizer"

    def findings(self, f: _Fields) -> Iterator[Finding]:
        for section in ("model", "optimizer"):
            if f.get(f"{section}.bf16") is True and f.get(f"{section}.fp16") is True:
                yield Finding(f"`{section}.bf16` and `{section}.fp16` are both true: Bridge stops with \"... cannot have "
                              "both bf16=True and fp16=True\"", at=f.at(f"{section}.fp16"),
                              also=((f.at(f"{section}.bf16"), "bf16 here"),))
        if f.get("optimizer.use_precision_aware_optimizer") is not True:
            return
        for flag in ("bf16", "fp16"):
            if f.get(f"model.{flag}") is True and f.get(f"optimizer.{flag}") is False:
                yield Finding(f"`model.{flag}` is true with `optimizer.use_precision_aware_optimizer` but "
                              f"`optimizer.{flag}` is false: Bridge stops with \"optimizer.{flag}=True must be set when "
                              f"model.{flag}=True and use_precision_aware_optimizer=True\"", at=f.at(f"optimizer.{flag}"),
                              also=((f.at(f"model.{flag}"), "model precision"),))


class CheckpointSettings(BridgeRule):
    """## What it does
    Checks the checkpoint settings `CheckpointConfig.finalize` and `ConfigContainer.validate` refuse:
    `async_save` without `save`, without `use_persistent_ckpt_worker` or with a `ckpt_format` other than
    `torch_dist` / `fsdp_dtensor`; `load_main_params_from_ckpt` with `load_optim`; `ckpt_step` without
    `load`; `also_save_hf_checkpoint` with `ckpt_format: fsdp_dtensor` or local non-persistent checkpoints;
    `ckpt_format: fsdp_dtensor` without Megatron-FSDP; a PEFT run without `pretrained_checkpoint`.

    ## Why is this bad?
    Each stops `pretrain()` with an `AssertionError` / `ValueError` before training.

    ## Example
    ```yaml
    checkpoint:
      async_save: true
      save: null
    ```

    ## Fix
    Set the field the message names, or turn the option off.
    """

    code = "TL673"
    name = "bridge-checkpoint-settings"
    summary = "checkpoint settings Megatron-Bridge refuses at start-up"

    def findings(self, f: _Fields) -> Iterator[Finding]:
        fmt = f.get("checkpoint.ckpt_format", "torch_dist")
        if f.get("checkpoint.async_save") is True:
            if f.entry("checkpoint.save") is not None and f.get("checkpoint.save") is None:
                yield Finding("`checkpoint.async_save` without `checkpoint.save`: Bridge stops with \"async_save is "
                              "enabled, but save is not set\"", at=f.at("checkpoint.async_save"))
            if f.get("checkpoint.use_persistent_ckpt_worker") is False:
                yield Finding("`checkpoint.async_save` requires `checkpoint.use_persistent_ckpt_worker: true` (Bridge: "
                              "\"async_save requires use_persistent_ckpt_worker=True\")",
                              at=f.at("checkpoint.use_persistent_ckpt_worker"))
            if fmt not in ("torch_dist", "fsdp_dtensor"):
                yield Finding(f"`checkpoint.async_save` with `ckpt_format: {fmt}`: Bridge stops with \"async_save is only "
                              "supported with ckpt_format='torch_dist','fsdp_dtensor'\"", at=f.at("checkpoint.ckpt_format"))
        if f.get("checkpoint.load_main_params_from_ckpt") is True and f.get("checkpoint.load_optim", True) is not False:
            yield Finding("`checkpoint.load_main_params_from_ckpt` requires `checkpoint.load_optim: false` (Bridge: "
                          "\"load_main_params_from_ckpt must be used with load_optim=False\")",
                          at=f.at("checkpoint.load_main_params_from_ckpt"))
        if f.get("checkpoint.ckpt_step") is not None and f.entry("checkpoint.load") is not None and f.get("checkpoint.load") is None:
            yield Finding("`checkpoint.ckpt_step` without `checkpoint.load`: Bridge stops with \"ckpt_step=... specified "
                          "but checkpoint.load is None\"", at=f.at("checkpoint.ckpt_step"))
        if f.get("checkpoint.also_save_hf_checkpoint") is True:
            if fmt == "fsdp_dtensor":
                yield Finding("`checkpoint.also_save_hf_checkpoint` with `ckpt_format: fsdp_dtensor` is refused by Bridge",
                              at=f.at("checkpoint.also_save_hf_checkpoint"))
            if f.get("checkpoint.non_persistent_ckpt_type") == "local":
                yield Finding("`checkpoint.also_save_hf_checkpoint` with local non-persistent checkpoints is refused by "
                              "Bridge", at=f.at("checkpoint.non_persistent_ckpt_type"))
        saves = f.get("checkpoint.save") is not None or f.get("checkpoint.load") is not None
        fsdp = f.get("ddp.use_megatron_fsdp") is True or f.get("dist.use_megatron_fsdp") is True
        if saves and fmt == "fsdp_dtensor" and not fsdp:
            yield Finding("`ckpt_format: fsdp_dtensor` without Megatron-FSDP: Bridge stops with \"fsdp_dtensor "
                          "checkpoint format only supports Megatron FSDP\"", at=f.at("checkpoint.ckpt_format"))
        if saves and fsdp and f.entry("checkpoint.ckpt_format") is not None and fmt != "fsdp_dtensor":
            yield Finding(f"Megatron-FSDP saving or loading checkpoints with `ckpt_format: {fmt}`: Bridge stops with "
                          "\"Megatron-FSDP requires the fsdp_dtensor checkpointing format!\"",
                          at=f.at("checkpoint.ckpt_format"), also=((f.at("ddp.use_megatron_fsdp", "dist.use_megatron_fsdp"),
                                                                    "Megatron-FSDP on"),))
        peft = f.entry("peft")
        peft_on = (peft is not None and peft.value is not None) or any(k.startswith(SETTING_PREFIX + "peft.")
                                                                    for k in f.spec.settings)
        if peft_on and f.get("checkpoint.pretrained_checkpoint") is None:
            yield Finding("a PEFT run without `checkpoint.pretrained_checkpoint`: Bridge stops with \"PEFT requires a "
                          "pretrained checkpoint path\"", at=f.at("peft", "checkpoint.pretrained_checkpoint"))


class FsdpSettings(BridgeRule):
    """## What it does
    Checks the data-parallel sharding settings `ConfigContainer.validate` refuses: `dist.use_megatron_fsdp`
    with `dist.use_torch_fsdp2`; Megatron-FSDP with `ddp.fsdp_manual_registration` but no `ddp.nccl_ub`,
    with `dist.use_tp_pp_dp_mapping`, or with the `optim_grads_params` strategy and
    `train.check_weight_hash_across_dp_replicas_interval`.

    ## Why is this bad?
    An `AssertionError` / `ValueError` before the first step.

    ## Example
    ```yaml
    dist:
      use_megatron_fsdp: true
      use_torch_fsdp2: true
    ```

    ## Fix
    Keep one FSDP implementation and drop the settings it does not support.
    """

    code = "TL674"
    name = "bridge-fsdp-settings"
    summary = "Megatron-FSDP / torch FSDP2 settings Megatron-Bridge refuses"

    def findings(self, f: _Fields) -> Iterator[Finding]:
        mfsdp = f.get("dist.use_megatron_fsdp") is True or f.get("ddp.use_megatron_fsdp") is True
        if f.get("dist.use_megatron_fsdp") is True and f.get("dist.use_torch_fsdp2") is True:
            yield Finding("`dist.use_megatron_fsdp` and `dist.use_torch_fsdp2` are both true: Bridge stops with "
                          "\"use_megatron_fsdp and use_torch_fsdp2 are mutually exclusive\"", at=f.at("dist.use_torch_fsdp2"))
        if not mfsdp:
            return
        if f.get("ddp.fsdp_manual_registration") is True and f.get("ddp.nccl_ub") is not True:
            yield Finding("`ddp.fsdp_manual_registration` without `ddp.nccl_ub`: Bridge stops with "
                          "\"DDP.fsdp_manual_registration requires DDP.nccl_ub!\"", at=f.at("ddp.fsdp_manual_registration"))
        if f.get("dist.use_tp_pp_dp_mapping") is True:
            yield Finding("`dist.use_tp_pp_dp_mapping` with Megatron-FSDP: \"use_tp_pp_dp_mapping is not supported with "
                          "Megatron FSDP\"", at=f.at("dist.use_tp_pp_dp_mapping"))
        if f.get("ddp.data_parallel_sharding_strategy") == "optim_grads_params" and \
                f.get("train.check_weight_hash_across_dp_replicas_interval") is not None:
            yield Finding("`train.check_weight_hash_across_dp_replicas_interval` with the `optim_grads_params` sharding "
                          "strategy is refused by Bridge", at=f.at("train.check_weight_hash_across_dp_replicas_interval"))


class ContextParallelComm(BridgeRule):
    """## What it does
    Checks `model.cp_comm_type` against `model.hierarchical_context_parallel_sizes` as
    `ConfigContainer._validate_cp_comm_type` does: a list of types has one entry per layer; `a2a+p2p` needs
    the hierarchical sizes; their product is the context-parallel size.

    ## Why is this bad?
    An `AssertionError` before the first step (Bridge's note: without the sizes, CP communication is
    silently disabled and each rank attends only to its own chunk).

    ## Example
    ```yaml
    model:
      context_parallel_size: 16
      cp_comm_type: a2a+p2p
    ```

    ## Fix
    Give `hierarchical_context_parallel_sizes` whose product is the CP size (e.g. `[8, 2]`).
    """

    code = "TL675"
    name = "bridge-context-parallel-comm"
    summary = "cp_comm_type and hierarchical_context_parallel_sizes that do not fit the context-parallel size"

    def findings(self, f: _Fields) -> Iterator[Finding]:
        cp = f.get("model.context_parallel_size", 1)
        kind = f.get("model.cp_comm_type")
        sizes = f.get("model.hierarchical_context_parallel_sizes")
        layers = f.get("model.num_layers")
        if _positive_int(cp) and cp > 1 and isinstance(kind, list) and _positive_int(layers) and len(kind) != layers:
            yield Finding(f"`model.cp_comm_type` lists {len(kind)} types for {layers} layers: Bridge stops with \"Length "
                          "of cp_comm_type ... must equal num_layers\"", at=f.at("model.cp_comm_type"))
        kinds = kind if isinstance(kind, list) else [kind or "p2p"]
        if any(isinstance(k, str) and "a2a+p2p" in k for k in kinds) and sizes is None:
            yield Finding("`model.cp_comm_type` a2a+p2p without `model.hierarchical_context_parallel_sizes`: Bridge stops "
                          "with \"hierarchical_context_parallel_sizes must be set when cp_comm_type contains 'a2a+p2p'\"",
                          at=f.at("model.cp_comm_type"))
        if isinstance(sizes, list) and sizes and all(_positive_int(s) for s in sizes) and _positive_int(cp):
            product = 1
            for s in sizes:
                product *= s
            if product != cp:
                yield Finding(f"the product of `model.hierarchical_context_parallel_sizes` {sizes} is {product}, not the "
                              f"context-parallel size {cp}", at=f.at("model.hierarchical_context_parallel_sizes"),
                              also=((f.at("model.context_parallel_size"), "context-parallel size"),))


class PackingSettings(BridgeRule):
    """## What it does
    Checks the sequence-packing settings `ConfigContainer.validate` refuses: offline and in-batch packing
    together; `offline_packing_specs` without `enable_offline_packing` (or the reverse); offline packing
    with a micro batch above 1; in-batch packing with a micro batch of 1.

    ## Why is this bad?
    A `ValueError` before the first step.

    ## Example
    ```yaml
    dataset:
      enable_in_batch_packing: true
    train:
      micro_batch_size: 1
    ```

    ## Fix
    Use one packing mode, with the micro batch it needs.
    """

    code = "TL676"
    name = "bridge-packing-settings"
    summary = "sequence-packing settings Megatron-Bridge refuses"

    def findings(self, f: _Fields) -> Iterator[Finding]:
        offline = f.get("dataset.enable_offline_packing") is True
        inbatch = f.get("dataset.enable_in_batch_packing") is True
        specs_given = any(k.startswith(SETTING_PREFIX + "dataset.offline_packing_specs.") for k in f.spec.settings)
        micro = f.get("train.micro_batch_size")
        if offline and inbatch:
            yield Finding("`dataset.enable_offline_packing` and `dataset.enable_in_batch_packing` are mutually exclusive",
                          at=f.at("dataset.enable_in_batch_packing"))
        if offline and not specs_given and f.entry("dataset.offline_packing_specs") is not None:
            yield Finding("`dataset.enable_offline_packing` without `dataset.offline_packing_specs`",
                          at=f.at("dataset.enable_offline_packing"))
        if specs_given and not offline:
            yield Finding("`dataset.offline_packing_specs` without `dataset.enable_offline_packing: true`",
                          at=f.at("dataset.enable_offline_packing", "dataset.offline_packing_specs.packed_sequence_size"))
        if offline and _positive_int(micro) and micro > 1:
            yield Finding(f"offline sequence packing with `train.micro_batch_size` {micro}: Bridge stops with \"Micro batch "
                          "size should be 1 when training with packed sequence\"", at=f.at("train.micro_batch_size"))
        if inbatch and micro == 1:
            yield Finding("in-batch packing with `train.micro_batch_size` 1: Bridge stops with \"micro_batch_size should "
                          "be greater than 1 when using enable_in_batch_packing=True\"", at=f.at("train.micro_batch_size"))


class DeviceMaxConnections(Rule):
    """## What it does
    Checks `CUDA_DEVICE_MAX_CONNECTIONS` where the run's files set it (an assignment or `export` before the
    launch in a Megatron-LM or Megatron-Bridge launch script, or a Megatron-Bridge `env_vars` entry, which an
    exported value overrides) against the layout; a run whose files do not set it is not judged (the job's
    environment may):

    * with Megatron-FSDP it must not be `1`: Megatron-LM's `validate_args` and Megatron-Bridge's
      `_validate_and_apply_megatron_fsdp_v1_configs` assert "FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or
      unset" (an error);
    * with tensor or context parallelism above 1 it should be `1` on GPUs before Blackwell, unless
      Megatron-FSDP / torch FSDP2 or `overlap_moe_expert_parallel_comm` is on: Megatron-LM's
      `validate_args` asserts it (`megatron/training/arguments.py`); Megatron-Core itself (a Bridge run) only
      warns "it is recommended to set ... CUDA_DEVICE_MAX_CONNECTIONS to 1 for maximum speedup"
      (`tensor_parallel/layers.py`), as tensor-parallel communication is then not overlapped with compute.
      An error for a Megatron-LM launch on a declared GPU before Blackwell (`--gpu`, the project's `gpu`),
      else a warning; nothing on Blackwell and later ("the requirement no longer exists").

    ## Why is this bad?
    The FSDP case stops the run before the first step; the TP/CP case stops a Megatron-LM run, and slows a
    Bridge run.

    ## Example
    ```bash
    export CUDA_DEVICE_MAX_CONNECTIONS=1
    torchrun --nproc_per_node 8 scripts/training/run_recipe.py --recipe ... ddp.use_megatron_fsdp=true
    ```

    ## Fix
    Unset it (or set 32) with FSDP; export `CUDA_DEVICE_MAX_CONNECTIONS=1` with TP or CP on Hopper and earlier.
    """

    code = "TL116"
    name = "cuda-device-max-connections"
    summary = "CUDA_DEVICE_MAX_CONNECTIONS set against what the layout needs"
    frameworks = ("megatron",)
    default_severity = Severity.WARNING
    release_dependent = True

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        setting = spec.engine.device_max_connections
        if setting is None or spec.dialect != MEGATRON_LM:
            return  # not set in the files: the job's environment (a container, the shell) may set it
        value = str(setting.value)
        unmodelled = spec.run.unmodelled.value if spec.run.unmodelled is not None else []
        fsdp = any(isinstance(u, list) and u and u[0] in ("--use-megatron-fsdp", "--use-torch-fsdp2") for u in unmodelled)
        megatron_fsdp = any(isinstance(u, list) and u and u[0] == "--use-megatron-fsdp" for u in unmodelled)
        if megatron_fsdp and value == "1":
            yield Finding("CUDA_DEVICE_MAX_CONNECTIONS=1 with Megatron-FSDP: the run stops with \"FSDP requires "
                          "CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset\"", at=setting, severity=Severity.ERROR)
            return
        if _architecture(spec, ctx) in ("blackwell", "rubin"):
            return  # "CUDA_DEVICE_MAX_CONNECTIONS requirement no longer exists since the Blackwell architecture"
        tp, cp = spec.value("parallel.tensor", 1), spec.value("parallel.context", 1)
        big = [(n, v) for n, v in (("tensor", tp), ("context", cp)) if isinstance(v, int) and v > 1]
        moe_overlap = spec.settings.get("overlap_moe_expert_parallel_comm")
        if not big or fsdp or (moe_overlap is not None and moe_overlap.value is True) or value == "1":
            return
        what = " and ".join(f"{n} parallelism {v}" for n, v in big)
        gpu = _architecture(spec, ctx)
        # validate_args asserts it for a Megatron-LM launch on a GPU before Blackwell; Bridge never calls validate_args
        certain = spec.format != FORMAT and gpu in PRE_BLACKWELL
        where = f"on {gpu} GPUs" if gpu else "on GPUs before Blackwell"
        yield Finding(f"CUDA_DEVICE_MAX_CONNECTIONS={value} with {what}: {where}, Megatron-LM stops with \"Using tensor "
                      "model parallelism or context parallelism require setting the environment variable "
                      "CUDA_DEVICE_MAX_CONNECTIONS to 1\" and Megatron-Core (a Bridge run) does not overlap "
                      "tensor-parallel communication with compute", at=setting,
                      severity=Severity.ERROR if certain else None,
                      also=((spec.parallel.tensor if isinstance(tp, int) and tp > 1 else spec.parallel.context, what),),
                      fix="export CUDA_DEVICE_MAX_CONNECTIONS=1 before the launch (Hopper and earlier)")


PRE_BLACKWELL = frozenset({"volta", "turing", "ampere", "ada", "hopper"})
"""NVIDIA architectures below compute capability 10 (``get_device_arch_version() < 10`` in validate_args)."""


def _architecture(spec: TrainingSpec, ctx: RuleContext) -> str | None:
    """The architecture of the GPU the run is declared on (the spec's, from the launcher or --gpu, else the
    project config's); None when no GPU is declared or it is not in the session's table."""
    from trainlint.catalog import CatalogError, find_gpu
    from trainlint.provenance import Origin

    gpu = spec.cluster.gpu
    name = gpu.value if gpu is not None and gpu.provenance.origin is not Origin.ASSUMED else None
    if not isinstance(name, str):
        estimation = getattr(ctx.project, "estimation", None)
        name = getattr(estimation, "gpu", None)
    if not isinstance(name, str):
        return None
    try:
        return find_gpu(name, ctx.gpus).architecture or None
    except CatalogError:
        return None


RULES: list[type[Rule]] = [TrainingLength, SequenceLengths, PrecisionFlags, CheckpointSettings, FsdpSettings,
                           ContextParallelComm, PackingSettings, DeviceMaxConnections]
