"""TL161-TL166: batch, schedule, training length, checkpoints, data, CUDA graphs."""

from __future__ import annotations

from typing import Iterator

from trainlint import hookimpl
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron_args import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


class BatchScheduleArguments(MegatronRule):
    """## What it does
    Checks the batch-size schedule and the evaluation batch: `--step-batch-size-schedule` excludes
    `--global-batch-size` and `--decrease-batch-size-if-needed`; the evaluation global batch (default:
    the training one) must be a multiple of eval micro batch x DP.

    ## Why is this bad?
    Megatron-LM stops in `validate_args` or when it builds the micro-batch calculator.

    ## Example
    ```bash
    pretrain_gpt.py ... --global-batch-size 512 --step-batch-size-schedule "0:256 1B:512"
    ```

    ## Fix
    Give either the schedule or the global batch size; pick an evaluation batch that divides.

    ## References
    * `megatron/training/arguments.py:698-701@d98e8a6`: "Cannot specify both --step-batch-size-schedule and
      --global-batch-size"
    * `megatron/core/num_microbatches_calculator.py:264-269@d98e8a6`: "Cannot specify both
      --step-batch-size-schedule and --decrease-batch-size-if-needed"
    * `megatron/training/arguments.py:709-720@d98e8a6`: "eval_global_batch_size ({g}) must be divisible by
      eval_micro_batch_size ({m}) * data_parallel_size ({d}) * gtp_weight_remat_size (1)"
    """

    code = "TL161"
    name = "megatron-batch-schedule-arguments"
    summary = "--step-batch-size-schedule with a fixed global batch, or an eval batch not divisible by micro x DP"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if a.given("step_batch_size_schedule"):
            for dest in ("global_batch_size", "decrease_batch_size_if_needed"):
                if a.given(dest) and (dest != "decrease_batch_size_if_needed" or a.on(dest)):
                    yield Finding(f"--step-batch-size-schedule with {a.flag(dest)}: Megatron-LM stops with \"Cannot "
                                  f"specify both --step-batch-size-schedule and {a.flag(dest)}\"", at=a.at(dest),
                                  also=((a.at("step_batch_size_schedule"), "batch size schedule"),))
            return
        if not (a.given("eval_global_batch_size") or a.given("eval_micro_batch_size")):
            return
        if not a.known("eval_global_batch_size", "eval_micro_batch_size") or \
                a.written("tensor_parallel_num_weight_shards"):
            return
        dp = a.int_field("parallel.data")
        g = a.get("eval_global_batch_size") or a.spec.value("batch.global_batch")
        m = a.get("eval_micro_batch_size") or a.spec.value("batch.micro_batch")
        if not all(isinstance(x, int) and x > 0 for x in (dp, g, m)):
            return
        if g % (m * dp):
            at = a.at("eval_global_batch_size") if a.given("eval_global_batch_size") else a.at("eval_micro_batch_size")
            yield Finding(f"eval global batch {g} is not divisible by eval micro batch {m} x DP {dp} = {m * dp}: "
                          f"Megatron-LM stops with \"eval_global_batch_size ({g}) must be divisible by "
                          f"eval_micro_batch_size ({m}) * data_parallel_size ({dp})\"", at=at,
                          also=(("parallel.data", "data-parallel size"),))


class TrainingLengthArguments(MegatronRule):
    """## What it does
    Checks that iteration-based and sample-based training options are not mixed: `--train-iters`
    excludes `--train-samples`, `--lr-decay-samples` and `--lr-warmup-samples`; `--train-samples`
    excludes `--train-iters`, `--lr-decay-iters` and `--lr-warmup-iters`; `--lr-warmup-fraction`
    excludes the explicit warmup of the same kind.

    ## Why is this bad?
    `validate_args` asserts each of these (unless `--skip-train`).

    ## Example
    ```bash
    pretrain_gpt.py ... --train-iters 10000 --lr-decay-samples 1000000
    ```

    ## Fix
    Use one unit for the run length, the decay and the warmup.

    ## References
    * `megatron/training/arguments.py:1274-1302@d98e8a6`: "expected iteration-based training", "expected
      iteration-based learning rate decay", "expected iteration-based learning rate warmup", "can only specify
      one of lr-warmup-fraction and lr-warmup-iters", "expected sample-based training", "expected sample-based
      learning rate decay", "expected sample-based learnig rate warmup", "can only specify one of
      lr-warmup-fraction and lr-warmup-samples"
    """

    code = "TL162"
    name = "megatron-training-length-arguments"
    summary = "iteration-based and sample-based training/LR options mixed"

    _ITER = (("train_samples", "expected iteration-based training"),
             ("lr_decay_samples", "expected iteration-based learning rate decay"),
             ("lr_warmup_samples", "expected iteration-based learning rate warmup"))
    _SAMPLE = (("train_iters", "expected sample-based training"),
               ("lr_decay_iters", "expected sample-based learning rate decay"),
               ("lr_warmup_iters", "expected sample-based learnig rate warmup"))

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dests = ("train_iters", "train_samples", "lr_decay_samples", "lr_warmup_samples", "lr_decay_iters",
                 "lr_warmup_iters", "lr_warmup_fraction", "skip_train")
        if not a.known(*dests) or a.on("skip_train"):
            return
        for main, others, warmup in (("train_iters", self._ITER, "lr_warmup_iters"),
                                     ("train_samples", self._SAMPLE, "lr_warmup_samples")):
            if not a.get(main):
                continue
            for dest, message in others:
                value = a.get(dest)
                if (value is not None and value != 0) if dest.startswith("lr_warmup") else value is not None:
                    yield Finding(f"{a.flag(main)} {a.get(main)} with {a.flag(dest)} {value}: Megatron-LM stops with "
                                  f"\"{message}\"", at=a.at(dest), also=((a.at(main), "training length"),))
            if a.get("lr_warmup_fraction") is not None and a.get(warmup):
                yield Finding(f"--lr-warmup-fraction with {a.flag(warmup)}: Megatron-LM stops with \"can only specify one "
                              f"of lr-warmup-fraction and {warmup.replace('_', '-')}\"", at=a.at(warmup),
                              also=((a.at("lr_warmup_fraction"), "warmup fraction"),))
            return  # Megatron checks the iteration branch first; a run with both fails there


class MinLrAboveLr(MegatronRule):
    """## What it does
    Checks that `--min-lr` is not above `--lr`.

    ## Why is this bad?
    `validate_args` asserts `min_lr <= lr`; the learning-rate schedule would otherwise decay upwards.

    ## Example
    ```bash
    pretrain_gpt.py ... --lr 1e-5 --min-lr 1e-4
    ```

    ## Fix
    Set `--min-lr` at or below `--lr` (often lr / 10).

    ## References
    * `megatron/training/arguments.py:1359-1360@d98e8a6`: `if args.lr is not None: assert args.min_lr <= args.lr`
      (a bare assertion: Megatron prints no message)
    """

    code = "TL163"
    name = "megatron-min-lr-above-lr"
    summary = "--min-lr greater than --lr"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("lr", "min_lr"):
            return
        lr, min_lr = a.get("lr"), a.get("min_lr")
        if isinstance(lr, (int, float)) and isinstance(min_lr, (int, float)) and min_lr > lr:
            yield Finding(f"--min-lr {min_lr} is greater than --lr {lr}: Megatron-LM's assertion `min_lr <= lr` fails",
                          at=a.at("min_lr"), also=((a.at("lr"), "--lr"),))


class SaveInterval(MegatronRule):
    """## What it does
    Checks that a run that saves checkpoints (`--save`) gives a positive `--save-interval`, and that
    `--save-retain-interval` is a positive multiple of it.

    ## Why is this bad?
    `validate_args` asserts these (bare assertions, no message): the job stops before training.

    ## Example
    ```bash
    pretrain_gpt.py ... --save /checkpoints/run1
    ```

    ## Fix
    Add `--save-interval N`.

    ## References
    * `megatron/training/arguments.py:1361-1367@d98e8a6`: `if args.save is not None: assert args.save_interval
      is not None; assert args.save_interval > 0; ... assert args.save_retain_interval % args.save_interval == 0`
    """

    code = "TL164"
    behaviour_changed = "Megatron-LM's 2019 releases defaulted --save-interval to 5000; core_v0.4.0 and later default it to None"
    name = "megatron-save-interval"
    summary = "--save without a positive --save-interval, or a retain interval not a multiple of it"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.given("save") or not a.known("save_interval", "save_retain_interval"):
            return
        interval, retain = a.get("save_interval"), a.get("save_retain_interval")
        if interval is None:
            yield Finding("--save without --save-interval: Megatron-LM's assertion `save_interval is not None` fails",
                          at=a.at("save"), fix="add --save-interval")
            return
        if isinstance(interval, int) and interval <= 0:
            yield Finding(f"--save-interval {interval}: Megatron-LM's assertion `save_interval > 0` fails",
                          at=a.at("save_interval"))
            return
        if isinstance(retain, int) and isinstance(interval, int) and (retain <= 0 or retain % interval):
            yield Finding(f"--save-retain-interval {retain} is not a positive multiple of --save-interval {interval}: "
                          "Megatron-LM's assertion `save_retain_interval % save_interval == 0` fails",
                          at=a.at("save_retain_interval"), also=((a.at("save_interval"), "save interval"),))


class DataSources(MegatronRule):
    """## What it does
    Checks that one data source is given: `--data-path` or `--data-args-path`; per-split paths
    (`--train/valid/test-data-path`) or `--per-split-data-args-path`; and not more than one of
    `--mock-data`, `--data-path` and per-split paths.

    ## Why is this bad?
    `validate_args` asserts each of these; the job stops before building datasets.

    ## Example
    ```bash
    pretrain_gpt.py ... --data-path corpus_text_document --mock-data
    ```

    ## Fix
    Keep one data source.

    ## References
    * `megatron/training/arguments.py:674-686@d98e8a6`: `assert (args.data_path is None) or (args.data_args_path
      is None)`; per-split paths or `--per-split-data-args-path` (bare assertions)
    * `megatron/training/arguments.py:1679-1682@d98e8a6`: "A single data source must be provided in training
      mode, else None"
    """

    code = "TL165"
    name = "megatron-data-sources"
    summary = "more than one data source (--data-path, --data-args-path, per-split paths, --mock-data)"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        split = [d for d in ("train_data_path", "valid_data_path", "test_data_path") if a.given(d)]
        if a.given("data_path") and a.given("data_args_path"):
            yield Finding("--data-path and --data-args-path are both given: Megatron-LM's assertion `data_path is None or "
                          "data_args_path is None` fails", at=a.at("data_args_path"),
                          also=((a.at("data_path"), "--data-path"),))
        if split and a.given("per_split_data_args_path"):
            yield Finding(f"{a.flag(split[0])} and --per-split-data-args-path are both given: Megatron-LM asserts only "
                          "one of them", at=a.at("per_split_data_args_path"), also=((a.at(split[0]), "per-split path"),))
        sources = [d for d in ("mock_data", "data_path") if a.given(d) and a.get(d)] + split[:1]
        if len(sources) > 1:
            yield Finding(f"{' and '.join(a.flag(d) for d in sources)} are all given: Megatron-LM stops with \"A single "
                          "data source must be provided in training mode, else None\"", at=a.at(sources[-1]),
                          also=tuple((a.at(d), "data source") for d in sources[:-1]))


class CudaGraphFlags(MegatronRule):
    """## What it does
    Checks the deprecated CUDA-graph flags against `--cuda-graph-impl`: `--enable-cuda-graph` and
    `--external-cuda-graph` exclude each other and any `--cuda-graph-impl` other than `none`;
    `--cuda-graph-scope` excludes `--cuda-graph-modules`.

    ## Why is this bad?
    `validate_args` asserts each of them. (That the flags are deprecated is reported separately.)

    ## Example
    ```bash
    pretrain_gpt.py ... --enable-cuda-graph --cuda-graph-impl transformer_engine
    ```

    ## Fix
    Use only `--cuda-graph-impl local|transformer_engine` and `--cuda-graph-modules`.

    ## References
    * `megatron/training/arguments.py:612-618@d98e8a6`: "Do not use --enable-cuda-graph or --external-cuda-graph
      with --cuda-graph-impl."; "--enable-cuda-graph and --external-cuda-graph cannot be enabled at the same time."
    * `megatron/training/arguments.py:633-636@d98e8a6`: "--cuda-graph-scope and --cuda-graph-modules cannot be used
      together."
    """

    code = "TL166"
    name = "megatron-cuda-graph-flags"
    summary = "deprecated CUDA-graph flags combined with --cuda-graph-impl or with each other"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        if not a.known("enable_cuda_graph", "external_cuda_graph", "cuda_graph_impl"):
            return
        old = [d for d in ("enable_cuda_graph", "external_cuda_graph") if a.on(d)]
        if old and a.get("cuda_graph_impl") != "none":
            yield Finding(f"{a.flag(old[0])} with --cuda-graph-impl {a.get('cuda_graph_impl')}: Megatron-LM stops with "
                          "\"Do not use --enable-cuda-graph or --external-cuda-graph with --cuda-graph-impl.\"",
                          at=a.at(old[0]), also=((a.at("cuda_graph_impl"), "--cuda-graph-impl"),))
        elif len(old) == 2:
            yield Finding("--enable-cuda-graph with --external-cuda-graph: Megatron-LM stops with \"--enable-cuda-graph "
                          "and --external-cuda-graph cannot be enabled at the same time.\"", at=a.at(old[1]),
                          also=((a.at(old[0]), "--enable-cuda-graph"),))
        if a.given("cuda_graph_scope_deprecated") and a.get("cuda_graph_scope_deprecated") is not None \
                and a.given("cuda_graph_modules") and a.get("cuda_graph_modules"):
            yield Finding("--cuda-graph-scope with --cuda-graph-modules: Megatron-LM stops with \"--cuda-graph-scope and "
                          "--cuda-graph-modules cannot be used together.\"", at=a.at("cuda_graph_scope_deprecated"),
                          also=((a.at("cuda_graph_modules"), "--cuda-graph-modules"),))


RULES: list[type] = [
    BatchScheduleArguments,
    TrainingLengthArguments,
    MinLrAboveLr,
    SaveInterval,
    DataSources,
    CudaGraphFlags,
]


@hookimpl
def trainlint_rules() -> list[type]:
    return RULES
