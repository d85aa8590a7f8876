"""The Hugging Face Trainer's command line, for the DeepSpeed JSON it is given (``--deepspeed ds.json``).

The Trainer fills the JSON's ``"auto"`` values from its TrainingArguments before DeepSpeed reads it
(``HfTrainerDeepSpeedConfig.trainer_config_process`` / ``trainer_config_finalize``,
transformers/integrations/deepspeed.py): ``train_micro_batch_size_per_gpu`` from
``--per_device_train_batch_size`` (TrainingArguments default 8), ``gradient_accumulation_steps`` from
``--gradient_accumulation_steps`` (default 1), ``train_batch_size`` = world x micro x accumulation,
``bf16.enabled`` / ``fp16.enabled`` from ``--bf16`` / ``--fp16`` (default False). The model and the
sequence length are the training script's own arguments: ``--model_name_or_path`` (a local directory
with a config.json, or a name a model preset matches) and the common sequence arguments
(``--model_max_length`` of FastChat/Alpaca scripts, ``--max_seq_length`` of TRL, ``--block_size`` of
run_clm.py, ``--cutoff_len`` of LLaMA-Factory, ``--max_length``). Nothing is run or downloaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from trainlint.core.positions import Span
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.core.spec import TrainingSpec

DEFAULTS = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1}
"""TrainingArguments defaults (transformers/training_args.py)."""
SEQUENCE_ARGS = ("model_max_length", "max_seq_length", "max_seq_len", "block_size", "cutoff_len", "max_length",
                 "seq_length")
_BOOLS = ("bf16", "fp16", "gradient_checkpointing")


def trainer_words(words: list[str]) -> dict[str, tuple[str, int]]:
    """``--name value`` / ``--name=value`` / a bare ``--flag`` (True) -> {name: (value, word index)}."""
    out: dict[str, tuple[str, int]] = {}
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") and len(w) > 2:
            name, eq, value = w[2:].partition("=")
            name = name.replace("-", "_")
            if eq:
                out[name] = (value, i)
            elif i + 1 < len(words) and not words[i + 1].startswith("--"):
                out[name] = (words[i + 1], i + 1)
                i += 1
            else:
                out[name] = ("True", i)
        i += 1
    return out


def _int(text: str) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value > 0 else None


def _true(text: str) -> bool:
    return text.strip().lower() in ("true", "1", "yes")


FILLED_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "bf16.enabled",
               "fp16.enabled")
"""The JSON keys whose "auto" the Trainer fills from the arguments read here (TL007 need not say them)."""
FILLED_POINTERS = frozenset("/" + key.replace(".", "/") for key in FILLED_KEYS)
"""The same as JSON pointers (a TL007 diagnostic's ``subject``)."""


def fill_from_trainer(spec: TrainingSpec, words: list[str], span_of: Callable[[int], Span], path: str,
                      cwd: Path | None = None, mixed_precision: Value | None = None) -> None:
    """Set in ``spec`` (a Trainer's DeepSpeed JSON) what the Trainer's command line ``words`` gives,
    where the JSON leaves it to the Trainer ("auto", or absent): each value located in the command line,
    or at its key in the script's own config file (:func:`script_arguments`). ``mixed_precision``: the
    accelerate launch's (``mixed_precision`` of its config, ``--mixed_precision``), which --bf16/--fp16
    override (TrainingArguments.__post_init__ sets ACCELERATE_MIXED_PRECISION from them when true)."""
    words, where, from_file = script_arguments(words, span_of, path, cwd or Path.cwd())
    args = trainer_words(words)
    # The Trainer checks the values the config states against its own only when it is the Trainer that
    # runs the config: its --deepspeed argument, or TrainingArguments read from an arguments file. A script
    # given DeepSpeed's own --deepspeed_config, or a custom accelerate loop, has no such check.
    trainer_checks = "deepspeed" in args or from_file

    def given(name: str, value: object) -> Value:
        _, index = args[name]
        at, span, from_file = where(index)
        return Value(value, Provenance(Origin.FILE, path=at, span=span, key=name if from_file else f"--{name}"))

    def trainer_default(name: str) -> Value:
        return Value(DEFAULTS[name], Provenance(Origin.DEFAULT, key=f"--{name}",
                                                note=f"TrainingArguments default {name} (transformers/training_args.py)"))

    b = spec.batch
    for field, name in (("micro_batch", "per_device_train_batch_size"), ("grad_accum", "gradient_accumulation_steps")):
        value = _int(args[name][0]) if name in args else None
        trainer = given(name, value) if value is not None else trainer_default(name)
        if getattr(b, field) is None:
            setattr(b, field, trainer)
        elif trainer_checks and (name not in args or value is not None):  # the config states it: the Trainer
            setattr(b, f"trainer_{field}", trainer)  # checks it against its own (fill_match; TL137), when known
    p = spec.precision
    on = [name for name in ("fp16", "bf16") if name in args and _true(args[name][0])]
    for field, name in (("bf16_enabled", "bf16"), ("fp16_enabled", "fp16")):
        if getattr(p, field) is not None:
            continue
        if name in on or (name in args and (on or mixed_precision is None)):
            setattr(p, field, given(name, name in on))
        elif mixed_precision is not None and not on:
            setattr(p, field, Value(mixed_precision.value == name, mixed_precision.provenance))
        else:
            setattr(p, field, Value(False, Provenance(Origin.DEFAULT, key=f"--{name}",
                                                      note=f"TrainingArguments default {name}")))
    if p.dtype is None and p.bf16_enabled is not None and p.fp16_enabled is not None:
        if p.bf16_enabled.value:
            p.dtype = Value("bf16", p.bf16_enabled.provenance)
        elif p.fp16_enabled.value:
            p.dtype = Value("fp16", p.fp16_enabled.provenance)
        else:
            p.dtype = Value("fp32", Provenance(Origin.DEFAULT, note="neither --bf16 nor --fp16: fp32 (TrainingArguments)"))
    if spec.memory.recompute is None and "gradient_checkpointing" in args and _true(args["gradient_checkpointing"][0]):
        spec.memory.recompute = given("gradient_checkpointing", "full")
    if spec.model.seq_length is None:
        for name in SEQUENCE_ARGS:
            value = _int(args[name][0]) if name in args else None
            if value is not None:
                spec.model.seq_length = given(name, value)
                break
    _unmodelled(spec, args, given)
    if "model_name_or_path" in args:
        _fill_model(spec, args["model_name_or_path"][0], given, cwd or Path.cwd())


# TrainingArguments-side settings whose effect the estimator does not model (it models full fine-tuning of
# unquantised weights): TRL's ModelConfig (use_peft, load_in_4bit, load_in_8bit), LLaMA-Factory's
# finetuning_type / quantization_bit, axolotl's adapter. (name, a value that turns it on, why)
_UNMODELLED = (
    ("use_peft", None, "PEFT (LoRA) trains adapters only: the frozen base keeps no gradients or optimizer "
                       "states, which the estimator (full fine-tuning) counts"),
    ("finetuning_type", ("lora", "freeze", "oft"), "LoRA / frozen-layer fine-tuning keeps no gradients or optimizer "
                                                   "states for the frozen weights, which the estimator counts"),
    ("adapter", ("lora", "qlora"), "a LoRA / QLoRA adapter trains a few weights only; the estimator models full "
                                   "fine-tuning"),
    # LLaVA (llava/train/train.py ModelArguments / TrainingArguments) and FastChat (fastchat/train/train_lora.py
    # LoraArguments): adapters, a frozen language model, a vision tower
    ("lora_enable", None, "LoRA trains adapters only (LLaVA --lora_enable): the frozen base keeps no gradients or "
                          "optimizer states, which the estimator (full fine-tuning) counts"),
    ("lora_r", "any", "LoRA of this rank trains adapters only (FastChat train_lora.py): the frozen base keeps no "
                      "gradients or optimizer states, which the estimator (full fine-tuning) counts"),
    ("q_lora", None, "QLoRA: a 4-bit base with LoRA adapters is not modelled"),
    ("tune_mm_mlp_adapter", None, "only the multimodal projector trains (LLaVA pre-training): the frozen language model "
                                  "keeps no gradients or optimizer states, which the estimator counts"),
    ("freeze_backbone", None, "the frozen backbone keeps no gradients or optimizer states, which the estimator counts"),
    ("freeze_mm_mlp_adapter", None, "a frozen projector is not modelled"),
    ("vision_tower", "any", "the vision tower (its parameters and image activations) is not modelled"),
    ("bits", ("4", "8"), "a quantised base model is not modelled"),
    ("load_in_4bit", None, "4-bit quantised base weights are not modelled"),
    ("load_in_8bit", None, "8-bit quantised base weights are not modelled"),
    ("quantization_bit", "any", "a quantised base model is not modelled"),
)


def _unmodelled(spec: TrainingSpec, args: dict[str, tuple[str, int]], given: Callable[[str, object], Value]) -> None:
    found = []
    first: Value | None = None
    for name, on, why in _UNMODELLED:
        if name not in args:
            continue
        text = args[name][0].strip().lower()
        if (on is None and _true(text)) or (on == "any" and text not in ("", "none", "null")) or \
                (isinstance(on, tuple) and text in on):
            found.append([f"{name}: {args[name][0]}", why])
            first = first or given(name, args[name][0])
    if found and first is not None:
        known = list(spec.run.unmodelled.value) if spec.run.unmodelled is not None else []
        spec.run.unmodelled = Value(known + found, first.provenance)


# ------------------------------------------------------------------------------ the script's config file

MAX_ARGS_FILE_BYTES = 256 * 1024
_ARGS_SUFFIXES = (".yaml", ".yml", ".json")
Where = Callable[[int], "tuple[str, Span, bool]"]


def script_arguments(words: list[str], span_of: Callable[[int], Span], path: str,
                     cwd: Path) -> tuple[list[str], Where, bool]:
    """The training script's arguments with its own config file read in: TRL's ``--config FILE.yaml``
    (TrlParser.parse_args_and_config, trl/scripts/utils.py: the file's values become the parser's
    defaults, so every command-line flag wins wherever it is written) and HfArgumentParser's lone
    ``FILE.yaml``/``FILE.json`` (the example scripts' ``len(sys.argv) == 2`` test; alignment-handbook's
    H4ArgumentParser also takes ``FILE.yaml --key=value ...``, the flags winning). The file's top-level
    ``key: scalar`` entries become ``--key value`` words placed before the command line's own (the later
    word wins in :func:`trainer_words`), each located at its YAML value. Returns the words and, for a
    word's index, (path, span, whether it comes from a file); and whether a file was read. The file is read with the safe loader,
    bounded, only inside the project; when it cannot be read the words are returned as given."""

    def on_line(i: int) -> tuple[str, Span, bool]:
        return path, span_of(i), False

    written, rest = _config_word(words)
    if written is None:
        return words, on_line, False
    from trainlint.adapters.hf.accelerate import find_config

    found = find_config(written, str(cwd / "x"))
    entries = _read_arguments(found) if found else None
    if entries is None:
        return words, on_line, False
    file_words: list[str] = []
    spans: list[Span] = []
    for key, value, span in entries:
        file_words += [f"--{key}", value]
        spans += [span, span]
    n = len(file_words)
    assert found is not None

    def located(i: int) -> tuple[str, Span, bool]:
        if i < n:
            return found, spans[i], True
        return path, span_of(rest[i - n]), False

    return file_words + [words[j] for j in rest], located, True


def _config_word(words: list[str]) -> tuple[str | None, list[int]]:
    """(the config file written, the indices of the other words) or (None, [])."""
    if "--config" in words:
        at = words.index("--config")  # TRL: args.index("--config"), the next word is the file
        if at + 1 < len(words) and words[at + 1].endswith((".yaml", ".yml")):
            return words[at + 1], [j for j in range(len(words)) if j not in (at, at + 1)]
        return None, []
    if words and words[0].endswith(_ARGS_SUFFIXES) and not words[0].startswith("-") and \
            (len(words) == 1 or (words[0].endswith((".yaml", ".yml")) and
                                 all(w.startswith("--") and "=" in w for w in words[1:]))):
        return words[0], list(range(1, len(words)))
    return None, []


def _read_arguments(path: str) -> list[tuple[str, str, Span]] | None:
    """The top-level ``key: scalar`` pairs of a YAML (or JSON) mapping, as text with the value's span."""
    import yaml

    from trainlint.adapters.text.yaml_tree import compose_mapping_file, node_span

    root = compose_mapping_file(path, MAX_ARGS_FILE_BYTES)
    if root is None:
        return None
    return [(key.value, str(value.value), node_span(value)) for key, value in root.value
            if isinstance(key, yaml.ScalarNode) and isinstance(value, yaml.ScalarNode) and key.value.isidentifier()]


def _fill_model(spec: TrainingSpec, name: str, given: Callable[[str, object], Value], cwd: Path) -> None:
    """The model --model_name_or_path names: a local directory's config.json, or a model preset; only
    fields the spec lacks (as --model does)."""
    from trainlint.presets.catalog import CatalogError
    from trainlint.presets.models import fill_model, preset_or_cached, read_hf_config

    local = Path(name) if Path(name).is_absolute() else cwd / name
    note = f"--model_name_or_path {name}"
    try:
        if (local / "config.json").is_file() or (local.suffix == ".json" and local.is_file()):
            preset = read_hf_config(local)
        else:
            preset, cached = preset_or_cached(name)
            if cached is not None:
                note += f" (its config.json in the local Hugging Face cache, {cached})"
    except (CatalogError, OSError, ValueError):
        where = given("model_name_or_path", name).provenance
        spec.model.named = Value(name, Provenance(Origin.FILE, path=where.path, span=where.span,
                                                  key="--model_name_or_path", note=note))
        return
    where = given("model_name_or_path", name).provenance
    filled = fill_model(spec, Value(preset, Provenance(Origin.FILE, path=where.path, span=where.span,
                                                       key="--model_name_or_path", note=note)))
    spec.model, spec.memory = filled.model, filled.memory  # the memory part: the config's modeling code (gated activation)
