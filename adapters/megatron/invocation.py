"""Which commands of a script run a Megatron entry point, through which launchers.

A command is a training invocation when, after the launcher prefixes (``torchrun``, ``python -m
torch.distributed.launch|run``, ``deepspeed``, ``srun``, ``mpirun``, ``env``, ``nohup``...), it runs a
Python script that is a Megatron entry point (``pretrain_*.py``, ``tasks/main.py``, ...) or that gets
several Megatron-only flags. The launcher arguments that fix the number of processes are kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from trainlint.adapters.megatron.shell import Command
from trainlint.adapters.megatron.words import Field, Seg

_PYTHON = re.compile(r"^(python|python3|python3\.\d+|python2|pypy3?)$")

ENTRY_NAMES = (
    r"pretrain_[A-Za-z0-9_]+",
    r"tasks/(.*/)?main",
    r"train_rl",
    r"(multimodal|mimo)/train",
    r"finetune[A-Za-z0-9_]*",
    r"generate_samples[A-Za-z0-9_]*",
    r"run_[A-Za-z0-9_]*text_generation[A-Za-z0-9_]*",
    r"modelopt/[A-Za-z0-9_]+",
    r"[A-Za-z0-9_]*_inference[A-Za-z0-9_]*",
    r"launch_inference_server",
)
"""Entry point scripts (a path ending in one of these, then ``.py``)."""
_ENTRY = re.compile(r"(^|/)(?:" + "|".join(ENTRY_NAMES) + r")\.py$")
"""One pattern for them all: compiled at every script check's start, ten took ~0.4 ms more."""

NOT_ENTRY = re.compile(r"(^|/)(preprocess_data[A-Za-z0-9_]*|merge_datasets|text_generation_cli|checkpoint_util|"
                       r"convert[A-Za-z0-9_]*checkpoint[A-Za-z0-9_]*|pp_checkpoint_converter)\.py$")

# Flags that only Megatron-style trainers take; two of them make a script an entry point.
DISTINCTIVE = frozenset("""
--num-layers --hidden-size --num-attention-heads --seq-length --max-position-embeddings --micro-batch-size
--global-batch-size --tensor-model-parallel-size --pipeline-model-parallel-size --model-parallel-size
--train-iters --train-samples --lr-decay-style --lr-decay-iters --tokenizer-type --vocab-file --merge-file
--distributed-backend --use-distributed-optimizer --recompute-granularity --recompute-activations
--checkpoint-activations --ffn-hidden-size --num-query-groups --group-query-attention --swiglu
--untie-embeddings-and-output-weights --context-parallel-size --expert-model-parallel-size --sequence-parallel
--num-experts --moe-router-topk --lr-warmup-fraction --lr-warmup-iters --eval-iters --eval-interval
--save-interval --log-interval --make-vocab-size-divisible-by --position-embedding-type --normalization
--init-method-std --attention-dropout --hidden-dropout --batch-size --data-impl --split
""".split())

_TORCHRUN_BOOL = {"--standalone", "--no-python", "--no_python", "--run-path", "--run_path",
                  "--use-env", "--use_env"}
_DEEPSPEED_BOOL = {"--no_python", "--no-python", "--no_local_rank", "--no-local-rank", "--force_multi",
                   "--force-multi", "--elastic_training", "--bind_cores_to_rank", "--ssh", "--module", "-m",
                   "--no_ssh_check", "--save_pid", "--enable_each_rank_log"}
_SRUN_BOOL = {"-l", "--label", "-u", "--unbuffered", "--exclusive", "--overlap", "--overcommit", "-O", "-Q",
              "--quiet", "-v", "--verbose", "-K", "--kill-on-bad-exit", "--no-kill", "-k", "--pty",
              "--container-remap-root", "--no-container-mount-home", "--container-writable", "--export-file",
              "--wait-all-nodes", "-X", "--disable-status", "--multi-prog", "--container-entrypoint"}
_MPIRUN_TWO = {"--mca", "-mca", "-gmca", "--gmca"}
_MPIRUN_BOOL = {"--allow-run-as-root", "--oversubscribe", "-oversubscribe", "--tag-output", "-tag-output",
                "--report-bindings", "-report-bindings", "--display-map", "-display-map", "-q", "--quiet",
                "-v", "--verbose", "--noprefix", "-bind-to-core", "--bind-to-core", "-bind-to-socket"}
_WRAPPERS = {"nohup", "time", "exec", "command", "builtin", "stdbuf", "numactl", "taskset", "nice", "ionice",
             "unbuffer", "xargs"}


@dataclass
class Invocation:
    command: Command
    launchers: list[str]
    entry: Field
    entry_path: str
    args: list[Field]
    world: dict[str, Field] = field(default_factory=dict)
    """``gpus_per_node``, ``nodes``, ``world_size``, ``include`` (deepspeed), ``visible_devices``,
    as written for the launcher."""
    all_local_gpus: bool = False
    """``deepspeed x.py`` with no count: every GPU of the node."""


def _text(f: Field) -> str | None:
    return f.text


def _is_entry_path(path: str) -> bool:
    if NOT_ENTRY.search(path):
        return False
    return _ENTRY.search(path) is not None


def find_invocation(command: Command, distinctive_needed: int = 2) -> Invocation | None:
    fields = list(command.fields)
    launchers: list[str] = []
    world: dict[str, Field] = {}
    all_local = False
    i = 0
    n = len(fields)
    guard = 0
    while i < n and guard < 20:
        guard += 1
        head = fields[i].text
        base = head.rsplit("/", 1)[-1] if head else None
        if head is None:
            # `${LAUNCH_SCRIPT} ${SCRIPT_DIR}/quantize.py ...`: an unknown launcher (or an unset prefix
            # variable); the script may be this field or come later.
            if fields[i].known_tail.endswith(".py"):
                return _finish(command, launchers or ["unknown"], fields, i, world, all_local, 1)
            launchers.append("unknown")
            i += 1
            continue
        if base in ("bash", "sh") and i + 2 < n and any((fields[k].text or "") == "-c" or (
                (fields[k].text or "").startswith("-") and "c" in (fields[k].text or "")[1:] and
                not (fields[k].text or "").startswith("--")) for k in range(i + 1, min(n, i + 3))):
            k = i + 1
            while k < n and (fields[k].text or "").startswith("-"):
                k += 1
            if k >= n:
                return None
            inner = resplit([fields[k]])
            if not inner:
                return None
            fields = fields[:i] + inner
            n = len(fields)
            continue
        if base == "uv" and i + 1 < n and fields[i + 1].text == "run":
            i += 2
            while i < n and (fields[i].text or "").startswith("-"):
                t = fields[i].text or ""
                i += 1 if "=" in t or t in ("--no-sync", "--frozen", "--locked", "--isolated", "--no-project") else 2
            continue
        if "=" in head and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", head) and launchers and launchers[-1] == "env":
            i += 1
            continue
        if base == "env":
            launchers.append("env")
            i += 1
            while i < n and (fields[i].text or "").startswith("-"):
                i += 1
            continue
        if base in _WRAPPERS:
            i += 1
            while i < n and (fields[i].text or "").startswith("-"):
                i += 2 if base in ("numactl", "taskset", "nice", "ionice") and "=" not in (fields[i].text or "") else 1
            continue
        if base in ("torchrun", "torch.distributed.run"):
            launchers.append("torchrun")
            i = _torch_opts(fields, i + 1, world)
            if i < n and i > 0 and (fields[i - 1].text or "") in ("-m", "--module"):
                return _finish_module(command, launchers, fields, i, world, all_local, distinctive_needed)
            continue
        if base and _PYTHON.match(base):
            i += 1
            while i < n:
                t = fields[i].text or ""
                if t == "-m" and i + 1 < n:
                    module = fields[i + 1].text or ""
                    if module in ("torch.distributed.launch", "torch.distributed.run"):
                        launchers.append("python -m " + module)
                        i = _torch_opts(fields, i + 2, world)
                        if i < n and (fields[i - 1].text or "") in ("-m", "--module"):
                            return _finish_module(command, launchers, fields, i, world, all_local, distinctive_needed)
                        break
                    if module in ("deepspeed.launcher.runner",):
                        launchers.append("deepspeed")
                        i, all_local = _deepspeed_opts(fields, i + 2, world)
                        break
                    launchers.append("python")
                    return _finish_module(command, launchers, fields, i + 1, world, all_local, distinctive_needed)
                if t in ("-u", "-O", "-OO", "-B", "-E", "-s", "-S", "-I", "-b", "-bb", "-q"):
                    i += 1
                    continue
                if t in ("-W", "-X"):
                    i += 2
                    continue
                if t == "-c":
                    return None
                break
            else:
                return None
            if launchers and launchers[-1].startswith("python -m"):
                continue
            launchers.append("python")
            return _finish(command, launchers, fields, i, world, all_local, distinctive_needed)
        if base == "deepspeed":
            launchers.append("deepspeed")
            i, all_local = _deepspeed_opts(fields, i + 1, world)
            continue
        if base == "accelerate" and i + 1 < n and fields[i + 1].text == "launch":
            launchers.append("accelerate")
            i = _accelerate_opts(fields, i + 2, world)
            continue
        if base == "srun":
            launchers.append("srun")
            i = _srun_opts(fields, i + 1, world)
            continue
        if base in ("mpirun", "mpiexec", "orterun"):
            launchers.append("mpirun")
            i = _mpirun_opts(fields, i + 1, world)
            continue
        if head.endswith(".py"):
            if launchers:
                return _finish(command, launchers, fields, i, world, all_local, distinctive_needed)
            launchers.append("direct")
            return _finish(command, launchers, fields, i, world, all_local, distinctive_needed)
        if base in _NOT_LAUNCHERS:
            return None
        # Another wrapper (`nsys profile ... python x.py`, `ft_launcher ...`): look for a launcher or
        # a Python script further on.
        j = next((k for k in range(i + 1, n) if _is_launcher(fields[k])), None)
        if j is None:
            return None
        i = j
    return None


_NOT_LAUNCHERS = {"bash", "sh", "singularity", "apptainer", "docker", "enroot", "echo", "printf", "cat", "tee",
                  "grep", "sed", "awk", "mkdir", "rm", "cp", "mv", "ls", "cd", "export", "test", "[", "[[", "sleep",
                  "wait", "kill", "git", "pip", "conda", "wget", "curl", "ln", "touch", "chmod", "scontrol", "sbatch",
                  "tar", "find", "head", "tail", "python-config"}


def _is_launcher(f: Field) -> bool:
    t = f.text
    if t is None:
        return False
    base = t.rsplit("/", 1)[-1]
    return bool(base in ("torchrun", "deepspeed", "srun", "mpirun", "mpiexec", "accelerate") or _PYTHON.match(base))


def _find_script(fields: list[Field], start: int) -> int | None:
    for j in range(start, min(len(fields), start + 12)):
        f = fields[j]
        tail = f.text if f.text is not None else f.known_tail
        if tail and tail.endswith(".py"):
            return j
        if f.text is not None and f.text.startswith("-"):
            continue
    return None


def _finish(command: Command, launchers: list[str], fields: list[Field], i: int, world: dict[str, Field],
            all_local: bool, distinctive_needed: int) -> Invocation | None:
    if i >= len(fields):
        return None
    entry = fields[i]
    path = entry.text if entry.text is not None else entry.known_tail
    if not path or not path.endswith(".py"):
        return None
    args = fields[i + 1:]
    if NOT_ENTRY.search(path):
        return None
    if not _is_entry_path(path):
        count = 0
        for a in args:
            t = a.text
            if t and t.split("=", 1)[0] in DISTINCTIVE:
                count += 1
        if count < distinctive_needed:
            return None
    return Invocation(command, launchers, entry, path, args, world, all_local)


def _finish_module(command: Command, launchers: list[str], fields: list[Field], i: int, world: dict[str, Field],
                   all_local: bool, distinctive_needed: int) -> Invocation | None:
    """``python -m examples.inference.gpt.gpt_dynamic_inference ...``: the module as a path."""
    if i >= len(fields) or fields[i].text is None:
        return None
    module = fields[i].text
    as_path = module.replace(".", "/") + ".py"
    entry = Field((Seg(as_path, fields[i].value_loc, False),), fields[i].site)
    return _finish(command, launchers, fields[:i] + [entry] + fields[i + 1:], i, world, all_local, distinctive_needed)


def resplit(args: list[Field]) -> list[Field]:
    """A string run again by the shell (``eval``, ``bash -c``): split into words, quotes removed,
    cut at the first pipe, list operator or redirection."""
    from trainlint.adapters.megatron.shell import _STOP_WORDS, _dequote
    from trainlint.adapters.megatron.words import Piece, split_pieces

    pieces = [Piece(list(a.segs), split=True, field_break_before=k > 0) for k, a in enumerate(args)]
    out: list[Field] = []
    for f in split_pieces(pieces, args[0].site if args else None):
        t = f.text
        if t is not None and (t in _STOP_WORDS or t.startswith(("2>", "1>", ">", "&>", "|"))):
            break
        out.append(_dequote(f))
    return out


def _take(fields: list[Field], i: int) -> tuple[str, Field | None, int]:
    """An option at ``i``: its name, its value field (``--x=v`` or ``--x v``) and the next index."""
    t = fields[i].text or ""
    if t.startswith("--") and "=" in t:
        name, _, _ = t.partition("=")
        from trainlint.adapters.megatron.flags import _inline_field

        return name, _inline_field(fields[i], len(name) + 1), i + 1
    if i + 1 < len(fields):
        return t, fields[i + 1], i + 2
    return t, None, i + 1


def _python_launcher_step(fields: list[Field], i: int, bools: set[str] | frozenset[str]) -> tuple[int | None, bool]:
    """Where a Python launcher's (torchrun, accelerate) options end, as (index to stop at, or None;
    whether field ``i`` is stepped over: an unresolved word or a flag that takes no value)."""
    t = fields[i].text
    if t is None:
        return (i, False) if fields[i].known_tail.endswith(".py") else (None, True)
    if not t.startswith("-"):
        return i, False
    name = t.split("=", 1)[0]
    if name in ("-m", "--module"):
        return i + 1, False
    return None, name in bools


def _torch_opts(fields: list[Field], i: int, world: dict[str, Field]) -> int:
    while i < len(fields):
        stop, step = _python_launcher_step(fields, i, _TORCHRUN_BOOL)
        if stop is not None:
            return stop
        if step:
            i += 1
            continue
        t = fields[i].text or ""
        name, value, nxt = _take(fields, i)
        key = name.lstrip("-").replace("-", "_")
        if value is not None and key == "nproc_per_node":
            world["gpus_per_node"] = value
        elif value is not None and key == "nnodes":
            world["nodes"] = value
        if value is not None and value.text is not None and value.text.endswith(".py") and "=" not in t:
            return i + 1
        i = nxt
    return i


def _deepspeed_opts(fields: list[Field], i: int, world: dict[str, Field]) -> tuple[int, bool]:
    n = len(fields)
    counted = False
    while i < n:
        t = fields[i].text
        if t is None:
            if fields[i].known_tail.endswith(".py"):
                break
            i += 1
            continue
        if not t.startswith("-"):
            break
        name = t.split("=", 1)[0]
        if name in _DEEPSPEED_BOOL:
            i += 1
            continue
        name, value, nxt = _take(fields, i)
        key = name.lstrip("-").replace("-", "_")
        if value is not None:
            if key in ("num_gpus",):
                world["gpus_per_node"] = value
                counted = True
            elif key == "num_nodes":
                world["nodes"] = value
            elif key == "include":
                world["include"] = value
                counted = True
            elif key == "hostfile":
                world["hostfile"] = value
            elif key == "exclude":
                world["exclude"] = value
        i = nxt
    return i, not counted


# `accelerate launch` options that take no value (accelerate/commands/launch.py); every other option
# takes one. --num_processes is the total across machines, --num_machines the node count.
_ACCELERATE_BOOL = {"--cpu", "--multi_gpu", "--tpu", "--ipex", "--use_xpu", "--use_deepspeed", "--use_fsdp",
                    "--use_megatron_lm", "--debug", "-q", "--quiet", "--no_python", "--same_network",
                    "--downcast_bf16", "--dynamo_use_fullgraph", "--dynamo_use_dynamic", "--enable_cpu_affinity",
                    "--tpu_cluster", "--no_tpu_cluster", "--tpu_use_sudo", "--vm", "--use_parallelism_config"}
_ACCELERATE_WORLD = {"num_processes": "world_size", "num_machines": "nodes",
                     "config_file": "accelerate_config", "deepspeed_config_file": "deepspeed_config_file",
                     # the DeepSpeedPlugin's settings, which win over the config file's deepspeed_config
                     **{name: "accelerate_" + name for name in (
                         "zero_stage", "offload_optimizer_device", "offload_param_device", "gradient_accumulation_steps",
                         "gradient_clipping", "zero3_init_flag", "zero3_save_16bit_model", "mixed_precision")}}


def _accelerate_opts(fields: list[Field], i: int, world: dict[str, Field]) -> int:
    while i < len(fields):
        stop, step = _python_launcher_step(fields, i, _ACCELERATE_BOOL)
        if stop is not None:
            return stop
        if step:
            i += 1
            continue
        t = fields[i].text or ""
        name, value, nxt = _take(fields, i)
        if "=" not in t and value is not None and value.text is not None and \
                (value.text.startswith("-") or value.text.endswith(".py")):
            i += 1  # a flag trainlint does not know takes no value here
            continue
        key = _ACCELERATE_WORLD.get(name.lstrip("-").replace("-", "_"))
        if key is not None and value is not None:
            world[key] = value
        i = nxt
    return i


def _srun_opts(fields: list[Field], i: int, world: dict[str, Field]) -> int:
    n = len(fields)
    while i < n:
        t = fields[i].text
        if t is None:
            return i
        if not t.startswith("-"):
            return i
        name = t.split("=", 1)[0]
        if name in _SRUN_BOOL:
            i += 1
            continue
        if t.startswith("--") and "=" in t:
            name, value, nxt = _take(fields, i)
        elif not t.startswith("--") and len(t) > 2:
            name, value, nxt = t[:2], None, i + 1  # -N2
            value = Field(tuple(s.piece(2, len(s.text)) if k == 0 and s.unknown is None else s
                                for k, s in enumerate(fields[i].segs)), fields[i].site)
        else:
            name, value, nxt = _take(fields, i)
        if value is not None:
            if name in ("-N", "--nodes"):
                world.setdefault("nodes", value)
            elif name in ("--ntasks-per-node",):
                world.setdefault("gpus_per_node", value)
            elif name in ("-n", "--ntasks"):
                world.setdefault("world_size", value)
            elif name in ("--gpus-per-node",):
                world.setdefault("gpus_per_node_srun", value)
        i = nxt
    return i


def _mpirun_opts(fields: list[Field], i: int, world: dict[str, Field]) -> int:
    n = len(fields)
    while i < n:
        t = fields[i].text
        if t is None:
            return i
        if not t.startswith("-"):
            return i
        if t in _MPIRUN_BOOL:
            i += 1
            continue
        if t in _MPIRUN_TWO:
            i += 3
            continue
        name, value, nxt = _take(fields, i)
        if value is not None:
            if name in ("-n", "-np", "--np", "-c"):
                world["world_size"] = value
            elif name in ("-npernode", "--npernode", "-N", "--map-by-node"):
                world["gpus_per_node"] = value
        i = nxt
    return i
