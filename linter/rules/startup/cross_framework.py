"""Cross-framework launch-time rules (framework-assertions.md section 4, X100-X112).

The same start-up failure in DeepSpeed, Megatron-LM and GPT-NeoX, each decided the way that
framework decides it (DP as each framework computes it, NeoX's pipeline engine at
``pipe_parallel_size >= 1``...). X102 is TL110 here; X107-X109 are input diagnostics the
adapters report (TL008, TL004, TL009) and have no rule.
"""

from __future__ import annotations

from typing import Iterator

from trainlint.framework import (
    CAP_STARTUP_CHECKS,
    CAP_DEEPSPEED_CONFIG,
    CAP_MEGATRON_ARGUMENTS,
    CAP_MEGATRON_CORE,
    CAP_MEGATRON_MODEL,
    CAP_NEOX_ARGUMENTS,
)
from trainlint.catalog import CatalogError, find_gpu
from trainlint.diagnostics import Severity
from trainlint.provenance import Origin, Value
from trainlint.rules import Finding, Rule, RuleContext, capabilities
from trainlint.rules.estimation.scope import rewrites_checkpoints
from trainlint.rules.startup.derive import (
    as_bool,
    as_int,
    as_str,
    data_parallel,
    defaulted_in_partial,
    from_checkpoint,
    partial_args,
    ds,
    model_parallel_product,
    pipeline_engine,
    zero_stage,
)
from trainlint.spec import TrainingSpec



def _also(*pairs: tuple[Value | str | None, str]) -> tuple[tuple[Value | str | None, str], ...]:
    return tuple((t, n) for t, n in pairs if t is not None)


def _value_fix(value: Value | None, new_text: str) -> dict:
    """An unsafe fix replacing a value as written in a config file (the DeepSpeed config's
    ``train_batch_size`` beside a Megatron-DeepSpeed script -> the one derivable from the other
    two and DP). Unsafe: it changes the batch the run trains with, and picking that key rather
    than the micro batch or accumulation is a choice."""
    from trainlint.diagnostics import Applicability, Edit

    prov = value.provenance if value is not None else None
    if prov is None or prov.origin is not Origin.FILE or prov.span is None or prov.path is None or prov.inputs \
            or prov.span.line != prov.span.end_line:
        return {}
    return {"applicability": Applicability.UNSAFE, "edits": (Edit(prov.span, new_text, prov.path),)}


def _global_batch_fix(spec: TrainingSpec, value: Value | None, size: int) -> dict:
    """The run's own global batch set to ``size``, as a layout change its adapter writes
    (``Finding.changes``: under ``--fix`` / ``--diff`` and in the editor, ``Adapter.writer`` with
    the round trip verified; a value from a variable is written where the variable is set), a
    plugin format's too. Unsafe, as :func:`_value_fix`."""
    from trainlint.diagnostics import Applicability

    if value is None or value.provenance.origin is not Origin.FILE:
        return {}
    return {"applicability": Applicability.UNSAFE, "changes": {"batch.global_batch": size}}


def _spelled_global_batch(spec: TrainingSpec, size: int, ctx: RuleContext) -> str:
    """``train_batch_size: 64`` as the run's adapter spells it (``Adapter.spell_changes``)."""
    from trainlint.layout.candidate import spell_changes

    return ", ".join(spell_changes(spec, None, {"batch.global_batch": size}, ctx.adapters))


# =============================================================================== TL100


class BatchSizeMismatch(Rule):
    """## What it does
    Checks the batch triple the way each framework checks it at start-up: the global batch must
    equal micro batch x gradient accumulation x data-parallel size, with the data-parallel size
    computed as that framework computes it (Megatron: world / (TP x PP x CP); GPT-NeoX:
    world / pipe_parallel_size / model_parallel_size; DeepSpeed: world / the mpu's model-parallel
    size). When the world size is unknown (a bare DeepSpeed JSON) it reports what no world size
    can fix: a global batch not divisible by micro x accumulation.

    ## Why is this bad?
    The job waits in the queue and then dies at start-up with an assertion.

    ## Example
    ```json
    {"train_batch_size": 500, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8}
    ```
    500 is not a multiple of 4 x 8 = 32: no data-parallel size satisfies the triple.

    ## Fix
    Give two of the three and let the framework derive the third, or make the product exact for
    the world size you launch with.

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:937-940` @ edaa722 (`_batch_assertion`):
      `assert train_batch == micro_batch * grad_acc * self.world_size` — "Check batch related
      parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step *
      world_size"; derivation of the missing member in `_set_batch_related_parameters`
      (config.py:944-985); the pipeline engine re-checks with the grid's DP
      (`deepspeed/runtime/pipe/engine.py:109-111`).
    - Megatron-LM `megatron/core/num_microbatches_calculator.py:381-385` @ d98e8a6: "global batch
      size ({}) is not divisible by micro batch size ({}) times data parallel size ({})".
    - GPT-NeoX `megatron/neox_arguments/arguments.py:866-883` @ ea7aefd (`check_batch_parameters`):
      "train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size".
    """

    code = "TL100"
    release_dependent = False
    name = "batch-size-mismatch"
    default_severity = Severity.ERROR
    summary = "global batch != micro batch x gradient accumulation x data-parallel size (DP as each framework computes it)"
    requires = frozenset()  # every format: a plugin format's run is checked on its batch fields (see _triple)

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if CAP_MEGATRON_ARGUMENTS in capabilities(spec):
            yield from self._megatron(spec)
            yield from self._triple(spec, ds(spec, "train_batch_size"), ds(spec, "train_micro_batch_size_per_gpu"),
                                    ds(spec, "gradient_accumulation_steps"), "the DeepSpeed config's ", ctx)
        elif CAP_DEEPSPEED_CONFIG in capabilities(spec):
            # file text: an "auto" written in the JSON is the HF Trainer's to fill at launch
            if any(spec.settings.get(k) is not None and spec.settings[k].value == "auto"
                   for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")):
                return
            yield from self._triple(spec, ds(spec, "train_batch_size"), ds(spec, "train_micro_batch_size_per_gpu"),
                                    ds(spec, "gradient_accumulation_steps"), "", ctx)
        else:
            yield from self._triple(spec, spec.batch.global_batch, spec.batch.micro_batch, spec.batch.grad_accum, "", ctx)

    def _megatron(self, spec: TrainingSpec) -> Iterator[Finding]:
        b = spec.batch
        gbs, mbs = b.global_batch, b.micro_batch
        g, m = as_int(gbs), as_int(mbs)
        if gbs is None or g is None or m is None or g < 1 or m < 1 or gbs.provenance.origin is not Origin.FILE:
            return
        if spec.dialect == "legacy" and not (gbs.provenance.key or "").startswith("--"):
            # Megatron before --global-batch-size (v1.x, as DeepSpeedExamples vendor it) has no such
            # assertion: the global batch here is the DeepSpeed JSON's train_batch_size, which
            # DeepSpeed checks (and derives the micro batch from) itself: _triple below.
            return
        if spec.batch.schedule is not None:
            return  # the start batch follows the schedule, not --global-batch-size
        dp = data_parallel(spec)
        if dp is not None:
            per_step = m * dp.size
            if g % per_step:
                yield Finding(
                    f"global batch size {g} is not divisible by micro batch size {m} x data-parallel size {dp.size} = "
                    f"{per_step} (DP = {dp.how}); Megatron stops: \"global batch size ({g}) is not divisible by micro "
                    f"batch size ({m}) times data parallel size ({dp.size})\"",
                    at=gbs, also=_also((mbs, "micro batch size"), (dp.world, "world size"), *dp.divisors),
                    fix=f"use a global batch size that is a multiple of {per_step}")
        elif g % m:
            yield Finding(
                f"global batch size {g} is not divisible by micro batch size {m}, so it cannot be micro batch x "
                "data-parallel size x microbatches for any world size; Megatron stops: \"global batch size is not "
                "divisible by micro batch size times data parallel size\"",
                at=gbs, also=_also((mbs, "micro batch size")),
                fix=f"use a global batch size that is a multiple of {m}")

    def _triple(self, spec: TrainingSpec, tbs: Value | None, mbs: Value | None, gas: Value | None,
                whose: str, ctx: RuleContext) -> Iterator[Finding]:
        t, m, a = as_int(tbs), as_int(mbs), as_int(gas)
        if any(x is not None and x < 1 for x in (t, m, a)):
            return  # non-positive values are schema errors (TL006)
        if t is None or (m is None and a is None):
            return  # the framework derives the rest consistently
        dp = data_parallel(spec)
        if CAP_STARTUP_CHECKS not in capabilities(spec):
            yield from self._plugin_triple(spec, tbs, mbs, gas, ctx)
            return
        quote = ("\"Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
                 "gradient_acc_step * world_size\"")
        also = _also((mbs, "micro batch per GPU"), (gas, "gradient accumulation steps"))
        if dp is not None:
            d = dp.size
            also_dp = also + _also((dp.world, "world size"), *dp.divisors)
            if m is not None and a is not None:
                if t != m * a * d:
                    yield Finding(
                        f"{whose}train_batch_size {t} != micro {m} x grad_accum {a} x DP {d} = {m * a * d} "
                        f"(DP = {dp.how}); DeepSpeed stops: {quote}",
                        at=tbs, also=also_dp, **self._set_global_batch(spec, tbs, m * a * d, whose, ctx))
            elif m is not None:
                derived_gas = (t // m) // d
                if derived_gas < 1 or t != m * derived_gas * d:
                    yield Finding(
                        f"{whose}train_batch_size {t} is not micro {m} x DP {d} x any whole number of accumulation "
                        f"steps (DeepSpeed derives gradient_accumulation_steps = {t} // {m} // {d} = {derived_gas}; "
                        f"DP = {dp.how}); DeepSpeed stops: {quote}",
                        at=tbs, also=also_dp, fix=f"use a train_batch_size that is a multiple of {m * d}")
            else:
                assert a is not None  # micro and accumulation both missing returned above
                derived_micro = (t // d) // a
                if derived_micro < 1 or t != derived_micro * a * d:
                    yield Finding(
                        f"{whose}train_batch_size {t} is not grad_accum {a} x DP {d} x any whole micro batch "
                        f"(DeepSpeed derives train_micro_batch_size_per_gpu = {t} // {d} // {a} = {derived_micro}; "
                        f"DP = {dp.how}); DeepSpeed stops: {quote}",
                        at=tbs, also=also_dp, fix=f"use a train_batch_size that is a multiple of {a * d}")
            return
        per_replica = (m or 1) * (a or 1)
        if t % per_replica:
            parts = " x ".join(p for p in (f"micro {m}" if m is not None else "", f"grad_accum {a}" if a is not None else "") if p)
            yield Finding(
                f"{whose}train_batch_size {t} is not divisible by {parts} = {per_replica}: no data-parallel size makes "
                f"train_batch_size = micro x grad_accum x DP; DeepSpeed stops: {quote}",
                at=tbs, also=also, fix=f"use a train_batch_size that is a multiple of {per_replica}")


    @staticmethod
    def _set_global_batch(spec: TrainingSpec, tbs: Value | None, size: int, whose: str, ctx: RuleContext) -> dict:
        """The fix: the run's own global batch spelled and written by its adapter; the DeepSpeed
        config's beside a Megatron-DeepSpeed script (not a field of the run) edited in place."""
        if whose:
            return {"fix": f"set {whose}train_batch_size to {size}, or leave one of the three out",
                    **_value_fix(tbs, str(size))}
        spelled = _spelled_global_batch(spec, size, ctx) or f"the global batch to {size}"
        return {"fix": f"set {spelled}, or leave one of the three out", **_global_batch_fix(spec, tbs, size)}

    def _plugin_triple(self, spec: TrainingSpec, tbs: Value | None, mbs: Value | None, gas: Value | None,
                       ctx: RuleContext) -> Iterator[Finding]:
        """A plugin format's run: its batch fields must multiply out (global = micro x accumulation x
        DP, DP from the world size over TP x PP); no framework's own wording or derivation."""
        t, m, a, dp = as_int(tbs), as_int(mbs), as_int(gas), data_parallel(spec)
        if t is None or m is None or a is None or dp is None or t == m * a * dp.size:
            return
        yield Finding(
            f"global batch {t} != micro batch {m} x gradient accumulation {a} x DP {dp.size} = {m * a * dp.size} "
            f"(DP = {dp.how})",
            at=tbs, also=_also((mbs, "micro batch"), (gas, "gradient accumulation"), (dp.world, "world size"), *dp.divisors),
            **self._set_global_batch(spec, tbs, m * a * dp.size, "", ctx))


# =============================================================================== TL101


class WorldSizeNotDivisible(Rule):
    """## What it does
    Checks that the world size (GPUs launched) is divisible by the model-parallel product the
    framework divides it by: TP x PP x CP in Megatron (and EP x expert-TP x PP for the expert
    grid), pipe_parallel_size x model_parallel_size in GPT-NeoX.

    ## Why is this bad?
    The framework cannot build its process groups and stops before the first step.

    ## Example
    `torchrun --nproc_per_node 6 pretrain_gpt.py --tensor-model-parallel-size 4 ...`: 6 GPUs
    cannot be split into groups of 4.

    A checkpoint conversion tool (`tools/checkpoint/convert.py`, `merge_mp_partitions.py`) is not
    checked: it sets the world size Megatron's checks see to TP x PP itself, whatever it is
    launched with.

    ## Fix
    Launch a multiple of the model-parallel product, or change the parallel sizes.

    ## References
    - Megatron-LM `megatron/training/arguments.py:424-434` @ d98e8a6: "world size ({N}) is not
      divisible by total_model_size"; `megatron/core/parallel_state.py:874-884`: "world_size ({N})
      is not divisible by expert_tensor_model_pipeline_parallel size".
    - GPT-NeoX `megatron/neox_arguments/arguments.py:926-935` @ ea7aefd: "(global_num_gpus /
      pp_size) / mp_size [...] must be a whole number".
    """

    code = "TL101"
    release_dependent = False
    name = "world-size-not-divisible"
    default_severity = Severity.ERROR
    summary = "world size not divisible by the model-parallel product (TP x PP x CP, expert grid, NeoX pp x mp)"
    requires = frozenset({CAP_MEGATRON_MODEL})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        world = spec.cluster.world_size
        n = as_int(world)
        product = model_parallel_product(spec)
        if n is None or n < 1 or product is None or from_checkpoint(spec) or rewrites_checkpoints(spec.entry_point):
            return  # a checkpoint conversion tool sets the world size its checks see itself
        size, how, divisors = product
        if size >= 1 and n % size:
            if CAP_NEOX_ARGUMENTS in capabilities(spec):
                quote = "\"(global_num_gpus / pp_size) / mp_size [...] must be a whole number\""
            else:
                quote = f"\"world size ({n}) is not divisible by total_model_size\""
            yield Finding(f"world size {n} is not divisible by {how} = {size}; the framework stops: {quote}",
                          at=world, also=_also(*divisors), fix=f"launch a multiple of {size} GPUs or change the parallel sizes")
            return
        if CAP_MEGATRON_ARGUMENTS not in capabilities(spec):
            return
        p = spec.parallel
        ep, etp, pp, tp = as_int(p.expert), as_int(p.expert_tensor), as_int(p.pipeline), as_int(p.tensor)
        if ep is None or etp is None or pp is None or min(ep, etp, pp) < 1 or (ep == 1 and etp == tp):
            return
        grid = ep * etp * pp
        if n % grid:
            yield Finding(
                f"world size {n} is not divisible by the expert grid EP {ep} x expert-TP {etp} x PP {pp} = {grid}; "
                f"Megatron stops: \"world_size ({n}) is not divisible by expert_tensor_model_pipeline_parallel size "
                f"({grid})\"",
                at=p.expert, also=_also((world, "world size"), (p.expert_tensor, "expert tensor parallel"),
                                        (p.pipeline, "pipeline parallel")),
                fix=f"make EP x expert-TP x PP divide {n}")


# =============================================================================== TL103


class PrecisionConflict(Rule):
    """## What it does
    Reports fp16 and bf16 enabled together, and (GPT-NeoX) a `precision` key that disagrees with
    the `fp16` / `bf16` DeepSpeed blocks. In a Megatron-DeepSpeed launch it also warns when the
    `--fp16` / `--bf16` flag and the DeepSpeed config enable different half-precision modes.

    ## Why is this bad?
    Every framework refuses the combination at start-up; in Megatron-DeepSpeed a flag that
    disagrees with the DeepSpeed config makes Megatron build the model in one dtype and
    DeepSpeed's engine run it in the other.

    ## Example
    ```yaml
    precision: bfloat16
    fp16: {enabled: true}
    ```

    ## Fix
    Enable exactly one of them, and make NeoX's `precision` match it (or leave `precision` out).

    ## References
    - DeepSpeed `deepspeed/runtime/config.py:827-828` @ edaa722: "bfloat16 and fp16 modes cannot be
      simultaneously enabled".
    - Megatron-LM `megatron/training/arguments.py:1195-1206` (`assert not args.bf16`) and
      `megatron/core/transformer/transformer_config.py:1432-1435` @ d98e8a6: "Only one of self.fp16:
      ... and self.bf16 ... should be True."
    - GPT-NeoX `megatron/neox_arguments/arguments.py:966-979` @ ea7aefd: "DeepSpeed fp16 field was
      set but precision conflicts" / "DeepSpeed bf16 field was set but precision conflicts".
    """

    code = "TL103"
    release_dependent = False
    name = "precision-conflict"
    default_severity = Severity.ERROR
    summary = "fp16 and bf16 both enabled, or a precision setting disagreeing with the fp16/bf16 blocks"
    requires = frozenset({CAP_STARTUP_CHECKS})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if CAP_MEGATRON_ARGUMENTS in capabilities(spec):
            yield from self._megatron(spec)
        elif CAP_NEOX_ARGUMENTS in capabilities(spec):
            yield from self._neox(spec)
        else:
            fp16, bf16 = spec.precision.fp16_enabled, spec.precision.bf16_enabled
            if fp16 is not None and bf16 is not None and as_bool(fp16) and as_bool(bf16):
                yield _both_on(fp16, bf16, "fp16.enabled", "bf16.enabled",
                               "DeepSpeed stops: \"bfloat16 and fp16 modes cannot be simultaneously enabled\"")

    def _megatron(self, spec: TrainingSpec) -> Iterator[Finding]:
        # file text: Megatron's own check is on --fp16 / --bf16 as written, apart from the merged JSON's blocks
        fp16_flag, bf16_flag = spec.settings.get("fp16"), spec.settings.get("bf16")
        if fp16_flag is not None and bf16_flag is not None and as_bool(fp16_flag) and as_bool(bf16_flag):
            yield _both_on(fp16_flag, bf16_flag, "--fp16", "--bf16",
                           "Megatron stops: \"Only one of self.fp16 ... and self.bf16 ... should be True.\"")
            return
        ds_fp16, ds_bf16 = ds(spec, "fp16.enabled"), ds(spec, "bf16.enabled") or ds(spec, "bfloat16.enabled")
        if ds_fp16 is not None and ds_bf16 is not None and as_bool(ds_fp16) and as_bool(ds_bf16):
            yield _both_on(ds_fp16, ds_bf16, "fp16.enabled", "bf16.enabled",
                           "DeepSpeed stops: \"bfloat16 and fp16 modes cannot be simultaneously enabled\"")
            return
        for flag, name, other, other_name in ((fp16_flag, "--fp16", ds_bf16, "bf16.enabled"),
                                              (bf16_flag, "--bf16", ds_fp16, "fp16.enabled")):
            if as_bool(flag) and as_bool(other):
                yield Finding(
                    f"{name} is given but the DeepSpeed config sets {other_name}: true; Megatron builds the model in "
                    f"one half precision and DeepSpeed's engine runs it in the other",
                    at=other, also=_also((flag, f"{name} here")), severity=Severity.WARNING,
                    fix=f"make the DeepSpeed config enable the same mode as {name}")

    def _neox(self, spec: TrainingSpec) -> Iterator[Finding]:
        # file text: NeoX's own check compares the keys as written (precision against the fp16 / bf16 blocks)
        fp16 = spec.settings.get("fp16.enabled")
        bf16 = spec.settings.get("bf16.enabled")
        precision = spec.settings.get("precision")
        prec = as_str(precision)
        fp16_on, bf16_on = as_bool(fp16) is True, as_bool(bf16) is True
        if fp16 is not None and bf16 is not None and fp16_on and bf16_on and prec is None:
            yield _both_on(fp16, bf16, "fp16.enabled", "bf16.enabled",
                           "NeoX sets precision fp16 from the first, then stops: \"DeepSpeed bf16 field was set but "
                           "precision conflicts\"")
            return
        if prec is None:
            return
        fp16_type = as_str(spec.settings.get("fp16.type"))
        if fp16_on and prec.lower() != "fp16":
            hint = (" (`fp16.type: bfloat16` is the old DeeperSpeed way of asking for bf16; current NeoX "
                    "wants `bf16: {enabled: true}`)" if fp16_type and fp16_type.lower() in ("bfloat16", "bf16") else "")
            yield Finding(
                f"precision is {prec} but fp16.enabled is true{hint}; NeoX stops: \"DeepSpeed fp16 field was set but "
                "precision conflicts\"", at=fp16, also=_also((precision, "precision here")),
                fix="remove the fp16 block or set `precision: fp16`")
        if bf16_on and prec.lower() != "bfloat16":
            yield Finding(
                f"precision is {prec} but bf16.enabled is true; NeoX stops: \"DeepSpeed bf16 field was set but precision "
                "conflicts\"", at=bf16, also=_also((precision, "precision here")),
                fix="remove the bf16 block or set `precision: bfloat16`")


def _later(a: Value, b: Value) -> tuple[Value, Value]:
    """(the one written later, the other): the later one is usually the edit that broke it."""
    sa, sb = a.span, b.span
    if sa is not None and sb is not None and a.provenance.path == b.provenance.path and sa > sb:
        return a, b
    return (b, a) if sb is not None else (a, b)


def _both_on(fp16: Value, bf16: Value, fp16_name: str, bf16_name: str, quote: str) -> Finding:
    at, other = _later(fp16, bf16)
    return Finding(f"{fp16_name} and {bf16_name} are both on; {quote}", at=at,
                   also=((other, "the other half-precision mode enabled here"),),
                   fix="enable only one of fp16 and bf16")


# =============================================================================== TL104


class AttentionHeadsLayout(Rule):
    """## What it does
    Checks the attention shape against tensor parallelism: attention heads divisible by TP,
    hidden size divisible by the heads (when the head size is not given), and the KV heads
    (GQA query groups) compatible with TP and with the heads.

    ## Why is this bad?
    Each TP rank must hold whole heads; the frameworks refuse the layout when the model is built.

    ## Example
    `--num-attention-heads 20 --tensor-model-parallel-size 8`

    ## Fix
    Pick a TP that divides the number of heads (and of KV heads), or change the heads.

    ## References
    - Megatron-LM `megatron/core/transformer/transformer_config.py:1446-1449` @ d98e8a6:
      "num_attention_heads (...) must be a multiple of tensor_model_parallel_size (...)";
      `transformer_config.py:1458-1468`: "num_query_groups (...) must be a multiple or divisor of
      tensor_model_parallel_size (...)"; `megatron/training/arguments.py:1331-1333`:
      `assert args.hidden_size % args.num_attention_heads == 0` when `--kv-channels` is not given.
    - GPT-NeoX `megatron/neox_arguments/arguments.py:1245-1255` @ ea7aefd: "hidden_size must be
      divisible by num_attention_heads"; `arguments.py:1131-1148`: "num_kv_heads must evenly divide
      num_attention_heads", "Number of KV heads must be at least model_parallel_size for now!";
      heads per partition via `megatron/mpu/utils.py:24` ("{} is not divisible by {}").
    """

    code = "TL104"
    release_dependent = False
    name = "attention-heads-layout"
    default_severity = Severity.ERROR
    summary = "attention heads / KV heads not divisible by TP, or hidden size not divisible by the heads"
    requires = frozenset({CAP_MEGATRON_MODEL})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        m, p = spec.model, spec.parallel
        if from_checkpoint(spec):
            return
        heads, hidden, kv, tp = as_int(m.num_attention_heads), as_int(m.hidden_size), as_int(m.num_kv_heads), as_int(p.tensor)
        mla = bool(as_bool(spec.model.latent_attention))
        tp_name = "model_parallel_size" if CAP_NEOX_ARGUMENTS in capabilities(spec) else "tensor parallel size"
        if heads is not None and tp is not None and heads > 0 and tp > 1 and heads % tp:
            quote = ("\"num_attention_heads (...) must be a multiple of tensor_model_parallel_size\""
                     if CAP_MEGATRON_ARGUMENTS in capabilities(spec) else "\"... is not divisible by ...\" (mpu.divide)")
            yield Finding(f"{heads} attention heads are not divisible by {tp_name} {tp}; the framework stops: {quote}",
                          at=p.tensor, also=_also((m.num_attention_heads, "attention heads")),
                          fix=f"use a {tp_name} that divides {heads}")
        kv_given = m.num_kv_heads is not None and m.num_kv_heads.provenance.origin is Origin.FILE
        kv_channels_given = m.kv_channels is not None and m.kv_channels.provenance.origin is not Origin.DERIVED
        if hidden is not None and heads and not (CAP_MEGATRON_ARGUMENTS in capabilities(spec) and kv_channels_given) \
                and not mla and not _mamba(spec) and hidden % heads:
            yield Finding(f"hidden size {hidden} is not divisible by {heads} attention heads; the framework stops "
                          "(\"hidden_size must be divisible by num_attention_heads\")",
                          at=m.hidden_size, also=_also((m.num_attention_heads, "attention heads")),
                          fix="make the hidden size a multiple of the number of heads" +
                              (" or give --kv-channels" if CAP_MEGATRON_ARGUMENTS in capabilities(spec) else ""))
        if not kv_given or kv is None or kv < 1 or mla:
            return
        if CAP_NEOX_ARGUMENTS in capabilities(spec) and heads is not None and heads % kv:
            yield Finding(f"{heads} attention heads are not divisible by {kv} KV heads; NeoX stops: \"num_kv_heads must "
                          "evenly divide num_attention_heads and be no greater than it\"",
                          at=m.num_kv_heads, also=_also((m.num_attention_heads, "attention heads")))
        if tp is None or tp <= 1:
            return
        if CAP_MEGATRON_ARGUMENTS in capabilities(spec):
            if kv % tp and tp % kv:
                yield Finding(f"{kv} query groups is neither a multiple nor a divisor of tensor parallel size {tp}; "
                              "Megatron stops: \"num_query_groups (...) must be a multiple or divisor of "
                              "tensor_model_parallel_size\"", at=m.num_kv_heads, also=_also((p.tensor, "tensor parallel")))
        elif heads is not None and kv < heads and kv % tp:
            yield Finding(f"{kv} KV heads are not divisible by model_parallel_size {tp}; NeoX stops: \"Number of KV heads "
                          "must be at least model_parallel_size for now!\"", at=m.num_kv_heads,
                          also=_also((p.tensor, "model_parallel_size")))


def _mamba(spec: TrainingSpec) -> bool:
    return as_str(spec.model.architecture) in ("mamba", "hybrid")


# =============================================================================== TL105


class LayersPipelineIndivisible(Rule):
    """## What it does
    Checks that Megatron can split the layers evenly over the pipeline stages: the number of
    layers (plus one for each of `--account-for-embedding-in-pipeline-split` and
    `--account-for-loss-in-pipeline-split`) divisible by the pipeline size, and the layers per
    stage divisible by the virtual-pipeline (interleaving) factor.

    ## Why is this bad?
    `validate_args` stops before the model is built.

    ## Example
    `--num-layers 30 --pipeline-model-parallel-size 4`

    ## Fix
    Change the pipeline size, or give uneven first/last stages with
    `--decoder-first-pipeline-num-layers` / `--decoder-last-pipeline-num-layers`.

    ## References
    - Megatron-LM `megatron/training/arguments.py:985-998` @ d98e8a6: "Number of layers should be
      divisible by the pipeline-model-parallel size" (added by ADLR/megatron-lm!2398, first in
      core_v0.10.0; before it `megatron/core/transformer/transformer_block.py` get_num_layers_to_build
      took `num_layers // pipeline_model_parallel_size` layers per stage, e.g. ROCm's fork at 2b855ba);
      `arguments.py:961-973`: "number of layers of
      the model must be divisible pipeline model parallel size", "number of layers per pipeline
      stage must be divisible number of layers per virtual pipeline stage";
      `megatron/core/transformer/transformer_config.py:2392-2414` (account-for splits with VPP).

    Megatron-DeepSpeed runs with DeepSpeed's PipelineEngine partition layers by DeepSpeed's own
    method (uneven splits allowed) and are not checked.
    """

    code = "TL105"
    release_dependent = False
    name = "layers-pipeline-indivisible"
    default_severity = Severity.ERROR
    summary = "number of layers not divisible by the pipeline size, or layers per stage by the virtual-pipeline factor"
    requires = frozenset({CAP_MEGATRON_CORE})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        if pipeline_engine(spec) is not None or as_bool(spec.engine.deepspeed_flag) or from_checkpoint(spec):
            return
        layers_v, pp_v = spec.model.num_layers, spec.parallel.pipeline
        layers, pp = as_int(layers_v), as_int(pp_v)
        if layers is None or pp is None or pp <= 1 or layers < 1:
            return
        p = spec.parallel
        if p.uneven_pipeline is not None or _mamba(spec):
            return
        extra = list(p.pipeline_split_extra.value) if p.pipeline_split_extra is not None else []
        total = layers + len(extra)
        counted = f"{layers} layers (+{len(extra)} for {', '.join(extra)}) = {total}" if extra else f"{layers} layers"
        k_v, vpp_v = p.virtual_stage_layers, p.virtual_stages
        if vpp_v is not None and not extra:
            return  # checked when the layers are assigned; not decided here
        if total % pp:
            # The check is in validate_args since core_v0.10.0 (ADLR/megatron-lm!2398, 2024-11); before it,
            # Megatron-Core's get_num_layers_to_build took num_layers // PP layers per stage without a word.
            yield Finding(f"{counted} is not divisible by pipeline parallel size {pp}; Megatron stops: "
                          "\"Number of layers should be divisible by the pipeline-model-parallel size\" (releases "
                          f"before core_v0.10.0 and forks of them instead build {total // pp} per stage, "
                          f"{total // pp * pp} layers in all: not the model configured)",
                          at=layers_v, also=_also((pp_v, "pipeline parallel size")),
                          fix="change --num-layers or --pipeline-model-parallel-size, or give uneven first/last stages")
            return
        per_stage = total // pp
        for value, what in ((k_v, "layers per virtual pipeline stage"), (vpp_v, "virtual stages per pipeline rank")):
            k = as_int(value)
            if k is not None and k > 0 and per_stage % k:
                yield Finding(f"{per_stage} layers per pipeline stage ({total} / {pp}) are not divisible by {k} {what}; "
                              "Megatron stops: \"number of layers per pipeline stage must be divisible number of layers "
                              "per virtual pipeline stage\"", at=value,
                              also=_also((layers_v, "number of layers"), (pp_v, "pipeline parallel size")))


# =============================================================================== TL106


class SequenceParallelWithoutTP(Rule):
    """## What it does
    Warns when sequence parallelism is switched on with tensor (model) parallel size 1.

    ## Why is this bad?
    Sequence parallelism shards along the tensor-parallel group; without one it does nothing.
    Megatron silently turns it off (Megatron-Core used directly refuses it); GPT-NeoX ignores it.
    The run is not what the config says, and memory estimates that count on it are wrong.

    ## Example
    `--sequence-parallel --tensor-model-parallel-size 1`

    ## Fix
    Remove the flag, or use tensor parallelism > 1.

    ## References
    - Megatron-LM `megatron/training/arguments.py:1433-1439` @ d98e8a6: warning "Disabling sequence
      parallelism because tensor model parallelism is disabled";
      `megatron/core/model_parallel_config.py:502-504`: "Cannot use sequence parallelism without
      tensor parallelism".
    - GPT-NeoX `megatron/neox_arguments/neox_args.py:84-89` @ ea7aefd (sequence_parallel shards
      across the model-parallel group: no effect at model_parallel_size 1).
    """

    code = "TL106"
    release_dependent = False
    name = "sequence-parallel-without-tp"
    default_severity = Severity.WARNING
    summary = "sequence parallelism enabled with tensor parallel size 1 (silently disabled / no effect)"
    requires = frozenset({CAP_MEGATRON_MODEL})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        sp, tp_v = spec.parallel.sequence_parallel, spec.parallel.tensor
        tp = as_int(tp_v)
        if defaulted_in_partial(spec, tp_v) or from_checkpoint(spec):
            return
        if sp is not None and as_bool(sp) and sp.provenance.origin is Origin.FILE and tp is not None and tp <= 1:
            what = ("Megatron disables it (\"Disabling sequence parallelism because tensor model parallelism is "
                    "disabled\")" if CAP_MEGATRON_ARGUMENTS in capabilities(spec) else "NeoX shards nothing with model_parallel_size 1")
            yield Finding(f"sequence parallelism is on with tensor parallel size {tp}: {what}",
                          at=sp, also=_also((tp_v, "tensor parallel size")),
                          fix="remove sequence parallelism or use tensor parallel size > 1")


# =============================================================================== TL107


class SeqLengthExceedsPositions(Rule):
    """## What it does
    Checks `max_position_embeddings >= seq_length`.

    ## Why is this bad?
    Megatron-LM and GPT-NeoX stop in argument validation.

    ## Example
    ```yaml
    seq_length: 4096
    max_position_embeddings: 2048
    ```

    ## Fix
    Raise `max_position_embeddings` to at least the sequence length.

    ## References
    - Megatron-LM `megatron/training/arguments.py:1353-1356` @ d98e8a6: "max_position_embeddings
      (...) must be greater than or equal to seq_length (...)".
    - GPT-NeoX `megatron/neox_arguments/arguments.py:1257-1266` @ ea7aefd: "max_position_embeddings
      must be bigger or equal seq_length".
    """

    code = "TL107"
    release_dependent = False
    name = "seq-length-exceeds-positions"
    default_severity = Severity.ERROR
    summary = "max_position_embeddings smaller than seq_length"
    requires = frozenset({CAP_MEGATRON_MODEL})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        seq_v, pos_v = spec.model.seq_length, spec.model.max_position_embeddings
        seq, pos = as_int(seq_v), as_int(pos_v)
        if seq is None or pos is None or pos >= seq or from_checkpoint(spec):
            return
        yield Finding(f"max_position_embeddings {pos} < seq_length {seq}; the framework stops: "
                      "\"max_position_embeddings must be greater than or equal to seq_length\"",
                      at=pos_v, also=_also((seq_v, "sequence length")),
                      fix=f"set max_position_embeddings to at least {seq}")


# =============================================================================== TL108


class SeqLengthContextParallel(Rule):
    """## What it does
    With context parallelism (CP > 1), checks that the sequence length is a multiple of 2 x CP.

    ## Why is this bad?
    Megatron splits each sequence into 2 x CP chunks (for load balance under the causal mask)
    and stops in argument validation when they are not whole.

    ## Example
    `--seq-length 4000 --context-parallel-size 4` (4000 % 8 != 0)

    ## Fix
    Use a sequence length that is a multiple of 2 x CP.

    ## References
    - Megatron-LM `megatron/training/arguments.py:1335-1338` @ d98e8a6: "seq-length should be a
      multiple of 2 * context-parallel-size if context-parallel-size > 1."
    """

    code = "TL108"
    release_dependent = False
    name = "seq-length-context-parallel"
    default_severity = Severity.ERROR
    summary = "seq_length not a multiple of 2 x context-parallel size"
    requires = frozenset({CAP_MEGATRON_CORE})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        seq_v, cp_v = spec.model.seq_length, spec.parallel.context
        seq, cp = as_int(seq_v), as_int(cp_v)
        if seq is None or cp is None or cp <= 1 or seq % (2 * cp) == 0:
            return
        yield Finding(f"seq_length {seq} is not a multiple of 2 x context parallel size {cp} = {2 * cp}; Megatron stops: "
                      "\"seq-length should be a multiple of 2 * context-parallel-size\"",
                      at=seq_v, also=_also((cp_v, "context parallel size")),
                      fix=f"use a sequence length that is a multiple of {2 * cp}")


# =============================================================================== TL109


class ExpertsExpertParallel(Rule):
    """## What it does
    With expert parallelism (EP > 1), checks that the model has experts and that their number is
    divisible by EP.

    ## Why is this bad?
    Each EP rank holds a whole share of the experts; Megatron stops in argument validation.

    ## Example
    `--num-experts 6 --expert-model-parallel-size 4`

    ## Fix
    Use an EP that divides the number of experts.

    ## References
    - Megatron-LM `megatron/training/arguments.py:1655-1658` @ d98e8a6 and
      `megatron/core/transformer/transformer_config.py:1595-1596`: "Number of experts should be a
      multiple of expert model parallel_size."
    """

    code = "TL109"
    release_dependent = False
    name = "experts-expert-parallel"
    default_severity = Severity.ERROR
    summary = "number of experts not divisible by expert-parallel size (or EP > 1 without experts)"
    requires = frozenset({CAP_MEGATRON_CORE})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        ep_v, experts_v = spec.parallel.expert, spec.model.num_experts
        ep = as_int(ep_v)
        if ep is None or ep <= 1 or from_checkpoint(spec):
            return
        experts = _experts(experts_v)
        if experts_v is None and not as_bool(spec.engine.deepspeed_flag) \
                and not partial_args(spec):
            yield Finding(f"expert parallel size {ep} but no --num-experts: Megatron stops (\"num_experts must be "
                          "non None to use expert model parallelism\")", at=ep_v, fix="give --num-experts or drop expert parallelism")
        elif experts is not None and experts % ep:
            yield Finding(f"{experts} experts are not divisible by expert parallel size {ep}; Megatron stops: "
                          "\"Number of experts should be a multiple of expert model parallel_size.\"",
                          at=ep_v, also=_also((experts_v, "number of experts")),
                          fix=f"use an expert parallel size that divides {experts}")


def _experts(value: Value | None) -> int | None:
    """Experts per MoE layer; Megatron-DeepSpeed's --num-experts is a list (one per layer group)."""
    if value is None:
        return None
    raw = value.value
    if isinstance(raw, list):
        nums = [x for x in raw if isinstance(x, int) and not isinstance(x, bool)]
        return max(nums) if nums else None
    return as_int(value)


# =============================================================================== TL110


class ZeroPipelineConflict(Rule):
    """## What it does
    Reports ZeRO stage 2 or 3 in a run that DeepSpeed executes with its PipelineEngine:

    - DeepSpeed: the config gives pipeline stages > 1 (`pipeline.stages`), or the run is
      declared to use the pipeline engine;
    - Megatron-DeepSpeed: `--deepspeed` with pipeline parallel size > 1, or with size 1 in
      `pretrain_gpt.py`-style entry points (they build `GPTModelPipe`, a PipelineModule, unless
      `--no-pipeline-parallel` is given), the stage from the DeepSpeed config or `--zero-stage`;
    - GPT-NeoX: `pipe_parallel_size >= 1` — **including 1**: NeoX wraps the model in DeepSpeed's
      PipelineModule whenever `pipe_parallel_size >= 1`; only `pipe_parallel_size: 0` runs the
      plain model.

    ## Why is this bad?
    The pipeline engine schedules its own gradient reductions; ZeRO-2/3 partition gradients
    (and parameters) in a way it does not support. The engine asserts at start-up.

    ## Example
    ```yaml
    pipe_parallel_size: 1
    zero_optimization: {stage: 2}
    ```

    ## Fix
    Use ZeRO stage 0 or 1 with pipeline parallelism; or, without real pipeline parallelism, leave
    the pipeline engine out (NeoX `pipe_parallel_size: 0`, Megatron-DeepSpeed
    `--no-pipeline-parallel`).

    ## References
    - DeepSpeed `deepspeed/runtime/pipe/engine.py:76-77` @ edaa722:
      `assert self.zero_optimization_stage() < ZeroStageEnum.gradients, "ZeRO-2 and ZeRO-3 are
      incompatible with pipeline parallelism"`.
    - GPT-NeoX `megatron/neox_arguments/arguments.py:1085` @ ea7aefd:
      `is_pipe_parallel = pipe_parallel_size >= 1` (framework-assertions N14).
    - Megatron-DeepSpeed `pretrain_gpt.py` (model_provider): `if args.deepspeed and not
      args.no_pipeline_parallel: model = GPTModelPipe(...)`.
    """

    code = "TL110"
    release_dependent = False
    name = "zero-pipeline-conflict"
    default_severity = Severity.ERROR
    summary = "ZeRO stage 2/3 with DeepSpeed's pipeline engine (NeoX: pipe_parallel_size >= 1, even 1)"
    requires = frozenset({CAP_STARTUP_CHECKS})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        stage_v = zero_stage(spec)
        stage = as_int(stage_v)
        if stage is None or stage < 2:
            return
        engine = pipeline_engine(spec)
        if engine is None:
            return
        quote = "DeepSpeed stops: \"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\""
        if engine.only_wrapper:
            if CAP_NEOX_ARGUMENTS in capabilities(spec):
                fix = "set `pipe_parallel_size: 0` (no pipeline engine) or use ZeRO stage 1"
            else:
                fix = "add --no-pipeline-parallel (no pipeline engine) or use ZeRO stage 1"
        else:
            fix = "use ZeRO stage 0 or 1 with pipeline parallelism"
        at, other = (engine.at, stage_v) if engine.only_wrapper and CAP_NEOX_ARGUMENTS in capabilities(spec) else (stage_v, engine.at)
        also = [(other, "pipeline engine engaged here" if other is engine.at else f"ZeRO stage {stage} here")]
        if CAP_MEGATRON_ARGUMENTS in capabilities(spec):
            flag = spec.settings.get("zero_stage")  # file text: where --zero-stage is written, for the location
            if flag is not None and flag is not stage_v and flag.span != getattr(stage_v, "span", None):
                also.append((flag, f"--zero-stage {flag.value}"))
        yield Finding(f"ZeRO stage {stage} with DeepSpeed's pipeline engine: {engine.reason}; {quote}",
                      at=at, also=_also(*also), fix=fix)


# =============================================================================== TL111


class MoeZeroConflict(Rule):
    """## What it does
    Reports mixture-of-experts models with a ZeRO stage their framework refuses: GPT-NeoX
    refuses MoE (`moe_num_experts > 1`) with ZeRO stage 2 or 3; Megatron-DeepSpeed's native
    DeepSpeed MoE layers (`--num-experts > 1` with `--deepspeed`) are refused with ZeRO-3.

    ## Why is this bad?
    The run stops at start-up.

    ## Example
    ```yaml
    moe_num_experts: 8
    zero_optimization: {stage: 2}
    ```

    ## Fix
    Use ZeRO stage 1 (NeoX) or 1/2 (DeepSpeed MoE).

    ## References
    - GPT-NeoX `megatron/neox_arguments/arguments.py:1088-1089` @ ea7aefd: "MoE is not compatible
      with zero stages 2 and 3".
    - DeepSpeed `deepspeed/runtime/engine.py:1889-1891` @ edaa722: "Native DeepSpeed MoE is not
      supported with ZeRO Stage 3. Use AutoEP or choose ZeRO stage 1/2."
    """

    code = "TL111"
    release_dependent = False
    name = "moe-zero-conflict"
    default_severity = Severity.ERROR
    summary = "MoE with a ZeRO stage the framework refuses (NeoX: >= 2; DeepSpeed native MoE: 3)"
    requires = frozenset({CAP_MEGATRON_MODEL})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        stage_v = zero_stage(spec)
        stage = as_int(stage_v)
        experts_v = spec.model.num_experts
        experts = _experts(experts_v)
        if stage is None or experts is None or experts <= 1:
            return
        if CAP_NEOX_ARGUMENTS in capabilities(spec) and stage >= 2:
            yield Finding(f"{experts} experts (moe_num_experts) with ZeRO stage {stage}; NeoX stops: \"MoE is not "
                          "compatible with zero stages 2 and 3\"", at=stage_v,
                          also=_also((experts_v, "moe_num_experts")), fix="use ZeRO stage 0 or 1 with MoE")
        elif CAP_MEGATRON_ARGUMENTS in capabilities(spec) and stage >= 3 and as_bool(spec.engine.deepspeed_flag):
            yield Finding(f"DeepSpeed MoE ({experts} experts) with ZeRO stage {stage}; DeepSpeed stops: \"Native "
                          "DeepSpeed MoE is not supported with ZeRO Stage 3. Use AutoEP or choose ZeRO stage 1/2.\"",
                          at=stage_v, also=_also((experts_v, "number of experts")), fix="use ZeRO stage 1 or 2 with MoE")


# =============================================================================== TL112


class PrecisionUnsupportedGPU(Rule):
    """## What it does
    When the target GPU is declared (the run's cluster GPU, or `gpu` in `[tool.trainlint]`),
    reports a precision the GPU cannot run: bf16 before Ampere (V100), FP8 before Hopper/Ada
    (A100).

    ## Why is this bad?
    DeepSpeed refuses bf16 on such a device at start-up; Transformer Engine refuses FP8 (or the
    kernels fall back, far slower). Either way the run is not the one planned.

    ## Example
    A `bf16: {enabled: true}` config for a V100 cluster.

    ## Fix
    Use fp16 (with loss scaling) on pre-Ampere GPUs; drop FP8 on pre-Hopper GPUs.

    ## References
    - DeepSpeed `deepspeed/runtime/engine.py:1678-1682` @ edaa722: "Type bf16 is not supported on
      your device."
    - framework-assertions X112 / M39: bf16 needs compute capability 8.0+, FP8 needs 8.9+/9.0+;
      GPU capabilities from trainlint's catalog (`gpus.json` of the `trainlint.data` package).
    """

    code = "TL112"
    release_dependent = False
    name = "precision-unsupported-gpu"
    default_severity = Severity.ERROR
    summary = "bf16 on a pre-Ampere GPU or FP8 on a pre-Hopper GPU, when the target GPU is declared"
    requires = frozenset({CAP_STARTUP_CHECKS})

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        declared = _declared_gpu(spec, ctx)
        if declared is None:
            return
        name, where = declared
        try:
            gpu = find_gpu(name, ctx.gpus)  # the session's table: plugin and project GPUs too
        except CatalogError:
            return  # an unknown GPU name is reported where it is declared
        dtype_v, fp8_v = spec.precision.dtype, spec.precision.fp8
        target = where if isinstance(where, Value) else None
        if as_str(dtype_v) == "bf16" and not gpu.supports_bf16:
            bf16 = spec.precision.bf16_enabled if as_bool(spec.precision.bf16_enabled) else dtype_v
            yield Finding(f"bf16 on {gpu.name} ({gpu.architecture}), which has no bf16 support; DeepSpeed stops: "
                          "\"Type bf16 is not supported on your device.\"", at=bf16,
                          also=_also((target, f"target GPU {gpu.id}")), fix="train in fp16 with loss scaling on this GPU")
        fp8 = fp8_v.value if fp8_v is not None else None
        if fp8 not in (None, False, "", "none") and not gpu.supports_fp8:
            yield Finding(f"FP8 ({fp8}) on {gpu.name} ({gpu.architecture}), which has no FP8 tensor cores",
                          at=fp8_v, also=_also((target, f"target GPU {gpu.id}")), fix="drop FP8 on this GPU")


def _declared_gpu(spec: TrainingSpec, ctx: RuleContext) -> tuple[str, Value | str] | None:
    """The target GPU when something declares it: the spec (launcher / CLI) first, then the
    project config's ``gpu``. An assumed default GPU is not a declaration."""
    gpu = spec.cluster.gpu
    if gpu is not None and isinstance(gpu.value, str) and gpu.provenance.origin is not Origin.ASSUMED:
        return gpu.value, gpu
    estimation = getattr(ctx.project, "estimation", None)
    declared = estimation.gpu if estimation is not None else None
    if isinstance(declared, str):
        return declared, "project config"
    return None


RULES: list[type] = [
    BatchSizeMismatch,
    WorldSizeNotDivisible,
    PrecisionConflict,
    AttentionHeadsLayout,
    LayersPipelineIndivisible,
    SequenceParallelWithoutTP,
    SeqLengthExceedsPositions,
    SeqLengthContextParallel,
    ExpertsExpertParallel,
    ZeroPipelineConflict,
    MoeZeroConflict,
    PrecisionUnsupportedGPU,
]
