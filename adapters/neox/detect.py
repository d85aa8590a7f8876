"""The GPT-NeoX adapter's class and its sniffing, kept apart from the reader (:mod:`.neox`).

Every file ``trainlint check`` meets is sniffed by every adapter, but only the files this adapter
claims need the reader (its checks, the spec builder, PyYAML): that lives in :mod:`.neox` and is
imported the first time a file is loaded, as the Megatron-LM adapter does (:mod:`.megatron.detect`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from trainlint.adapters.base import BY_CONTENT, NOT_MINE, Adapter, LoadContext, LoadResult, looks_like_shell
from trainlint.adapters.neox.parsing import parse_sniffed, schema
from trainlint.files.sources import SourceText
from trainlint.core.spec import TrainingSpec

if TYPE_CHECKING:  # pragma: no cover - yaml_tree (and PyYAML) is imported when a YAML is read
    pass

STRONG = 90
"""Several keys only NeoX uses: sure enough to win over the DeepSpeed adapter on a NeoX .json
(autotuning configs carry zero_optimization and batch keys too)."""

# Keys of DeepSpeed's own config JSON (deepspeed/runtime/constants.py): a file made only of these
# is a DeepSpeed config, not a NeoX one, even though NeoX accepts them too.
_DEEPSPEED_CLASSES = {"NeoXArgsDeepspeedConfig"}
# NeoX keys that other formats use at the top level as well (HF config.json, generic YAML):
# they never decide on their own that a file is NeoX's.
_GENERIC = {
    "save", "load", "seed", "log_dir", "comment", "account", "include", "exclude", "world_size", "rank",
    "local_rank", "hidden_size", "num_attention_heads", "max_position_embeddings", "seq_length",
    "intermediate_size", "vocab_size", "activation", "lr", "weight_decay", "precision", "use_wandb",
    "wandb_project", "wandb_group", "wandb_team", "wandb_host", "iteration", "do_train", "do_valid", "do_test",
    "user_script", "train_iters", "attention_dropout", "hidden_dropout", "num_workers", "tokenizer_type",
    "is_pipe_parallel", "temperature", "top_k", "top_p", "num_samples", "recompute", "eval_interval", "eval_iters",
    "log_interval", "keep_last_n_checkpoints", "train_epochs", "batch_size", "clip_grad", "checkpoint",
    "adam_beta1", "adam_beta2", "adam_eps", "master_port", "master_addr", "num_nodes", "num_gpus",
}
# Files that are certainly something else, recognised by their top-level keys.
_FOREIGN_KEYS = [
    ({"MODEL_ARGS"}, "a Megatron-LM functional-test YAML (MODEL_ARGS of --flags)"),
    ({"ENV_VARS"}, "a Megatron-LM functional-test YAML"),
    ({"compute_environment"}, "an accelerate config"),
    ({"distributed_type"}, "an accelerate config"),
    ({"jobs", "on"}, "a GitHub workflow"),
    ({"services"}, "a docker-compose file"),
    ({"apiVersion", "kind"}, "a Kubernetes manifest"),
    ({"architectures"}, "a Hugging Face model config"),
    ({"model_type"}, "a Hugging Face model config"),
    ({"language_model"}, "a Megatron-LM YAML config"),
]
_STRONG_ENOUGH = 3
"""NeoX-only keys that make a file NeoX's however many other keys it has (50 keys of the user's own
before them must not hide a config that NeoX would read)."""


def strong_keys_of(schema: dict) -> frozenset[str]:
    """The keys of the NeoX schema only NeoX uses: not the DeepSpeed config's own, not the generic ones."""
    props = schema["properties"]
    return frozenset(k for k, p in props.items() if p.get("x-neox-class") not in _DEEPSPEED_CLASSES
                     and k not in _GENERIC)


def _strong_keys() -> frozenset[str]:
    # strong_keys_of(the schema), written out (scripts/build_neox_keys.py; a test keeps them equal):
    # every file a check meets is sniffed, and loading the 77 KB schema for it cost ~0.7 ms a start
    from trainlint.adapters.neox.keys import STRONG_KEYS

    return STRONG_KEYS


# Any word written as a key: `"num-layers":`, `num_layers :`. The strong keys are all [a-z0-9_] words
# (scripts/build_neox_keys.py writes no other; a test checks), so a match whose word, with "-" read
# as "_", is a strong key is a NeoX-only key in either spelling, without compiling an alternation of
# ~230 words (~4 ms) on every start.
_KEY_WORD = re.compile(r"""(?:^|[\s{,"'])([A-Za-z0-9_-]+)["']?\s*:""", re.MULTILINE)


def _has_strong_key(head: str) -> bool:
    """Whether ``head`` writes a NeoX-only key as a key: ``bool(_precheck_matches(head))``, from the
    distinct words matched (``findall`` of the word alone, at C speed) rather than a Python step per
    match (a config writes hundreds of keys; this was most of the NeoX sniff's time over the corpus)."""
    strong = _strong_keys()
    if head.count(":") * 100 < len(head):
        words = {word for _, _, word in _keys_before_colons(head)}
    else:
        words = set(_KEY_WORD.findall(head))
    return any(word.replace("-", "_") in strong for word in words)


def _precheck_matches(head: str) -> list[str]:
    """Every NeoX-only key of ``head`` written as a key, as matched (with what precedes and follows)."""
    strong = _strong_keys()
    if head.count(":") * 100 < len(head):
        # few colons (a launch script, prose): look back from each one, not try the pattern at
        # every character (~0.2 ms of every script's check); the same matches (test_adapter_neox)
        return [head[start:end] for start, end, word in _keys_before_colons(head)
                if word.replace("-", "_") in strong]
    return [m.group() for m in _KEY_WORD.finditer(head) if m.group(1).replace("-", "_") in strong]


_WORD_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _keys_before_colons(head: str) -> list[tuple[int, int, str]]:
    """``_KEY_WORD.finditer(head)`` as (start, end, group 1), found from the colons backwards: a
    match ends at a colon, after blanks, an optional quote and a word that starts the text or
    follows a blank, ``{``, ``,`` or a quote (which the match then starts with). Matches cannot
    overlap: none of those characters is a colon."""
    out: list[tuple[int, int, str]] = []
    colon = head.find(":")
    while colon != -1:
        i = colon
        while i > 0 and head[i - 1].isspace():  # str.isspace is what \s matches in a str pattern
            i -= 1
        if i > 0 and head[i - 1] in "\"'":
            i -= 1
        end = i
        while i > 0 and head[i - 1] in _WORD_CHARACTERS:
            i -= 1
        if i < end:
            if i == 0:
                out.append((0, colon + 1, head[:end]))
            elif head[i - 1].isspace() or head[i - 1] in "{,\"'":
                out.append((i - 1, colon + 1, head[i:end]))
        colon = head.find(":", colon + 1)
    return out


_NOT_JSON = object()


def _strict_json(text: str) -> Any:
    """``text`` read as strict JSON (``json.loads``), or ``_NOT_JSON``. A JSON file is read as JSON:
    the C reader takes ~1/50 of PyYAML's time, and a check of JSON files never imports PyYAML."""
    import json

    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _by_keys(keys: list[str]) -> int:
    """The sniff score of a config whose top-level keys are ``keys``."""
    top = set(keys)
    for marker, _why in _FOREIGN_KEYS:
        if marker <= top:
            return NOT_MINE
    if any(k.startswith("--") for k in keys):
        return NOT_MINE
    normalised = [k.replace("-", "_") for k in keys]
    strong_keys = _strong_keys()
    strong = sum(1 for k in normalised if k in strong_keys)
    if strong == 0:
        return NOT_MINE  # before the schema is loaded (~0.7 ms)
    props = schema()["properties"]
    known = sum(1 for k in normalised if k in props)
    if strong < _STRONG_ENOUGH and known < 0.5 * len(normalised):
        return NOT_MINE
    if known < 0.5 * len(normalised):
        return BY_CONTENT  # mostly keys of the user's own, and several only NeoX reads: still NeoX's
    return STRONG if strong >= 2 else BY_CONTENT


class NeoXAdapter(Adapter):
    name = "neox"
    extensions = (".yml", ".yaml", ".json")

    # -- sniff ------------------------------------------------------------------------------
    def sniff(self, path: str, text: str) -> int:
        try:
            return self._sniff(text, path)
        except Exception:  # noqa: BLE001 - sniff must never raise on garbage
            return NOT_MINE

    def _sniff(self, text: str, path: str | None = None) -> int:
        if looks_like_shell(text):
            return NOT_MINE
        # the whole text, not a head: a config after 700 KB of comments is still a config (the
        # pre-check is linear, and the read limit bounds the text)
        if not _has_strong_key(text):
            return NOT_MINE
        data = _strict_json(text)
        if data is _NOT_JSON:
            tree = parse_sniffed(text, path)
            if not tree.ok:
                # A NeoX config with a syntax error is still NeoX's: decide on the text alone.
                found = {m.strip(" \t\n{,\"':").replace("-", "_") for m in _precheck_matches(text)}
                return BY_CONTENT if len(found) >= 2 else NOT_MINE
            data = tree.data
        # (strict JSON is judged by its top-level keys as PyYAML would read them: a DeepSpeed JSON
        # whose fp16 section holds keys NeoX also has at its top level is passed by without YAML)
        if not isinstance(data, dict) or not data:
            return NOT_MINE
        return _by_keys([k for k in data if isinstance(k, str)])

    # -- the way back ------------------------------------------------------------------------
    def spell_changes(self, spec: TrainingSpec, changes: dict[str, Any], base: Any) -> list[str]:
        from trainlint.adapters.neox.writer import spell_changes

        return spell_changes(changes)

    def expressible(self, spec: TrainingSpec) -> frozenset[str]:
        # and, for fix hints, the global batch (train_batch_size / the accumulation) and
        # overlap_comm; no selective recompute in NeoX
        return frozenset({"tp", "pp", "micro", "recompute", "zero", "global-batch", "overlap"})

    def writer(self, texts, result, spec, changes, index):
        from trainlint.adapters.neox.writer import NeoXWriter

        return NeoXWriter(texts, result, spec, changes)

    # -- load: the reader is imported on first use -------------------------------------------
    def load(self, source: SourceText, context: LoadContext) -> LoadResult:
        from trainlint.adapters.neox.reader import NeoXReader

        return NeoXReader().load(source, context)
