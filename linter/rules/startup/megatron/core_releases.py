"""The pinned commit of each Megatron-Core release the launch-check audit reads
(``linter/data/frameworks/index.json``), for the references of checks that only older releases
make: such a check is cited at the newest release that has it, not at trainlint's upstream commit."""

from __future__ import annotations

from trainlint.rules.startup.megatron.check_table import Check
from trainlint.adapters.megatron.arguments import COMMIT

RELEASE_COMMITS = {
    "core_v0.4.0": "38879f8", "core_v0.5.0": "0acc240", "core_v0.6.0": "cac60ce", "core_v0.7.0": "a645f89",
    "core_v0.8.0": "baf94af", "core_v0.9.0": "1afee59", "core_v0.10.0": "7ee599a", "core_v0.11.0": "aa6207e",
    "core_v0.12.0": "d580efc", "core_v0.13.0": "c550cf6", "core_v0.14.0": "23e00ed", "core_v0.15.0": "0d7e02b",
    "core_v0.16.0": "3bec9aa", "core_v0.17.0": "9539a12", "core_v0.18.0": "ba7b5eb", "core_v0.19.0": "5be9626",
}


def references(checks: tuple[Check, ...]) -> str:
    """The References section: each check at the commit of the newest release that makes it."""
    lines = ["", "    ## References"]
    for check in checks:
        commit = RELEASE_COMMITS[check.last] if check.last else COMMIT
        span = "upstream only" if check.first == "main" else \
            (f"{check.first} to {check.last}" if check.last else f"since {check.first}")
        lines.append(f"    * `{check.path}:{check.line}@{commit}` ({span}): \"{check.says}\"")
    return "\n".join(lines) + "\n"
