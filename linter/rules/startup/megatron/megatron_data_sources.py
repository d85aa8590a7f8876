"""TL165: more than one data source (--data-path, --data-args-path, per-split paths, --mock-data)"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.adapters.megatron.arguments import MegatronArgs
from trainlint.rules.startup.megatron.base import MegatronRule


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
