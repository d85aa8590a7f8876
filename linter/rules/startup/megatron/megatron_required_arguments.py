"""TL612: a required Megatron-LM argument that the whole command line does not give
(``validate_args``: the micro batch size, the layer count, the model sizes, the sequence length)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.base import MegatronRule
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.releases import Releases

_REPLACED_BY = ("use_checkpoint_args", "yaml_cfg", "heterogeneous_layers_config_path", "retro_project_dir")
"""Options that fill the arguments from elsewhere before validate_args: the checkpoint's arguments
(load_args_from_checkpoint), a YAML config (``--yaml-cfg`` replaces the namespace), a heterogeneous
model config (validate_model_config_args_from_heterogeneous_config sets the layer count and sizes), a
Retro project directory (load_retro_args reads the sequence length and more from its config)."""

_PATTERNS = ("hybrid_layer_pattern", "hybrid_override_pattern")
"""A hybrid layer pattern gives the layer count (validate_args sets num_layers from it first)."""


@dataclass(frozen=True)
class Required:
    dests: tuple[str, ...]
    """Missing when none of these is given."""
    says: str
    first: str = "core_v0.4.0"
    last: str | None = None
    when: str | None = None
    """Only when this option is given."""


CHECKS = (
    Required(("micro_batch_size",), "assert args.micro_batch_size is not None"),
    Required(("num_layers", "encoder_num_layers"), "either num-layers or encoder-num-layers should be specified"),
    *(Required((dest,), f"{dest} argument is None") for dest in ("hidden_size", "num_attention_heads",
                                                                 "max_position_embeddings")),
    Required(("seq_length", "encoder_seq_length"), "assert args.encoder_seq_length is not None"),
    Required(("num_layers",), "assert args.num_layers is not None", first="core_v0.10.0", last="core_v0.10.0",
             when="num_layers_per_virtual_pipeline_stage"),
)


class RequiredArguments(MegatronRule):
    """## What it does
    Checks that the launch command gives what `validate_args` requires: `--micro-batch-size`,
    `--num-layers` (or `--encoder-num-layers`), `--hidden-size`, `--num-attention-heads`,
    `--max-position-embeddings`, and `--seq-length` (or `--encoder-seq-length`); in core_v0.10.0 a
    virtual pipeline (`--num-layers-per-virtual-pipeline-stage`) also needs `--num-layers` itself.

    It speaks only when the whole command line is known: every argument read (no `$EXTRA_ARGS` from
    the environment, no `"$@"`, no variable of a sourced file trainlint could not read), a training
    script of Megatron-LM's own (whose `args_defaults` are known), and no option that fills the
    arguments from elsewhere (`--use-checkpoint-args`, `--yaml-cfg`, a heterogeneous layers config, a
    Retro project directory; a hybrid layer pattern gives the layer count). A script whose flags show
    it is written for another release or a fork says nothing here.

    ## Why is this bad?
    `validate_args` asserts at start-up, with an assertion that names the missing value at best.

    ## Example
    ```bash
    torchrun pretrain_gpt.py --num-layers 24 --hidden-size 1024 --num-attention-heads 16 \\
        --seq-length 2048 --max-position-embeddings 2048 --global-batch-size 64   # no --micro-batch-size
    ```

    ## Fix
    Add the missing flag.

    ## References
    * `megatron/training/arguments.py:693@d98e8a6`: `assert args.micro_batch_size is not None`
    * `megatron/training/arguments.py:1309@d98e8a6`: "either num-layers or encoder-num-layers should be specified"
    * `megatron/training/arguments.py:1314-1317@d98e8a6`, `megatron/training/arguments.py:2004-2005@d98e8a6`
      (`_check_arg_is_not_none`): "{arg} argument is None"
    * `megatron/training/arguments.py:1350@d98e8a6`: `assert args.encoder_seq_length is not None`
    * `megatron/training/arguments.py:344@7ee599a` (core_v0.10.0 only): `assert args.num_layers is not None`
    """

    code = "TL612"
    name = "megatron-required-arguments"
    summary = "a required Megatron-LM argument missing from a fully known command line"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        spec = a.spec
        if spec.run.open_arguments is not None or spec.run.other_release is not None \
                or any(d in spec.unresolved for d in _REPLACED_BY):
            return
        if any(a.given(d) and a.get(d) not in (None, False) for d in _REPLACED_BY):
            return
        for check in CHECKS:
            if check.when is not None and not a.given(check.when):
                continue
            if not Releases("megatron", first=check.first, last=check.last).includes(spec.target):
                continue
            if check.last is not None and not _stated(spec.target):
                continue
            if any(a.written(d) for d in check.dests):
                continue
            if "num_layers" in check.dests and any(a.written(p) for p in _PATTERNS):
                continue
            flags = " or ".join(a.flag(d) for d in check.dests)
            yield Finding(f"no {flags} in the command: Megatron-LM stops with \"{check.says}\"",
                          at=a.at(check.dests[0]), fix=f"add {a.flag(check.dests[0])}")


def _stated(target: object) -> bool:
    from trainlint.rules.startup.megatron.check_table import release_stated

    return release_stated(target)


RULES: list[type] = [RequiredArguments]
