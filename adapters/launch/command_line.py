"""What a launch command line runs, and the configs it names (for ``trainlint run -- <command>``).

The command is read as the words the program will receive (no shell is involved: ``trainlint run``
passes them to the program unchanged). Launchers are recognised by the Megatron adapter's own
reader (:func:`trainlint.adapters.megatron.invocation.find_invocation`: ``torchrun``, ``python -m
torch.distributed.run|launch``, ``deepspeed``, ``srun``, ``mpirun``, ``env``, ``nohup``...), so a
command line and a launch script give the same world size. What is then checked:

* **Megatron** (an entry point such as ``pretrain_gpt.py``, or Megatron-only flags): the argument
  list itself, with :func:`trainlint.adapters.megatron.adapter.load_argv`, which also reads the
  ``--deepspeed_config`` JSON of Megatron-DeepSpeed.
* **DeepSpeed** (any other script given ``--deepspeed_config FILE``, ``--deepspeed-config FILE``,
  ``--deepspeed_config=FILE``, ``--deepscale_config FILE``, or ``--deepspeed FILE.json`` as the
  Hugging Face Trainer takes it): the JSON, with the launcher's world size.
* **GPT-NeoX** (``deepy.py train.py a.yml b.yml``): the YAML files, merged in order as one run,
  with ``-d/--conf_dir`` and NeoX's own rule that a name without ``.yml``/``.json`` gets ``.yml``.
* **a launch script** (``bash train.sh``, ``sh``, ``sbatch [options] train.sh``, ``./train.sh``):
  the script, as ``trainlint check`` reads it (its own ``$1`` defaults, not the words given here).

Positions in the command line: the path is ``<command line>``, line 1, and the column counts
characters in the words joined by single spaces (:func:`command_text`), which is how
``load_argv`` places Megatron flags; ``trainlint run`` prints that text before the findings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from trainlint.core.positions import LineIndex, Span

COMMAND_LINE = "<command line>"
"""The path diagnostics about the command line itself carry."""

SCRIPT_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
_DS_CONFIG_FLAGS = ("--deepspeed_config", "--deepspeed-config", "--deepscale_config", "--deepscale-config")

# deepy.py's own options (gpt-neox megatron/neox_arguments/arguments.py, consume_deepy_args @ ea7aefd):
# those that take one value, and --eval_tasks, which takes one or more.
_NEOX_VALUE_OPTIONS = {"-d", "--conf_dir", "--wandb_group", "--wandb_run_name", "--wandb_team", "--iteration",
                       "--eval_results_prefix", "-H", "--hostfile", "-i", "--sample_input_file", "-o",
                       "--sample_output_file", "--autotuning"}
_NEOX_MANY_OPTIONS = {"--eval_tasks"}


def command_text(argv: list[str]) -> str:
    """The text positions in the command line refer to: the words joined by single spaces."""
    return " ".join(argv)


@dataclass
class WordRef:
    """A word of the command line that names a file, with where it is written."""

    index: int
    path: str
    """The file as the program will open it (relative to the current directory)."""
    written: str
    span: Span


if TYPE_CHECKING:  # pragma: no cover - imported where used (start-up time)
    from trainlint.adapters.hf.accelerate import AccelerateConfig
    from trainlint.adapters.megatron.invocation import Invocation


@dataclass
class LaunchCommand:
    argv: list[str]
    kind: str
    """``megatron``, ``deepspeed``, ``neox``, ``script`` or ``none`` (nothing trainlint reads)."""
    launchers: list[str] = field(default_factory=list)
    entry: str | None = None
    invocation: Invocation | None = None
    """The Megatron adapter's Invocation (launchers, world size words), when a Python script runs."""
    deepspeed_config: WordRef | None = None
    neox_configs: list[WordRef] = field(default_factory=list)
    script: WordRef | None = None
    script_args: list[str] = field(default_factory=list)
    accelerate: AccelerateConfig | None = None
    """The ``accelerate launch --config_file`` YAML's settings (AccelerateConfig), when read."""
    accelerate_inline: bool = False
    """``accelerate launch`` with DeepSpeed and no DeepSpeed JSON: the settings are the accelerate config's
    inline ``deepspeed_config`` and the launch options (kind ``deepspeed``, ``deepspeed_config`` None)."""

    def span_of_word(self, index: int, start: int = 0, end: int | None = None) -> Span:
        return word_span(self.argv, index, start, end)


def word_span(argv: list[str], index: int, start: int = 0, end: int | None = None) -> Span:
    """The span of ``argv[index][start:end]`` in :func:`command_text`."""
    offset = sum(len(w) + 1 for w in argv[:index])
    word = argv[index]
    end = len(word) if end is None else end
    return LineIndex(command_text(argv)).span(offset + start, offset + end)


def argv_fields(argv: list[str], path: str = COMMAND_LINE):
    """The words as the Megatron adapter's fields, located in :func:`command_text` (as ``load_argv``)."""
    from trainlint.adapters.megatron.words import argv_fields as fields_of

    return fields_of(argv, path)


def span_function(argv: list[str], path: str = COMMAND_LINE) -> Callable:
    """Loc -> (path, Span) for locations in the command line (what the spec builder expects)."""
    index = LineIndex(command_text(argv))

    def span_of(loc):
        if loc is None:
            return None, None
        if loc.path != path:
            return loc.path, None
        return loc.path, index.span(loc.start, loc.end)

    return span_of


def parse_launch(argv: list[str], base: str | None = None, frameworks: Sequence[Any] = ()) -> LaunchCommand:
    """Classify a command line; never raises on odd input. ``base``: the launch script the words are
    in (an accelerate config is looked for beside it too). ``frameworks``: the session's
    (:class:`trainlint.core.framework.Framework`); a Python command the shipped launch forms do not
    recognise is offered to each (``Framework.claim_launch``), so a plugin framework's command
    goes through ``trainlint run``'s gate too."""
    found = _classify(argv, base)
    if found.kind == "none" and found.invocation is not None:
        for framework in frameworks:
            kind = framework.claim_launch(found)
            if kind:
                found.kind = kind
                break
    return found


def _classify(argv: list[str], base: str | None = None) -> LaunchCommand:
    """The launch forms trainlint's own frameworks read (shared launcher knowledge: a Megatron entry
    point, deepy.py, a DeepSpeed or accelerate config, a launch script)."""
    from trainlint.adapters.megatron.invocation import find_invocation
    from trainlint.adapters.megatron.shell import Command
    from trainlint.adapters.megatron.words import Loc

    if not argv:
        return LaunchCommand(argv, "none")
    fields = argv_fields(argv)
    command = Command(fields, Loc(COMMAND_LINE, 0, len(command_text(argv))))
    # The same test load_argv applies: a Megatron entry point, or a script given Megatron-only flags.
    megatron = find_invocation(command, distinctive_needed=1)
    if megatron is not None:
        return LaunchCommand(argv, "megatron", list(megatron.launchers), megatron.entry_path, megatron)
    inv = find_invocation(command, distinctive_needed=0)  # any Python script, with its launchers
    if inv is not None:
        found = LaunchCommand(argv, "none", list(inv.launchers), inv.entry_path, inv)
        args_start = _index_of(fields, inv.args[0]) if inv.args else len(argv)
        if os.path.basename(inv.entry_path) == "deepy.py":
            found.kind = "neox"
            found.neox_configs = _neox_configs(argv, args_start)
            return found
        ref = _deepspeed_config(argv, args_start)
        if "accelerate" in inv.launchers:
            ref = _accelerate(found, argv, base) or ref
            found.accelerate_inline = ref is None and _accelerate_deepspeed(found, argv, args_start)
        if ref is not None or found.accelerate_inline:
            found.kind = "deepspeed"
            found.deepspeed_config = ref
        return found
    script = _script(argv)
    if script is not None:
        ref, rest = script
        return LaunchCommand(argv, "script", script=ref, script_args=rest)
    return LaunchCommand(argv, "none")


def _accelerate(found: LaunchCommand, argv: list[str], base: str | None = None) -> WordRef | None:
    """``accelerate launch``: its --deepspeed_config_file, else the one its --config_file YAML names
    (the YAML's num_processes/num_machines are kept on ``found`` for the world size)."""
    from trainlint.adapters.hf.accelerate import read_accelerate_config

    assert found.invocation is not None  # parse_launch asks only for a Python script's invocation
    world = found.invocation.world
    config_word = _word_of(argv, world.get("accelerate_config"))
    if config_word is not None:
        found.accelerate = read_accelerate_config(config_word[2], base)
    direct = _word_of(argv, world.get("deepspeed_config_file"))
    if direct is not None:
        index, start, written = direct
        return _ref(argv, index, written, start)
    if found.accelerate is not None and found.accelerate.deepspeed_config_file and config_word is not None:
        index, start, _ = config_word
        written = found.accelerate.deepspeed_config_file
        return WordRef(index, written, written, word_span(argv, index, start))
    return None


def _accelerate_deepspeed(found: LaunchCommand, argv: list[str], args_start: int) -> bool:
    """accelerate runs DeepSpeed: the config's ``distributed_type: DEEPSPEED`` or ``--use_deepspeed``
    among the launcher's own words (before the script)."""
    if found.accelerate is not None and found.accelerate.uses_deepspeed:
        return True
    entry = _entry_index(found)
    return "--use_deepspeed" in argv[:entry if entry is not None else args_start]


def accelerate_options(inv, spans: Callable) -> dict:
    """The ``accelerate launch`` options that set the DeepSpeedPlugin (``--zero_stage 3``,
    ``--mixed_precision bf16``...), as text located with ``spans`` (Loc -> (path, Span))."""
    from trainlint.adapters.hf.accelerate import INLINE_KEYS
    from trainlint.core.provenance import Origin, Provenance, Value

    out = {}
    for name in (*INLINE_KEYS, "mixed_precision"):
        f = inv.world.get("accelerate_" + name)
        if f is None or f.text is None:
            continue
        path, span = spans(f.value_loc)
        out[name] = Value(f.text.strip(), Provenance(Origin.FILE, path=path, span=span, key=f"--{name}",
                                                     note=f"accelerate launch --{name}"))
    return out


def _word_of(argv: list[str], value) -> tuple[int, int, str] | None:
    """(word index, start within the word, text) of an option's value Field located in command_text."""
    if value is None or value.text is None or value.value_loc is None:
        return None
    offset = value.value_loc.start
    for index, word in enumerate(argv):
        if offset <= len(word):
            return index, offset, value.text
        offset -= len(word) + 1
    return None


def _index_of(fields: list, wanted) -> int:
    for i, f in enumerate(fields):
        if f.site == wanted.site:
            return i
    return len(fields)


def _ref(argv: list[str], index: int, written: str, start: int = 0, path: str | None = None) -> WordRef:
    return WordRef(index, path or written, written, word_span(argv, index, start))


def _deepspeed_config(argv: list[str], start: int) -> WordRef | None:
    """The DeepSpeed JSON the training script is given; the last one wins, as with argparse."""
    found = None
    i = start
    while i < len(argv):
        word = argv[i]
        name, eq, value = word.partition("=")
        if name in _DS_CONFIG_FLAGS or (name == "--deepspeed" and (value if eq else _next(argv, i)).endswith(".json")):
            if eq:
                found = _ref(argv, i, value, len(name) + 1)
            elif i + 1 < len(argv):
                found = _ref(argv, i + 1, argv[i + 1])
                i += 1
        i += 1
    return found


def _next(argv: list[str], i: int) -> str:
    return argv[i + 1] if i + 1 < len(argv) else ""


def _neox_configs(argv: list[str], start: int) -> list[WordRef]:
    """deepy.py's positional words: the user script, then the config files (``-d DIR`` prefixes them)."""
    conf_dir = None
    positionals: list[tuple[int, str]] = []
    i = start
    while i < len(argv):
        word = argv[i]
        name, eq, value = word.partition("=")
        if word.startswith("-") and word != "-":
            if name in _NEOX_VALUE_OPTIONS:
                if not eq:
                    value = _next(argv, i)
                    i += 1
                if name in ("-d", "--conf_dir"):
                    conf_dir = value
            elif name in _NEOX_MANY_OPTIONS and not eq:
                while i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                    i += 1
            i += 1
            continue
        positionals.append((i, word))
        i += 1
    refs = []
    for index, written in positionals[1:]:  # the first one is the user script (train.py)
        path = os.path.join(conf_dir, written) if conf_dir else written
        if not path.endswith((".yml", ".json")):
            path += ".yml"  # NeoX: "enables us to pass in `125M` instead of `125M.yml`"
        refs.append(_ref(argv, index, written, path=path))
    return refs


def _script(argv: list[str]) -> tuple[WordRef, list[str]] | None:
    """``bash train.sh ...``, ``sbatch --nodes 2 train.sh``, ``srun bash x.sh``, ``./train.sh``."""
    i = 0
    while i < len(argv):
        word = argv[i]
        base = os.path.basename(word)
        if base == "env" or (i > 0 and "=" in word and word.split("=", 1)[0].isidentifier() and not word.startswith("-")):
            i += 1
            continue
        if base in _SHELLS or base in ("sbatch", "srun", "nohup", "time", "exec"):
            if base in _SHELLS and any(w == "-c" or (w.startswith("-") and not w.startswith("--") and "c" in w[1:])
                                       for w in argv[i + 1:i + 3]):
                return None  # an inline command string, not a file
            for j in range(i + 1, len(argv)):
                candidate = argv[j]
                if candidate.startswith("-"):
                    continue
                if os.path.basename(candidate) in _SHELLS:
                    break  # srun bash x.sh: look again from the shell
                if candidate.endswith(SCRIPT_SUFFIXES) and os.path.isfile(candidate):
                    return _ref(argv, j, candidate), argv[j + 1:]
                if base in _SHELLS and os.path.isfile(candidate):
                    return _ref(argv, j, candidate), argv[j + 1:]
            else:
                return None
            i = j
            continue
        if word.endswith(SCRIPT_SUFFIXES) and os.path.isfile(word):
            return _ref(argv, i, word), argv[i + 1:]
        return None
    return None


def launcher_cluster(launch: LaunchCommand):
    """GPUs per node, nodes and world size as the launcher's words give them, located in the command
    line; the Megatron adapter's own reading of launcher arguments (defaults included: torchrun
    without --nnodes is one node, ``deepspeed`` without --num_nodes or a hostfile is one node, plain
    ``python`` is one process). None when no Python script runs."""
    if launch.invocation is None:
        return None
    return invocation_cluster(launch.invocation, COMMAND_LINE, span_function(launch.argv))


def invocation_cluster(inv, path: str, spans: Callable):
    """The cluster a located launch (an adapters.megatron.invocation.Invocation) gives, its values
    located with ``spans`` in ``path``: a command line's words or a script's."""
    from trainlint.adapters.megatron.flags import CURRENT, ParsedArgs
    from trainlint.adapters.megatron.spec_build import BuildContext, SpecBuilder

    context = BuildContext(path, "launcher", CURRENT, inv.entry_path, spans, dict(inv.world), inv.all_local_gpus,
                           list(inv.launchers))
    return SpecBuilder(ParsedArgs(), context).build().cluster


def complete_trainer_run(spec, cluster, trainer_words: list[str] | None, span_of: Callable, path: str,
                         cwd=None, mixed_precision=None) -> None:
    """A DeepSpeed JSON's run as a launch runs it: the Hugging Face Trainer fills its "auto" values
    from the words after the script (when a script runs), and the launcher's GPUs per node, nodes and
    world size fill what the JSON does not say. The same for ``run``'s command line and ``check``'s
    launch scripts (adapters/hf/launch_script.py)."""
    if trainer_words is not None:
        from trainlint.adapters.hf.trainer_args import fill_from_trainer

        from trainlint.adapters.engine import set_engine

        fill_from_trainer(spec, trainer_words, span_of, path, cwd=cwd, mixed_precision=mixed_precision)
        set_engine(spec)  # the engine follows the precision the Trainer filled, as for a written-out JSON
    if cluster is not None:
        for name in ("gpus_per_node", "nodes", "world_size"):
            value = getattr(cluster, name)
            if value is not None and getattr(spec.cluster, name) is None:
                setattr(spec.cluster, name, value)


def without_trainer_filled(diagnostics: list) -> list:
    """The JSON's diagnostics less the TL007 "auto" notes of the values the Trainer fills."""
    from trainlint.adapters.hf.trainer_args import FILLED_POINTERS

    return [d for d in diagnostics if not (d.code == "TL007" and d.subject in FILLED_POINTERS)]


# ------------------------------------------------------------------------------ reading the configs


def read_command(launch: LaunchCommand, adapters: Sequence, environment: dict[str, str], frameworks: Any = None,
                 registered: Sequence[Any] | None = None) -> list:
    """FileResults for what the command uses, before the rules run (what ``trainlint run`` lints):
    what the framework whose launch form it is reads (``Framework.read_launch``, among ``registered``,
    the session's frameworks, else the built-in ones: the Megatron argument list, the DeepSpeed JSON
    with the launcher's world size, the NeoX YAMLs), or the launch script, read with ``adapters``,
    the launch-script ``environment`` and the session's ``frameworks`` settings."""
    from trainlint.adapters.base import LoadContext
    from trainlint.files.checker import check_file

    if registered is None:
        from trainlint.core.framework import known_frameworks

        registered = known_frameworks()
    owner = next((f for f in registered if launch.kind in f.launch_kinds), None)
    if owner is not None:
        return owner.read_launch(launch, adapters, environment, frameworks)
    if launch.kind == "script":
        assert launch.script is not None  # parse_launch sets kind "script" with the script's word
        # the words after the script are its $1 $2 ... (an argument not given is empty, as in bash)
        arguments = {str(i): word for i, word in enumerate(launch.script_args, 1)}
        return [check_file(launch.script.path, adapters,
                           LoadContext(environment={**environment, **arguments} if arguments else environment,
                                       frameworks=frameworks))]
    return []


def read_argument_list(launch: LaunchCommand, load: Callable, environment: dict[str, str], frameworks: Any = None):
    """A command line that is itself the config (Megatron's argv): ``load(argv, path, context)`` reads it
    as the framework's adapter does, located in :func:`command_text`."""
    from trainlint.adapters.base import LoadContext
    from trainlint.core.results import FileResult

    loaded = load(launch.argv, COMMAND_LINE, LoadContext(environment=environment, frameworks=frameworks))
    diagnostics = [_fatal_if_missing(d if d.path else replace(d, path=COMMAND_LINE)) for d in loaded.diagnostics]
    return FileResult(COMMAND_LINE, loaded.format, diagnostics, loaded.specs, loaded.documents)


def _fatal_if_missing(diagnostic):
    """A file named on a command line about to run must exist now (a script may still write it
    before its launch line, a command line cannot): TL013 there is an error."""
    from trainlint.core.diagnostics import Severity

    if diagnostic.code == "TL013" and diagnostic.path == COMMAND_LINE:
        return replace(diagnostic, severity=Severity.ERROR)
    return diagnostic


def _missing(ref, what: str):
    from trainlint.core.diagnostics import Severity
    from trainlint.core.input_codes import input_diagnostic

    shown = f"`{ref.written}`" + (f" (read as `{ref.path}`)" if ref.path != ref.written else "")
    return input_diagnostic("TL013", f"{what} {shown} not found (relative to {os.getcwd()}); the command would "
                            "fail to open it", ref.span, path=COMMAND_LINE, severity=Severity.ERROR)


def _read(ref, what: str):
    """(SourceText, None) or (None, diagnostic)."""
    from trainlint.files.sources import UnreadableSource, read_source

    if not os.path.exists(ref.path):
        return None, _missing(ref, what)
    try:
        return read_source(ref.path), None
    except UnreadableSource as exc:
        return None, exc.diagnostic


def read_deepspeed_launch(launch, frameworks: Any = None):
    """The DeepSpeed JSON, with GPUs per node, nodes and world size from the launcher's words."""
    from trainlint.adapters.deepspeed.adapter import FORMAT, load_deepspeed_config
    from trainlint.core.results import FileResult

    ref = launch.deepspeed_config
    options = accelerate_options(launch.invocation, span_function(launch.argv)) \
        if "accelerate" in launch.launchers and launch.invocation is not None else {}
    if ref is None:  # accelerate's inline DeepSpeed settings
        from trainlint.adapters.hf.accelerate import load_inline

        loaded = load_inline(launch.accelerate, options, COMMAND_LINE)
        where = launch.accelerate.path if launch.accelerate is not None else COMMAND_LINE
        what = "the accelerate config's DeepSpeed settings" if launch.accelerate is not None else \
            "accelerate's DeepSpeed options"
    else:
        source, problem = _read(ref, "DeepSpeed config")
        if source is None:
            return FileResult(COMMAND_LINE, None, [problem])
        loaded = load_deepspeed_config(source, frameworks)
        where, what = source.path, ref.written
    cluster = launcher_cluster(launch)
    mixed = None
    if "accelerate" in launch.launchers and cluster is not None:
        from trainlint.adapters.hf.accelerate import mixed_precision

        _accelerate_world(cluster, launch.accelerate)
        mixed = mixed_precision(launch.accelerate, options.get("mixed_precision"))
    start = _entry_index(launch)
    first = start + 1 if start is not None else 0  # the Trainer's first argument
    trainer_words = launch.argv[first:] if start is not None else None
    for spec in loaded.specs:
        complete_trainer_run(spec, cluster, trainer_words, lambda i: launch.span_of_word(first + i), COMMAND_LINE,
                             mixed_precision=mixed)
        spec.label = f"{launch.entry or 'command'} with {what}"
        if COMMAND_LINE not in spec.sources:
            spec.sources.append(COMMAND_LINE)
    # "auto" values the Trainer fills from the arguments read above are not unresolved here
    diagnostics = without_trainer_filled(loaded.diagnostics) if start is not None else list(loaded.diagnostics)
    return FileResult(where, FORMAT, diagnostics, loaded.specs, loaded.documents)


def _accelerate_world(cluster, config) -> None:
    """Nodes and world size from the accelerate config YAML where the command line gives none
    (its --num_processes / --num_machines win, as accelerate merges them)."""
    from trainlint.core.provenance import default, derived

    if config is not None and cluster.nodes is None and config.num_machines is not None:
        cluster.nodes = config.num_machines
    if config is not None and cluster.world_size is None and config.num_processes is not None:
        cluster.world_size = config.num_processes
    if cluster.world_size is not None and cluster.nodes is None:
        cluster.nodes = default(1, "accelerate default (--num_machines 1)")
    nodes, world = cluster.nodes, cluster.world_size
    if cluster.gpus_per_node is None and nodes is not None and world is not None and nodes.value \
            and world.value % nodes.value == 0:
        cluster.gpus_per_node = derived(world.value // nodes.value, "processes / machines (accelerate)", world, nodes)


def _entry_index(launch) -> int | None:
    """Where the Python script is in the command line (its arguments follow it)."""
    if not launch.entry:
        return None
    for i, word in enumerate(launch.argv):
        if word == launch.entry or (word.endswith("/" + launch.entry.rsplit("/", 1)[-1]) and word.endswith(".py")):
            return i
    return None


def read_neox_launch(launch: LaunchCommand, adapters: Sequence, environment: dict[str, str], frameworks: Any = None):
    """deepy.py's YAML files, merged in order as one run (NeoX's own order: later files win)."""
    from trainlint.adapters.base import LoadContext
    from trainlint.files.checker import check_source
    from trainlint.core.results import FileResult

    refs = launch.neox_configs
    if not refs:
        return FileResult(COMMAND_LINE, None)
    problems = []
    sources = []
    for ref in refs:
        source, problem = _read(ref, "GPT-NeoX config")
        if problem is not None:
            problems.append(problem)
        sources.append(source)
    if problems:
        return FileResult(COMMAND_LINE, None, problems)
    context = LoadContext(extra_paths=[r.path for r in refs[1:]], environment=environment, frameworks=frameworks,
                          named=True)
    return check_source(sources[0], adapters, context, force_format=launch.kind)  # the kind is the format's name
