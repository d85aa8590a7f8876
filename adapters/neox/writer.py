"""Writing layout changes back into GPT-NeoX YAML (the NeoX adapter's writer).

Block or the JSON-like flow style of NeoX's own configs, one file or a run of several: values are
replaced in the file where the key is set; a new key goes next to a related key (in the file that
has one, else the first file) with that file's ``-``/``_`` spelling; a new ``zero_optimization``
repeats NeoX's defaults (NeoX replaces the dict whole).
"""

from __future__ import annotations

from typing import Any

from trainlint.adapters.deepspeed.writer import DS_BATCH_KEYS
from trainlint.core.results import FileResult
from trainlint.core.document import pointer, pointer_parts
from trainlint.core.spec import TrainingSpec
from trainlint.files.writing import Texts, TextMapping, Writer, WritebackError, as_int, fill_batch

# GPT-NeoX's zero_optimization when the config gives none (ZERO_DEFAULTS in
# megatron/neox_arguments/arguments.py, EleutherAI/gpt-neox @ ea7aefd). A zero_optimization dict
# replaces it whole ("a dict is overwritten and not updated key by key"), so a new one repeats it.
NEOX_ZERO_DEFAULTS = {
    "stage": 0, "allgather_partitions": True, "reduce_scatter": True, "allgather_bucket_size": 500000000,
    "overlap_comm": False, "reduce_bucket_size": 500000000, "contiguous_gradients": False,
}




class NeoXWriter(Writer):
    GROUPS = (
        ("pipe_parallel_size", "model_parallel_size", "sequence_parallel"),
        ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"),
        ("checkpoint_activations", "checkpoint_num_layers", "partition_activations"),
        ("zero_optimization", "optimizer"),
    )

    def __init__(self, texts: Texts, result: FileResult, spec: TrainingSpec, changes: dict[str, Any]) -> None:
        from trainlint.adapters.text.yaml_tree import parse_yaml

        self.spec = spec
        self.changes = changes
        self.touched: set[str] = set()
        self.files: list[TextMapping] = []
        for path in result.run or [result.path]:
            buf = texts.buffer(path)
            tree = parse_yaml(buf.text, path)
            if not tree.ok or not isinstance(tree.data, dict):
                raise WritebackError(f"{path}: cannot read this file as a NeoX config (YAML syntax?)")
            self.files.append(TextMapping(buf, tree.data, tree.key_spans, tree.value_spans, "yaml"))

    def find(self, key: str) -> tuple[TextMapping, str] | None:
        """Where the run takes ``key`` from: the last file (and spelling) that sets it."""
        found = None
        for m in self.files:
            for raw in m.data:
                if isinstance(raw, str) and raw.replace("-", "_") == key:
                    found = (m, pointer([raw]))
        return found

    @staticmethod
    def spelled(m: TextMapping, key: str) -> str:
        """``key`` as this file spells its keys (NeoX accepts ``-`` and ``_``)."""
        keys = [k for k in m.data if isinstance(k, str) and ("-" in k or "_" in k)]
        hyphens = sum("-" in k for k in keys) > sum("_" in k for k in keys)
        return key.replace("_", "-") if hyphens else key

    def home(self, key: str) -> tuple[TextMapping, str | None]:
        """Where to add a key the run does not set: next to the last related key (in the file
        that has it), else at the end of the first file."""
        for group in self.GROUPS:
            if key in group:
                for m in reversed(self.files):
                    present = [p for p in m.children("") if pointer_parts(p)[0].replace("-", "_") in group]
                    if present:
                        return m, present[-1]
        return self.files[0], None

    def set(self, key: str, value: Any) -> None:
        if value is None:  # back to NeoX's default
            self.delete(key)
            return
        self.touched.add(key)
        found = self.find(key)
        if found is not None:
            m, ptr = found
            current = m.get(ptr)
            if isinstance(current, (dict, list)):
                raise WritebackError(f"{m.where(ptr)}: `{key}` is not a single value")
            m.replace(ptr, value)
            return
        m, after = self.home(key)
        m.insert("", self.spelled(m, key), value, after=after)

    def set_zero_stage(self, stage: int) -> None:
        self.touched.update({"zero_optimization", "zero_optimization.stage"})
        found = self.find("zero_optimization")
        if found is None:
            m, after = self.home("zero_optimization")
            m.insert("", self.spelled(m, "zero_optimization"), {**NEOX_ZERO_DEFAULTS, "stage": stage}, after=after)
            return
        m, ptr = found
        section = m.get(ptr)
        if not isinstance(section, dict):
            raise WritebackError(f"{m.where(ptr)}: `zero_optimization` is not a mapping")
        if m.has(ptr + "/stage"):
            if as_int(section.get("stage")) is None:
                raise WritebackError(f"{m.where(ptr + '/stage')}: `zero_optimization.stage` is "
                                     f"{section.get('stage')!r} (autotuning candidates?), not one stage; trainlint does "
                                     "not overwrite it")
            m.replace(ptr + "/stage", stage)
        else:
            first = m.children(ptr)
            m.insert(ptr, "stage", stage, after=None if not first else first[-1])

    def delete(self, key: str) -> None:
        found = self.find(key)
        if found is None:
            return
        self.touched.add(key)
        m, ptr = found
        m.delete(ptr)

    def run(self) -> None:
        c, spec = self.changes, self.spec
        if "parallel.tensor" in c:
            self.set("model_parallel_size", c["parallel.tensor"])
        if "parallel.pipeline" in c or "parallel.pipeline_engine" in c:
            pp = c.get("parallel.pipeline", spec.value("parallel.pipeline", 1))
            current = spec.settings.get("pipe_parallel_size")
            engine = c.get("parallel.pipeline_engine",
                           bool(spec.value("parallel.pipeline_engine", current is not None and as_int(current.value) != 0)))
            if pp > 1 and engine is False:
                raise WritebackError(f"GPT-NeoX engages the pipeline engine with {pp} pipeline stages; "
                                     "parallel.pipeline_engine false needs parallel.pipeline 1")
            self.set("pipe_parallel_size", pp if pp > 1 else (1 if engine else 0))
        if "parallel.sequence_parallel" in c:
            self.set("sequence_parallel", bool(c["parallel.sequence_parallel"]))
        if "parallel.zero_stage" in c:
            self.set_zero_stage(c["parallel.zero_stage"])
        written = {}
        for key, name in DS_BATCH_KEYS.items():
            found = self.find(name)
            written[key] = found[0].get(found[1]) if found else None
        dp = as_int(c.get("parallel.data")) or as_int(spec.value("parallel.data"))
        batch = fill_batch(written, c, dp)
        self.implied = {k: v for k, v in batch.items() if k not in c}
        for key, value in batch.items():
            self.set(DS_BATCH_KEYS[key], value)
        if "memory.recompute" in c:
            rec = c["memory.recompute"]
            if rec == "selective":
                raise WritebackError("GPT-NeoX has no selective recompute (checkpoint_activations recomputes whole "
                                     "layers); cannot write memory.recompute selective")
            self.set("checkpoint_activations", rec == "full")
        if "memory.recompute_num_layers" in c:
            n = c["memory.recompute_num_layers"]
            if n is None:
                self.delete("checkpoint_num_layers")
            else:
                self.set("checkpoint_num_layers", n)
        for key in ("parallel.virtual_pipeline", "parallel.context", "parallel.distributed_optimizer",
                    "memory.recompute_method"):
            if key in c:
                self.unsupported(spec, key, c[key], "GPT-NeoX")


# -- spelling a change --------------------------------------------------------------------


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def spell_changes(changes: dict[str, Any]) -> list[str]:
    """The changes as GPT-NeoX YAML keys."""
    out = []
    if "parallel.tensor" in changes:
        out.append(f"model_parallel_size: {changes['parallel.tensor']}")
    if "parallel.pipeline" in changes or "parallel.pipeline_engine" in changes:
        pp = changes.get("parallel.pipeline", 1)
        value = pp if pp > 1 else (1 if changes.get("parallel.pipeline_engine") else 0)
        out.append(f"pipe_parallel_size: {value}")
    if "parallel.sequence_parallel" in changes:
        out.append(f"sequence_parallel: {_yaml(changes['parallel.sequence_parallel'])}")
    if "parallel.zero_stage" in changes:
        out.append(f"zero_optimization: {{stage: {changes['parallel.zero_stage']}}}")
    for dotted, key in DS_BATCH_KEYS.items():
        if dotted in changes:
            out.append(f"{key}: {changes[dotted]}")
    if "memory.recompute" in changes:
        out.append(f"checkpoint_activations: {_yaml(changes['memory.recompute'] == 'full')}")
    if "memory.recompute_num_layers" in changes:
        out.append(f"checkpoint_num_layers: {changes['memory.recompute_num_layers']}")
    if "engine.dp_overlap" in changes:  # a hint only (not a layout key the writer writes)
        out.append(f"zero_optimization: {{overlap_comm: {_yaml(bool(changes['engine.dp_overlap']))}}}")
    return out
