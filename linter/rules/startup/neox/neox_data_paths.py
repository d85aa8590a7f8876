"""TL190: data_path with split paths, an incomplete train/valid/test set, or weights of another length"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding, RuleContext
from trainlint.rules.startup.neox.helpers import NeoXArgs, _NeoXRule


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
