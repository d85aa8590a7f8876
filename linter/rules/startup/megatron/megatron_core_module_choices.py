"""TL636: the module names Megatron-Core's ``TransformerConfig`` accepts in its module lists
(``--recompute-modules``, ``--offload-modules``, ``--gtp-remat-opt-in-modules``), per release (from
the launch-check audit). Argparse takes any string for these lists; the config refuses the names
outside its set, and each release's set is the one read from its source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.base import MegatronRule
from trainlint.rules.startup.releases import release_key
from trainlint.adapters.megatron.arguments import MegatronArgs

_RECOMPUTE_12 = frozenset({"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe"})
_RECOMPUTE_14 = _RECOMPUTE_12 | {"shared_experts"}
_RECOMPUTE_19 = _RECOMPUTE_14 | {"gdn_norm_out"}
_RECOMPUTE_MAIN = _RECOMPUTE_19 | {"gdp_in_proj", "gdp_qkv", "mhc"}
_OFFLOAD_16 = frozenset({"attn_norm", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act", "qkv_linear"})
_OFFLOAD_19 = _OFFLOAD_16 | {"fused_group_mlp"}
_OFFLOAD_MAIN = _OFFLOAD_19 | {"gdp_qkv"}


@dataclass(frozen=True)
class ModuleList:
    dest: str
    sets: tuple[tuple[str, frozenset[str]], ...]
    """(first release, the names it accepts), oldest first; the last entry is upstream's."""
    applies: str
    """When the config checks the list: ``selective`` (recompute granularity), ``offloading``, ``given``."""
    line: int


LISTS = (
    ModuleList("recompute_modules", (("core_v0.12.0", _RECOMPUTE_12), ("core_v0.14.0", _RECOMPUTE_14),
                                     ("core_v0.19.0", _RECOMPUTE_19), ("main", _RECOMPUTE_MAIN)), "selective", 1959),
    ModuleList("offload_modules", (("core_v0.16.0", _OFFLOAD_16), ("core_v0.19.0", _OFFLOAD_19),
                                   ("main", _OFFLOAD_MAIN)), "offloading", 2144),
    ModuleList("gtp_remat_opt_in_modules", (("main", frozenset({"moe_latent_proj"})),), "given", 2205),
)


def accepted(lst: ModuleList, version: str | None) -> frozenset[str] | None:
    """The names the release accepts (None: the release makes no such check). A version that names
    no release (upstream, a checkout of unknown version) gets upstream's set, the largest."""
    key = release_key(version)
    if key is None:
        return lst.sets[-1][1]
    found = None
    for first, names in lst.sets:
        first_key = release_key(first)
        if first_key is None:  # upstream only: not in any release
            break
        if key + (0,) * (3 - len(key)) >= first_key + (0,) * (3 - len(first_key)):
            found = names
    return found


class ModuleChoices(MegatronRule):
    """## What it does
    Checks the names in `--recompute-modules` (with selective recomputation), `--offload-modules`
    (with `--fine-grained-activation-offloading`) and `--gtp-remat-opt-in-modules` against the
    names the Megatron-Core release accepts; the sets grew from release to release (`shared_experts`
    in core_v0.14.0, `gdn_norm_out` and `fused_group_mlp` in core_v0.19.0, ...), so the set is the
    stated or located release's, else upstream's.

    ## Why is this bad?
    `TransformerConfig.__post_init__` asserts "Invalid choices for recompute_modules: ...".

    ## Example
    ```bash
    pretrain_gpt.py ... --recompute-granularity selective --recompute-modules core_attention
    ```

    ## Fix
    Use one of the names the message lists (`core_attn`).

    ## References
    * `megatron/core/transformer/transformer_config.py:1959@d98e8a6` (since core_v0.12.0): "Invalid choices
      for recompute_modules"
    * `megatron/core/transformer/transformer_config.py:2144@d98e8a6` (since core_v0.16.0): "Invalid choices
      for offload_modules"
    * `megatron/core/transformer/transformer_config.py:2205@d98e8a6` (upstream only): "Invalid choices for
      gtp_remat_opt_in_modules"
    * the sets at `megatron/core/transformer/transformer_config.py` of core_v0.12.0 (d580efc), core_v0.14.0
      (23e00ed), core_v0.16.0 (3bec9aa), core_v0.19.0 (5be9626) and upstream (d98e8a6).
    """

    code = "TL636"
    name = "megatron-core-module-choices"
    summary = "a module name Megatron-Core's TransformerConfig does not accept in a recompute or offload list"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        target = a.spec.target
        version = getattr(target, "version", None) if target is not None and target.known else None
        for lst in LISTS:
            if not a.given(lst.dest) or not self._applies(a, lst):
                continue
            names = accepted(lst, version)
            value = a.get(lst.dest)
            if names is None or not isinstance(value, (list, tuple)):
                continue
            if not all(isinstance(v, str) for v in value):
                continue
            wrong = [v for v in value if v not in names]
            if not wrong:
                continue
            yield Finding(f"{a.flag(lst.dest)} {' '.join(map(str, value))}: Megatron-Core stops with \"Invalid choices "
                          f"for {lst.dest}: {{{', '.join(repr(w) for w in wrong)}}}\" (it accepts "
                          f"{', '.join(sorted(names))})", at=a.at(lst.dest),
                          fix=f"use the names {', '.join(sorted(names))}")

    @staticmethod
    def _applies(a: MegatronArgs, lst: ModuleList) -> bool:
        if lst.applies == "selective":
            # validate_args: --recompute-activations means selective
            return a.known("recompute_granularity", "recompute_activations") and \
                (a.get("recompute_granularity") == "selective" or a.on("recompute_activations"))
        if lst.applies == "offloading":
            return a.known("fine_grained_activation_offloading") and a.on("fine_grained_activation_offloading")
        return True
