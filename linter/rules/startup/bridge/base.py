"""What Megatron-Bridge's rules share: a run's ConfigContainer fields as written (with Bridge's
defaults), the rule base class, and the GPU architecture a run is declared on."""

from __future__ import annotations
from typing import Any, Iterator
from trainlint.core.provenance import Value
from trainlint.core.framework import CAP_MEGATRON_CORE
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.core.spec import TrainingSpec
from trainlint.adapters.bridge.names import FORMAT, SETTING_PREFIX

CONFIG_PY = "src/megatron/bridge/training/config.py"


class Fields:
    """A Bridge run's fields as written, with Bridge's defaults."""

    def __init__(self, spec: TrainingSpec) -> None:
        self.spec = spec

    def entry(self, path: str) -> Value | None:
        return self.spec.settings.get(SETTING_PREFIX + path)

    def get(self, path: str, fallback: Any = None) -> Any:
        entry = self.entry(path)
        return fallback if entry is None else entry.value

    def known(self, path: str, default: Any) -> tuple[bool, Any]:
        """(known, value): the value written (or the recipe's), else ``default`` (the dataclass default of
        the field) when nothing sets it; unknown when a recipe computes it."""
        entry = self.entry(path)
        if entry is not None:
            return True, entry.value
        if SETTING_PREFIX + path in self.spec.unresolved:
            return False, None
        return True, default

    def written(self, path: str) -> bool:
        """The field is set (in the file, an override or the recipe), resolved or not."""
        return self.entry(path) is not None or SETTING_PREFIX + path in self.spec.unresolved

    def env(self, name: str) -> Value | None:
        """An environment variable the ConfigContainer's ``env_vars`` (or an ``export`` before the launch) sets."""
        return self.entry(f"env_vars.{name}")

    def at(self, *paths: str) -> Value | None:
        return next((e for e in (self.entry(p) for p in paths) if e is not None), None)


def is_bridge(spec: TrainingSpec) -> bool:
    """The run is read from a Megatron-Bridge ConfigContainer (its fields are in the settings)."""
    return spec.format == FORMAT


class BridgeRule(Rule):
    requires = frozenset({CAP_MEGATRON_CORE})  # a Megatron-Core run, whatever builds its configs
    release_dependent = True
    """Quoted from Megatron-Bridge's config.py at one commit; another release may check differently."""
    gate = staticmethod(is_bridge)
    """Not a Bridge run (a Megatron-LM script): :meth:`check` yields nothing."""

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if not is_bridge(spec):
            return iter(())
        return self.findings(Fields(spec))

    def findings(self, f: Fields) -> Iterator[Finding]:  # pragma: no cover - interface
        raise NotImplementedError


def stops(says: str) -> str:
    """How a finding quotes Bridge's refusal."""
    return f"Bridge stops with \"{says}\""


def number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def positive_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


PRE_BLACKWELL = frozenset({"volta", "turing", "ampere", "ada", "hopper"})
"""NVIDIA architectures below compute capability 10 (``get_device_arch_version() < 10`` in validate_args)."""


def architecture(spec: TrainingSpec, ctx: RuleContext) -> str | None:
    """The architecture of the GPU the run is declared on (the spec's, from the launcher or --gpu, else the
    project config's); None when no GPU is declared or it is not in the session's table."""
    from trainlint.presets.catalog import CatalogError, find_gpu
    from trainlint.core.provenance import Origin

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
