"""TL2xx: memory per GPU against the GPU's capacity."""

from __future__ import annotations


from trainlint.estimator import coefficients as C
from trainlint.core.provenance import Origin


def _gib(x: float) -> str:
    return f"{x / C.GIB:.1f}"


def _gpu_assumed(est) -> bool:
    """True when no flag, project config or file named the GPU (the estimate used the default)."""
    return any(a.field == "cluster.gpu" and a.origin == Origin.ASSUMED.value for a in est.assumptions)
