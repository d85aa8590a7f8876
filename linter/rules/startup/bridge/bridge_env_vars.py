"""TL695: `env_vars` entries Megatron-Bridge refuses (an empty or non-string name, a non-scalar value)"""

from __future__ import annotations

from typing import Iterator

from trainlint.adapters.bridge.names import BAD_ENV_NAME, SETTING_PREFIX
from trainlint.rules import Finding
from trainlint.rules.startup.bridge.base import BridgeRule, Fields

_ENV = SETTING_PREFIX + "env_vars."
BAD_NAME = SETTING_PREFIX + BAD_ENV_NAME + "."
"""Settings of the ``env_vars`` names that are not non-empty strings (the adapter records the name as
written, at the key)."""


class EnvVars(BridgeRule):
    """## What it does
    Checks the ConfigContainer's `env_vars`: each name must be a non-empty string and each value a scalar
    (a string, number or boolean), as `apply_environment_variables` requires.

    ## Why is this bad?
    A `ValueError` (a name) or a `TypeError` (a value) when the runtime configuration is applied, before
    the first step.

    ## Example
    ```yaml
    env_vars:
      NCCL_DEBUG: null
      1: "x"
    ```

    ## Fix
    Quote names that YAML reads as numbers or booleans, and give every variable a string, number or
    boolean value.

    ## References
    - Megatron-Bridge `src/megatron/bridge/training/config.py:1984-1988` @ 067f987 (`apply_environment_variables`).
    """

    code = "TL695"
    name = "bridge-env-vars"
    summary = "`env_vars` entries Megatron-Bridge refuses (an empty or non-string name, a non-scalar value)"

    def findings(self, f: Fields) -> Iterator[Finding]:
        for key, value in f.spec.settings.items():
            if key.startswith(BAD_NAME):
                yield Finding(f"`env_vars` name {value.value!r}: Bridge stops with \"Environment variable names must "
                              "be non-empty strings.\"", at=value)
            elif key.startswith(_ENV) and not isinstance(value.value, (str, int, float, bool)):
                name = key[len(_ENV):]
                written = "null" if value.value is None else "a list" if isinstance(value.value, list) else "a mapping"
                kind = type(value.value).__name__  # as Bridge's message names it
                yield Finding(f"`env_vars.{name}` is {written}: Bridge stops with \"Environment variable {name!r} must "
                              f"have a scalar value, got {kind}.\"", at=value)
