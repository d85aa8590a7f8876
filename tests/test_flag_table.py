"""The built-in Megatron flag table makes each flag's FlagInfos on first lookup: the same table
as one made up front, read through every way the readers use it."""

from __future__ import annotations

from trainlint.adapters.megatron.flag_table import FlagInfo, flag_table
from trainlint.schemas import load_schema


def test_every_flag_of_the_schema_is_in_the_table_once_in_order():
    props = load_schema("megatron")["properties"]
    expected: list[str] = []
    for prop in props.values():
        for flag in [*prop.get("x-flags", []), *(prop.get("x-legacy-flags") or {})]:
            if flag not in expected:
                expected.append(flag)
    table = flag_table()
    assert list(table.by_flag) == expected
    assert len(table.by_flag) == len(expected)
    assert table.all_flags == sorted(expected)


def test_lookups_give_the_same_lists_and_unknown_flags_none():
    table = flag_table()
    first = table.candidates("--tensor-model-parallel-size")
    assert first and all(isinstance(i, FlagInfo) for i in first)
    assert first[0].dest == "tensor_model_parallel_size" and first[0].types == ("integer",)
    assert table.candidates("--tensor-model-parallel-size") is first  # made once
    assert table.by_flag["--tensor-model-parallel-size"] is first
    assert table.candidates("--no-such-flag") == []
    assert table.by_flag.get("--no-such-flag") is None
    assert "--no-such-flag" not in table.by_flag and "--tensor-model-parallel-size" in table.by_flag


def test_each_info_is_made_from_its_property_in_order():
    props = load_schema("megatron")["properties"]
    defining: dict[str, list[tuple[str, dict, bool]]] = {}
    for dest, prop in props.items():
        for flag in prop.get("x-flags", []):
            defining.setdefault(flag, []).append((dest, prop, False))
        for flag in prop.get("x-legacy-flags") or {}:
            defining.setdefault(flag, []).append((dest, prop, True))
    for flag, infos in flag_table().by_flag.items():
        assert len(infos) == len(defining[flag])
        for info, (dest, prop, legacy) in zip(infos, defining[flag], strict=True):
            assert info.flag == flag and info.dest == dest.split("@", 1)[0]
            if not legacy and prop.get("x-action", "store") == "store":
                assert info.action == "store" and info.default == prop.get("default")
                assert info.minimum == prop.get("minimum") and info.deprecated == prop.get("x-deprecated")
    # a negative flag of a store_true argument stores False
    negatives = [f for p in props.values() if p.get("x-action") == "store_true" for f in p.get("x-negative-flags", [])]
    assert negatives
    assert all(i.action == "store_false" for i in flag_table().candidates(negatives[0]))
