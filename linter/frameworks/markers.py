"""Where each framework family keeps its argument definitions: what marks a checkout of it.

Apart from :mod:`.catalog` (catalogs, the shipped index, the cache) so that looking for a checkout
beside a config, which the check of every DeepSpeed JSON, NeoX YAML and launch script does, imports
nothing more; the catalog module is imported when a checkout or a configured release is read.
"""

from __future__ import annotations

from pathlib import Path

# Where each family keeps its argument definitions, in the order tried (a fork keeps the layout).
MARKERS: dict[str, tuple[str, ...]] = {
    # a root-level arguments.py is a fork's (GLM keeps Megatron's parser there) only when it reads
    # like Megatron's: see megatron_like
    "megatron": ("megatron/training/arguments.py", "megatron/arguments.py", "arguments.py"),
    "neox": ("megatron/neox_arguments/neox_args.py",),
    "deepspeed": ("deepspeed/runtime/config.py",),
}


def marker(root: Path, family: str) -> str | None:
    """The argument module of ``family`` under ``root`` (relative path), if there is one."""
    for rel in MARKERS.get(family, ()):
        if (root / rel).is_file() and (rel not in CHECKED or _reads_like(root / rel, family)):
            return rel
    return None


CHECKED = frozenset({"arguments.py"})
"""Markers whose name alone says little: the file must also read like the family's parser."""
_MEGATRON_NAMES = ("--num-layers", "--num_layers", "--hidden-size", "--hidden_size")


def megatron_like(text: str) -> bool:
    """An argparse module defining Megatron's model flags (``add_argument('--num-layers'``, or a
    fork's ``--num_layers``): a generic ``arguments.py`` of another project is not one."""
    return "add_argument" in text and sum(f"'{n}'" in text or f'"{n}"' in text for n in _MEGATRON_NAMES) >= 2


def _reads_like(path: Path, family: str) -> bool:
    if family != "megatron":
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 20).decode("utf-8", errors="replace")
    except OSError:
        return False
    return megatron_like(head)
