"""The releases a launch check belongs to, and whether the release a run is checked against makes it.

A framework's start-up checks change with every release: DeepSpeed validated the dynamic loss-scale
window only from 0.19.3, Megatron-Core's MTP checks arrived with the MTP options. A rule that
quotes such a check says where it applies (:class:`Releases`) and is skipped when the run is
checked against a stated or located release outside that range (a project's ``framework =
{deepspeed = "0.14.0"}``, the installed package). A checkout of unknown version and the assumed
upstream (the commit the rule was read from) keep it: its severity then follows the policy for an
assumed release (see :mod:`trainlint.rules.startup.megatron.base`).
"""

from __future__ import annotations

import re
from functools import cache
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

from trainlint.rules import Finding, Rule, RuleContext
from trainlint.core.spec import TrainingSpec


@cache
def _numbers() -> re.Pattern[str]:
    # compiled when a release is first compared, not when a check imports the rules
    return re.compile(r"(\d+(?:\.\d+)*)")


UNRELEASED = "main"
"""``first`` of a check only the upstream branch makes (after the newest release)."""


def release_key(version: str | None) -> tuple[int, ...] | None:
    """``core_v0.14.0`` / ``v0.19.3`` / ``0.9.0`` / ``v2.0`` -> (0, 14, 0) ...; None when the version
    names no release (``main``, a branch, a checkout of unknown version): the newest code."""
    if not version:
        return None
    match = _numbers().search(version)
    if match is None:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


@dataclass(frozen=True)
class Releases:
    """The releases of one framework that make a check: ``first`` and ``last`` inclusive, None for
    open ends. Versions as the framework tags them (``0.19.3``, ``core_v0.14.0``, ``v2.0``)."""

    family: str
    first: str | None = None
    last: str | None = None

    def describe(self) -> str:
        if self.first == UNRELEASED:
            return "upstream after the newest release"
        if self.first and self.last:
            return f"{self.first} to {self.last}"
        if self.first:
            return f"{self.first} and later"
        if self.last:
            return f"up to {self.last}"
        return "every supported release"

    def includes(self, target: Any) -> bool:
        """Whether the run's target (a :class:`~trainlint.frameworks.target.FrameworkTarget`) makes
        the check: True when no release is stated or located (an unversioned checkout or the assumed
        upstream, which is the newest code) or the release is inside the range."""
        if target is None or getattr(target, "family", self.family) != self.family or not target.known:
            return True
        key = release_key(getattr(target, "version", None))
        if key is None:
            return True
        if self.first == UNRELEASED:
            return False  # only upstream makes it: no release does yet
        first, last = release_key(self.first), release_key(self.last)
        return (first is None or _padded(key) >= _padded(first)) and (last is None or _padded(key) <= _padded(last))


def _padded(key: tuple[int, ...]) -> tuple[int, ...]:
    return key + (0,) * (4 - len(key))


class ReleaseBoundRule(Rule):
    """A launch rule that holds for a range of releases: :meth:`findings` runs only when the run's
    target release is in :attr:`releases` (or none is stated or located)."""

    releases: ClassVar[Releases]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """The severity policy follows the range: a check every supported release makes is not
        release-dependent; one that only some releases make is, and says since / until when."""
        super().__init_subclass__(**kwargs)
        releases = cls.__dict__.get("releases")
        if releases is None or "release_dependent" in cls.__dict__:
            return
        bounded = releases.first is not None or releases.last is not None
        cls.release_dependent = bounded
        if bounded and not cls.__dict__.get("behaviour_changed"):
            cls.behaviour_changed = f"{releases.family} makes this check in {releases.describe()}"

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if not self.releases.includes(spec.target):
            return iter(())
        return self.findings(spec, ctx)

    def findings(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:  # pragma: no cover
        raise NotImplementedError
