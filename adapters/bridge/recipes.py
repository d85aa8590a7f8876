"""The base values of a recipe named on a launch line (``--recipe NAME``).

A recipe is Python (``src/megatron/bridge/recipes/...``), never run here. Its literal assignments are
read with ``ast``: from a Megatron-Bridge checkout beside the config when the project says where one is
(``framework-source``), else from the catalog shipped with trainlint (``recipes.json``, built by
``scripts/build_bridge_recipes.py`` at the commit it names). Values a recipe computes (helpers, HF configs)
are not in it: the run's model shape then comes from trainlint's model preset of the Hugging Face id the
recipe names, or stays unknown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class Recipe:
    name: str
    file: str
    line: int
    hf_model: str | None
    values: dict[str, Any] = field(default_factory=dict)
    commit: str = ""
    computed: dict[str, str] = field(default_factory=dict)
    """Fields the recipe sets with code (a helper, an expression): path -> where."""


@lru_cache(maxsize=1)
def _catalog() -> dict[str, Any]:
    try:
        text = resources.files("trainlint.adapters.bridge").joinpath("recipes.json").read_text(encoding="utf-8")
        return json.loads(text)
    except (OSError, ValueError):
        return {"recipes": {}, "commit": ""}


def find_recipe(name: str) -> Recipe | None:
    data = _catalog()
    entry = data.get("recipes", {}).get(name)
    if not isinstance(entry, dict):
        return None
    return Recipe(name, str(entry.get("file", "")), int(entry.get("line", 0)), entry.get("hf_model"),
                  dict(entry.get("values", {})), str(data.get("commit", "")), dict(entry.get("computed", {})))


def catalog_commit() -> str:
    return str(_catalog().get("commit", ""))


def recipe_names() -> list[str]:
    return sorted(_catalog().get("recipes", {}))
