"""The vocabulary size Megatron builds its embedding with, from the tokenizer options.

Megatron's ``build_tokenizer`` (megatron/training/tokenizer/tokenizer.py) makes the tokenizer the
options name and sets ``args.padded_vocab_size = _vocab_size_with_padding(tokenizer.vocab_size, args)``:
the tokenizer's size rounded up to a multiple of ``--make-vocab-size-divisible-by`` (default 128)
x ``--tensor-model-parallel-size``. Megatron-DeepSpeed's ``--pad-vocab-size-to`` replaces the
rounding with that exact size. What each tokenizer's size is, is in :mod:`trainlint.adapters.hf.tokenizer_vocab`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainlint.core.provenance import Value, derived
from trainlint.adapters.hf.tokenizer_vocab import GPT2_BPE, Vocab, from_preset, known_file, local_file

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.adapters.megatron.spec_build import SpecBuilder

_BERT = ("BertWordPieceLowerCase", "BertWordPieceCase")
_BY_MODEL = ("HuggingFaceTokenizer", "PretrainedFromHF", "SentencePieceTokenizer", "GPTSentencePieceTokenizer",
             "Llama2Tokenizer", "Llama3Tokenizer", "MistralTokenizer", "HFTokenizer")


def tokenizer_size(b: SpecBuilder) -> tuple[Vocab, list[Value]] | None:
    """The tokenizer's own size and the settings it came from, or None when the options do not say."""
    kind = b.raw("tokenizer_type")
    kind = kind if isinstance(kind, str) else None
    stated = b.get("vocab_size")
    stated_n = stated.value if stated is not None and type(stated.value) is int and stated.value > 0 else None
    vocab_file, model = b.raw("vocab_file"), b.raw("tokenizer_model")
    sources = [v for v in (b.get("tokenizer_type"), stated, b.get("vocab_file"), b.get("tokenizer_model")) if v is not None]
    if kind == "NullTokenizer" and stated_n:
        # _NullTokenizer.vocab_size = vocab_size + 1 (the EOD token); --vocab-size is "before EOD or padding"
        return Vocab(stated_n + 1, f"NullTokenizer: --vocab-size {stated_n} + 1 EOD token"), sources
    if stated_n:
        return Vocab(stated_n, f"--vocab-size {stated_n}"), sources
    if kind == "GPT2BPETokenizer" or (kind is None and b.raw("merge_file") is not None and vocab_file is not None):
        found = _file(vocab_file, b) if isinstance(vocab_file, str) else None
        return (found or Vocab(GPT2_BPE, "GPT2BPETokenizer: the GPT-2 BPE vocabulary (50,257 tokens)")), sources
    if kind in _BERT and isinstance(vocab_file, str):
        found = _file(vocab_file, b)
        if found is not None:
            # _BertWordPieceTokenizer adds [BOS] and [EOS], and --vocab-extra-ids <extra_id_N> tokens
            extra = b.raw("vocab_extra_ids")
            extra = extra if type(extra) is int and extra > 0 else 0
            return Vocab(found.size + 2 + extra, f"{found.note} + [BOS], [EOS]"
                         + (f" + {extra} extra ids" if extra else "") + f" ({kind})"), sources
        return None
    if kind in _BY_MODEL or kind is None:
        for ref in (model, vocab_file):
            if isinstance(ref, str) and ref:
                found = _file(ref, b) or from_preset(ref)
                if found is not None:
                    return found, sources
    return None


def _file(reference: str, b: SpecBuilder) -> Vocab | None:
    return known_file(reference) or local_file(reference, b.ctx.path)


def vocab_fields(b: SpecBuilder) -> tuple[Value | None, Value | None]:
    """(model.vocab_size, model.vocab_pad_multiple): the tokenizer's own size (None when the options do
    not identify the tokenizer: the estimator then states an assumed vocabulary) and the multiple
    Megatron pads it to before multiplying by TP (the estimator pads, so a layout with another TP is
    padded as Megatron would pad it). ``--pad-vocab-size-to`` gives the padded size itself."""
    found = tokenizer_size(b)
    pad_to = b.get("pad_vocab_size_to")
    if pad_to is not None and type(pad_to.value) is int and pad_to.value > 0 \
            and (found is None or pad_to.value >= found[0].size):
        return derived(pad_to.value, f"--pad-vocab-size-to {pad_to.value}"
                       + (f" ({found[0].note})" if found else ""), pad_to), None
    divisible = b.get_or_default("make_vocab_size_divisible_by", 128)
    if divisible is not None and not (type(divisible.value) is int and divisible.value > 0):
        divisible = None
    if found is None:
        return None, divisible
    vocab, sources = found
    return derived(vocab.size, vocab.note, *sources), divisible
