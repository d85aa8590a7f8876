"""Golden tests: --model fills only what the config lacks and never contradicts its attention shape.

Megatron (megatron/training/arguments.py): --num-query-groups defaults to 1 and is used only with
--group-query-attention; --multi-latent-attention up-projects keys and values per attention head;
--kv-channels is the head dimension. A preset's KV heads / head dimension belong to its own heads."""

from __future__ import annotations

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron import MegatronAdapter
from trainlint.estimator import build_context, fill_model
from trainlint.core.provenance import Origin
from trainlint.files.sources import SourceText

BASE = "torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1 --seq-length 2048 "


def filled(flags: str, model: str = "llama3-8b"):
    text = f"#!/bin/bash\n{BASE}{flags}\n"
    (spec,) = MegatronAdapter().load(SourceText("/x/train.sh", text), LoadContext()).specs
    return fill_model(spec, build_context(spec, model=model).model).model


def test_missing_fields_come_from_the_preset():
    m = filled("--num-attention-heads 32")  # only the heads: the rest is the preset's
    assert m.num_layers.value == 32 and m.hidden_size.value == 4096
    assert m.num_layers.provenance.origin is Origin.CLI
    assert m.num_attention_heads.provenance.origin is Origin.FILE


def test_mha_config_keeps_its_kv_heads():
    m = filled("--num-layers 24 --hidden-size 4096 --num-attention-heads 32")
    assert m.num_kv_heads.value == 32  # llama3-8b's 8 KV heads are not taken


def test_gqa_groups_win_over_the_preset():
    m = filled("--num-layers 24 --hidden-size 4096 --num-attention-heads 32 --group-query-attention "
               "--num-query-groups 4", model="llama2-7b")
    assert m.num_kv_heads.value == 4 and m.num_kv_heads.provenance.origin is Origin.FILE


def test_gqa_without_groups_is_megatrons_default_one():
    m = filled("--num-layers 24 --hidden-size 4096 --num-attention-heads 32 --group-query-attention",
               model="llama2-7b")
    assert m.num_kv_heads.value == 1 and m.num_kv_heads.provenance.origin is Origin.DEFAULT


def test_mla_is_not_given_the_presets_kv_heads():
    m = filled("--num-layers 24 --hidden-size 4096 --num-attention-heads 32 --multi-latent-attention")
    assert m.num_kv_heads.value == 32 and m.num_kv_heads.provenance.origin is Origin.DERIVED


def test_kv_channels_stated_wins():
    m = filled("--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --kv-channels 256")
    assert m.kv_channels.value == 256


def test_other_heads_do_not_take_the_presets_kv_shape():
    from trainlint.core.spec import TrainingSpec

    spec = TrainingSpec(framework="deepspeed", path="/x/ds.json")
    from trainlint.core.provenance import Provenance, Value

    spec.model.num_attention_heads = Value(16, Provenance(Origin.FILE, path="/x/ds.json"))
    m = fill_model(spec, build_context(spec, model="llama3-8b").model).model
    assert m.num_kv_heads is None and m.kv_channels is None and m.num_layers.value == 32
