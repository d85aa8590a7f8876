"""The seeds' first-order formulas, as closed forms.

Used by the tests (they must reproduce the seeds' worked examples) and by
``benchmarks/accuracy.py`` as the baselines trainlint must beat. trainlint's own estimator
(:mod:`trainlint.estimator.memory`, :mod:`trainlint.estimator.performance`) generalises them.

Notation: s sequence, b micro-batch, h hidden, a heads, L layers, t tensor parallel.
"""

from __future__ import annotations

from dataclasses import dataclass


def korthikanti_layer_bytes(s: int, b: int, h: int, a: int, t: int = 1, *, sequence_parallel: bool = False,
                            recompute: str = "none") -> float:
    """Activation bytes of one GPT-3 layer (Korthikanti et al. 2022, Table 2).

    none: sbh(10 + 24/t + 5as/(ht)); with SP: sbh(34/t + 5as/(ht));
    selective: the 5as/h term disappears; full: 2sbh (only the layer input; /t with SP).
    """
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / (t if sequence_parallel else 1)
    attention_scores = 5 * a * s / (h * t) if recompute == "none" else 0.0
    if sequence_parallel:
        return sbh * (34 / t + attention_scores)
    return sbh * (10 + 24 / t + attention_scores)


def seed000_layer_activation_bytes(s: int, b: int, h: int, a: int) -> float:
    """Seed 000: M_act^layer ~ BSH (34 + 5 AS/H)."""
    return b * s * h * (34 + 5 * a * s / h)


@dataclass(frozen=True)
class StaticMemory:
    params: float
    grads: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.params + self.grads + self.optimizer


def static_memory_bytes(num_params: float, *, zero_stage: int = 0, shards: int = 1, model_parallel: int = 1,
                        bytes_params: float = 2, bytes_grads: float = 2, bytes_optimizer: float = 12) -> StaticMemory:
    """Seed 000/001: 2 + 2 + 12 bytes per parameter, split over TP x PP (``model_parallel``),
    then ZeRO shards optimizer (stage >= 1), gradients (>= 2), parameters (3) over ``shards``."""
    per = num_params / model_parallel
    return StaticMemory(
        params=bytes_params * per / (shards if zero_stage >= 3 else 1),
        grads=bytes_grads * per / (shards if zero_stage >= 2 else 1),
        optimizer=bytes_optimizer * per / (shards if zero_stage >= 1 else 1),
    )


def seed000_step_time(num_params: float, tokens_per_step: float, num_gpus: int, peak_flops: float,
                      mfu: float = 0.45) -> float:
    """Seed 000: F_step = 6 Psi B S; time = F_step / (P x peak x MFU)."""
    return 6 * num_params * tokens_per_step / (num_gpus * peak_flops * mfu)


@dataclass(frozen=True)
class Roofline:
    tokens_per_s_per_gpu: float
    bound: str
    r_comp: float
    r_mem: float
    r_net: float


def seed002_roofline(num_params: float, layers: int, hidden: int, global_tokens: float, dp: int, *,
                     peak_flops: float, hbm_bytes_per_s: float, nic_bytes_per_s: float | None,
                     recompute_mult: float = 1.0, alpha_opt: float = 16.0, c_act: float = 6.0,
                     bytes_per_elem: int = 2, utilization: float = 0.75, k_flops: float = 6.0) -> Roofline:
    """Seed 002: r_gpu = u x min(C/F_tok, W_HBM/M_tok, W_NIC/M_net)."""
    f_tok = recompute_mult * k_flops * num_params
    m_tok = alpha_opt * num_params / global_tokens + c_act * layers * hidden * bytes_per_elem
    r_comp = peak_flops / f_tok
    r_mem = hbm_bytes_per_s / m_tok
    r_net = float("inf")
    if dp > 1 and nic_bytes_per_s:
        m_net = 2.0 * num_params * bytes_per_elem / global_tokens
        r_net = nic_bytes_per_s / m_net
    rates = {"compute": r_comp, "memory": r_mem, "network": r_net}
    bound = min(rates, key=lambda k: rates[k])
    return Roofline(utilization * rates[bound], bound, r_comp, r_mem, r_net)


def narayanan_flops_per_step(batch: int, seq: int, layers: int, hidden: int, vocab: int, *,
                             recompute_full: bool) -> float:
    """Narayanan et al. 2021 Eq. 3 (96 with full recompute, else 72): the FLOP convention of
    Megatron-LM's published TFLOP/s (non-causal attention, logits included)."""
    k = 96 if recompute_full else 72
    return k * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / ((16 if recompute_full else 12) * layers * hidden))
