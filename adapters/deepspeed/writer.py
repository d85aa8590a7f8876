"""Writing layout changes back into a DeepSpeed JSON (the DeepSpeed adapter's writer).

The value token is replaced; a missing key is added to the right object (created when absent)
with the file's indentation and quoting; the batch triple ``train_batch_size = micro x
accumulation x DP`` stays consistent when the file writes all three (DeepSpeed asserts it);
``"auto"`` stays ``"auto"`` unless the change is to that key.
"""

from __future__ import annotations

from typing import Any

from trainlint.core.results import FileResult
from trainlint.core.document import Document, pointer
from trainlint.core.spec import TrainingSpec
from trainlint.files.writing import (
    Texts,
    TextMapping,
    Writer,
    WritebackError,
    as_int,
    dotted,
    fill_batch,
    main_document,
)



class DeepSpeedJson:
    """One DeepSpeed JSON (the config itself, or the --deepspeed_config of a Megatron run)."""

    def __init__(self, texts: Texts, doc: Document, virtual: bool = False) -> None:
        buf = texts.buffer(doc.path)
        self.doc = doc
        self.map = TextMapping(buf, doc.data, doc.key_spans, doc.value_spans, "json",
                            source=doc.text if virtual else None, label=doc.path)
        self.touched: set[str] = set()

    def written(self, key: str) -> Any:
        """A top-level value as written (None when absent, "auto"/placeholders as strings)."""
        ptr = pointer([key])
        return self.doc.get(ptr) if self.map.has(ptr) else None

    def set(self, parts: list[str], value: Any) -> None:
        ptr = pointer(parts)
        if value is None:
            raise WritebackError(f"removing `{'.'.join(parts)}` from a DeepSpeed config is not supported")
        self.touched.add(".".join(parts))
        if self.map.has(ptr):
            current = self.doc.get(ptr)
            if isinstance(current, (dict, list)):
                raise WritebackError(f"{self.map.where(ptr)}: `{'.'.join(parts)}` is not a single value")
            reason = self.doc.unresolved.get(ptr)
            if reason is not None and current != "auto":
                raise WritebackError(f"{self.map.where(ptr)}: `{'.'.join(parts)}` is {reason}, filled in by a script "
                                     "before launch; trainlint does not overwrite the template")
            self.map.replace(ptr, value)
            return
        # the deepest object that exists
        depth = len(parts) - 1
        while depth > 0 and not self.map.has(pointer(parts[:depth])):
            depth -= 1
        parent = pointer(parts[:depth])
        node = self.doc.get(parent)
        nested: Any = value
        for part in reversed(parts[depth + 1:]):
            nested = {part: nested}
        if isinstance(node, dict):
            self.map.insert(parent, parts[depth], nested, after=self._after(parent, parts[depth]))
        elif isinstance(node, bool) and parts[:1] == ["zero_optimization"] and depth == 1:
            # the deprecated `"zero_optimization": true` form: an object says the stage
            self.touched.add("zero_optimization")
            self.map.replace(parent, {parts[depth]: nested})
        else:
            raise WritebackError(f"{self.map.where(parent)}: `{dotted(parent)}` is not an object; cannot add "
                                 f"`{'.'.join(parts)}`")

    def _after(self, parent: str, key: str) -> str | None:
        if parent:
            return None
        order = ["train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"]
        if key in order:
            present = [pointer([k]) for k in order if self.map.has(pointer([k]))]
            return present[-1] if present else None
        return None


DS_BATCH_KEYS = {"batch.micro_batch": "train_micro_batch_size_per_gpu",
                  "batch.grad_accum": "gradient_accumulation_steps", "batch.global_batch": "train_batch_size"}


class DeepSpeedWriter(Writer):
    def __init__(self, texts: Texts, result: FileResult, spec: TrainingSpec, changes: dict[str, Any]) -> None:
        doc = main_document(result)
        if doc is None:
            raise WritebackError(f"{result.path}: the DeepSpeed config was not read (syntax error?)")
        self.json = DeepSpeedJson(texts, doc)
        self.spec = spec
        self.changes = changes
        self.touched = self.json.touched

    def run(self) -> None:
        c, spec = self.changes, self.spec
        for key, parts in (("parallel.zero_stage", ["zero_optimization", "stage"]),
                           ("parallel.tensor", ["tensor_parallel", "autotp_size"]),
                           ("parallel.pipeline", ["pipeline", "stages"])):
            if key in c:
                if c[key] is None:
                    raise WritebackError(f"{key}: removing it from a DeepSpeed config is not supported")
                self.json.set(parts, c[key])
        written = {k: self.json.written(name) for k, name in DS_BATCH_KEYS.items()}
        dp = as_int(c.get("parallel.data"))
        batch = fill_batch(written, c, dp)
        self.implied = {k: v for k, v in batch.items() if k not in c}
        for key, value in batch.items():
            self.json.set([DS_BATCH_KEYS[key]], value)
        for key in ("parallel.virtual_pipeline", "parallel.context", "parallel.sequence_parallel",
                    "parallel.distributed_optimizer", "parallel.pipeline_engine", "memory.recompute",
                    "memory.recompute_method", "memory.recompute_num_layers"):
            if key in c:
                self.unsupported(spec, key, c[key], "a DeepSpeed config")


# -- spelling a change --------------------------------------------------------------------


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


def spell_changes(changes: dict[str, Any]) -> list[str]:
    """The changes as DeepSpeed JSON members."""
    out = []
    if "parallel.tensor" in changes:
        out.append(f"\"tensor_parallel\": {{\"autotp_size\": {changes['parallel.tensor']}}}")
    if "parallel.pipeline" in changes:
        out.append(f"\"pipeline\": {{\"stages\": {changes['parallel.pipeline']}}}")
    if "parallel.zero_stage" in changes:
        out.append(f"\"zero_optimization\": {{\"stage\": {changes['parallel.zero_stage']}}}")
    for change, key in DS_BATCH_KEYS.items():
        if change in changes:
            out.append(f"\"{key}\": {_json(changes[change])}")
    if "engine.dp_overlap" in changes:  # a hint only (not a layout key the writer writes)
        out.append(f"\"zero_optimization\": {{\"overlap_comm\": {_json(bool(changes['engine.dp_overlap']))}}}")
    return out
