"""TL633: ``--rampup-batch-size`` against Megatron-Core's ramp-up micro-batch calculator
(``RampupBatchsizeNumMicroBatchesCalculator``, core_v0.8.0 to core_v0.17.0; from the launch-check
audit). Later releases turn the ramp-up into a step schedule, whose checks are TL175's."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.provenance import Origin
from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.base import MegatronRule
from trainlint.rules.startup.megatron.check_table import release_stated
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.releases import Releases

RELEASES = Releases("megatron", first="core_v0.8.0", last="core_v0.17.0")
OLDER = Releases("megatron", first="core_v0.4.0", last="core_v0.7.0")
"""Megatron-LM's own ramp-up calculator (``megatron/microbatches.py``, ``megatron/training/microbatches.py``):
its constructor's checks are TL608's; its update makes the same per-step check in the training loop."""


def _integer(text: object) -> int | None:
    """``int(x)`` as the calculator applies it to each of the three values (strings from argparse)."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text
    if isinstance(text, str) and text.strip().lstrip("+-").isdigit():
        return int(text)
    return None


class BatchRampup(MegatronRule):
    """## What it does
    Checks `--rampup-batch-size <start> <increment> <samples>` as Megatron-Core's ramp-up
    calculator does when training starts: the start batch and the increment positive, the ramp-up
    samples not negative, the global batch not below the start batch, the distance between them
    a multiple of the increment, and (without `--decrease-batch-size-if-needed`) every batch of the
    ramp-up a multiple of micro batch x data-parallel size.

    The check runs when the run states or locates a release from core_v0.8.0 to core_v0.17.0
    (upstream turns the ramp-up into a step schedule, checked by TL175); from core_v0.4.0 to
    core_v0.7.0 Megatron-LM's own calculator makes the per-step check (its other checks are TL608's).

    ## Why is this bad?
    The calculator asserts while Megatron-LM initialises, before the first step.

    ## Example
    ```bash
    pretrain_gpt.py ... --global-batch-size 1024 --rampup-batch-size 32 64 1000000   # 992 % 64 != 0
    ```

    ## Fix
    Choose a start batch and increment whose steps reach `--global-batch-size` exactly.

    ## References
    * `megatron/core/num_microbatches_calculator.py:398-407@9539a12` (core_v0.8.0 to core_v0.17.0): "global
      batch size should be positive", "start batch size should be positive", "batch size increment should be
      positive", "ramp-up samples should be non-negative"
    * `megatron/core/num_microbatches_calculator.py:475-483@9539a12` (core_v0.9.0 to core_v0.17.0; core_v0.8.0:
      `megatron/core/num_microbatches_calculator.py:289@baf94af`): "current global batch size (...) is not divisible
      by micro-batch-size (...) timesdata parallel size (...)", checked in the training loop
    * `megatron/training/microbatches.py:137-143@a645f89` (core_v0.4.0 to core_v0.7.0; `megatron/microbatches.py`
      up to core_v0.5.0), checked as the training loop updates it: "current global batch size (...) is not
      divisible by micro-batch-size (...) timesdata parallel size (...)"
    * `megatron/core/num_microbatches_calculator.py:425-429@9539a12` (core_v0.9.0 to core_v0.17.0; core_v0.8.0:
      `megatron/core/num_microbatches_calculator.py:252-257@baf94af`): "expected global batch size to be greater
      than or equal to start batch size", "expected global batch size interval (...) to be divisible by global
      batch size increment (...)"
    """

    code = "TL633"
    name = "megatron-core-batch-rampup"
    summary = "a --rampup-batch-size the Megatron-Core ramp-up calculator refuses"
    behaviour_changed = "megatron makes this check in core_v0.8.0 to core_v0.17.0"

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        target = a.spec.target
        if not a.given("rampup_batch_size") or not release_stated(target):
            return
        older = OLDER.includes(target)
        if not older and not RELEASES.includes(target):
            return
        raw = a.get("rampup_batch_size")
        if not isinstance(raw, (list, tuple)) or len(raw) != 3:
            return  # the length is argparse's and the calculator's own message; not read here
        start, increment, samples = (_integer(x) for x in raw)
        if start is None or increment is None or samples is None:
            return
        at, flag = a.at("rampup_batch_size"), a.flag("rampup_batch_size")
        shown = f"{flag} {start} {increment} {samples}"
        if older:
            yield from self._older(a, start, increment, samples, shown)
            return
        if start <= 0:
            yield Finding(f"{shown}: Megatron-Core stops with \"start batch size should be positive, got {start}.\"", at=at)
            return
        if increment <= 0:
            yield Finding(f"{shown}: Megatron-Core stops with \"batch size increment should be positive, got "
                          f"{increment}.\"", at=at)
            return
        if samples < 0:
            yield Finding(f"{shown}: Megatron-Core stops with \"ramp-up samples should be non-negative, got "
                          f"{samples}.\"", at=at)
            return
        gbs = a.int_field("batch.global_batch")
        if gbs is None or gbs <= 0 or not a.given("global_batch_size"):
            return
        diff = gbs - start
        also = (("batch.global_batch", "global batch"),)
        if diff < 0:
            yield Finding(f"{shown} starts above the global batch {gbs}: Megatron-Core stops with \"expected global "
                          f"batch size to be greater than or equal to start batch size, got {gbs} and {start}\"",
                          at=at, also=also)
        elif diff % increment:
            yield Finding(f"{shown} with global batch {gbs}: Megatron-Core stops with \"expected global batch size "
                          f"interval ({diff}) to be divisible by global batch size increment ({increment})\"",
                          at=at, also=also, fix=f"an increment that divides {diff}")
        else:
            yield from self._steps(a, start, increment, samples, diff, shown)

    def _older(self, a: MegatronArgs, start: int, increment: int, samples: int, shown: str) -> Iterator[Finding]:
        """core_v0.4.0-0.7.0: the constructor's refusals are TL608's; what passes them is checked step by step."""
        gbs = a.int_field("batch.global_batch")
        if start <= 0 or increment <= 0 or samples < 0 or gbs is None or not a.given("global_batch_size"):
            return
        diff = gbs - start
        if diff < 0 or diff % increment:
            return
        yield from self._steps(a, start, increment, samples, diff, shown, can_decrease=False)

    @staticmethod
    def _steps(a: MegatronArgs, start: int, increment: int, samples: int, diff: int, shown: str,
               can_decrease: bool = True) -> Iterator[Finding]:
        """Every batch of the ramp-up must split into micro batches over the data-parallel ranks:
        the training loop updates the calculator with ``consistency_check=True``
        (``megatron/training/training.py:2097@23e00ed``) unless ``--decrease-batch-size-if-needed``."""
        if not a.known("decrease_batch_size_if_needed") or a.on("decrease_batch_size_if_needed"):
            return
        micro, dp = a.int_field("batch.micro_batch"), a.int_field("parallel.data")
        if micro is None or dp is None or micro <= 0 or dp <= 0 or _assumed(a, "parallel.data"):
            return
        unit = micro * dp
        bad = start if start % unit else (start + increment if diff > 0 and samples > 0 and increment % unit else None)
        if bad is None:
            return
        who = "Megatron-Core" if can_decrease else "Megatron-LM"
        yield Finding(f"{shown} makes a global batch of {bad}, not a multiple of micro batch {micro} x DP {dp} = {unit}: "
                      f"{who} stops in the training loop with \"current global batch size ({bad}) is not "
                      f"divisible by micro-batch-size ({micro}) timesdata parallel size ({dp})\"",
                      at=a.at("rampup_batch_size"),
                      also=(("parallel.data", "data-parallel size"), ("batch.micro_batch", "micro batch")),
                      fix=f"a start batch and increment that are multiples of {unit}"
                          + (", or --decrease-batch-size-if-needed" if can_decrease else ""))


def _assumed(a: MegatronArgs, dotted: str) -> bool:
    """The value rests on trainlint's own assumption (an assumed GPU count), not on the files."""
    section, field = dotted.split(".")
    value = getattr(getattr(a.spec, section, None), field, None)
    return value is None or getattr(getattr(value, "provenance", None), "origin", None) is Origin.ASSUMED
