"""Golden tests: Hugging Face config.json files as models ship them (fields absent take the
architecture's own default: BloomMLP / FalconMLP are 4 x hidden; multi_query means one KV head;
tie_word_embeddings defaults to True in PretrainedConfig)."""

from __future__ import annotations

import json
from pathlib import Path

from trainlint.presets.models import read_hf_config

BLOOM_560M = {"model_type": "bloom", "hidden_size": 1024, "n_head": 16, "n_layer": 24, "vocab_size": 250880,
              "layer_norm_epsilon": 1e-5}
FALCON_7B = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "num_hidden_layers": 32,
             "multi_query": True, "vocab_size": 65024, "new_decoder_architecture": False}
FALCON_40B = {"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128, "num_hidden_layers": 60,
              "num_kv_heads": 8, "new_decoder_architecture": True, "vocab_size": 65024}


def read(tmp_path: Path, cfg: dict):
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return read_hf_config(tmp_path)


def test_bloom_has_no_intermediate_size(tmp_path: Path):
    m = read(tmp_path, BLOOM_560M)
    assert (m.num_layers, m.hidden_size, m.num_attention_heads, m.num_kv_heads) == (24, 1024, 16, 16)
    assert m.ffn_hidden_size == 4096 and m.tied_embeddings is True


def test_falcon_multi_query_and_grouped_kv(tmp_path: Path):
    m = read(tmp_path, FALCON_7B)
    assert m.num_kv_heads == 1 and m.ffn_hidden_size == 4 * 4544
    m = read(tmp_path, FALCON_40B)
    assert m.num_kv_heads == 8
