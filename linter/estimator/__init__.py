"""The estimator: memory per GPU, step time, tokens/s, MFU and the bound of a training run.

``estimate(spec, context)`` is pure (no I/O); :func:`build_context` gathers the GPU, the
cluster size and the model from CLI flags, the project config, the spec and defaults.
"""

from trainlint.estimator.context import ContextError, EstimateContext, build_context
from trainlint.models import fill_model  # the estimator package's API, as before (defined with the model presets)
from trainlint.estimator.core import Estimate, InvariantError, MissingInputs, estimate, estimate_inputs
from trainlint.estimator.inputs import Assumption, Inputs, MissingInput, resolve

__all__ = ["Assumption", "ContextError", "Estimate", "EstimateContext", "Inputs", "InvariantError", "MissingInput", "MissingInputs",
           "build_context", "estimate", "estimate_inputs", "fill_model", "resolve"]
