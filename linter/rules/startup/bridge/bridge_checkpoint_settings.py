"""TL673: checkpoint settings Megatron-Bridge refuses at start-up"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.adapters.bridge.names import SETTING_PREFIX
from trainlint.rules.startup.bridge.base import BridgeRule, Fields


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

    def findings(self, f: Fields) -> Iterator[Finding]:
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
