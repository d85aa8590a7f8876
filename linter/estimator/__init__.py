"""The estimator: memory per GPU, step time, tokens/s, MFU and the bound of a training run.

``estimate(spec, context)`` is pure (no I/O); :func:`build_context` gathers the GPU, the
cluster size and the model from CLI flags, the project config, the spec and defaults.

The names below are imported from their modules when first asked for (PEP 562): a session
needs the context (the GPU table) at start-up, the model of the estimate only when a rule
that reads the estimate runs (a check with ``--select TL1`` never imports it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.estimator.context import ContextError, EstimateContext, build_context
    from trainlint.estimator.core import Estimate, InvariantError, MissingInputs, estimate, estimate_inputs
    from trainlint.estimator.inputs import Assumption, Inputs, MissingInput, resolve
    from trainlint.presets.models import fill_model  # the estimator package's API, as before (defined with the model presets)

_EXPORTS = {
    "ContextError": "trainlint.estimator.context", "EstimateContext": "trainlint.estimator.context",
    "build_context": "trainlint.estimator.context",
    "fill_model": "trainlint.presets.models",
    "Estimate": "trainlint.estimator.core", "InvariantError": "trainlint.estimator.core",
    "MissingInputs": "trainlint.estimator.core", "estimate": "trainlint.estimator.core",
    "estimate_inputs": "trainlint.estimator.core",
    "Assumption": "trainlint.estimator.inputs", "Inputs": "trainlint.estimator.inputs",
    "MissingInput": "trainlint.estimator.inputs", "resolve": "trainlint.estimator.inputs",
}

__all__ = ["Assumption", "ContextError", "Estimate", "EstimateContext", "Inputs", "InvariantError", "MissingInput", "MissingInputs",
           "build_context", "estimate", "estimate_inputs", "fill_model", "resolve"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once
    return value
