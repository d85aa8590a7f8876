"""TL685: CUDA-graph settings Megatron-Bridge refuses (RNG tracker, NaN check with a full-iteration graph)"""

from __future__ import annotations

from typing import Any, Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, stops


def _names(value: Any) -> set[str]:
    items = value if isinstance(value, (list, tuple)) else ([] if value is None else [value])
    return {str(v).lower() for v in items}


class CudaGraphSettings(BridgeRule):
    """## What it does
    Checks the CUDA-graph settings Bridge refuses: CUDA graphs (`model.cuda_graph_impl` other than
    `none`) with `model.use_te_rng_tracker: false` (`GPTModelProvider.finalize`), and a full-iteration
    graph (`cuda_graph_impl: full_iteration`, or `local` with a `full_iteration` scope) with
    `rerun_state_machine.check_for_nan_in_loss` on (its default).

    ## Why is this bad?
    An `AssertionError` before the first step.

    ## Example
    ```yaml
    model:
      cuda_graph_impl: full_iteration
      use_te_rng_tracker: true
    ```
    (`rerun_state_machine.check_for_nan_in_loss` is on by default.)

    ## Fix
    Set `model.use_te_rng_tracker: true` with CUDA graphs, and
    `rerun_state_machine.check_for_nan_in_loss: false` with a full-iteration graph.

    ## References
    - Megatron-Bridge `src/megatron/bridge/models/gpt_provider.py:234-238` @ 067f987;
      `src/megatron/bridge/training/config.py:1507-1513`; `src/megatron/bridge/utils/cuda_graph.py:121`
      (`is_full_iteration_cuda_graph`); the default from Megatron-LM
      `megatron/training/config/resilience_config.py:25` @ 2a75ac1 (Bridge's pin).
    """

    code = "TL685"
    name = "bridge-cuda-graph-settings"
    summary = "CUDA-graph settings Megatron-Bridge refuses (RNG tracker, NaN check with a full-iteration graph)"

    def findings(self, f: Fields) -> Iterator[Finding]:
        impl = f.get("model.cuda_graph_impl")
        if not isinstance(impl, str) or impl == "none":
            return
        if f.entry("model.use_te_rng_tracker") is not None and f.get("model.use_te_rng_tracker") is False:
            yield Finding(f"`model.cuda_graph_impl` {impl} with `model.use_te_rng_tracker: false`: " + stops(
                "Transformer engine's RNG tracker is required for cudagraphs, it can be enabled with "
                "use_te_rng_tracker=True'."), at=f.at("model.use_te_rng_tracker"), also=((f.at("model.cuda_graph_impl"), "CUDA graphs"),))
        full = impl == "full_iteration" or (impl == "local" and "full_iteration" in
                                            _names(f.get("model.cuda_graph_modules")) | _names(f.get("model.cuda_graph_scope")))
        known, nan_check = f.known("rerun_state_machine.check_for_nan_in_loss", True)
        if full and known and nan_check is True:
            yield Finding("a full-iteration CUDA graph with `rerun_state_machine.check_for_nan_in_loss` on"
                          f"{'' if f.entry('rerun_state_machine.check_for_nan_in_loss') else ' (its default)'}: " + stops(
                              "check_for_nan_in_loss must be disabled when using full_iteration CUDA graph. Set "
                              "rerun_state_machine.check_for_nan_in_loss=False."),
                          at=f.at("rerun_state_machine.check_for_nan_in_loss", "model.cuda_graph_impl"))
