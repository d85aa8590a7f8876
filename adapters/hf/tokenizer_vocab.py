"""The vocabulary a tokenizer gives, and the padding each framework applies to it.

Only what can be known without running anything: a tokenizer the framework names by type with a
fixed vocabulary (GPT-2's BPE), a model preset whose name the tokenizer option gives, a size the
config states, or a tokenizer / vocabulary file inside the checked repository, read for its size
only (bounded, parsed as JSON or counted as lines, never executed).

Facts (each a documented framework behaviour):

- Megatron-LM ``_GPT2BPETokenizer.vocab_size`` is ``len(self.tokenizer.encoder)``: the GPT-2
  encoder of ``gpt2-vocab.json`` has 50,257 entries (GPT-2 paper, section 2.2: "a vocabulary size of
  50,257"); GPT-NeoX's GPT2BPETokenizer is the same class.
- Megatron-LM ``--vocab-size``: "Size of vocab before EOD or padding" (megatron/training/arguments.py,
  _add_tokenizer_args); ``_NullTokenizer.vocab_size`` is that plus one EOD token.
- ``_BertWordPieceTokenizer`` adds [BOS] and [EOS] to the WordPiece vocabulary (30,522 tokens uncased,
  28,996 cased: bert-large-*-vocab.txt).
- GPT-NeoX-20B's ``20B_tokenizer.json`` has 50,277 tokens (padded to 50,432 in the released model).
- Padding: Megatron's ``_vocab_size_with_padding`` rounds up to a multiple of
  ``make_vocab_size_divisible_by x tensor_model_parallel_size`` (megatron/training/tokenizer/tokenizer.py);
  GPT-NeoX the same with ``model_parallel_size`` (megatron/tokenizer/tokenizer.py).
"""

from __future__ import annotations

import json
from functools import lru_cache
from dataclasses import dataclass
import os
from pathlib import Path
from typing import Any

GPT2_BPE = 50257
NEOX_20B = 50277
BERT_UNCASED = 30522
BERT_CASED = 28996

MAX_TOKENIZER_FILE = 64 * 1024 * 1024
"""Tokenizer files larger than this are not read (the largest real ones are ~10-20 MB)."""

ASSUMED_VOCAB = 32000
"""The vocabulary taken when nothing identifies the tokenizer (Llama 2 / Mistral size: the low end of
today's range, so the assumed total is the lower of the two bounds reported beside it)."""
VOCAB_RANGE = (32000, 256000)
"""The range over which the total's sensitivity to an assumed vocabulary is reported."""

# File names whose vocabulary is fixed by what they are (the standard files of these tokenizers).
_KNOWN_FILES = {
    "gpt2-vocab.json": (GPT2_BPE, "gpt2-vocab.json: the GPT-2 BPE vocabulary (50,257 tokens)"),
    "20b_tokenizer.json": (NEOX_20B, "20B_tokenizer.json: the GPT-NeoX-20B tokenizer (50,277 tokens)"),
    "bert-large-uncased-vocab.txt": (BERT_UNCASED, "bert-large-uncased-vocab.txt (30,522 WordPiece tokens)"),
    "bert-base-uncased-vocab.txt": (BERT_UNCASED, "bert-base-uncased-vocab.txt (30,522 WordPiece tokens)"),
    "bert-large-cased-vocab.txt": (BERT_CASED, "bert-large-cased-vocab.txt (28,996 WordPiece tokens)"),
    "bert-base-cased-vocab.txt": (BERT_CASED, "bert-base-cased-vocab.txt (28,996 WordPiece tokens)"),
}

# Suffixes of Hugging Face repository names that do not change the tokenizer's size.
@dataclass(frozen=True)
class Vocab:
    """A tokenizer's vocabulary size and how it is known."""

    size: int
    """Tokens the tokenizer gives, before the framework pads the embedding."""
    note: str
    """How the size is known, for the provenance note."""


def padded(size: int, multiple: int) -> int:
    """``size`` rounded up to a multiple of ``multiple`` (Megatron / NeoX _vocab_size_with_padding)."""
    if multiple <= 1:
        return size
    return -(-size // multiple) * multiple


def known_file(name: str) -> Vocab | None:
    """A vocabulary file known by its name (gpt2-vocab.json, 20B_tokenizer.json, BERT vocab.txt)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    hit = _KNOWN_FILES.get(base)
    return Vocab(*hit) if hit else None


def from_preset(name: str) -> Vocab | None:
    """The embedding rows of the model preset a Hugging Face tokenizer name matches, if any
    (``meta-llama/Meta-Llama-3-8B``; ``-Instruct``/``-hf``/``-chat`` variants share the tokenizer, as
    :func:`trainlint.presets.models.find_model_preset` resolves them), else of its config.json in the local cache."""
    written = name.strip().strip("/")
    if not written:
        return None
    preset = _shipped_preset(written)
    if preset is not None and preset.vocab_size:
        return Vocab(int(preset.vocab_size), f"the vocabulary of model preset {preset.id} (tokenizer {name})")
    return _from_hub_cache(written)


@lru_cache(maxsize=256)
def _shipped_preset(written: str) -> Any:
    """The shipped model preset ``written`` names, or None. Remembered: the presets ship with trainlint,
    and a name that matches none costs a "did you mean" over every preset (~1 ms), asked again by every
    script of a repository that names the same tokenizer."""
    from trainlint.presets.catalog import CatalogError
    from trainlint.presets.models import find_model_preset

    try:
        return find_model_preset(written)
    except (CatalogError, KeyError, ValueError):
        return None


def _from_hub_cache(name: str) -> Vocab | None:
    """The embedding rows the model's config.json in the local Hugging Face cache gives (no download)."""
    import json

    from trainlint.presets.hf_cache import cached_file, is_repo_id

    if "/" not in name or not is_repo_id(name):
        return None
    path = cached_file(name)
    if path is None:
        return None
    try:
        from trainlint.files.sources import read_bounded

        size = json.loads(read_bounded(path, MAX_TOKENIZER_FILE).decode("utf-8")).get("vocab_size")
    except (OSError, ValueError, AttributeError):
        return None
    if type(size) is not int or not 0 < size < 10**8:
        return None
    return Vocab(size, f"vocab_size of {name}'s config.json in the local Hugging Face cache ({path})")


def local_file(reference: str, config_path: str) -> Vocab | None:
    """The size of a tokenizer file named by a config, when that file is inside the config's own
    repository: tokenizer.json (model vocabulary + added tokens), vocab.json, vocab.txt (one token a
    line), a model directory with one of those or a config.json (``vocab_size``). Read for the size
    only, at most MAX_TOKENIZER_FILE bytes; anything else is None."""
    if not reference or "$" in reference or "\n" in reference:
        return None
    from trainlint.frameworks.locate import git_root, real_path

    try:
        # resolved and walked through locate's remembered folders: every spec naming a tokenizer asks
        base = Path(os.path.dirname(real_path(config_path)))
        root = git_root(base) or base
        target = Path(real_path(str(base / reference)))
        target.relative_to(root)
    except (OSError, ValueError, RuntimeError):
        return None
    try:
        if target.is_dir():
            for name in ("tokenizer.json", "vocab.json", "config.json"):
                found = _read_size(target / name)
                if found is not None:
                    return found
            return None
        return _read_size(target)
    except OSError:
        return None


def _read_size(path: Path) -> Vocab | None:
    from trainlint.files.sources import read_bounded

    name = path.name.lower()
    if not name.endswith((".txt", ".json")):
        return None
    try:
        raw = read_bounded(path, MAX_TOKENIZER_FILE)
    except (OSError, ValueError):
        return None
    if name.endswith(".txt"):
        count = sum(1 for line in raw.decode("utf-8", errors="replace").splitlines() if line.strip())
        return Vocab(count, f"{path.name}: {count:,} tokens, one a line") if count else None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    size = _json_size(data)
    return Vocab(size, f"{path.name}: {size:,} tokens") if size else None


def _json_size(data: object) -> int | None:
    if not isinstance(data, dict):
        return None
    model = data.get("model")
    if isinstance(model, dict) and "vocab" in model:  # a tokenizers-library tokenizer.json
        ids: set[int] = set()
        vocab = model["vocab"]
        if isinstance(vocab, dict):
            ids.update(v for v in vocab.values() if isinstance(v, int) and not isinstance(v, bool))
        elif isinstance(vocab, list):
            ids.update(range(len(vocab)))  # Unigram: a list of [piece, score]
        for token in data.get("added_tokens") or []:
            if isinstance(token, dict) and isinstance(token.get("id"), int):
                ids.add(token["id"])
        return max(ids) + 1 if ids else None
    size = data.get("vocab_size")
    if isinstance(size, int) and not isinstance(size, bool) and size > 0 and "model_type" in data:
        return size  # a model's config.json
    if data and all(isinstance(v, int) and not isinstance(v, bool) for v in data.values()):
        return max(data.values()) + 1  # a BPE vocab.json: token -> id
    return None
