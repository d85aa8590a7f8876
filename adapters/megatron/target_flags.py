"""The flag table of one framework target: what its own source defines, typed as it defines it.

trainlint's built-in table (schemas/megatron.schema.json) describes upstream Megatron-LM at one
commit plus what Megatron-DeepSpeed and older copies accept. A target read from source (a fork's
checkout, a pinned release) replaces that: its flags are exactly the ones its parser defines
(plus what DeepSpeed's ``add_config_arguments`` adds when the parser is handed to it, and the
flags entry points add with their own argument providers), typed and with the choices its own
``add_argument`` calls give. What the built-in table knows beyond that (a ``minimum``, an
start-up refusal) is kept for flags both define with the same destination, a refusal only when
the target's own checks refuse the flag too.
"""

from __future__ import annotations

from typing import Any

from trainlint.adapters.megatron.flag_table import FlagInfo, FlagTable, _norm, flag_table

# What ``deepspeed.add_config_arguments(parser)`` adds (deepspeed/__init__.py, _add_core_arguments).
DEEPSPEED_CORE_FLAGS = ("--deepspeed", "--deepspeed_config", "--deepscale", "--deepscale_config", "--deepspeed_mpi")
_TYPES = {"int": ("integer",), "float": ("number",), "str": ("string",), "bool": ("boolean",)}

_tables: dict[int, tuple[Any, FlagTable]] = {}


def table_for(catalog: Any) -> FlagTable:
    """The FlagTable of an :class:`~trainlint.frameworks.catalog.ArgCatalog` (memoised per catalog)."""
    hit = _tables.get(id(catalog))
    if hit is not None and hit[0] is catalog:
        return hit[1]
    table = _build(catalog)
    _tables[id(catalog)] = (catalog, table)
    return table


def _build(catalog: Any) -> FlagTable:
    base = flag_table()
    by_flag: dict[str, list[FlagInfo]] = {}
    for name, arg in catalog.args.items():
        known = [c for c in base.candidates(name) if c.dest == arg.dest and c.entry_points is None]
        like = known[0] if known else None
        deprecated = _refusal(catalog, arg.dest, like.deprecated if like is not None else None)
        by_flag.setdefault(name, []).append(_info(name, arg, like, deprecated))
    extra = [f for f in DEEPSPEED_CORE_FLAGS if catalog.uses_deepspeed_args]
    for flag, infos in base.by_flag.items():
        if flag in by_flag:
            continue
        keep = [i for i in infos if i.entry_points is not None or flag in extra]
        if keep:
            by_flag[flag] = keep
    by_norm: dict[str, list[str]] = {}
    for flag in by_flag:
        by_norm.setdefault(_norm(flag), []).append(flag)
    return FlagTable(by_flag, by_norm, sorted(by_flag))


def _info(name: str, arg: Any, like: FlagInfo | None, deprecated: dict | None,
          entry_points: tuple[str, ...] | None = None) -> FlagInfo:
    """The FlagInfo of one :class:`~trainlint.frameworks.argdef.ArgDef`, typed as its source
    types it (``like``: the built-in table's flag of the same destination, for what the source
    does not say)."""
    action = arg.action if arg.action != "boolean_optional" else "store_true"
    types: tuple[str, ...] = _TYPES.get(arg.type or "", ()) if action in ("store", "append") else ("boolean",)
    if action in ("store", "append") and not types:
        types = like.types if like is not None and like.types else ("string",)
    enum = tuple(c for c in arg.choices if c is not None) if arg.choices else None
    return FlagInfo(name, arg.dest, action, types, arg.nargs, enum, arg.default, None, None, entry_points, deprecated,
                    (), like.minimum if like is not None else None)


_with_entry: dict[tuple[int, int], tuple[Any, Any, FlagTable]] = {}


def with_entry(table: FlagTable, scan: Any, entry: str) -> FlagTable:
    """``table`` plus the flags an entry point's own file adds (its ``extra_args_provider``),
    read by :mod:`trainlint.frameworks.entry_args`; memoised per (table, scan)."""
    key = (id(table), id(scan))
    hit = _with_entry.get(key)
    if hit is not None and hit[0] is table and hit[1] is scan:
        return hit[2]
    by_flag = {flag: list(infos) for flag, infos in table.by_flag.items()}
    for name, arg in scan.args.items():
        # first: the entry point's own definition is the one argparse uses for its script
        by_flag.setdefault(name, []).insert(0, _info(name, arg, None, None, (entry,)))
    by_norm: dict[str, list[str]] = {}
    for flag in by_flag:
        by_norm.setdefault(_norm(flag), []).append(flag)
    out = FlagTable(by_flag, by_norm, sorted(by_flag))
    if len(_with_entry) > 64:
        _with_entry.clear()
    _with_entry[key] = (table, scan, out)
    return out


def _refusal(catalog: Any, dest: str, upstream: dict | None) -> dict | None:
    """What the target says of a flag it defines. Not "removed" (it is defined). A start-up
    refusal ("exits"/"error": upstream keeps a stub that stops) only when the target's own
    source refuses it, with the source's message; a catalog that does not record refusals
    (written before the reader did) keeps upstream's."""
    refused = getattr(catalog, "refused", None)
    if refused is None:
        return None if upstream is not None and upstream.get("status") == "removed" else upstream or None
    if dest in refused:
        replacement = (upstream or {}).get("replacement")
        if replacement and replacement.split()[0] not in catalog.args:
            replacement = None  # a rename the target itself does not define
        out = {"status": "error", "message": refused[dest] or f"{catalog.label} refuses it at start-up", "source": True}
        if replacement:
            out["replacement"] = replacement
        return out
    if upstream is not None and upstream.get("status") == "deprecated":
        return upstream  # a warning; kept
    return None
