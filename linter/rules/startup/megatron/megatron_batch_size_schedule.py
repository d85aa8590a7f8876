"""TL175: --step-batch-size-schedule malformed, not starting at 0, not increasing, or with a batch that does not divide"""

from __future__ import annotations

import itertools
from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.megatron.base import MegatronRule
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.releases import Releases
from trainlint.rules.startup.megatron.check_table import Check, with_references


CALC_ = "megatron/core/num_microbatches_calculator.py"


_SUFFIX = {"K": 1_000, "M": 1_000_000, "B": 1_000_000_000, "T": 1_000_000_000_000}


def _schedule_number(text: str) -> int | None:
    """StepBatchsizeNumMicroBatchesCalculator._parse_numeric_value: a number with an optional K/M/B/T."""
    text = text.strip().upper()
    scale = _SUFFIX.get(text[-1:], 1)
    if scale != 1:
        text = text[:-1]
    try:
        value = float(text) * scale
    except ValueError:
        return None
    return int(value) if value == value and abs(value) != float("inf") else None


@with_references
class BatchSizeSchedule(MegatronRule):
    """## What it does
    Parses `--step-batch-size-schedule` as Megatron-Core does ("THRESHOLD:BATCH_SIZE" entries separated
    by spaces or commas, K/M/B/T suffixes, sorted by threshold) and checks that it is not empty, that the
    first threshold is 0, that thresholds are strictly increasing, that every batch size is positive, and
    that the first batch size is a multiple of micro batch x DP (checked when training starts).

    ## Why is this bad?
    The micro-batch calculator raises or asserts when it is built, or at the first step.

    ## Example
    ```bash
    pretrain_gpt.py ... --step-batch-size-schedule "1M:256 2B:512"     # no entry at threshold 0
    ```

    ## Fix
    Start the schedule at 0, give distinct thresholds and positive batch sizes that divide.
    """

    code = "TL175"
    name = "megatron-batch-size-schedule"
    summary = "--step-batch-size-schedule malformed, not starting at 0, not increasing, or with a batch that does not divide"
    checks = (
        Check(CALC_, 517, "core_v0.18.0", (), 'Invalid schedule entry. Expected format: "THRESHOLD:BATCH_SIZE"'),
        Check(CALC_, 538, "core_v0.18.0", (), "schedule must have at least one entry"),
        Check(CALC_, 539, "core_v0.18.0", (), "first schedule entry must have threshold 0"),
        Check(CALC_, 545, "core_v0.18.0", (), "schedule thresholds must be strictly increasing"),
        Check(CALC_, 556, "core_v0.18.0", (), "batch size must be positive"),
        Check(CALC_, 581, "core_v0.18.0", (), "current global batch size is not divisible by micro_batch_size * "
                                              "data_parallel_size"),
    )
    releases = Releases("megatron", first="core_v0.18.0")

    def findings(self, a: MegatronArgs, ctx: RuleContext) -> Iterator[Finding]:
        dest = "step_batch_size_schedule"
        text = a.get(dest) if a.given(dest) else None
        if not isinstance(text, str) or not self.releases.includes(a.spec.target):
            return
        at, flag = a.at(dest), a.flag(dest)
        entries = text.strip().replace(",", " ").split()
        schedule: list[tuple[int, int]] = []
        for entry in entries:
            if ":" not in entry:
                yield Finding(f"{flag} entry {entry!r}: Megatron-Core stops with \"Invalid schedule entry \\\"{entry}\\\". "
                              "Expected format: \\\"THRESHOLD:BATCH_SIZE\\\"\"", at=at)
                return
            threshold, size = (_schedule_number(part) for part in entry.split(":", 1))
            if threshold is None or size is None:
                return  # int(float(...)) raises a ValueError of its own; not quoted here
            schedule.append((threshold, size))
        schedule.sort(key=lambda pair: pair[0])
        if not schedule:
            yield Finding(f"{flag} is empty: Megatron-Core stops with \"schedule must have at least one entry\"", at=at)
            return
        if schedule[0][0] != 0:
            yield Finding(f"{flag} starts at threshold {schedule[0][0]:,}: Megatron-Core stops with \"first schedule entry "
                          f"must have threshold 0, got {schedule[0][0]}\"", at=at, fix="add an entry 0:<batch size>")
            return
        for before, after in itertools.pairwise(schedule):
            if after[0] <= before[0]:
                yield Finding(f"{flag} gives threshold {after[0]:,} twice: Megatron-Core stops with \"schedule thresholds "
                              f"must be strictly increasing, got {before[0]} before {after[0]}\"", at=at)
                return
        bad = [size for _threshold, size in schedule if size <= 0]
        if bad:
            yield Finding(f"{flag} has batch size {bad[0]}: Megatron-Core stops with \"batch size must be positive, got "
                          f"{bad[0]}\"", at=at)
            return
        micro, dp = a.int_field("batch.micro_batch"), a.int_field("parallel.data")
        first = schedule[0][1]
        if micro and dp and micro > 0 and dp > 0 and not a.written("tensor_parallel_num_weight_shards") \
                and first % (micro * dp):
            yield Finding(f"{flag} starts with a global batch of {first}, not a multiple of micro batch {micro} x DP {dp} = "
                          f"{micro * dp}: Megatron-Core stops when training starts with \"current global batch size "
                          f"({first}) is not divisible by micro_batch_size ({micro}) * data_parallel_size ({dp})\"", at=at,
                          also=(("parallel.data", "data-parallel size"), ("batch.micro_batch", "micro batch")))
