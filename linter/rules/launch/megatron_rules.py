"""megatron_rules."""

from __future__ import annotations

RULES: list[type] = []
