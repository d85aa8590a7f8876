"""An ``accelerate launch --config_file FILE`` YAML: the launch settings a run takes from it.

Accelerate's config (accelerate/commands/config/config_args.py) is a flat YAML mapping; what sets
the world size is ``num_processes`` (the total over all machines) and ``num_machines``; with
DeepSpeed, ``deepspeed_config: {deepspeed_config_file: ds.json}`` names the JSON. Options given on the
command line win over the file (accelerate's launch merges them so). Read with the safe loader,
bounded, only inside the project; never executed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import yaml

from trainlint.positions import Span
from trainlint.provenance import Origin, Provenance, Value

MAX_CONFIG_BYTES = 256 * 1024


@dataclass
class AccelerateConfig:
    path: str
    num_processes: Value | None = None
    num_machines: Value | None = None
    deepspeed_config_file: str | None = None


def read_accelerate_config(written: str) -> AccelerateConfig | None:
    """The settings of the YAML named ``written`` (relative to the current directory) when it is in
    the project and a mapping; None otherwise."""
    from trainlint.containment import contained, roots_for
    from trainlint.sources import UnreadableSource, read_source

    path = os.path.abspath(written)
    if not os.path.isfile(path) or not contained(path, roots_for(os.path.join(os.getcwd(), "x"))):
        return None
    try:
        root = yaml.compose(read_source(path, max_bytes=MAX_CONFIG_BYTES).text, Loader=yaml.SafeLoader)
    except (UnreadableSource, OSError, yaml.YAMLError):
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    found = AccelerateConfig(path)
    for key, value in root.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        if key.value in ("num_processes", "num_machines") and isinstance(value, yaml.ScalarNode) \
                and value.value.isdigit() and int(value.value) > 0:
            span = Span(value.start_mark.line + 1, value.start_mark.column + 1,
                        value.end_mark.line + 1, value.end_mark.column + 1)
            setattr(found, key.value, Value(int(value.value), Provenance(
                Origin.FILE, path=path, span=span, key=key.value, note=f"{key.value} in the accelerate config {written}")))
        elif key.value == "deepspeed_config" and isinstance(value, yaml.MappingNode):
            for inner_key, inner in value.value:
                if isinstance(inner_key, yaml.ScalarNode) and inner_key.value == "deepspeed_config_file" \
                        and isinstance(inner, yaml.ScalarNode) and inner.value.strip():
                    found.deepspeed_config_file = inner.value.strip()
    return found
