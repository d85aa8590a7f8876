"""The allocation a Slurm batch script asks for, from its ``#SBATCH`` directives.

sbatch reads ``#SBATCH`` lines at the top of the script, before the first command (sbatch(1):
"The batch script may contain options preceded with "#SBATCH" before any executable commands").
What matters for the world size: ``--nodes/-N``, ``--ntasks-per-node``, ``--gpus-per-node``
(``[type:]N``), ``--gres=gpu[:type]:N``. ``srun`` inside the allocation inherits them: it starts
``--ntasks-per-node`` tasks on each of the ``--nodes`` nodes. Nothing here runs anything.
"""

from __future__ import annotations

import re

from trainlint.adapters.megatron.words import Field, Loc, Seg

_DIRECTIVE = re.compile(r"^#SBATCH[ \t]+(.*)$")
_OPTION = re.compile(r"(--?[A-Za-z][\w-]*)(?:=(\S+)|[ \t]+(?!-)(\S+))?")
_NAMES = {"--nodes": "nodes", "-N": "nodes", "--ntasks-per-node": "ntasks_per_node",
          "--gpus-per-node": "gpus_per_node", "--gres": "gres", "--ntasks": "ntasks", "-n": "ntasks"}
_TAKES_VALUE = {"--nodes", "-N", "--ntasks-per-node", "--gpus-per-node", "--gres", "--ntasks", "-n", "--gpus", "-G",
                "--job-name", "-J", "--partition", "-p", "--time", "-t", "--account", "-A", "--output", "-o",
                "--error", "-e", "--cpus-per-task", "-c", "--mem", "--constraint", "-C", "--qos", "-q",
                "--reservation", "--environment", "--signal", "--mail-type", "--mail-user", "--exclusive"}


def sbatch_allocation(text: str, path: str) -> dict[str, Field]:
    """{"nodes", "ntasks_per_node", "gpus_per_node", "ntasks"}: Fields (whole numbers, with their positions) of
    the directives before the first command; the last directive of a kind wins, as in sbatch."""
    out: dict[str, Field] = {}
    offset = 0
    for number, line in enumerate(text.splitlines(keepends=True)):
        stripped = line.strip()
        start = offset
        offset += len(line)
        if number == 0 and stripped.startswith("#!"):
            continue
        if not stripped or (stripped.startswith("#") and not stripped.startswith("#SBATCH")):
            continue
        m = _DIRECTIVE.match(line.rstrip("\r\n"))
        if m is None:
            break  # the first command: sbatch reads no further
        body_at = start + m.start(1)
        body = m.group(1).split(" #", 1)[0]
        for opt in _OPTION.finditer(body):
            flag = opt.group(1)
            value = opt.group(2) if opt.group(2) is not None else opt.group(3)
            vstart = opt.start(2) if opt.group(2) is not None else opt.start(3)
            if flag[:2] in ("-N", "-n") and len(flag) > 2 and flag[2:].isdigit():  # -N16, -n64
                flag, value, vstart = flag[:2], flag[2:], opt.start(1) + 2
            key = _NAMES.get(flag)
            if key is None or value is None:
                continue
            count = _count(key, value)
            if count is None:
                continue
            text_of = str(count)
            where = Loc(path, body_at + vstart, body_at + vstart + len(value))
            field = Field((Seg(text_of, where, text_of == value),), where)
            if key == "gres":
                key = "gpus_per_node"
                out.pop("gpus_per_node_option", None)  # the later directive decides the GPUs per node
            elif key == "gpus_per_node":
                out["gpus_per_node_option"] = field  # SLURM_GPUS_PER_NODE is set only for this option
            out[key] = field
    return out


def _count(key: str, value: str) -> int | None:
    if key == "gres":
        for item in value.split(","):
            parts = item.split(":")
            if parts[0] == "gpu" and len(parts) >= 2 and parts[-1].isdigit():
                return int(parts[-1])
        return None
    tail = value.rsplit(":", 1)[-1] if key == "gpus_per_node" else value
    return int(tail) if tail.isdigit() and int(tail) > 0 else None


# The variables Slurm sets in the batch script's environment from the allocation (sbatch(1), OUTPUT
# ENVIRONMENT VARIABLES): SLURM_JOB_NUM_NODES (and SLURM_NNODES, kept for compatibility) from
# --nodes; SLURM_NTASKS_PER_NODE from --ntasks-per-node; SLURM_GPUS_PER_NODE from --gpus-per-node;
# SLURM_NTASKS (= SLURM_NPROCS) from --ntasks. SLURM_GPUS_PER_NODE is "only set if the
# --gpus-per-node option is specified"; SLURM_GPUS_ON_NODE, the GPUs allocated on the node, is also
# set by --gres=gpu:N.
SLURM_VARIABLES = {
    "nodes": ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"),
    "ntasks_per_node": ("SLURM_NTASKS_PER_NODE",),
    "gpus_per_node_option": ("SLURM_GPUS_PER_NODE",),
    "gpus_per_node": ("SLURM_GPUS_ON_NODE",),
    "ntasks": ("SLURM_NTASKS", "SLURM_NPROCS"),
}


def slurm_environment(text: str, path: str) -> dict[str, Field]:
    """``{"SLURM_NNODES": Field, ...}``: what a script run by sbatch finds in its environment, each
    value located at its ``#SBATCH`` directive (so a world size read through ``$SLURM_NNODES``
    points there). Empty when the script has no directive."""
    if "#SBATCH" not in text:
        return {}
    allocation = sbatch_allocation(text, path)
    return {name: field for key, field in allocation.items() for name in SLURM_VARIABLES.get(key, ())}
