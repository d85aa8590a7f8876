"""TL180-TL199: GPT-NeoX's own start-up checks (``NeoXArgs.__post_init__``:
``calculate_derived`` and ``validate_values`` in megatron/neox_arguments/arguments.py), decided
statically.

Cross-framework failures (batch triple, world-size divisibility, ZeRO >= 2 with the pipeline
engine, precision conflicts, heads, positions, SP without TP, MoE with ZeRO) are in
:mod:`.cross_framework`; unknown keys, types and the optimizer/scheduler dict shape are input
diagnostics from the adapter and the NeoX schema.

A NeoX run is often split over several YAML files (a model file and ``local_setup.yml``).
Rules that fire on something *missing* (no ``checkpoint_factor``, no ``train_iters``) only do so
when the checked files describe a whole run (:func:`whole_run`): one file of a split config is
not evidence that the key is absent from the run.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterator

from trainlint.framework import CAP_NEOX_ARGUMENTS
from trainlint.diagnostics import Severity
from trainlint.provenance import Value, default
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.spec import TrainingSpec

ARGS = "megatron/neox_arguments/arguments.py"
COMMIT = "ea7aefd"
OPT_DEFAULT_LR = 0.001
"""OPT_PARAMS_DEFAULTS["lr"] (arguments.py:84-92): the lr NeoX uses when optimizer.params has none."""

ATTENTION_TYPES = ("global", "local", "sparse_fixed", "sparse_variable", "bigbird", "bslongformer", "gmlp", "amlp",
                   "flash", "rwkv", "mamba")
"""ATTENTION_TYPE_CHOICES, megatron/neox_arguments/neox_args.py:29-41@ea7aefd."""


@lru_cache(maxsize=1)
def _properties() -> dict[str, dict]:
    from trainlint.schemas import load_schema

    return load_schema("neox")["properties"]


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


class Bf16ZeroWithoutFp32GradAccum(_NeoXRule):
    """## What it does
    Warns when a run trains in bf16 with ZeRO (stage >= 1) on DeepSpeed's pipeline engine
    (`pipe_parallel_size >= 1`) without `data_types: {grad_accum_dtype: fp32}`.

    ## Why is this bad?
    NeoX knows this combination breaks in DeepSpeed (microsoft/DeepSpeed#1835) and only logs a
    warning: gradients accumulate in bf16 and training degrades or fails later. (NeoX's own
    condition tests `pp_size > 0` after clamping pp_size to >= 1, so it warns even without the
    pipeline engine; trainlint warns only where the pipeline engine is engaged.)

    ## Example
    ```yaml
    pipe_parallel_size: 1
    precision: bfloat16
    zero_optimization: {stage: 1}
    ```

    ## Fix
    Add `data_types: {grad_accum_dtype: fp32}`.

    ## References
    * `megatron/neox_arguments/arguments.py:999-1009@ea7aefd`: `if (zero_stage > 0) and (pp_size > 0) and not
      fp32_grad_accum: logging.warn("Outstanding DeepSpeed issue means that pp>0, zero1, and bf16 will break
      without fp32 grads")`
    """

    code = "TL180"
    name = "neox-bf16-zero-without-fp32-grad-accum"
    default_severity = Severity.WARNING
    summary = "bf16 with ZeRO >= 1 on the pipeline engine without data_types.grad_accum_dtype fp32"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        dtype = a.spec.get("precision.dtype")
        stage = a.zero_stage()
        if dtype is None or dtype.value != "bf16" or not stage or not a.spec.value("parallel.pipeline_engine"):
            return
        accum = a.spec.value("precision.grad_accum_dtype")
        if accum == "fp32" or (accum is None and not a.whole_run() and not a.given("data_types")):
            return
        yield Finding(f"bf16 with ZeRO stage {stage} on the pipeline engine (pipe_parallel_size "
                      f"{a.get('pipe_parallel_size')}) and no data_types.grad_accum_dtype fp32: NeoX warns \"Outstanding "
                      "DeepSpeed issue means that pp>0, zero1, and bf16 will break without fp32 grads\"",
                      at="parallel.zero_stage", also=((dtype, "bf16 set here"), ("parallel.pipeline", "pipeline")),
                      fix="add data_types: {grad_accum_dtype: fp32}")


class OneBitAdamWithoutTrainIters(_NeoXRule):
    """## What it does
    Checks that a run with the `OneBitAdam` optimizer sets `train_iters`.

    ## Why is this bad?
    NeoX builds DeepSpeed's WarmupDecayLR schedule for OneBitAdam from `train_iters` and asserts it
    is set.

    ## Example
    ```yaml
    optimizer: {type: OneBitAdam, params: {lr: 0.0006}}
    ```

    ## Fix
    Add `train_iters`.

    ## References
    * `megatron/neox_arguments/arguments.py:1062-1065@ea7aefd`: `assert self.train_iters is not None`,
      "OneBitAdam requires train_iters to be specified"
    """

    code = "TL181"
    name = "neox-onebitadam-without-train-iters"
    summary = "OneBitAdam optimizer without train_iters"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        kind = a.get("optimizer.type")
        if not isinstance(kind, str) or kind.lower() != "onebitadam" or a.given("train_iters") or not a.whole_run():
            return
        yield Finding(f"optimizer type {kind} without train_iters: NeoX stops with \"OneBitAdam requires train_iters to "
                      "be specified\"", at=a.at("optimizer.type"), fix="add train_iters")


class AttentionConfigLength(_NeoXRule):
    """## What it does
    Expands `attention_config` as NeoX does and checks it has one entry per layer and only known
    attention types.

    ## Why is this bad?
    NeoX asserts the expanded list has `num_layers` entries. `[[["global", "local"], 12]]` expands
    to 24 entries (the pattern repeated 12 times), not 12; `"all"` needs `num_layers` divisible by
    the pattern length.

    ## Example
    ```yaml
    num_layers: 24
    attention_config: [[["flash"], 12]]
    ```

    ## Fix
    Make the counts add up to `num_layers`, or use `[[["flash"], "all"]]`.

    ## References
    * `megatron/neox_arguments/arguments.py:1091-1104@ea7aefd`: "Length of attention config list must equal
      num_layers"; "Attention type {item} not recognized"
    * `megatron/utils.py:326-353@ea7aefd` (expand_attention_types): "Number of layers ({n}) is not divisible by
      the length of pattern: {pattern}"
    """

    code = "TL182"
    name = "neox-attention-config-length"
    summary = "attention_config does not expand to num_layers entries, or names an unknown attention type"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.given("attention_config"):
            return
        layers = _number(a.spec.value("model.num_layers"))
        types, error = a.attention_types()
        also = (("model.num_layers", f"num_layers {layers}"),)
        if error:
            yield Finding(f"attention_config: NeoX stops with \"{error}\"", at=a.at("attention_config"), also=also)
            return
        if types is None or not isinstance(layers, int):
            return
        if len(types) != layers:
            yield Finding(f"attention_config expands to {len(types)} layers but num_layers is {layers}: NeoX stops with "
                          "\"Length of attention config list must equal num_layers\"", at=a.at("attention_config"),
                          also=also)
        unknown = sorted({t for t in types if t not in ATTENTION_TYPES})
        if unknown:
            yield Finding(f"attention_config names {', '.join(unknown)}: NeoX stops with \"Attention type {unknown[0]} not "
                          f"recognized\" (known: {', '.join(ATTENTION_TYPES)})", at=a.at("attention_config"))


class ArchitectureConstraints(_NeoXRule):
    """## What it does
    Checks NeoX's constraints on non-attention blocks: gMLP/aMLP blocks refuse
    `partition_activations`; Mamba and RWKV refuse ZeRO stage 3; RWKV refuses model parallelism;
    Mamba and RWKV have no dropout.

    ## Why is this bad?
    The first three stop NeoX at start-up. The dropout checks are written `assert (cond,)` (a
    non-empty tuple, always true), so NeoX never stops: a non-zero `hidden_dropout` is silently not
    applied in those blocks (a warning here).

    ## Example
    ```yaml
    attention_config: [[["rwkv"], "all"]]
    model_parallel_size: 2
    ```

    ## Fix
    Use ZeRO <= 2, `model_parallel_size: 1` for RWKV, no `partition_activations` with gMLP, and
    `hidden_dropout: 0` with Mamba/RWKV.

    ## References
    * `megatron/neox_arguments/arguments.py:1105-1123@ea7aefd`: "GMLP Blocks are not compatible with partition
      activations"; "Zero stage 3 not compatible with Mamba"; "RWKV not currently compatible with model
      parallelism"; "Zero stage 3 not compatible with RWKV"; `assert (self.hidden_dropout == 0.0,)`, "Mamba does
      not yet have dropout implemented" (never fires)
    """

    code = "TL183"
    name = "neox-architecture-constraints"
    summary = "gMLP with partition_activations, Mamba/RWKV with ZeRO-3, RWKV with model parallelism"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        types, _ = a.attention_types()
        if not types or not a.given("attention_config"):
            return
        kinds = set(types)
        cfg = (a.at("attention_config"), "attention_config")
        if kinds & {"gmlp", "amlp"} and a.get("partition_activations"):
            yield Finding("gMLP/aMLP blocks with partition_activations: NeoX stops with \"GMLP Blocks are not compatible "
                          "with partition activations\"", at=a.at("partition_activations"), also=(cfg,))
        stage = a.zero_stage()
        for kind, name in (("mamba", "Mamba"), ("rwkv", "RWKV")):
            if kind not in kinds:
                continue
            if stage is not None and stage > 2:
                yield Finding(f"{name} blocks with ZeRO stage {stage}: NeoX stops with \"Zero stage 3 not compatible with "
                              f"{name}\"", at="parallel.zero_stage", also=(cfg,))
            dropout = _number(a.get("hidden_dropout"))
            if dropout and a.given("hidden_dropout"):
                yield Finding(f"hidden_dropout {dropout} with {name} blocks: \"{name} does not yet have dropout "
                              "implemented\"; NeoX's assertion is written as a tuple and never fires, so the dropout is "
                              "silently not applied", at=a.at("hidden_dropout"), also=(cfg,), severity=Severity.WARNING)
        mp = _number(a.spec.value("parallel.tensor"))
        if "rwkv" in kinds and isinstance(mp, int) and mp != 1:
            yield Finding(f"RWKV blocks with model_parallel_size {mp}: NeoX stops with \"RWKV not currently compatible "
                          "with model parallelism\"", at="parallel.tensor", also=(cfg,))


class GroupedQueryAttention(_NeoXRule):
    """## What it does
    Checks grouped/multi-query attention (`num_kv_heads` < `num_attention_heads`): only flash or
    global attention and no sparsity config are allowed. (KV heads dividing the heads and
    `model_parallel_size` are part of the cross-framework heads rule, TL104.)

    ## Why is this bad?
    NeoX asserts each of these at start-up.

    ## Example
    ```yaml
    num_attention_heads: 32
    num_kv_heads: 8
    attention_config: [[["local"], "all"]]
    ```

    ## Fix
    Use flash (or global) attention with GQA, and no sparsity config.

    ## References
    * `megatron/neox_arguments/arguments.py:1131-1148@ea7aefd`: "num_kv_heads must evenly divide
      num_attention_heads and be no greater than it"; "Sparse attention not compatible with GQA or MQA"; "GQA / MQA
      currently only compatible with Flash or standard global/sliding window Attention"
    """

    code = "TL184"
    name = "neox-grouped-query-attention"
    summary = "GQA/MQA (num_kv_heads < heads) with sparse or non-flash/global attention"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        kv, heads = _number(a.get("num_kv_heads")), _number(a.spec.value("model.num_attention_heads"))
        if not isinstance(kv, int) or not isinstance(heads, int) or kv <= 0 or not a.given("num_kv_heads"):
            return
        if heads % kv or kv >= heads:
            return  # heads % KV heads is the cross-framework heads rule (TL104)
        if a.get("sparsity_config"):
            yield Finding(f"num_kv_heads {kv} < {heads} heads with a sparsity_config: NeoX stops with \"Sparse attention "
                          "not compatible with GQA or MQA\"", at=a.at("sparsity_config"),
                          also=((a.at("num_kv_heads"), "KV heads"),))
        types, _ = a.attention_types()
        other = sorted({t for t in types or [] if t not in ("flash", "global")})
        if other:
            yield Finding(f"num_kv_heads {kv} < {heads} heads with {', '.join(other)} attention: NeoX stops with \"GQA / "
                          "MQA currently only compatible with Flash or standard global/sliding window Attention\"",
                          at=a.at("attention_config"), also=((a.at("num_kv_heads"), "KV heads"),))


class RequiredModelKeys(_NeoXRule):
    """## What it does
    Checks that a model config sets `num_layers`, `hidden_size`, `num_attention_heads` and
    `max_position_embeddings` (NeoX has no defaults for them).

    ## Why is this bad?
    NeoX's `validate_values` raises "... is None." for the first missing one. The rule runs when
    the checked files set at least one of the four (a model config); a file with none of them is
    taken to be another part of a split config (a run named on its own with none of them: TL191).

    ## Example
    ```yaml
    num_layers: 12
    hidden_size: 768
    num_attention_heads: 12
    ```
    (no `max_position_embeddings`)

    ## Fix
    Add the missing keys (`max_position_embeddings` is usually `seq_length`).

    ## References
    * `megatron/neox_arguments/arguments.py:1224-1242@ea7aefd`: `required_args = ["num_layers", "hidden_size",
      "num_attention_heads", "max_position_embeddings"]`; "NeoXArgs.validate_values() {arg} is None."
    """

    code = "TL185"
    name = "neox-required-model-keys"
    summary = "a model config without num_layers, hidden_size, num_attention_heads or max_position_embeddings"

    _KEYS = ("num_layers", "hidden_size", "num_attention_heads", "max_position_embeddings")

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        present = [k for k in self._KEYS if a.given(k)]
        missing = [k for k in self._KEYS if not a.given(k)]
        if not present or not missing:
            return
        yield Finding(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set (NeoX has no default): NeoX "
                      f"stops with \"NeoXArgs.validate_values() {missing[0]} is None.\"",
                      at=a.at(present[0]), fix=f"add {missing[0]}")


class MinLrAboveLr(_NeoXRule):
    """## What it does
    Checks that `min_lr` is not above the learning rate. NeoX takes the learning rate from
    `optimizer.params.lr` (0.001 when the optimizer gives none), replacing any top-level `lr`.

    ## Why is this bad?
    NeoX's `validate_values` raises "min_lr must be smaller or equal lr".

    ## Example
    ```yaml
    optimizer: {type: Adam, params: {lr: 0.0001}}
    min_lr: 0.0006
    ```

    ## Fix
    Set `min_lr` at or below `optimizer.params.lr` (often a tenth of it).

    ## References
    * `megatron/neox_arguments/arguments.py:1052-1060@ea7aefd`: `"lr": opt_params["params"].get("lr",
      OPT_PARAMS_DEFAULTS["lr"])`
    * `megatron/neox_arguments/arguments.py:1268-1276@ea7aefd`: "NeoXArgs.validate_values() min_lr must be
      smaller or equal lr"
    """

    code = "TL186"
    name = "neox-min-lr-above-lr"
    summary = "min_lr greater than the learning rate (optimizer.params.lr)"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        min_lr = _number(a.get("min_lr"))
        if min_lr is None or not a.given("min_lr"):
            return
        lr_value = a.s.get("optimizer.params.lr")
        if lr_value is not None:
            lr, target, note = _number(lr_value.value), a.at("optimizer.params.lr"), "optimizer.params.lr"
        elif a.given("optimizer") and isinstance(a.get("optimizer"), dict):
            lr, target, note = OPT_DEFAULT_LR, a.at("optimizer"), "NeoX's default lr 0.001 (no optimizer.params.lr)"
        else:
            return  # the optimizer may be in another file of the run
        if lr is not None and min_lr > lr:
            yield Finding(f"min_lr {min_lr} is greater than the learning rate {lr} ({note}): NeoX stops with "
                          "\"min_lr must be smaller or equal lr\"", at=a.at("min_lr"), also=((target, "learning rate"),))


class SaveWithoutCheckpointFactor(_NeoXRule):
    """## What it does
    Checks that a run that saves checkpoints (`save`) says when: `checkpoint_factor` or
    `extra_save_iters`.

    ## Why is this bad?
    NeoX's `validate_values` raises. (`save_interval` was renamed `checkpoint_factor`.)

    ## Example
    ```yaml
    save: checkpoints
    ```

    ## Fix
    Add `checkpoint_factor: 1000`.

    ## References
    * `megatron/neox_arguments/arguments.py:1278-1290@ea7aefd`: "NeoXArgs.validate_values() checkpoint_factor or
      extra_save_iters must be defined if save is defined"
    """

    code = "TL187"
    release_dependent = True
    behaviour_changed = "GPT-NeoX renamed save_interval to checkpoint_factor in #737 (2023)"
    name = "neox-save-without-checkpoint-factor"
    summary = "save without checkpoint_factor or extra_save_iters"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        if a.get("save") is None or a.get("checkpoint_factor") is not None or a.get("extra_save_iters") is not None:
            return
        if not a.whole_run():
            return
        renamed = " (save_interval, given here, is the old name of checkpoint_factor)" if a.given("save_interval") else ""
        severity, version = None, ""
        target = a.spec.target
        if renamed and (target is None or not target.known):
            # Written for a NeoX before the rename (gpt-neox #737), where save_interval does this
            # job; whether the run's NeoX has the rename is not known (TL008 says the same, as a warning).
            severity = Severity.WARNING
            version = ("; on a GPT-NeoX from before the rename save_interval is enough, and which version this "
                       "config runs on is not known (upstream is assumed)")
        yield Finding(f"save is set without checkpoint_factor or extra_save_iters{renamed}: NeoX stops with "
                      "\"checkpoint_factor or extra_save_iters must be defined if save is defined\"" + version,
                      at=a.at("save"), also=((a.at("save_interval"), "old name of checkpoint_factor"),) if renamed else (),
                      fix="add checkpoint_factor", severity=severity)


class NumUniqueLayers(_NeoXRule):
    """## What it does
    Checks `num_unique_layers` (parameter sharing): at most `num_layers`, and a divisor of it.

    ## Why is this bad?
    NeoX's `validate_values` raises.

    ## Example
    ```yaml
    num_layers: 24
    num_unique_layers: 5
    ```

    ## Fix
    Use a divisor of `num_layers`.

    ## References
    * `megatron/neox_arguments/arguments.py:1293-1312@ea7aefd`: "num-unique-layers must be smaller or equal
      num_layers"; "num-layers should be divisible by num-unique-layers"
    """

    code = "TL188"
    name = "neox-num-unique-layers"
    summary = "num_unique_layers greater than num_layers or not dividing it"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        unique, layers = _number(a.get("num_unique_layers")), _number(a.spec.value("model.num_layers"))
        if not isinstance(unique, int) or not isinstance(layers, int) or unique <= 0:
            return
        also = (("model.num_layers", f"num_layers {layers}"),)
        if unique > layers:
            yield Finding(f"num_unique_layers {unique} > num_layers {layers}: NeoX stops with \"num-unique-layers must be "
                          "smaller or equal num_layers\"", at=a.at("num_unique_layers"), also=also)
        elif layers % unique:
            yield Finding(f"num_layers {layers} is not divisible by num_unique_layers {unique}: NeoX stops with "
                          "\"num-layers should be divisible by num-unique-layers\"", at=a.at("num_unique_layers"),
                          also=also)


class Fp16LmCrossEntropy(_NeoXRule):
    """## What it does
    Checks that `fp16_lm_cross_entropy` is only used with fp16 precision.

    ## Why is this bad?
    NeoX's `validate_values` raises for bf16 or fp32 runs.

    ## Example
    ```yaml
    precision: bfloat16
    fp16_lm_cross_entropy: true
    ```

    ## Fix
    Remove `fp16_lm_cross_entropy` (or train in fp16).

    ## References
    * `megatron/neox_arguments/arguments.py:1314-1322@ea7aefd`: `if self.fp16_lm_cross_entropy and
      self.precision != "fp16"`, "lm cross entropy in fp16 only support in fp16 mode."
    """

    code = "TL189"
    name = "neox-fp16-lm-cross-entropy"
    summary = "fp16_lm_cross_entropy with a precision other than fp16"

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        if a.get("fp16_lm_cross_entropy") is not True:
            return
        dtype = a.spec.get("precision.dtype")
        if dtype is None or dtype.value == "fp16":
            return
        from trainlint.provenance import Origin

        if dtype.provenance.origin is Origin.DEFAULT and not a.whole_run():
            return
        name = {"bf16": "bfloat16"}.get(dtype.value, dtype.value)
        yield Finding(f"fp16_lm_cross_entropy with precision {name}: NeoX stops with \"lm cross entropy in fp16 only "
                      "support in fp16 mode.\"", at=a.at("fp16_lm_cross_entropy"), also=((dtype, "precision"),))


class DataPaths(_NeoXRule):
    """## What it does
    Checks the data path keys: `data_path` or all three of `train/valid/test_data_paths`, weights
    as long as their paths, and `train_label_data_paths` only with `train_data_paths`.

    ## Why is this bad?
    NeoX asserts each of these at start-up.

    ## Example
    ```yaml
    train_data_paths: [data/train_text_document]
    valid_data_paths: [data/val_text_document]
    ```
    (no `test_data_paths`)

    ## Fix
    Give `data_path` alone, or all three split lists with matching weights.

    ## References
    * `megatron/neox_arguments/arguments.py:1325-1361@ea7aefd`: "Please provide *either* `data_path` or
      `train/valid/test_data_path` in args"; "One or more of train/valid/test data_path are not provided";
      `assert len(self.train_data_paths) == len(self.train_data_weights)`
    * `megatron/neox_arguments/arguments.py:1175-1178@ea7aefd`: "Must use `train_label_data_paths` with
      `train_data_paths`, not `data_path`"
    """

    code = "TL190"
    name = "neox-data-paths"
    summary = "data_path with split paths, an incomplete train/valid/test set, or weights of another length"

    _SPLITS = ("train", "valid", "test")

    def findings(self, a: NeoXArgs, ctx: RuleContext) -> Iterator[Finding]:
        paths = {s: a.get(f"{s}_data_paths") for s in self._SPLITS}
        given = [s for s in self._SPLITS if paths[s] is not None]
        if len(given) == 3 and a.get("data_path") is not None:
            yield Finding("data_path with train/valid/test_data_paths: NeoX stops with \"Please provide *either* "
                          "`data_path` or `train/valid/test_data_path` in args\"", at=a.at("data_path"),
                          also=((a.at("train_data_paths"), "split paths"),))
        elif given and len(given) < 3:
            missing = [f"{s}_data_paths" for s in self._SPLITS if s not in given]
            yield Finding(f"{', '.join(f'{s}_data_paths' for s in given)} without {', '.join(missing)}: NeoX stops with "
                          "\"One or more of train/valid/test data_path are not provided\"",
                          at=a.at(f"{given[-1]}_data_paths"))
        for split in given:
            weights = a.get(f"{split}_data_weights")
            if isinstance(paths[split], list) and isinstance(weights, list) and len(weights) != len(paths[split]):
                yield Finding(f"{split}_data_weights has {len(weights)} entries for {len(paths[split])} "
                              f"{split}_data_paths: NeoX's assertion `len({split}_data_paths) == len({split}_data_weights)` "
                              "fails", at=a.at(f"{split}_data_weights"), also=((a.at(f"{split}_data_paths"), "paths"),))
        if a.get("train_label_data_paths") and (not paths["train"] or a.get("data_path") is not None):
            yield Finding("train_label_data_paths without train_data_paths (or with data_path): NeoX stops with \"Must use "
                          "`train_label_data_paths` with `train_data_paths`, not `data_path`\"",
                          at=a.at("train_label_data_paths"))


RULES: list[type] = [
    Bf16ZeroWithoutFp32GradAccum,
    OneBitAdamWithoutTrainIters,
    AttentionConfigLength,
    ArchitectureConstraints,
    GroupedQueryAttention,
    RequiredModelKeys,
    MinLrAboveLr,
    SaveWithoutCheckpointFactor,
    NumUniqueLayers,
    Fp16LmCrossEntropy,
    DataPaths,
]
