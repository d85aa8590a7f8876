"""What the GPT-NeoX start-up rules share: the run's arguments as NeoX would see them (:class:`NeoXArgs`,
``NeoXArgs.__post_init__``'s ``calculate_derived`` and ``validate_values`` in
megatron/neox_arguments/arguments.py), the base class of the rules, and :func:`whole_run`.

A NeoX run is often split over several YAML files (a model file and ``local_setup.yml``).
Rules that fire on something *missing* (no ``checkpoint_factor``, no ``train_iters``) only do so
when the checked files describe a whole run (:func:`whole_run`): one file of a split config is
not evidence that the key is absent from the run.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterator

from trainlint.core.framework import CAP_NEOX_ARGUMENTS
from trainlint.core.provenance import Value, default
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.core.spec import TrainingSpec


ARGS = "megatron/neox_arguments/arguments.py"


COMMIT = "ea7aefd"


@lru_cache(maxsize=1)
def _properties() -> dict[str, dict]:
    from trainlint.core.framework import framework_of

    return framework_of("neox").key_catalog().properties()  # the framework's one key catalog


_MAX_EXPANDED_LAYERS = 100_000


"""More layers than any model has: the per-layer attention list is not built beyond this."""


def _number(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class NeoXArgs:
    """The merged keys of one NeoX run: written values, else NeoX's defaults. File text on purpose:
    these rules reproduce NeoX's own argument checks, which are about the keys as written."""

    def __init__(self, spec: TrainingSpec) -> None:
        self.spec = spec
        self.s = spec.settings

    def given(self, key: str) -> bool:
        return key in self.s

    def value(self, key: str) -> Value | None:
        if key in self.s:
            return self.s[key]
        prop = _properties().get(key)
        if prop is None:
            return None
        where = "deepspeed_args.py" if prop.get("x-neox-class", "").startswith("NeoXArgsDeepspeed") else "neox_args.py"
        return default(prop.get("default"), f"GPT-NeoX default (megatron/neox_arguments/{where})")

    def get(self, key: str) -> Any:
        v = self.value(key)
        return None if v is None else v.value

    @staticmethod
    def at(key: str) -> str:
        return "settings:" + key

    def whole_run(self) -> bool:
        """The checked files define a model and its batch: a whole run, not one file of a split config."""
        return self.given("num_layers") and (self.given("train_batch_size") or self.given("train_micro_batch_size_per_gpu"))

    def zero_stage(self) -> int | None:
        stage = self.spec.value("parallel.zero_stage")
        return stage if isinstance(stage, int) and not isinstance(stage, bool) else None

    def attention_types(self) -> tuple[list[str] | None, str | None]:
        """expand_attention_types (megatron/utils.py:326-353): the per-layer list, or an error message."""
        config, layers = self.get("attention_config"), _number(self.spec.value("model.num_layers"))
        if isinstance(layers, int) and not 0 <= layers <= _MAX_EXPANDED_LAYERS:
            return None, None  # a list per layer of a 4,000-digit num_layers is not built (TL006 says why)
        if config is None:
            return (["global"] * layers if isinstance(layers, int) else None), None
        if not isinstance(config, list):
            return None, None
        if all(isinstance(i, str) for i in config):
            return list(config), None
        out: list[str] = []
        for item in config:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)):
                return None, None
            kinds, count = item
            if count == "all":
                if not isinstance(layers, int) or not kinds:
                    return None, None
                if layers % len(kinds):
                    return None, (f"Number of layers ({layers}) is not divisible by the length of pattern: {kinds}")
                return [str(k) for k in kinds] * (layers // len(kinds)), None
            if not isinstance(count, int) or isinstance(count, bool) or count > _MAX_EXPANDED_LAYERS - len(out):
                return None, None
            for _ in range(count):
                out.extend(str(k) for k in kinds)
        return out, None


def ref(line: str) -> str:
    return f"`{ARGS}:{line}@{COMMIT}`"


class _NeoXRule(Rule):
    requires = frozenset({CAP_NEOX_ARGUMENTS})
    release_dependent = False
    """GPT-NeoX's own checks of its arguments, kept through its releases (TL187 says otherwise)."""

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        yield from self.findings(NeoXArgs(spec), ctx)

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:  # pragma: no cover
        raise NotImplementedError
