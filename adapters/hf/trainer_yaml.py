"""A Hugging Face Trainer run written as a training YAML that names its DeepSpeed JSON
(LLaMA-Factory's ``deepspeed: ds_z3.json`` with ``per_device_train_batch_size``,
``gradient_accumulation_steps``, ``cutoff_len``, ``model_name_or_path``; axolotl's ``deepspeed:``,
``micro_batch_size``, ``sequence_len``, ``base_model``).

Both tools hand these keys to the Trainer's TrainingArguments (LLaMA-Factory parses the YAML into
them; axolotl maps ``micro_batch_size`` to ``per_device_train_batch_size``), so the run is read as
:mod:`trainlint.adapters.hf.trainer_args` reads ``deepspeed train.py --deepspeed ds.json ...``: the JSON, with its
``"auto"`` values filled from the YAML, each value located at its YAML key. The JSON is read only
inside the project (relative names: the YAML's folder, the current directory, the project root).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainlint.adapters.base import BY_CONTENT, NOT_MINE, Adapter, LoadContext, LoadResult, looks_like_shell
from trainlint.core.positions import Span
from trainlint.files.sources import SourceText

if TYPE_CHECKING:  # pragma: no cover
    import yaml

FORMAT = "hf-trainer"
# axolotl's names -> the TrainingArguments / training-script argument trainlint's HF reading takes
_ALIASES = {"micro_batch_size": "per_device_train_batch_size", "sequence_len": "max_seq_length",
            "base_model": "model_name_or_path"}
_TRAINER_KEYS = {"per_device_train_batch_size", "gradient_accumulation_steps", "cutoff_len", "model_name_or_path",
                 "micro_batch_size", "sequence_len", "base_model", "bf16", "fp16", "gradient_checkpointing",
                 "max_seq_length", "model_max_length"}
_SNIFF_BYTES = 64 * 1024
_DEEPSPEED_WORD = r"(?<![A-Za-z0-9_.-])deepspeed(?![A-Za-z0-9_.-])"
"""``deepspeed`` as a whole scalar could be written: a character of a scalar's own (a letter, digit, ``_``, ``-``,
``.``) neither before nor after it (compiled on first use, by ``re``'s cache: not at start-up)."""


def _may_claim(text: str) -> bool:
    """False when the YAML cannot have a top-level ``deepspeed: *.json`` beside a trainer key, from the text
    alone (the GPT-NeoX configs name ``deepspeed_mpi`` and a ``vocab.json``; reading their events to find
    that out cost ~0.4 ms each). Without a backslash (an escape in a double-quoted scalar), every scalar
    without a blank in it is written whole in the text, aliases included (the anchor's scalar is): so
    the key ``deepspeed`` is a word of the text, the value's ``.json`` and the trainer key are in it."""
    if "\\" in text:
        return True  # an escape can spell any of them: read the events
    return (".json" in text and any(key in text for key in _TRAINER_KEYS)
            and re.search(_DEEPSPEED_WORD, text) is not None)


def _top_level(text: str) -> list[tuple[str, yaml.ScalarNode]] | None:
    """The top-level ``key: scalar`` pairs with their nodes; None when not a YAML mapping (or not
    YAML, or more than one document): what ``yaml.compose`` gives for the root mapping, read from
    the event stream instead (every file with "deepspeed" in it is sniffed: composing the whole
    tree in pure Python cost more than reading it), without recursion."""
    import yaml  # here, not at the top: a check with no YAML that names a DeepSpeed JSON never needs it (~10 ms)

    # libyaml when present: the same events and marks as PyYAML's own parser (see yaml_tree), ~10x faster
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return _root_pairs(yaml.parse(text, Loader=loader))
    except yaml.YAMLError:
        return None


def _root_pairs(events) -> list[tuple[str, yaml.ScalarNode]] | None:
    """The root mapping's scalar-to-scalar pairs from ``events``, as ``yaml.compose`` composes
    them: an alias is the node its anchor names (a scalar, or a collection), an undefined alias
    or an anchor defined twice is an error (None), as is a second document."""
    import yaml  # imported by _top_level already: a lookup in sys.modules

    anchors: dict[str, yaml.ScalarNode | None] = {}  # None: the anchor names a collection
    pairs: list[tuple[str, yaml.ScalarNode]] = []
    depth, documents, root_mapping = 0, 0, False
    key: yaml.ScalarNode | None = None
    expecting_key = True

    def item(node: yaml.ScalarNode | None) -> None:
        """One item of the root collection completed (a key or a value of the root mapping)."""
        nonlocal key, expecting_key
        if expecting_key:
            key = node
        elif key is not None and node is not None:
            pairs.append((key.value, node))
        expecting_key = not expecting_key

    for event in events:
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                return None
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                return None
            if depth == 1:
                item(anchors[event.anchor])
        elif isinstance(event, (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            anchor = event.anchor
            if anchor is not None and anchor in anchors:
                return None
            if isinstance(event, yaml.ScalarEvent):
                start: Any = event.start_mark  # libyaml's Mark: the same line and column as PyYAML's
                end: Any = event.end_mark
                node = yaml.ScalarNode(event.tag or "", event.value, start, end, style=event.style)  # the tag is not read
                if anchor is not None:
                    anchors[anchor] = node
                if depth == 1:
                    item(node)
            else:
                if anchor is not None:
                    anchors[anchor] = None
                if depth == 0:
                    root_mapping = isinstance(event, yaml.MappingStartEvent)
                depth += 1
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
            if depth == 1:
                item(None)
    return pairs if root_mapping else None


class HFTrainerYamlAdapter(Adapter):
    name = FORMAT
    extensions = (".yaml", ".yml")

    def sniff(self, path: str, text: str) -> int:
        try:
            if "deepspeed" not in text[:_SNIFF_BYTES] or not path.endswith(self.extensions) or looks_like_shell(text):
                return NOT_MINE
            if not _may_claim(text):
                return NOT_MINE
            pairs = _top_level(text)
            if not pairs:
                return NOT_MINE
            keys = {k: v.value for k, v in pairs}
            if not str(keys.get("deepspeed", "")).endswith(".json") or not _TRAINER_KEYS & keys.keys():
                return NOT_MINE
            return BY_CONTENT
        except Exception:  # noqa: BLE001 - sniff must never raise on garbage
            return NOT_MINE

    def load(self, source: SourceText, context: LoadContext) -> LoadResult:
        from trainlint.adapters.deepspeed.adapter import load_deepspeed_config
        from trainlint.adapters.engine import set_engine
        from trainlint.adapters.hf.trainer_args import FILLED_POINTERS, fill_from_trainer
        from trainlint.core.input_codes import FILE_START, input_diagnostic
        from trainlint.files.sources import UnreadableSource

        result = LoadResult(FORMAT)
        pairs = _top_level(source.text) or []
        nodes = dict(pairs)
        written = nodes["deepspeed"].value if "deepspeed" in nodes else ""
        json_path = _find_json(written, source.path)
        where = _span(nodes["deepspeed"]) if "deepspeed" in nodes else None
        if json_path is None:
            result.diagnostics.append(input_diagnostic(
                "TL013", f"DeepSpeed config `{written}` not found in the project (relative to this file, the "
                "current directory or the project root); the run is not estimated", where or FILE_START,
                path=source.path))
            return result
        try:
            loaded = load_deepspeed_config(context.read(json_path), context.frameworks)
        except UnreadableSource as exc:
            result.diagnostics.append(exc.diagnostic)
            return result
        words: list[str] = []
        spans: list[Span] = []
        for key, node in pairs:
            name = _ALIASES.get(key, key)
            value = str(node.value)
            if name == "bf16" and value == "auto":
                value = "True"  # axolotl: bf16 where the GPU supports it (Ampere and later)
            words += [f"--{name}", value]
            spans += [_span(node), _span(node)]
        for spec in loaded.specs:
            fill_from_trainer(spec, words, lambda i: spans[i], source.path, cwd=Path(source.path).parent)
            set_engine(spec)  # the engine follows the precision the Trainer filled
            spec.path = source.path
            spec.label = f"{Path(source.path).name} with {written}"
            if source.path not in spec.sources:
                spec.sources.insert(0, source.path)
            result.specs.append(spec)
        # the JSON's own problems are reported when the JSON itself is checked; here only its path
        result.diagnostics += [d for d in loaded.diagnostics
                               if not (d.code == "TL007" and d.subject in FILLED_POINTERS) and d.path]
        result.documents += loaded.documents
        return result


def _span(node: yaml.Node) -> Span:
    from trainlint.adapters.text.yaml_tree import node_span

    return node_span(node)


def _find_json(written: str, yaml_path: str) -> str | None:
    from trainlint.files.containment import contained, roots_for

    if not written:
        return None
    roots = roots_for(yaml_path)
    if os.path.isabs(written):
        candidates = [written]
    else:
        candidates = [os.path.join(os.path.dirname(os.path.abspath(yaml_path)), written),
                      os.path.join(os.getcwd(), written)] + [os.path.join(root, written) for root in roots]
    for candidate in candidates:
        if os.path.isfile(candidate) and contained(candidate, roots):
            return candidate
    return None
