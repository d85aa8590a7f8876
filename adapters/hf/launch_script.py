"""A launch script that runs a Hugging Face Trainer with DeepSpeed, read by ``check`` as ``run`` reads
the same command line: ``deepspeed train.py --deepspeed ds.json --per_device_train_batch_size 4 ...``,
``torchrun ... train.py --deepspeed ds.json ...``, ``accelerate launch --deepspeed_config_file ds.json
train.py ...`` (or ``--config_file cfg.yaml`` naming the JSON), inside a shell script.

The script is expanded by the Megatron adapter's shell reader (variables, ``$1`` from ``--arg``,
nothing run); each command the launch classifier calls a DeepSpeed launch becomes one run: the JSON
(found beside the script, in the current directory or at the project root, never outside the
project), its ``"auto"`` values filled from the Trainer's arguments as the Trainer fills them
(:mod:`trainlint.adapters.hf.trainer_args`), and the launcher's GPUs, nodes and world size; every value located at
its word in the script. A script with a Megatron-LM launch is the Megatron adapter's (it scores higher).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from trainlint.adapters.base import BY_CONTENT, NOT_MINE, Adapter, LoadContext, LoadResult
from trainlint.files.sources import SourceText

FORMAT = "hf-trainer"
_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")
_SNIFF_BYTES = 256 * 1024
@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The sniff's patterns, compiled on first use: only a shell script (by its suffix) is searched,
    and a check of JSON and YAML files should not pay for compiling them at every start."""
    return (
        # A Trainer's DeepSpeed JSON on a launch line: `--deepspeed ds.json` / `--deepspeed=$DS` (the value
        # is a file, not the next flag), or accelerate's `--deepspeed_config_file`.
        re.compile(r"--deepspeed(?:[ \t]+|=)[^-\s\\]|--deepspeed_config_file\b|--use_deepspeed\b"),
        re.compile(r"\b(deepspeed|torchrun|accelerate[ \t]+launch|torch\.distributed\.(?:run|launch))\b"),
        # `accelerate launch --config_file cfg.yaml`: the config may hold the DeepSpeed settings inline
        # (whether it does is read when the run is loaded; a script whose launch turns out not to be
        # DeepSpeed gives no run)
        re.compile(r"\baccelerate[ \t]+launch\b"),
        re.compile(r"--config_file\b"),
    )


# Each pattern matches only where a literal it starts with (or holds) is in the text: that substring test
# (at memchr speed) comes first, as most scripts (Megatron-LM launches, jobs) hold neither, and the
# patterns that start with \b are tried at every character of up to 256 KB (~50 us a script).


def _deepspeed_launch(head: str) -> bool:
    if "--deepspeed" not in head and "--use_deepspeed" not in head:
        return False
    ds_word, launcher, _accelerate, _config_file = _patterns()
    return bool(ds_word.search(head) and launcher.search(head))


def _accelerate_config(head: str) -> bool:
    if "accelerate" not in head or "--config_file" not in head:
        return False
    _ds_word, _launcher, accelerate, config_file = _patterns()
    return bool(accelerate.search(head) and config_file.search(head))


class HFLaunchScriptAdapter(Adapter):
    name = FORMAT
    extensions = _SUFFIXES

    def sniff(self, path: str, text: str) -> int:
        try:
            if not path.lower().endswith(_SUFFIXES):
                return NOT_MINE
            head = text[:_SNIFF_BYTES]
            if _deepspeed_launch(head) or _accelerate_config(head):
                return BY_CONTENT - 10  # below the Megatron adapter's content score: its scripts stay its own
            return NOT_MINE
        except Exception:  # noqa: BLE001 - sniff must never raise on garbage
            return NOT_MINE

    def load(self, source: SourceText, context: LoadContext) -> LoadResult:
        from trainlint.adapters.megatron.shell import evaluate

        result = LoadResult(FORMAT)
        shell = evaluate(source, context.read, context.environment)
        result.diagnostics.extend(shell.diagnostics)
        launches = [_one_run(result, source, context, shell, command) for command in shell.commands]
        head = source.text[:_SNIFF_BYTES]
        if not any(launches) and not _deepspeed_launch(head):
            # taken for its `accelerate launch --config_file`, but no launch runs DeepSpeed (a DDP or FSDP
            # config, or one not found): not a run of ours, so nothing of it is reported
            return LoadResult(FORMAT)
        return result


def _one_run(result: LoadResult, source: SourceText, context: LoadContext, shell, command) -> bool:
    """Adds the run of one command when it is a DeepSpeed launch; returns whether it is one."""
    from trainlint.adapters.deepspeed.adapter import load_deepspeed_config
    from trainlint.adapters.hf.trainer_yaml import _find_json
    from trainlint.adapters.megatron.adapter import _Spans
    from trainlint.adapters.launch.command_line import parse_launch
    from trainlint.core.input_codes import FILE_START, input_diagnostic
    from trainlint.files.sources import UnreadableSource

    words = [f.text if f.text is not None else "" for f in command.fields]
    launch = parse_launch(words, base=source.path)
    if launch.kind != "deepspeed" or launch.invocation is None:
        return False
    spans = _Spans(shell.files)

    def span_of_field(i: int):
        f = command.fields[i] if 0 <= i < len(command.fields) else None
        return spans(f.value_loc if f is not None else None)[1] or FILE_START

    from trainlint.adapters.megatron.invocation import find_invocation
    from trainlint.adapters.launch.command_line import accelerate_options

    # The launcher's words, located in this script (the same reading `run` applies to a command line).
    located = find_invocation(command, distinctive_needed=0)
    options = accelerate_options(located, spans) if located is not None and "accelerate" in located.launchers else {}
    ref = launch.deepspeed_config
    if ref is None:  # accelerate's inline DeepSpeed settings
        from trainlint.adapters.hf.accelerate import load_inline

        what = "the accelerate config's DeepSpeed settings" if launch.accelerate is not None else \
            "accelerate's DeepSpeed options"
        _complete(result, source, launch, located, spans, span_of_field, words,
                  load_inline(launch.accelerate, options, source.path), options, what, command)
        return True
    at = span_of_field(ref.index)
    json_path = _find_json(ref.written, source.path)
    if json_path is None:
        import os

        from trainlint.files.containment import outside_message, roots_for

        beside = os.path.join(os.path.dirname(os.path.abspath(source.path)), ref.written)
        if os.path.isfile(beside):  # there, but outside the project: not read (as the Megatron adapter says)
            result.diagnostics.append(input_diagnostic(
                "TL012", outside_message("DeepSpeed config", ref.written, roots_for(source.path)), at,
                path=source.path))
            return True
        result.diagnostics.append(input_diagnostic(
            "TL013", f"DeepSpeed config `{ref.written}` not found in the project (relative to this script, the "
            "current directory or the project root); the run is not estimated", at, path=source.path))
        return True
    try:
        loaded = load_deepspeed_config(context.read(json_path), context.frameworks)
    except UnreadableSource as exc:
        result.diagnostics.append(exc.diagnostic)
        return True
    _complete(result, source, launch, located, spans, span_of_field, words, loaded, options, ref.written, command)
    return True


def _complete(result: LoadResult, source: SourceText, launch, located, spans, span_of_field, words, loaded,
              options: dict, what: str, command) -> None:
    """The DeepSpeed run ``loaded`` (a JSON, or accelerate's inline settings) as the launch runs it: the
    launcher's world (``located``: its invocation, located in the script) and the Trainer's arguments."""
    from trainlint.adapters.hf.accelerate import mixed_precision
    from trainlint.adapters.launch.command_line import _accelerate_world, complete_trainer_run, invocation_cluster, without_trainer_filled

    inv = launch.invocation
    cluster = None
    mixed = None
    if located is not None:
        cluster = invocation_cluster(located, source.path, spans)
        if "accelerate" in located.launchers:
            _accelerate_world(cluster, launch.accelerate)
            mixed = mixed_precision(launch.accelerate, options.get("mixed_precision"))
    start = next((i for i, w in enumerate(words) if w == inv.entry_path), None)
    first = start + 1 if start is not None else 0  # the Trainer's first argument
    trainer_words = words[first:] if start is not None else None
    line = spans(command.loc)[1]
    for spec in loaded.specs:
        complete_trainer_run(spec, cluster, trainer_words, lambda i: span_of_field(first + i), source.path,
                             cwd=Path(source.path).parent, mixed_precision=mixed)
        spec.path = source.path
        spec.label = f"{inv.entry_path.rsplit('/', 1)[-1]} with {what} at line {line.line if line else 1}"
        spec.entry_point = inv.entry_path
        spec.anchor = line
        if source.path not in spec.sources:
            spec.sources.insert(0, source.path)
        result.specs.append(spec)
    # the JSON's own problems are reported when the JSON itself is checked; here only what the launch adds
    from trainlint.adapters.deepspeed.adapter import merge_auto_notes

    result.diagnostics += merge_auto_notes([d for d in without_trainer_filled(loaded.diagnostics) if d.path])
    result.documents += loaded.documents
