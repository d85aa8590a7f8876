"""Which framework variant and version a config is checked against, and how trainlint knows.

Kept free of heavy imports: :mod:`trainlint.core.spec` refers to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.core.results import FileResult


class TargetOrigin(str, Enum):
    """Where the target came from, in the order trainlint looks."""

    PROJECT_CONFIG = "project-config"
    """``framework = {megatron = "core_v0.8.0" | "path/to/checkout"}`` in the project config."""
    SOURCE_BESIDE = "source-beside"
    """The framework's source found in a folder above the config (a fork's checkout, a submodule)."""
    INSTALLED = "installed"
    """The package installed in the active Python environment (read, never imported)."""
    ASSUMED = "assumed"
    """Nothing says: upstream at the commit trainlint's own argument table was read from."""


@dataclass(frozen=True)
class FrameworkTarget:
    """The framework variant and version a config is checked against, how trainlint found it, and its argument catalog."""

    family: str
    """megatron | neox | deepspeed"""
    variant: str
    """e.g. ``Megatron-LM``, ``Megatron-DeepSpeed``, ``GPT-NeoX``, ``DeepSpeed``, or a fork's folder name."""
    version: str | None
    """A release (``core_v0.8.0``), or None for a checkout of unknown version."""
    origin: TargetOrigin
    path: str | None = None
    """The source read (the checkout's root), when there is one."""
    commit: str | None = None
    """The commit a shipped catalog was read from."""
    catalog: Any = field(default=None, compare=False, repr=False)
    """The :class:`~trainlint.frameworks.catalog.ArgCatalog` (None: trainlint's built-in table)."""
    read_seconds: float | None = field(default=None, compare=False)
    """Seconds spent reading the source on this check (None when the cache had it)."""
    note: str = ""
    """How the target was found, for messages (``megatron/training/arguments.py found above the config``)."""

    @property
    def known(self) -> bool:
        """The config's framework is known (not assumed): its unknown names may be errors."""
        return self.origin is not TargetOrigin.ASSUMED

    @property
    def complete(self) -> bool:
        return self.catalog is None or not self.catalog.partial

    def describe(self) -> str:
        """``the fork at ../Megatron-LM`` / ``Megatron-LM core_v0.8.0`` / ``upstream Megatron-LM at d98e8a64dd``."""
        if self.origin is TargetOrigin.ASSUMED:
            return f"upstream {self.variant} at {self.commit}" if self.commit else f"upstream {self.variant}"
        name = f"{self.variant} {self.version}" if self.version else self.variant
        if (self.path and self.origin is not TargetOrigin.PROJECT_CONFIG) or (self.path and not self.version):
            return f"{name} (source at {self.path})"
        return name

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"family": self.family, "variant": self.variant, "origin": self.origin.value}
        if self.version:
            out["version"] = self.version
        if self.commit:
            out["commit"] = self.commit
        if self.path:
            out["path"] = self.path
        if self.note:
            out["note"] = self.note
        return out


def how_to_point(family: str) -> str:
    """How to state the target when it is assumed (the file's statement and a few findings say it)."""
    return ("if it runs on a fork or another release, give its source with --framework-source PATH (or "
            "framework-source = \"PATH\" in the project config), or set "
            + _setting_example(family))


def _setting_example(family: str) -> str:
    """The project config line that states ``family``'s target (its framework's ``setting_example``)."""
    from trainlint.frameworks.families import family as framework_of_family

    found = framework_of_family(family)
    example = found.setting_example if found is not None and found.setting_example else \
        f'framework = {{{{{family} = "<path to the checkout, or a release>"}}}}'
    return example.format()


def statement(target: FrameworkTarget) -> str:
    """What a file was judged against, said once per file in every output (text: a line before its
    findings; JSON: the file's ``target``; SARIF: the artifact's ``properties.target``; the language
    server: a hover on line 1)."""
    if target.origin is TargetOrigin.ASSUMED:
        why = target.note if "pinned at" in target.note else f"no {target.variant} source in the project and none stated"
        return f"judged against {target.describe()}, assumed: {why}; {how_to_point(target.family)}"
    how = {TargetOrigin.PROJECT_CONFIG: "stated", TargetOrigin.SOURCE_BESIDE: "found in the project",
           TargetOrigin.INSTALLED: "the installed package"}[target.origin]
    if target.origin is TargetOrigin.PROJECT_CONFIG and target.note:
        how = f"stated by {target.note}"
    elif target.origin is TargetOrigin.SOURCE_BESIDE and target.note:
        how = target.note
    return f"judged against {target.describe()}, {how}"


def target_of(result: FileResult) -> dict | None:
    """The target the result's runs were judged against (the first run's that has one), as a dict
    with its one-line ``statement``."""
    if result.target is not None:
        return result.target
    for spec in result.specs:
        target = getattr(spec, "target", None)
        if target is not None:
            return {**target.to_dict(), "statement": statement(target)}
    return None
