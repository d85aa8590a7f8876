"""TL689: offline sequence-packing specs Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, number, stops


class OfflinePackingSpecs(BridgeRule):
    """## What it does
    Checks `dataset.offline_packing_specs` with offline packing on: a `packed_sequence_size` not above
    0, `pad_cu_seqlens` without the dataset's `pad_to_max_length`, CUDA graphs (full-iteration or
    Transformer Engine) without `pad_to_max_length`, and graphs that capture packed attention without
    `pad_cu_seqlens`.

    ## Why is this bad?
    A `ValueError` before the first step.

    ## Example
    ```yaml
    dataset:
      enable_offline_packing: true
      offline_packing_specs:
        packed_sequence_size: 8192
        pad_cu_seqlens: true
    ```

    ## Fix
    Set `dataset.pad_to_max_length: true` (or `dataset.dataset_kwargs.pad_to_max_length`) with padded
    boundaries or CUDA graphs, and `pad_cu_seqlens: true` with graphs that capture attention.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:1283-1310, 1600-1604` @ 067f987.
    """

    code = "TL689"
    name = "bridge-offline-packing-specs"
    summary = "offline sequence-packing specs Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        spec = "dataset.offline_packing_specs"
        if f.get("dataset.enable_offline_packing") is not True:
            return
        size = f.get(f"{spec}.packed_sequence_size")
        if number(size) and size <= 0:
            yield Finding(f"`{spec}.packed_sequence_size` is {size}: "
                          + stops("offline_packing_specs.packed_sequence_size must be greater than 0."),
                          at=f.at(f"{spec}.packed_sequence_size"))
        impl = f.get("model.cuda_graph_impl")
        modules = f.get("model.cuda_graph_modules")
        attention = impl == "full_iteration" or (impl == "transformer_engine" and (
            not modules or "attn" in (modules if isinstance(modules, list) else [modules])))
        if attention and f.entry(f"{spec}.pad_cu_seqlens") is not None and f.get(f"{spec}.pad_cu_seqlens") is False:
            yield Finding(f"`model.cuda_graph_impl` {impl} captures packed attention without `{spec}.pad_cu_seqlens`: " + stops(
                "Packed attention CUDA graphs require offline_packing_specs.pad_cu_seqlens=True. Enable it for "
                "full-iteration, whole-layer, or attention-scoped capture."), at=f.at(f"{spec}.pad_cu_seqlens"))
        known, pad = f.known("dataset.pad_to_max_length", False)
        if not known or pad is True or f.get("dataset.dataset_kwargs.pad_to_max_length") is True:
            return
        if f.get(f"{spec}.pad_cu_seqlens") is True:
            yield Finding(f"`{spec}.pad_cu_seqlens` without `dataset.pad_to_max_length`: "
                          + stops("offline_packing_specs.pad_cu_seqlens=True requires dataset pad_to_max_length=True."),
                          at=f.at(f"{spec}.pad_cu_seqlens"))
        if impl in ("full_iteration", "transformer_engine"):
            yield Finding(f"offline packing with `model.cuda_graph_impl` {impl} without `dataset.pad_to_max_length`: "
                          + stops("Offline packing with CUDA graphs requires dataset pad_to_max_length=True."),
                          at=f.at("model.cuda_graph_impl"))
