"""JSON Schemas shipped with trainlint, loaded from package data.

``deepspeed``  the DeepSpeed config JSON (top level and every section)
``neox``       a GPT-NeoX run config (NeoX keys plus the DeepSpeed keys NeoX embeds)
``megatron``   the Megatron-LM argument set, keyed by argparse destination
``spec``       trainlint's own TrainingSpec, as ``TrainingSpec.to_dict()`` writes it

Custom annotations (ignored by jsonschema, read by trainlint):

``x-unknown-key-severity``  on an object schema: severity of an unknown key there
                             (``error`` unless stated; DeepSpeed's top level is ``warning``)
``x-deprecated``            on a property: why, and what replaces it
``x-source``                where the facts were read (repository, path, commit)
"""

from __future__ import annotations

import json
import os
from functools import cache

def _schema_names() -> tuple[str, ...]:
    """Every ``<name>.schema.json`` shipped beside this module (a new format's schema needs no list)."""
    suffix = ".schema.json"
    here = os.path.dirname(__file__)
    if os.path.isdir(here):
        names = [n[:-len(suffix)] for n in os.listdir(here) if n.endswith(suffix)]
    else:  # pragma: no cover - a zipped install
        from importlib import resources

        names = [n.name[:-len(suffix)] for n in resources.files(__name__).iterdir() if n.name.endswith(suffix)]
    return tuple(sorted(names))


SCHEMA_NAMES = _schema_names()


@cache
def load_schema(name: str) -> dict:
    if name not in SCHEMA_NAMES:
        raise KeyError(f"no schema named {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    local = os.path.join(os.path.dirname(__file__), f"{name}.schema.json")
    if os.path.isfile(local):  # an ordinary install: no need for importlib.resources (~3 ms to import)
        with open(local, encoding="utf-8") as handle:
            text = handle.read()
    else:  # pragma: no cover - a zipped install
        from importlib import resources

        text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)
