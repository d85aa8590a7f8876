"""resolve() reads the model and engine sections once per set of values (issue 17, per-file speed):
a search over layouts estimates many specs that differ only in their layout. The parts are kept by
value, so a spec whose values print or read differently gets its own reading, never a kept one."""

from __future__ import annotations

import pytest

from trainlint.estimator import build_context
from trainlint.estimator import inputs as I
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.core.spec import MEGATRON_LM, TrainingSpec

FILE = Provenance(Origin.FILE, path="run.sh", key="--x")


def spec(**model) -> TrainingSpec:
    s = TrainingSpec(framework="megatron", path="run.sh", dialect=MEGATRON_LM)
    fields = {"num_layers": 24, "hidden_size": 2048, "num_attention_heads": 16, "seq_length": 2048, "vocab_size": 50257}
    fields.update(model)
    for name, value in fields.items():
        if value is not None:
            s.set(f"model.{name}", Value(value, FILE))
    s.set("parallel.tensor", Value(2, FILE))
    s.set("batch.micro_batch", Value(4, FILE))
    s.set("cluster.world_size", Value(16, FILE))
    return s


def fresh(s: TrainingSpec):
    """resolve() with nothing kept: what it gives without the memo."""
    I._model_parts.entries.clear()
    I._engine_parts.entries.clear()
    return I.resolve(s, build_context(s, gpu="h100-sxm"))


def shown(result) -> str:
    inputs, missing, assumptions = result
    return repr((None if inputs is None else sorted(vars(inputs).items(), key=lambda kv: kv[0]), missing, assumptions))


# Each pair compares equal in Python (1 == True == 1.0, 0.0 == -0.0) but reads or prints differently.
LOOKALIKES = [
    {"num_kv_heads": 1}, {"num_kv_heads": True}, {"num_kv_heads": 1.0},
    {"hidden_dropout": 0.0}, {"hidden_dropout": -0.0}, {"hidden_dropout": 0},
    {"num_layers": 0.0}, {"num_layers": -0.0}, {"num_layers": False},
    {"max_position_embeddings": 1, "seq_length": None}, {"max_position_embeddings": True, "seq_length": None},
    {"num_experts": [8]}, {"num_experts": [8.0]},
]


def test_a_kept_part_is_never_given_for_lookalike_values():
    expected = [shown(fresh(spec(**m))) for m in LOOKALIKES]
    I._model_parts.entries.clear()
    I._engine_parts.entries.clear()
    for _ in range(2):  # the second round finds every part kept
        for model, want in zip(LOOKALIKES, expected, strict=True):
            s = spec(**model)
            assert shown(I.resolve(s, build_context(s, gpu="h100-sxm"))) == want, model


def test_specs_that_differ_in_the_layout_share_the_model_part():
    a, b = spec(), spec()
    b.set("parallel.tensor", Value(4, FILE))
    I._model_parts.entries.clear()
    ra = I.resolve(a, build_context(a, gpu="h100-sxm"))
    assert len(I._model_parts.entries) == 1
    rb = I.resolve(b, build_context(b, gpu="h100-sxm"))
    assert len(I._model_parts.entries) == 1  # found, not read again
    assert ra[0] is not None and rb[0] is not None and (ra[0].tp, rb[0].tp) == (2, 4)
    assert shown(rb) == shown(fresh(b))


@pytest.mark.parametrize("note", ["a", "b"])
def test_the_provenance_is_part_of_the_key(note):
    """The assumptions quote where a value came from: the same value from elsewhere is read again."""
    s = spec()
    s.set("model.num_kv_heads", Value(4, Provenance(Origin.DEFAULT, note=note)))
    I._model_parts.entries.clear()
    other = spec()
    other.set("model.num_kv_heads", Value(4, Provenance(Origin.DEFAULT, note="c")))
    I.resolve(other, build_context(other, gpu="h100-sxm"))
    result = I.resolve(s, build_context(s, gpu="h100-sxm"))
    assert any(a.field == "model.num_kv_heads" and note in a.source for a in result[2])
    assert shown(result) == shown(fresh(s))


def test_a_variant_keeping_the_sections_values_finds_the_part_by_identity():
    """A world-size variant or a fix candidate is a shallow copy holding the same Value objects: its
    part is found without making the key, and is the one a fresh read gives; a section where one
    Value is replaced by a lookalike (1 for True) is not found by identity."""
    import copy

    a = spec(num_kv_heads=True)
    fresh(a)
    variant = copy.copy(a)
    variant.model = copy.copy(a.model)  # the same Value objects in another section object
    calls = []
    real = I._section_key
    try:
        I._section_key = lambda section: calls.append(section) or real(section)
        kept = I._model_parts.lookup(variant.model)[1]
        assert kept is not None and calls == []  # found by identity
        assert shown(I.resolve(variant, build_context(variant, gpu="h100-sxm"))) == shown(fresh(spec(num_kv_heads=True)))
        other = copy.copy(a)
        other.model = copy.copy(a.model)
        other.model.num_kv_heads = Value(1, FILE)  # equal to True in Python, read and printed otherwise
        assert shown(I.resolve(other, build_context(other, gpu="h100-sxm"))) == shown(fresh(spec(num_kv_heads=1)))
        I._model_parts.entries.clear()  # nothing kept: the identity shortcut finds nothing either
        assert I._model_parts.lookup(variant.model)[1] is None
    finally:
        I._section_key = real
