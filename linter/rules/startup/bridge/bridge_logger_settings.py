"""TL680: MLflow / Comet logger settings Megatron-Bridge refuses"""

from __future__ import annotations

from typing import Iterator

from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields, stops


class LoggerSettings(BridgeRule):
    """## What it does
    Checks the `logger` settings `LoggerConfig.finalize` refuses: an `mlflow_experiment` without an
    `mlflow_run_name`, a `comet_project` without a `comet_experiment_name`.

    ## Why is this bad?
    A `ValueError` when the ConfigContainer is finalized, before the first step.

    ## Example
    ```yaml
    logger:
      mlflow_experiment: llama3-8b
    ```

    ## Fix
    Name the run (`logger.mlflow_run_name`, `logger.comet_experiment_name`).

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:686-711` @ 067f987 (`LoggerConfig.finalize`).
    """

    code = "TL680"
    name = "bridge-logger-settings"
    summary = "MLflow / Comet logger settings Megatron-Bridge refuses"

    def findings(self, f: Fields) -> Iterator[Finding]:
        for owner, name, says in (("mlflow_experiment", "mlflow_run_name", "Set logger.mlflow_run_name when enabling MLFlow logging."),
                                  ("comet_project", "comet_experiment_name",
                                   "Set logger.comet_experiment_name when enabling Comet ML logging.")):
            known, run = f.known(f"logger.{name}", None)  # LoggerConfig's default: None
            if f.get(f"logger.{owner}") and known and run in (None, ""):
                yield Finding(f"`logger.{owner}` without `logger.{name}`: {stops(says)}", at=f.at(f"logger.{owner}"))
