"""The Megatron-LM adapter: launch scripts, argument lists and MODEL_ARGS YAML files.

What it reads, statically (nothing is executed):

* **shell launch scripts** (``.sh``, ``.slurm``, ``.sbatch``): every command that runs a Megatron
  entry point, directly or through ``torchrun``, ``python -m torch.distributed.launch|run``,
  ``deepspeed``, ``srun`` or ``mpirun`` (also ``eval "$run_cmd"`` and ``"${cmd[@]}"``), becomes one
  TrainingSpec labelled ``pretrain_gpt.py at line N``. A script that only defines flag variables
  (``MODEL_ARGS="--num-layers 36 ..."``) gives one spec from those variables. See
  :mod:`.shell` for how variables, branches, loops, ``source`` and ``eval`` are followed.
* **MODEL_ARGS YAML** (Megatron's functional-test ``model_config.yaml`` and the moe-modelzoo
  model configs): ``--flag: value``, ``true`` for a bare flag, ``false`` for a flag left out,
  ``${VAR}`` placeholders unresolved.
* **an argv list** (:func:`load_argv`), for ``trainlint run -- <cmd>``.

Dialects. Each invocation is read as one of three argument sets: current Megatron-LM (the
default), ``megatron-deepspeed`` (when DeepSpeed's flags are present, e.g. ``--deepspeed``,
``--deepspeed_config``, ``--zero-stage``, or the script lives in a Megatron-DeepSpeed tree), or
``legacy`` (old Megatron-LM copies such as v1.1.5: ``pretrain_gpt2.py`` or a ``Megatron-LM-v1.x``
tree). Flags that current Megatron-LM removed or refuses (``--checkpoint-activations``,
``--batch-size``, ``--model-parallel-size``) are TL008 errors only in the current dialect; in the
others they are valid and mean what they meant there.

``--deepspeed_config file.json`` is read (relative to the script, then its parent folders, or
from a here-document the script writes) and merged into the same spec, with the JSON's own
positions; a missing file is TL013.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from trainlint.adapters.base import LoadContext, LoadResult
from trainlint.core.diagnostics import Diagnostic
from trainlint.core.document import Document, escape_key
from trainlint.core.input_codes import input_diagnostic
from trainlint.core.positions import FILE_START, LineIndex, Span
from trainlint.core.provenance import Origin, Provenance, Value, from_file
from trainlint.files.sources import SourceText, Unreadable, UnreadableSource
from trainlint.core.spec import TrainingSpec

from trainlint.adapters.megatron.slurm import sbatch_allocation
from trainlint.adapters.megatron.flags import (
    CURRENT,
    DEEPSPEED,
    LEGACY,
    ArgReader,
    ParsedArgs,
    unknown_summary,
)
from trainlint.adapters.megatron.flag_table import flag_table
from trainlint.adapters.megatron.invocation import DISTINCTIVE, Invocation, find_invocation
from trainlint.adapters.megatron.shell import FileText, ShellResult, evaluate
from trainlint.adapters.megatron.spec_build import BuildContext, SpecBuilder, set_engine
from trainlint.adapters.megatron.words import Field, Loc, Seg

from trainlint.adapters.megatron.markers import FORMAT, model_args_yaml

_DS_FLAGS = ("--deepspeed", "--deepspeed_config", "--deepspeed-config", "--deepscale", "--deepscale_config",
             "--zero-stage", "--deepspeed-activation-checkpointing", "--no-pipeline-parallel", "--zero-reduce-scatter",
             "--zero-contigious-gradients", "--cpu-optimizer", "--partition-activations")
_DS_FLAG_SET = frozenset(_DS_FLAGS)


@dataclass
class ParsedRun:
    """One training run as the adapter read it, for tools that edit the script in place
    (``trainlint suggest --write-to``): its spec, the arguments as argparse sees them (every
    Setting with the Fields and Locs it came from) and the shell evaluation (assignments, files)."""

    spec: TrainingSpec
    parsed: ParsedArgs
    args: list[Field]
    shell: ShellResult | None


def load_runs(source: SourceText, context: LoadContext) -> tuple[LoadResult, list[ParsedRun]]:
    """:meth:`MegatronAdapter.load` plus the :class:`ParsedRun` of each spec, in the same order."""
    runs: list[ParsedRun] = []
    if source.path.lower().endswith((".yaml", ".yml")) or (
            model_args_yaml(source.text[:262144]) and not source.path.lower().endswith((".sh", ".bash"))):
        return load_yaml(source, context, runs), runs
    return load_script(source, context, runs), runs


# ------------------------------------------------------------------------------ shell scripts


@dataclass
class _Spans:
    """Turns a Loc into (path, Span) for every file the evaluation read."""

    files: dict[str, FileText]
    extra: dict[str, LineIndex] = field(default_factory=dict)
    found: dict[tuple[str, int, int], tuple[str, Span]] = field(default_factory=dict)
    """The spans turned so far, by (path, start, end): a run's values, their flags and its
    document ask for the same places several times (the files' texts do not change once read).
    Keyed by a tuple, not the Loc: a Loc hashes and compares in Python, ~3x slower per lookup."""

    def __call__(self, loc: Loc | None) -> tuple[str | None, Span | None]:
        if loc is None:
            return None, None
        key = (loc.path, loc.start, loc.end)
        hit = self.found.get(key)
        if hit is not None:
            return hit
        ft = self.files.get(loc.path)
        index = ft.index if ft is not None else self.extra.get(loc.path)
        if index is None:
            return loc.path, None
        out = self.found[key] = (loc.path, index.span(loc.start, loc.end))
        return out


def load_script(source: SourceText, context: LoadContext, collect: list[ParsedRun] | None = None) -> LoadResult:
    result = LoadResult(FORMAT)
    shell = evaluate(source, context.read, context.environment)
    result.diagnostics.extend(shell.diagnostics)
    spans = _Spans(shell.files)
    invocations: list[Invocation] = []
    for command in shell.commands:
        inv = find_invocation(command)
        if inv is not None:
            invocations.append(inv)
    seen_sites: set[tuple] = set()
    allocation = sbatch_allocation(source.text, source.path) if "#SBATCH" in source.text else {}
    for inv in invocations:
        key = (inv.command.loc, tuple(f.site for f in inv.args[:3]))
        if key in seen_sites:
            continue
        seen_sites.add(key)
        _, span = spans(inv.command.loc)
        entry_name = inv.entry_path.rsplit("/", 1)[-1]
        label = f"{entry_name} at line {span.line if span else 1}"
        if inv.command.loc.path != source.path:
            label += f" of {inv.command.loc.path}"
        if inv.command.in_loop is not None:
            result.diagnostics.append(input_diagnostic(
                "TL012", "this training command is inside a loop; trainlint reads it once, with the loop "
                "variable unknown", spans(inv.command.in_loop)[1] or FILE_START, path=inv.command.in_loop.path))
        dialect = _dialect(inv.args, inv.entry_path, source.path, inv.launchers)
        build = BuildContext(source.path, label, dialect, inv.entry_path, spans, dict(inv.world),
                             inv.all_local_gpus, list(inv.launchers),
                             anchor=span if inv.command.loc.path == source.path else None)
        _inherit_allocation(build, allocation)
        if "visible" not in build.world and "CUDA_VISIBLE_DEVICES" in inv.command.prefix and inv.all_local_gpus:
            vis = inv.command.prefix["CUDA_VISIBLE_DEVICES"]
            if vis.text is not None:
                build.world["gpus_per_node"] = _count_field(vis)
        _one_spec(result, source, context, shell, spans, inv.args, build, collect)
    if not result.specs:
        _variables_spec(result, source, context, shell, spans, collect)
    result.diagnostics = _finish(result, source.path)
    return result


def _inherit_allocation(build: BuildContext, allocation: dict[str, Field]) -> None:
    """srun (or mpirun) inside an sbatch script runs on the allocation the #SBATCH lines ask for:
    --nodes nodes, and --ntasks-per-node processes on each when srun starts the Python script
    itself (with torchrun or deepspeed under srun, their own per-node count stays). Values the
    launcher's own options give win."""
    if not allocation or not any(name in ("srun", "mpirun") for name in build.launchers):
        return
    if "nodes" in allocation:
        build.world.setdefault("nodes", allocation["nodes"])
    spawner = any(name.startswith(("torchrun", "python -m torch")) or name == "deepspeed" for name in build.launchers)
    per_node = allocation.get("ntasks_per_node") if not spawner else allocation.get("gpus_per_node")
    if per_node is not None and "world_size" not in build.world:
        build.world.setdefault("gpus_per_node", per_node)


def _count_field(f: Field) -> Field:
    count = len([x for x in (f.text or "").split(",") if x.strip()])
    return Field((Seg(str(count), f.value_loc, False),), f.site)


def _dialect(args: list[Field], entry: str | None, path: str, launchers: list[str]) -> str:
    where = f"{path}/{entry or ''}".replace("\\", "/")
    if re.search(r"Megatron-LM-v1\.|/megatron/Megatron-LM/|DeepSpeed-Domino", where) or (
            entry or "").endswith("pretrain_gpt2.py"):
        return LEGACY
    if "Megatron-DeepSpeed" in where or re.search(r"(^|/)megatron-deepspeed/", where, re.I) or _has_ds_flag(args):
        return DEEPSPEED
    return CURRENT


def _has_ds_flag(args: list[Field]) -> bool:
    """One of DeepSpeed's flags is given (``--flag`` or ``--flag=value``)."""
    for a in args:
        text = a.text
        if text is not None and (text in _DS_FLAG_SET or ("=" in text and text.split("=", 1)[0] in _DS_FLAG_SET)):
            return True
    return False


def _one_spec(result: LoadResult, source: SourceText, context: LoadContext, shell: ShellResult | None,
              spans: _Spans, args: list[Field], build: BuildContext,
              collect: list[ParsedRun] | None = None) -> TrainingSpec:
    from trainlint.frameworks.locate import read_note, resolve

    target = resolve("megatron", source.path, context.frameworks)
    reader = ArgReader(flag_table(), spans, build.dialect, build.entry, source.path, target)
    parsed = reader.read(args)
    if parsed.unlisted:
        _PENDING.setdefault(id(result), []).append(parsed)
    note = read_note(target, build.anchor or FILE_START, source.path)
    if note is not None:
        result.diagnostics.append(note)
    result.diagnostics.extend(parsed.diagnostics)
    builder = SpecBuilder(parsed, build)
    spec = builder.build()
    result.diagnostics.extend(builder.diagnostics)
    spec.target = target
    _merge_deepspeed(result, spec, parsed, source, context, shell, spans)
    set_engine(spec)  # after the merge: under --deepspeed the JSON decides the optimizer
    if shell is not None:
        spec.engine.device_max_connections = _launch_variable(shell, "CUDA_DEVICE_MAX_CONNECTIONS", build.anchor,
                                                              source.path)
        spec.engine.cuda_alloc_conf = _launch_variable(shell, "PYTORCH_CUDA_ALLOC_CONF", build.anchor, source.path)
    result.specs.append(spec)
    result.documents.append(_document(source, parsed, spans, builder.places))
    if collect is not None:
        collect.append(ParsedRun(spec, parsed, list(args), shell))
    return spec


def _launch_variable(shell: ShellResult, name: str, anchor: Span | None, path: str) -> Value | None:
    """The last value the script assigns to ``name`` before the launch (``export CUDA_DEVICE_MAX_CONNECTIONS=1``),
    as the launched process sees it (whether it is exported is not told apart: scripts export these);
    None when the script does not assign it, or assigns what is only known at run time."""
    found: Value | None = None
    for a in shell.assignments:
        if a.name != name or a.value.is_array:
            continue
        at = shell.span(a.loc)
        if anchor is not None and a.loc.path == path and at is not None and (at.line, at.column) > (anchor.line, anchor.column):
            continue
        segs = a.value.as_scalar()
        if any(seg.unknown is not None for seg in segs):
            found = None
            continue
        found = Value("".join(seg.text for seg in segs), Provenance(
            Origin.FILE, a.loc.path, at, name, "assigned before the launch", (), a.value.uncertain))
    return found


def _document(source: SourceText, parsed: ParsedArgs, spans: _Spans,
              places: dict[str, tuple[Any, str | None, Span | None, str | None, Span | None]] | None = None) -> Document:
    """``places``: the spans the spec builder turned already (:attr:`SpecBuilder.places`), by dest."""
    data: dict[str, Any] = {}
    key_spans: dict[str, Span] = {}
    value_spans: dict[str, Span] = {}
    unresolved: dict[str, str] = {}
    here = source.path
    places = places or {}
    for dest, s in parsed.settings.items():
        ptr = s.info.pointer if s.info.dest == dest else "/" + escape_key(dest)  # pointer([dest])
        data[dest] = s.value
        known = places.get(dest)
        if known is not None and known[0] is s:
            _, path, span, vpath, vspan = known
        else:
            flag_loc = s.flag_field.value_loc
            path, span = spans(flag_loc)
            # a switch's value is its flag: the same place, turned once
            vpath, vspan = (path, span) if s.value_loc is flag_loc else spans(s.value_loc)
        if span is not None and path == here:
            key_spans[ptr] = span
        if vspan is not None and vpath == here:
            value_spans[ptr] = vspan
        if s.unresolved:
            unresolved[ptr] = s.unresolved
    return Document(source.path, FORMAT, source.text, data, key_spans, value_spans, unresolved)


def _variables_spec(result: LoadResult, source: SourceText, context: LoadContext, shell: ShellResult,
                    spans: _Spans, collect: list[ParsedRun] | None = None) -> None:
    """No invocation: a spec from the variables that hold Megatron flags (modelopt conf/*.sh)."""
    table = flag_table()
    candidates: list[tuple[str, list[Field], set]] = []
    seen: set[str] = set()
    for a in shell.assignments:
        if a.loc.path != source.path or a.name in seen:
            continue
        value = shell.env.values.get(a.name)
        if value is None or not _may_hold_flags(value):
            continue
        fields = _fields_of(value)
        flags = [f for f in fields if f.text and f.text.startswith("--")]
        known = [f for f in flags if f.text.split("=", 1)[0] in table.by_flag]
        distinctive = [f for f in flags if f.text.split("=", 1)[0] in DISTINCTIVE]
        if len(known) < 2 or not distinctive:
            continue
        seen.add(a.name)
        candidates.append((a.name, fields, {f.value_loc for f in flags}))
    chosen = []
    for name, fields, locs in candidates:
        if any(other is not locs and locs <= other_locs and (locs != other_locs or j < i)
               for j, (_n, _f, other_locs) in enumerate(candidates)
               for i in [candidates.index((name, fields, locs))] for other in [other_locs]):
            continue
        chosen.append((name, fields))
    if not chosen:
        return
    args: list[Field] = []
    for _name, fields in chosen:
        args.extend(fields)
    label = " + ".join(name for name, _ in chosen)
    from trainlint.adapters.megatron.shell import Command

    # A variable holding a whole command (`CMD="python -m ... ${ARGS}"`, run by eval or srun bash -c).
    if any((f.text or f.known_tail).endswith(".py") for f in args):
        site = args[0].site or Loc(source.path, 0, 0)
        inv = find_invocation(Command(args, site), distinctive_needed=1)
        if inv is not None:
            entry_name = inv.entry_path.rsplit("/", 1)[-1]
            build = BuildContext(source.path, f"{entry_name} in {label}",
                                 _dialect(inv.args, inv.entry_path, source.path, inv.launchers), inv.entry_path,
                                 spans, dict(inv.world), inv.all_local_gpus, list(inv.launchers))
            if "#SBATCH" in source.text:
                _inherit_allocation(build, sbatch_allocation(source.text, source.path))
            _one_spec(result, source, context, shell, spans, inv.args, build, collect)
            return
    # A command trainlint could not place (`cd $REPO && python -m ... tools/x.py ${ARGS}`): its flags
    # are read, but the script it runs decides which ones exist, so it is named as the entry point.
    at = next((k for k, f in enumerate(args) if f.text and f.text.endswith(".py") and not f.text.startswith("-")), None)
    script = args[at].text if at is not None else None
    if at is not None:
        # what comes before the script is the launcher with its own options and any commands
        # chained before it (`cd $REPO && pwd &&`): none of it is the script's arguments
        args = args[at + 1:]
    build = BuildContext(source.path, label, _dialect(args, script, source.path, []), script, spans)
    _one_spec(result, source, context, shell, spans, args, build, collect)


def _may_hold_flags(value) -> bool:
    """False when no word of the variable can be two known flags: its known characters, joined,
    hold ``--`` at most once (a word is a stretch of known pieces, so each flag's ``--`` is in
    that string). Most variables (paths, sizes, names) are passed by here without being split."""
    if value.is_array:
        joined = "".join([s.text for f in value.array for s in f.segs if s.unknown is None])
    else:
        joined = "".join([s.text for s in value.as_scalar() if s.unknown is None])
    first = joined.find("--")
    return first >= 0 and joined.find("--", first + 2) >= 0


def _fields_of(value) -> list[Field]:
    from trainlint.adapters.megatron.words import Piece, split_pieces

    if value.is_array:
        pieces = [Piece(list(f.segs), split=True, field_break_before=i > 0) for i, f in enumerate(value.as_fields())]
    else:
        pieces = [Piece(list(value.as_scalar()), split=True)]
    return split_pieces(pieces, value.assigned_at, value.uncertain)


# ------------------------------------------------------------------------- DeepSpeed JSON


def _merge_deepspeed(result: LoadResult, spec: TrainingSpec, parsed: ParsedArgs, source: SourceText,
                     context: LoadContext, shell: ShellResult | None, spans: _Spans) -> None:
    setting = parsed.settings.get("deepspeed_config") or parsed.settings.get("deepscale_config")
    if setting is None or not setting.value_fields:
        return
    field_ = setting.value_fields[0]
    written = field_.text
    vpath, vspan = spans(setting.value_loc)
    if written is None:
        return  # already reported as TL007
    ds_source = None
    if shell is not None:
        ds_source = _virtual_json(written, shell, source)
    if ds_source is None:
        base = os.path.dirname(source.path)
        tried = []
        candidates = [written] if os.path.isabs(written) else []
        d = base
        for _ in range(4):
            if not os.path.isabs(written):
                candidates.append(os.path.normpath(os.path.join(d, written)))
            d = os.path.dirname(d) if d else d
        from trainlint.files.containment import contained, outside_message, roots_for

        roots = roots_for(source.path)
        for cand in candidates:
            tried.append(cand)
            if not contained(cand, roots):
                if os.path.exists(cand):
                    result.diagnostics.append(input_diagnostic(
                        "TL012", outside_message("DeepSpeed config", written, roots), vspan or FILE_START,
                        path=vpath or source.path))
                    return
                continue
            try:
                ds_source = context.read(cand)
                break
            except UnreadableSource as exc:
                if exc.reason is not Unreadable.CANNOT_OPEN:
                    result.diagnostics.append(exc.diagnostic)
                    return
                continue
            except OSError:
                continue
    if ds_source is None:
        result.diagnostics.append(input_diagnostic(
            "TL013", f"DeepSpeed config `{written}` not found (looked relative to the script and its parent "
            "folders); its ZeRO, precision and batch settings are not checked", vspan or FILE_START,
            path=vpath or source.path))
        return
    try:
        from trainlint.adapters.deepspeed.adapter import load_deepspeed_config
    except ImportError:  # the DeepSpeed adapter is not installed: nothing to merge
        return
    loaded = load_deepspeed_config(ds_source, context.frameworks)
    result.diagnostics.extend(loaded.diagnostics)
    result.documents.extend(loaded.documents)
    if ds_source.path not in spec.sources:
        spec.sources.append(ds_source.path)
    if not loaded.specs:
        return
    ds = loaded.specs[0]
    _merge_spec(spec, ds)


# Fields the DeepSpeed JSON decides when it is present (the engine reads them from the JSON).
_JSON_WINS = {"parallel.zero_stage", "parallel.offload_optimizer", "parallel.offload_params"}

# Fields only Megatron's flags decide: Megatron-DeepSpeed configures DeepSpeed's activation checkpointing
# with its own flags, never None (megatron/initialize.py: deepspeed.checkpointing.configure(mpu,
# partition_activations=args.partition_activations, checkpoint_in_cpu=args.checkpoint_in_cpu, ...), which
# override the JSON's activation_checkpointing section: activation_checkpointing/checkpointing.py
# configure, "if partition_activations is not None"), and only under --deepspeed-activation-checkpointing.
_FLAGS_ONLY = {"memory.partition_activations", "memory.cpu_checkpointing"}


# Fields Megatron's flags decide even under DeepSpeed: Megatron-DeepSpeed sets DeepSpeed's batch from
# its own flags every step (megatron/training.py: model[0].set_train_batch_size(...)) and DP from the
# world size; the JSON's triple only fills what the flags leave unknown.
_FLAGS_WIN = {"batch.micro_batch", "batch.grad_accum", "batch.global_batch", "parallel.data"}


def _merge_spec(spec: TrainingSpec, ds: TrainingSpec) -> None:
    for dotted, value in ds.items():
        if dotted.startswith(("cluster.", "engine.")):
            continue
        if dotted in _FLAGS_ONLY or (dotted in _FLAGS_WIN and spec.get(dotted) is not None):
            spec.settings[f"deepspeed:{dotted}"] = value
            continue
        current = spec.get(dotted)
        if current is not None:
            spec.settings[f"deepspeed:{dotted}"] = value
        if dotted in _JSON_WINS or current is None or current.provenance.origin in (Origin.DEFAULT, Origin.DERIVED):
            if current is not None and current.provenance.origin is Origin.FILE and dotted not in _JSON_WINS:
                continue
            spec.set(dotted, value)
    for key, value in ds.settings.items():
        spec.settings.setdefault(f"deepspeed:{key}", value)


def _virtual_json(written: str, shell: ShellResult, source: SourceText) -> SourceText | None:
    """A DeepSpeed JSON the script writes itself with ``cat <<EOF > file``: its text, placed at the
    same line and column as in the script so that positions point into the here-document."""
    entry = shell.virtual_files.get(written)
    if entry is None:
        norm = os.path.normpath(written)
        for key, value in shell.virtual_files.items():
            if os.path.normpath(key) == norm:
                entry = value
                break
    if entry is None:
        return None
    body, loc = entry
    ft = shell.files.get(loc.path)
    if ft is None:
        return None
    line, column = ft.index.position(loc.start)
    parts = []
    for seg in body.segs:
        if seg.unknown is not None:
            raw = ft.text[seg.loc.start:seg.loc.end] if seg.loc is not None and seg.loc.path == loc.path else "null"
            parts.append(raw)
        else:
            parts.append(seg.text)
    text = "\n" * (line - 1) + " " * (column - 1) + "".join(parts)
    return SourceText(loc.path, text)


# ---------------------------------------------------------------------------- argv lists


def load_argv(argv: list[str], path: str = "<argv>", context: LoadContext | None = None) -> LoadResult:
    """Check a command line given as a list of words (``trainlint run -- torchrun ... pretrain_gpt.py ...``).

    Positions refer to the words joined by single spaces on one line."""
    context = context or LoadContext()
    text = " ".join(argv)
    ft = FileText.of(path, text)
    spans = _Spans({path: ft})
    from trainlint.adapters.megatron.words import argv_fields

    fields = argv_fields(argv, path)
    from trainlint.adapters.megatron.shell import Command

    result = LoadResult(FORMAT)
    source = SourceText(path, text)
    inv = find_invocation(Command(fields, Loc(path, 0, len(text))), distinctive_needed=1) if fields else None
    if inv is not None:
        entry_name = inv.entry_path.rsplit("/", 1)[-1]
        build = BuildContext(path, entry_name, _dialect(inv.args, inv.entry_path, path, inv.launchers),
                             inv.entry_path, spans, dict(inv.world), inv.all_local_gpus, list(inv.launchers))
        _one_spec(result, source, context, None, spans, inv.args, build)
    else:
        start = 0
        while start < len(fields) and not (fields[start].text or "").startswith("-"):
            start += 1
        build = BuildContext(path, "argv", _dialect(fields[start:], None, path, []), None, spans)
        _one_spec(result, source, context, None, spans, fields[start:], build)
    result.diagnostics = _finish(result, source.path)
    return result


# --------------------------------------------------------------------------- YAML MODEL_ARGS

_NEWLINE = re.compile("\n")
_PLACEHOLDER = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*(?::?-[^}]*)?\}?")


def load_yaml(source: SourceText, context: LoadContext, collect: list[ParsedRun] | None = None) -> LoadResult:
    from trainlint.adapters.text.yaml_tree import parse_yaml

    result = LoadResult(FORMAT)
    tree = parse_yaml(source.text, source.path)
    result.diagnostics.extend(tree.diagnostics)
    if not tree.ok or not isinstance(tree.data, dict):
        if tree.ok:
            result.diagnostics.append(input_diagnostic("TL005", "a Megatron MODEL_ARGS file must be a YAML mapping",
                                                       FILE_START, path=source.path))
        return result
    args = tree.data.get("MODEL_ARGS")
    if not isinstance(args, dict):
        span = tree.key_spans.get("/MODEL_ARGS", FILE_START)
        result.diagnostics.append(input_diagnostic(
            "TL005", "`MODEL_ARGS` must be a mapping of `--flag: value`", span, path=source.path))
        return result
    file_text, path = source.text, source.path
    starts = [0] + [m.end() for m in _NEWLINE.finditer(file_text)]  # each line's first offset
    lines, size = len(starts), len(file_text)

    def to_loc(span: Span | None) -> Loc | None:
        if span is None:
            return None
        a = starts[span.line - 1] + span.column - 1 if span.line - 1 < lines else size
        b = starts[span.end_line - 1] + span.end_column - 1 if span.end_line - 1 < lines else size
        return Loc(path, a, b)

    ft = FileText.of(source.path, source.text)
    spans = _Spans({source.path: ft})
    fields: list[Field] = []
    key_spans, value_spans = tree.key_spans, tree.value_spans
    for key, value in args.items():
        if value is False:
            continue  # the launcher leaves the flag out
        key_text = str(key)
        ptr = "/MODEL_ARGS/" + escape_key(key_text)  # pointer(["MODEL_ARGS", key])
        kloc = to_loc(key_spans.get(ptr))
        fields.append(Field((Seg(key_text, kloc, kloc is not None and file_text[kloc.start:kloc.end] == key_text),), kloc))
        if value is True or value is None:
            continue  # a switch: no value word
        vloc = to_loc(value_spans.get(ptr))
        items = value if isinstance(value, list) else [value]
        if isinstance(value, str) and value.startswith("[") and value.endswith("]") and "$" not in value:
            # "[1024 768 512]": the launcher passes a list; read it as the words it becomes.
            items = [w for w in re.split(r"[\s,]+", value[1:-1]) if w]
        for k, item in enumerate(items):
            iloc = to_loc(tree.value_spans.get(ptr + f"/{k}")) if isinstance(value, list) else vloc
            raw = source.text[iloc.start:iloc.end] if iloc is not None else None
            text = item if isinstance(item, str) else (
                raw.strip().strip("'\"") if raw and not isinstance(item, (dict, list)) else str(item))
            if isinstance(item, bool):
                text = "true" if item else "false"
            if "$" in text and _PLACEHOLDER.search(text):
                names = ", ".join(m.group(0) for m in _PLACEHOLDER.finditer(text))
                seg = Seg("", iloc, False, f"{names} (a placeholder the launcher fills with envsubst)")
            else:
                exact = iloc is not None and source.text[iloc.start:iloc.end] == text
                seg = Seg(text, iloc, exact)
            fields.append(Field((seg,), iloc))
    build = BuildContext(source.path, "MODEL_ARGS", _dialect(fields, None, source.path, []), None, spans)
    spec = _one_spec(result, source, context, None, spans, fields, build, collect)
    mode = tree.data.get("MODE")
    if isinstance(mode, str) and mode:
        # the functional-test launcher (tests/functional_tests/shell_test_utils/run_ci_test.sh) picks
        # what runs these arguments from MODE (default pretraining): an inference mode does not train
        spec.run.mode = from_file(mode, source.path, tree.value_spans.get("/MODE"), "MODE")
    result.diagnostics = _finish(result, source.path)
    return result


_PENDING: dict[int, list[ParsedArgs]] = {}
"""id(LoadResult) -> the commands read into it that have flags for :func:`unknown_summary`; emptied
by :func:`_finish` when the load ends."""


def _finish(result: LoadResult, path: str) -> list[Diagnostic]:
    """The result's diagnostics with one unknown-flags summary per file, without duplicates."""
    pending = _PENDING.pop(id(result), [])
    return _dedupe(result.diagnostics + (unknown_summary(pending, path) if pending else []))


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen = set()
    out = []
    for d in diags:
        key = (d.code, d.path, d.span, d.message)
        if key in seen:
            continue
        seen.add(key)
        out.append(d)
    return sorted(out, key=lambda d: (d.path or "", d.span, d.code, d.message))
