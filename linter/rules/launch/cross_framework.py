"""cross_framework."""

from __future__ import annotations

RULES: list[type] = []
