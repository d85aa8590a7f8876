"""A recipe's model when it comes from Hugging Face (``AutoBridge.from_hf_pretrained("meta-llama/...")``):
the shape is the Hugging Face config's, which is not in Bridge's source. trainlint fills it from its model
preset of that id, stated as such in every value's provenance; no preset: the shape stays unknown."""

from __future__ import annotations

from trainlint.adapters.bridge.container import Container, Entry


def preset_entries(hf_model: str, container: Container, why: str) -> str | None:
    """Add the preset's shape to ``container`` under ``model.*`` where nothing set the field; returns the
    preset id used (None: no preset for ``hf_model``)."""
    from trainlint.presets.models import CatalogError, find_model_preset

    try:
        p = find_model_preset(hf_model)
    except CatalogError:
        return None
    note = f"{why}: the shape of {hf_model} (trainlint model preset {p.id})"
    fields = {
        "num_layers": p.num_layers, "hidden_size": p.hidden_size, "num_attention_heads": p.num_attention_heads,
        "num_query_groups": p.num_kv_heads if p.mla is None else None, "ffn_hidden_size": p.ffn_hidden_size, "vocab_size": p.vocab_size,
        "gated_linear_unit": p.gated_mlp, "share_embeddings_and_output_weights": p.tied_embeddings,
        "max_position_embeddings": p.max_position_embeddings, "kv_channels": p.head_dim,
        "num_moe_experts": p.num_experts, "moe_router_topk": p.moe_top_k, "moe_ffn_hidden_size": p.moe_ffn_hidden_size,
        "multi_latent_attention": True if p.mla is not None else None,
    }
    for name, value in fields.items():
        path = f"model.{name}"
        if value is not None and container.get(path) is None:
            container.set(Entry(path, value, None, origin="recipe", note=note))
    return p.id
