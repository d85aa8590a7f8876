"""Writing a chosen layout back into the config it came from (``trainlint suggest --write-to``).

:func:`rewrite` takes the file as the checker read it, the spec of the run and a dict of
changes keyed by spec field (see /work/notes/layout-interface.md) and returns the new text of
every file that has to change. Everything that is not part of the layout stays byte for byte:
values are replaced in place, at the span the adapter recorded; missing settings are added next
to related ones, in the file's own style; nothing is re-serialised.

Each format's writer belongs to its adapter (the write-back half of the adapter protocol,
:meth:`trainlint.adapters.base.Adapter.writer`): :mod:`trainlint.adapters.deepspeed.writer`,
:mod:`trainlint.adapters.neox.writer`, :mod:`trainlint.adapters.megatron.writer`, or a plugin
adapter's own. They plan text edits with the kit in :mod:`trainlint.files.writing`; this module picks the
run's adapter, drives its writer and checks the round trip.

A change that cannot be written faithfully (a value from ``$1``, computed by ``$((...))``, taken
from the environment, a template placeholder, ...) raises :class:`WritebackError` naming the value
and where it is written. After rewriting, the new text is read again through the same adapter
and must give the requested values with every other setting unchanged; otherwise
:class:`WritebackError` too (nothing is returned that does not round-trip).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from trainlint.core.results import FileResult
from trainlint.core.provenance import Origin, Value
from trainlint.files.sources import SourceText
from trainlint.core.spec import TrainingSpec
from trainlint.layout.changes import CHANGE_KEYS, adapter_for
from trainlint.files.writing import Texts, WritebackError, same_file, where

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.adapters.base import Adapter

__all__ = ["CHANGE_KEYS", "FileRewrite", "WritebackError", "adapter_for", "rewrite", "rewrite_files"]


_ALIASES = {"parallel.virtual_stages": "parallel.virtual_pipeline"}
_INFORMATIONAL = {"parallel.data"}
"""Keys no framework writes (DP is derived from the world size): used for consistency only."""


# =============================================================================== entry point


@dataclass(frozen=True)
class FileRewrite:
    path: str
    text: str
    """The new text, normalised as the readers give it (``\n`` line ends, no BOM):
    :func:`trainlint.files.safe_write.write_back` puts the file's encoding and line ends back."""
    original_hash: str
    """``safe_write.text_hash`` of the text the change was made from: the write refuses when the
    file no longer has it."""


def rewrite(result: FileResult, spec: TrainingSpec, changes: Mapping[str, Any], *,
            environment: Mapping[str, str] | None = None, verify: bool = True,
            adapters: Sequence[Adapter] | None = None) -> dict[str, str]:
    """The new (normalised) text of every file that must change to apply ``changes`` to ``spec``'s run."""
    return {f.path: f.text for f in rewrite_files(result, spec, changes, environment=environment, verify=verify,
                                                  adapters=adapters)}


def rewrite_files(result: FileResult, spec: TrainingSpec, changes: Mapping[str, Any], *,
                  environment: Mapping[str, str] | None = None, verify: bool = True,
                  adapters: Sequence[Adapter] | None = None) -> list[FileRewrite]:
    """Every file that must change to apply ``changes`` to ``spec``'s run: its new text and the
    hash of the text it was made from (write them with ``trainlint.files.safe_write.write_back``).

    ``environment``: the shell variables the file was checked with (``--env`` / the project
    config), so that a launch script is read again the same way. ``verify``: re-read the new
    text through the adapter and check the round trip (on by default; cheap). ``adapters``: the
    session's adapters (plugin adapters included); default: the formats trainlint ships."""
    if result.format is None or not result.specs:
        raise WritebackError(f"{result.path}: no training run was read from this file; nothing to write back")
    wanted = _normalise(changes)
    env = dict(environment or {})
    index = _spec_index(result, spec)
    adapter = adapter_for(result.format, adapters)
    texts = Texts(result, env)
    writer = adapter.writer(texts, result, spec, wanted, index) if adapter is not None else None
    if adapter is None or writer is None:
        raise WritebackError(f"{result.path}: trainlint cannot write a layout back into a {result.format} file")
    writer.run()
    new_texts = texts.changed()
    if verify and new_texts:
        checked = {k: v for k, v in {**writer.implied, **wanted}.items()
                   if k not in writer.noop and k not in writer.unverified}
        _verify(adapter, result, index, checked, texts, new_texts, writer.touched, env, writer.reading)
    from trainlint.files.safe_write import text_hash

    return [FileRewrite(path, text, text_hash(texts.original(path))) for path, text in new_texts.items()]


def _normalise(changes: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in changes.items():
        key = _ALIASES.get(key, key)
        if key not in CHANGE_KEYS:
            raise WritebackError(f"unknown change key {key!r}; expected one of {', '.join(sorted(CHANGE_KEYS))}")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        out[key] = value
    rec = out.get("memory.recompute")
    if rec is not None and rec not in ("none", "selective", "full"):
        raise WritebackError(f"memory.recompute must be none, selective or full, not {rec!r}")
    return out


def _spec_index(result: FileResult, spec: TrainingSpec) -> int:
    for i, candidate in enumerate(result.specs):
        if candidate is spec:
            return i
    for i, candidate in enumerate(result.specs):
        if candidate.label == spec.label and candidate.path == spec.path:
            return i
    raise WritebackError(f"{result.path}: the run to rewrite ({spec.label or spec.path}) is not one of this file's runs")




# ============================================================================ round trip


def _verify(adapter: Adapter, result: FileResult, index: int, changes: dict[str, Any], texts: Texts,
            new_texts: dict[str, str], touched: set[str], environment: dict[str, str], reading: Any = None) -> None:
    """Read the old and the new text through the same adapter; the changed fields must have the
    asked values and everything else must be as before. ``reading``: the adapter's reading of the old
    text the writer made (``Writer.reading``), used as it is instead of reading the old text again."""
    before = _reading(adapter, result, reading) if reading is not None else _reload(adapter, result, texts, {}, environment)
    after = _reload(adapter, result, texts, new_texts, environment)
    if after.internal_error or len(after.specs) != len(before.specs):
        raise WritebackError(f"{result.path}: the rewritten file does not read back as the same runs "
                             f"({len(before.specs)} before, {len(after.specs)} after)")
    for code in ("TL002", "TL003", "TL004", "TL005", "TL011"):
        n_before = sum(d.code == code for d in before.diagnostics)
        found = [d for d in after.diagnostics if d.code == code]
        if len(found) > n_before:
            raise WritebackError(f"the rewritten file has a new problem ({code} at {where(found[-1].path, found[-1].span)}: "
                                 f"{found[-1].message})")
    old, new = before.specs[index], after.specs[index]
    for key, want in changes.items():
        if key in _INFORMATIONAL:
            continue
        if not _matches(key, want, new.get(key), new):
            got = new.get(key)
            raise WritebackError(f"after rewriting, {key} reads {None if got is None else got.value!r} instead of "
                                 f"{want!r}")
    _same_spec(old, new, set(changes), touched, f"the run {old.label or old.path}")
    for i, (o, n) in enumerate(zip(before.specs, after.specs, strict=True)):  # same length: checked above
        if i != index:
            _same_spec(o, n, set(), set(), f"the other run {o.label or o.path} of this file")


def _reading(adapter: Adapter, result: FileResult, loaded: Any) -> FileResult:
    """The FileResult :func:`trainlint.files.checker.check_source` makes of the adapter's ``loaded`` reading."""
    from dataclasses import replace

    return FileResult(result.path, adapter.name, [d if d.path else replace(d, path=result.path) for d in loaded.diagnostics],
                      loaded.specs, loaded.documents, [], frameworks=result.frameworks)


def _reload(adapter: Adapter, result: FileResult, texts: Texts, overrides: dict[str, str],
            environment: dict[str, str]) -> FileResult:
    from trainlint.adapters.base import LoadContext
    from trainlint.files.checker import check_source

    main = next((t for p, t in overrides.items() if same_file(p, result.path)), None)
    if main is None:
        main = texts.original(result.path)
    extra = list(result.run[1:]) if result.run else []
    context = LoadContext(extra_paths=extra, read=texts.reader(overrides), environment=dict(environment),
                          frameworks=result.frameworks)
    return check_source(SourceText(result.path, main), [adapter], context, force_format=result.format)


def _matches(key: str, want: Any, got: Value | None, spec: TrainingSpec) -> bool:
    value = None if got is None else got.value
    if want is None:
        return got is None or got.provenance.origin in (Origin.DEFAULT, Origin.DERIVED) or value in (None, "none")
    if key == "parallel.virtual_pipeline" and want == 1:
        return value in (None, 1)
    if key in ("memory.recompute_method", "memory.recompute_num_layers") and value is None \
            and spec.value("memory.recompute") != "full":
        return True  # only read with full recompute (NeoX, older Megatron copies)
    return value == want


# Fields that follow others by each framework's own rules (not compared when an input changed).
# The "as written" mirrors of a setting (virtual_stages, the JSON's micro batch) follow the
# setting the writer changed.
_VIRTUAL = ("parallel.virtual_stages", "parallel.virtual_stage_layers")
_FOLLOWERS = {
    "memory.recompute": ("memory.recompute_method", "memory.recompute_num_layers"),
    "parallel.pipeline": ("parallel.pipeline_engine", "parallel.virtual_pipeline", *_VIRTUAL),
    "parallel.virtual_pipeline": _VIRTUAL,
    "parallel.pipeline_engine": ("parallel.pipeline",),
    "parallel.tensor": ("parallel.expert_tensor",),
    "batch.micro_batch": ("engine.deepspeed_micro_batch",),
    "batch.grad_accum": ("engine.deepspeed_micro_batch",),
    "batch.global_batch": ("engine.deepspeed_micro_batch",),
}


def _same_spec(old: TrainingSpec, new: TrainingSpec, changed: set[str], touched: set[str], what: str) -> None:
    skip = set(changed)
    for key in changed:
        skip.update(_FOLLOWERS.get(key, ()))
    if old.framework != new.framework or old.dialect != new.dialect or old.entry_point != new.entry_point:
        raise WritebackError(f"after rewriting, {what} is read differently (framework, dialect or entry point changed)")
    fields = {k for k, _ in old.items()} | {k for k, _ in new.items()}
    for key in sorted(fields):
        if key in skip:
            continue
        a, b = old.get(key), new.get(key)
        if any(v is not None and v.provenance.origin is Origin.DERIVED for v in (a, b)):
            continue  # follows the changed values (DP, accumulation, derived defaults)
        if (a is None) != (b is None) or (a is not None and b is not None and not _equal(a.value, b.value)):
            raise WritebackError(f"after rewriting, {key} of {what} changed from "
                                 f"{None if a is None else a.value!r} to {None if b is None else b.value!r}")
    old_settings = _flat_settings(old.settings)
    new_settings = _flat_settings(new.settings)
    for key in sorted(set(old_settings) | set(new_settings)):
        if _is_touched(key, touched):
            continue
        if key not in old_settings or key not in new_settings or not _equal(old_settings[key], new_settings[key]):
            raise WritebackError(f"after rewriting, the setting {key} of {what} changed from "
                                 f"{old_settings.get(key, '(absent)')!r} to {new_settings.get(key, '(absent)')!r}")
    for key in sorted(set(old.unresolved) ^ set(new.unresolved)):
        if not _is_touched(key, touched):
            raise WritebackError(f"after rewriting, the setting {key} of {what} is "
                                 f"{'no longer' if key in old.unresolved else 'now'} unresolved")


def _flat_settings(settings: dict[str, Value]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, entry in settings.items():
        stack = [(key, entry.value)]
        while stack:
            name, value = stack.pop()
            if isinstance(value, dict) and value:
                stack.extend((f"{name}.{k}", v) for k, v in value.items())
            else:
                out[name] = value
    return out


def _is_touched(key: str, touched: set[str]) -> bool:
    for t in touched:
        if key == t or key.startswith(t + ".") or t.startswith(key + "."):
            return True
        # NeoX spells keys with - or _ (settings are keyed by the _ spelling)
        if key.replace("-", "_") == t or key.replace("-", "_").startswith(t + "."):
            return True
    return False


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN
    return a == b
