"""The GPU catalog shipped with trainlint, and resolving catalog names the way people write them.

The data lives in ``gpus.json`` of the ``trainlint.data`` package (``linter/data/`` in the source
tree); every figure there carries its source. This module
only types it and resolves names ("H100", "NVIDIA A100-SXM4-80GB"). The model presets
(``models.json``), local Hugging Face ``config.json`` files and parameter counts are
:mod:`trainlint.presets.models`, which shares the name lookup: a check that names no model (most of them)
never imports it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from trainlint.files.did_you_mean import did_you_mean

__all__ = [
    "GPU",
    "CatalogError",
    "find_gpu",
    "gpu_from_dict",
    "gpu_references",
    "load_gpus",
    "name_collisions",
]

DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")

# Names that are really ambiguous: guessing would silently halve or double the memory.
_AMBIGUOUS_GPU_NAMES: dict[str, tuple[str, ...]] = {
    "a100": ("a100-40gb", "a100-80gb"),
    "nvidiaa100": ("a100-40gb", "a100-80gb"),
}


class CatalogError(ValueError):
    """Unknown or ambiguous catalog name, or an unreadable / incomplete HF config.

    ``suggestions`` holds did-you-mean candidates so callers can turn this into a diagnostic.
    """

    def __init__(self, message: str, suggestions: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.suggestions: tuple[str, ...] = tuple(suggestions)


# --------------------------------------------------------------------------- the GPU


@dataclass(frozen=True)
class GPU:
    """One accelerator. Throughputs are dense peaks in TFLOP/s (see gpus.json `conventions`)."""

    id: str
    name: str
    vendor: str
    architecture: str
    form_factor: str
    memory_gb: float
    memory_gib: float | None
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    tf32_tflops: float | None
    fp32_tflops: float | None
    hbm_bandwidth_tbps: float | None
    intra_node_bw_gbps: float | None  # per GPU, one direction
    inter_node_bw_gbps: float | None  # per GPU, one direction, for inter_node_system
    gpus_per_node: int | None
    supports_bf16: bool
    supports_fp8: bool
    intra_node_link: str | None = None
    inter_node_system: str | None = None
    peak_tflops_sparse: Mapping[str, float] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    nvlink_domain_gpus: int | None = None
    """GPUs joined by NVLink beyond one node (GB200/GB300 NVL72: 72 GPUs, 4 per compute tray); None: the node."""
    power_limit_w: float | None = None
    """A power cap below the part's maximum (its datasheet peaks are at ``max_power_w``); None: uncapped."""
    max_power_w: float | None = None
    matmul_achievable_fraction: float | None = None
    """Measured maximum achievable 16-bit matmul throughput over the dense 16-bit peak (MAMF / peak,
    gpus.json ``sources``); None: not measured."""
    matmul_achievable_fraction_fp8: float | None = None
    """The same for FP8 GEMMs over the dense FP8 peak; None: not measured."""
    attention_kernel_speedup: float | None = None
    """Fused-attention kernel throughput over the same architecture's base part at the same tensor peak
    (Blackwell Ultra's doubled exponential throughput for the softmax, gpus.json ``sources``); None: 1."""

    @property
    def nvlink_gpus(self) -> int:
        """GPUs a collective reaches over NVLink: the NVLink domain, else the node."""
        return int(self.nvlink_domain_gpus or self.gpus_per_node or 8)

    def peak_tflops(self, dtype: str) -> float | None:
        """Dense peak for ``bf16``/``fp16``/``fp8``/``tf32``/``fp32`` (None if unsupported)."""
        key = dtype.lower().replace("bfloat16", "bf16").replace("float16", "fp16")
        if key not in DTYPES:
            raise CatalogError(f"unknown data type {dtype!r}; expected one of {', '.join(DTYPES)}")
        value: float | None = getattr(self, f"{key}_tflops")
        return value

    @property
    def memory_bytes(self) -> float:
        """Device memory the driver reports (falls back to the marketed figure read as GiB)."""
        gib = self.memory_gib if self.memory_gib is not None else self.memory_gb
        return gib * 2**30


# --------------------------------------------------------------------------- loading


def read_package_json(name: str) -> dict[str, Any]:
    local = Path(__file__).resolve().parents[1] / "data" / name
    if local.is_file():  # an ordinary install: no need for importlib.resources (~3 ms to import)
        text = local.read_text(encoding="utf-8")
    else:  # pragma: no cover - a zipped install
        from importlib import resources

        text = resources.files("trainlint.data").joinpath(name).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def gpu_from_dict(gid: str, d: Mapping[str, Any]) -> GPU:
    """Build a GPU from a catalog entry (also for plugins adding their own hardware)."""
    return GPU(
        id=gid,
        name=d["name"],
        vendor=d.get("vendor", ""),
        architecture=d.get("architecture", ""),
        form_factor=d.get("form_factor", ""),
        memory_gb=float(d["memory_gb"]),
        memory_gib=opt_float(d.get("memory_gib")),
        bf16_tflops=opt_float(d.get("bf16_tflops")),
        fp16_tflops=opt_float(d.get("fp16_tflops")),
        fp8_tflops=opt_float(d.get("fp8_tflops")),
        tf32_tflops=opt_float(d.get("tf32_tflops")),
        fp32_tflops=opt_float(d.get("fp32_tflops")),
        hbm_bandwidth_tbps=opt_float(d.get("hbm_bandwidth_tbps")),
        intra_node_bw_gbps=opt_float(d.get("intra_node_bw_gbps")),
        inter_node_bw_gbps=opt_float(d.get("inter_node_bw_gbps")),
        gpus_per_node=d.get("gpus_per_node"),
        supports_bf16=bool(d.get("supports_bf16", d.get("bf16_tflops") is not None)),
        supports_fp8=bool(d.get("supports_fp8", d.get("fp8_tflops") is not None)),
        intra_node_link=d.get("intra_node_link"),
        inter_node_system=d.get("inter_node_system"),
        peak_tflops_sparse={k: float(v) for k, v in (d.get("peak_tflops_sparse") or {}).items()},
        aliases=tuple(d.get("aliases", ())),
        sources=dict(d.get("sources", {})),
        notes=tuple(d.get("notes", ())),
        nvlink_domain_gpus=d.get("nvlink_domain_gpus"),
        power_limit_w=opt_float(d.get("power_limit_w")),
        max_power_w=opt_float(d.get("max_power_w")),
        matmul_achievable_fraction=opt_float(d.get("matmul_achievable_fraction")),
        matmul_achievable_fraction_fp8=opt_float(d.get("matmul_achievable_fraction_fp8")),
        attention_kernel_speedup=opt_float(d.get("attention_kernel_speedup")),
    )


@lru_cache(maxsize=1)
def _gpus() -> dict[str, GPU]:
    raw = read_package_json("gpus.json")["gpus"]
    return {gid: gpu_from_dict(gid, entry) for gid, entry in raw.items()}


def load_gpus() -> dict[str, GPU]:
    """The shipped GPU catalog by id (a fresh dict: callers may add entries)."""
    return dict(_gpus())


def gpu_references() -> dict[str, dict[str, str]]:
    """Reference key -> {title, url} for the citations in the GPUs' ``sources`` maps."""
    refs: dict[str, dict[str, str]] = read_package_json("gpus.json")["references"]
    return refs


# --------------------------------------------------------------------------- name lookup


def _norm(name: str) -> str:
    """Compare names without case, spaces, dashes, underscores or slashes.

    Dots stay: "gpt3-1.3b" and "gpt3-13b" are different models.
    """
    return re.sub(r"[^a-z0-9.]", "", name.lower())


def _name_variants(name: str) -> list[str]:
    """The name, then without an org/ prefix, then without a trailing -hf."""
    out = [name.strip()]
    base = out[0].rsplit("/", 1)[-1]
    if base != out[0]:
        out.append(base)
    for item in list(out):
        stripped = re.sub(r"[-_]hf$", "", item, flags=re.IGNORECASE)
        if stripped != item:
            out.append(stripped)
    return out


def _index(entries: Mapping[str, Any]) -> dict[str, str]:
    """Normalized name -> id. The first entry wins; tests keep the shipped names collision-free."""
    index: dict[str, str] = {}
    for key, entry in entries.items():
        for name in (key, entry.name, *entry.aliases):
            index.setdefault(_norm(name), key)
    return index


def name_collisions(entries: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(normalized name, id, other id) for names that resolve to two entries."""
    seen: dict[str, str] = {}
    clashes: list[tuple[str, str, str]] = []
    for key, entry in entries.items():
        for name in (key, entry.name, *entry.aliases):
            norm = _norm(name)
            if seen.setdefault(norm, key) != key:
                clashes.append((norm, seen[norm], key))
    return clashes


def lookup_name(name: str, entries: Mapping[str, Any], kind: str, ambiguous: Mapping[str, tuple[str, ...]]) -> str:
    if name in entries:
        return name
    index = _index(entries)
    for variant in _name_variants(name):
        norm = _norm(variant)
        if norm in ambiguous:
            choices = ambiguous[norm]
            raise CatalogError(
                f"{kind} {name!r} is ambiguous: say which one ({', '.join(choices)})", choices
            )
        if norm in index:
            return index[norm]
    candidates = list(entries) + [a for e in entries.values() for a in e.aliases]
    found = did_you_mean(name, candidates, limit=3)
    ids = list(dict.fromkeys(index[_norm(c)] for c in found))
    hint = f" (did you mean {', '.join(f'`{i}`' for i in ids)}?)" if ids else ""
    raise CatalogError(f"unknown {kind} {name!r}{hint}; known: {', '.join(sorted(entries))}", ids)


def find_gpu(name: str, gpus: Mapping[str, GPU] | None = None) -> GPU:
    """Resolve "H100", "h100-80gb", "NVIDIA A100-SXM4-80GB" ... to a catalog GPU."""
    table = gpus if gpus is not None else _gpus()
    return table[lookup_name(name, table, "GPU", _AMBIGUOUS_GPU_NAMES)]
