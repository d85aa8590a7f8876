"""TL692: an HF checkpoint export without an HF source, which Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, stops


class HfExportSource(BridgeRule):
    """## What it does
    Checks `checkpoint.also_save_hf_checkpoint` when none of the places Bridge takes the HF config and
    tokenizer files from is set: `checkpoint.hf_source_path`, `model.hf_model_id`,
    `tokenizer.tokenizer_model`. It speaks only when `model.hf_model_id` is written empty (a
    `to_yaml` dump, `run_config.yaml`, or an override): a recipe's model provider usually gets it from
    `AutoBridge` code trainlint does not run.

    ## Why is this bad?
    A `ValueError` in `ConfigContainer.validate`, before the first step.

    ## Example
    ```yaml
    model:
      hf_model_id: null
    checkpoint:
      also_save_hf_checkpoint: true
    ```

    ## Fix
    Set `checkpoint.hf_source_path` (an HF model id or folder), or `model.hf_model_id`.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:1200-1216` @ 067f987
      (`ConfigContainer._validate_hf_checkpoint_export_source`).
    """

    code = "TL692"
    name = "bridge-hf-export-source"
    summary = "an HF checkpoint export without an HF source, which Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        if f.get("checkpoint.also_save_hf_checkpoint") is not True:
            return
        model_id = f.entry("model.hf_model_id")
        if model_id is None or model_id.value:
            return  # unwritten: a recipe's provider sets it with code; written: a source
        for path in ("checkpoint.hf_source_path", "tokenizer.tokenizer_model"):
            known, value = f.known(path, None)  # both default to None
            if not known or value:
                return
        yield Finding("`checkpoint.also_save_hf_checkpoint` without `checkpoint.hf_source_path`, `model.hf_model_id` "
                      "or `tokenizer.tokenizer_model`: " + stops(
                          "also_save_hf_checkpoint=True requires an HF source to template config/tokenizer files."),
                      at=f.at("checkpoint.also_save_hf_checkpoint"), also=((model_id, "no HF model id"),))
