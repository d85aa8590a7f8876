"""Where each framework family keeps its argument definitions: what marks a checkout of it.

Apart from :mod:`.catalog` (catalogs, the shipped index, the cache) so that looking for a checkout
beside a config, which the check of every DeepSpeed JSON, NeoX YAML and launch script does, imports
nothing more; the catalog module is imported when a checkout or a configured release is read.
"""

from __future__ import annotations

from pathlib import Path

# Where each family keeps its argument definitions, in the order tried (a fork keeps the layout).
MARKERS: dict[str, tuple[str, ...]] = {
    "megatron": ("megatron/training/arguments.py", "megatron/arguments.py"),
    "neox": ("megatron/neox_arguments/neox_args.py",),
    "deepspeed": ("deepspeed/runtime/config.py",),
}


def marker(root: Path, family: str) -> str | None:
    """The argument module of ``family`` under ``root`` (relative path), if there is one."""
    for rel in MARKERS.get(family, ()):
        if (root / rel).is_file():
            return rel
    return None
