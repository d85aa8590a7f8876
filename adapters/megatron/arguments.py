"""Reading Megatron-LM arguments: the values a run writes, else Megatron's defaults.

The Megatron adapter's knowledge, asked by its change spelling (how a flag is spelled) and by the
Megatron-specific launch rules (TL140-TL179, TL600-TL669).

The Megatron adapter puts every flag a script *resolves* into ``spec.settings`` keyed by its
argparse dest (``overlap_param_gather``), with the flag as written in the provenance. A rule also
needs the value of a flag that is *not* written: Megatron's own default, taken here from
``schemas/megatron.schema.json`` (which records the defaults of ``megatron/training/arguments.py``
at d98e8a6). A flag that *is* written but could not be resolved (``--recompute-method $M``) is in
``spec.unresolved`` instead, so it is never mistaken for its default.

Reading ``spec.settings`` by argparse dest is on purpose here (file text): these rules reproduce
Megatron-LM's own ``validate_args`` over the flags as written. What the estimator and the
cross-framework rules need of a Megatron run is in typed spec fields the adapter sets.

The rules here describe current Megatron-LM's ``validate_args``; Megatron-DeepSpeed and old
Megatron-LM copies have other arguments and other checks, so the rules run only on runs whose
``spec.dialect`` is current Megatron-LM.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from trainlint.adapters.megatron.entry_points import trains
from trainlint.core.framework import CAP_MEGATRON_ARGUMENTS, framework_of, known_frameworks
from trainlint.core.provenance import Value, default
from trainlint.core.spec import MEGATRON_LM, TrainingSpec


DEFAULT_NOTE = "Megatron-LM default (megatron/training/arguments.py)"
COMMIT = "d98e8a6"
"""The Megatron-LM commit the rules' conditions and messages were read from."""

@lru_cache(maxsize=1)
def _properties() -> dict[str, dict]:
    from trainlint.core.framework import framework_of

    return framework_of("megatron").key_catalog().properties()  # the framework's one key catalog


_DEFAULTS: dict[str, Value | None] = {}


def _default_value(dest: str) -> Value | None:
    """Megatron's default of ``dest`` as a DEFAULT value (None: no such argument), made once per
    dest: a Value is immutable and the schema does not change, while the rules of every run ask
    for ~100 defaults."""
    if dest not in _DEFAULTS:
        prop = _properties().get(dest)
        _DEFAULTS[dest] = None if prop is None else default(prop.get("default"), DEFAULT_NOTE)
    return _DEFAULTS[dest]


# Runs of ``tasks/main.py`` (gone from current Megatron-LM in 2024) target an older Megatron with
# other checks (e.g. no eval-batch divisibility): is_current() leaves them out.


def is_current(spec: TrainingSpec) -> bool:
    if CAP_MEGATRON_ARGUMENTS not in framework_of(spec).capabilities(spec) or spec.dialect != MEGATRON_LM:
        return False
    entry = (spec.entry_point or "").replace("\\", "/")
    return not (entry == "main.py" or entry.endswith("tasks/main.py"))


class MegatronArgs:
    """The arguments of one Megatron run: written values, else Megatron's defaults."""

    def __init__(self, spec: TrainingSpec) -> None:
        self.spec = spec

    def given(self, dest: str) -> bool:
        return dest in self.spec.settings

    def given_among(self, dests: frozenset[str]) -> frozenset[str]:
        """Those of ``dests`` that are :meth:`given`, asked at once (a rule table's ~50 first options)."""
        return dests.intersection(self.spec.settings)

    def written(self, dest: str) -> bool:
        """The flag is given in the run, resolved or not."""
        return dest in self.spec.settings or dest in self.spec.unresolved

    def known(self, *dests: str) -> bool:
        """Every dest is either resolved or not written at all (so its default applies). A run that
        builds Megatron-Core's configs directly (``core_configs_only``) knows only what it writes:
        Megatron-LM's argparse defaults are not its recipe's or model provider's, except "unset" (a
        None default: Megatron-Core's config fields default to None too, and mean the same by it)."""
        settings, unresolved, properties = self.spec.settings, self.spec.unresolved, _properties()
        if self.spec.core_configs_only:
            return all(d in settings or (d in properties and d not in unresolved and properties[d].get("default") is None)
                       for d in dests)
        # a list, not a generator: one call instead of one resumption per dest (~25 calls a run)
        return not [d for d in dests if d not in settings and (d not in properties or d in unresolved)]

    def value(self, dest: str) -> Value | None:
        """The written value, else Megatron's default as a DEFAULT value; None when unknown."""
        settings = self.spec.settings
        if dest in settings:
            return settings[dest]
        if dest in self.spec.unresolved:
            return None
        return _default_value(dest)

    def get(self, dest: str) -> Any:
        """The bare value (callers check :meth:`known` first)."""
        v = self.value(dest)
        return None if v is None else v.value

    def on(self, dest: str) -> bool:
        return bool(self.get(dest))

    def flag(self, dest: str) -> str:
        """How the flag is spelled (as written, else its first spelling)."""
        v = self.spec.settings.get(dest)
        if v is not None and v.provenance.key:
            return v.provenance.key
        named = _format_setting_name(self.spec.format, dest)
        if named is not None:
            return named  # a setting of another format's file (a Megatron-Bridge field)
        flags = _properties().get(dest, {}).get("x-flags", [])
        return flags[0] if flags else "--" + dest.replace("_", "-")

    @staticmethod
    def at(dest: str) -> str:
        return "settings:" + dest

    def at_written(self, dest: str, *fallbacks: str) -> str:
        """Point at ``dest`` when the script writes it, else at the first fallback it writes: a
        finding about a default value belongs on the flag that made the default matter."""
        for d in (dest, *fallbacks):
            if self.given(d):
                return self.at(d)
        return self.at(dest)

    def not_training(self) -> bool:
        """The arguments run for inference, generation or evaluation, not training: the file's
        launcher mode says so (MODE: inference), or the entry point is a generation/evaluation tool.
        Megatron exempts such runs from checks that hold only with gradients on
        (``not torch.is_grad_enabled()``)."""
        mode = self.spec.run.mode
        if mode is not None and mode.value == "inference":
            return True
        return bool(self.spec.entry_point) and not trains(self.spec.entry_point)

    # -- spec fields with their Megatron meaning ------------------------------------------------
    def int_field(self, dotted: str) -> int | None:
        v = self.spec.value(dotted)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def vpp(self) -> tuple[bool, int | None]:
        """(known, VPP) as validate_args computes it: None when there is no interleaving."""
        if not self.known("pipeline_model_parallel_layout", "num_layers_per_virtual_pipeline_stage",
                          "num_virtual_stages_per_pipeline_rank"):
            return False, None
        if self.given("pipeline_model_parallel_layout"):
            return False, None  # the layout language is not parsed here
        stages = self.get("num_virtual_stages_per_pipeline_rank")
        if stages is not None:
            return True, (stages if isinstance(stages, int) and stages != 1 else None)
        k = self.get("num_layers_per_virtual_pipeline_stage")
        if k is None:
            return True, None
        per_stage = self.layers_per_stage()
        if per_stage is None or not isinstance(k, int) or k <= 0 or per_stage % k:
            return False, None
        vpp = per_stage // k
        return True, (vpp if vpp != 1 else None)

    def layers_for_split(self) -> int | None:
        """num_layers (+1 per --account-for-embedding/loss-in-pipeline-split)."""
        layers = self.int_field("model.num_layers")
        if layers is None or not self.known("account_for_embedding_in_pipeline_split",
                                            "account_for_loss_in_pipeline_split"):
            return None
        return layers + int(self.on("account_for_embedding_in_pipeline_split")) + \
            int(self.on("account_for_loss_in_pipeline_split"))

    def layers_per_stage(self) -> int | None:
        layers, pp = self.layers_for_split(), self.int_field("parallel.pipeline")
        if layers is None or not pp or layers % pp:
            return None
        return layers // pp


def ref(path: str, line: int | str) -> str:
    """A reference to Megatron-LM's source at the commit the rules were read from."""
    return f"`{path}:{line}@{COMMIT}`"


def _format_setting_name(format_name: str, dest: str) -> str | None:
    """How the run's own format writes ``dest``, when the run was read from another format than
    Megatron-LM's scripts (``TrainingSpec.format``; asked of that format's adapter)."""
    if not format_name:
        return None
    for framework in known_frameworks():
        for adapter in framework.adapters():
            if adapter.name == format_name:
                return adapter.setting_name(dest)
    return None
