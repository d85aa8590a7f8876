"""Writing layout changes back into Megatron-LM launch scripts and MODEL_ARGS YAML (the Megatron
adapter's writer).

A literal argument is replaced where it is written; a value that comes from a variable is replaced
at the variable's assignment when that assignment is a plain literal used only by this flag, else
the flag's argument (``$TP``) is replaced by the literal. Missing flags go next to related flags (a
new array element line, a ``\\``-continued line, or inline), or take the place of a flag of the
same kind that goes away; flags a change switches off are removed (with the line when nothing else
is on it, and the ``\\`` of the line that then ends the command). Recompute is written with the
modern flags (``--recompute-granularity/--recompute-method/--recompute-num-layers``) in current
Megatron-LM, ``--checkpoint-activations`` in Megatron-DeepSpeed and older copies. ``MODEL_ARGS``
YAML files are edited as YAML. A ``--deepspeed_config`` JSON that repeats the batch sizes follows.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Iterable

from trainlint.adapters.deepspeed.writer import DS_BATCH_KEYS, DeepSpeedJson
from trainlint.core.results import FileResult
from trainlint.core.document import pointer, pointer_parts
from trainlint.core.provenance import Origin
from trainlint.files.sources import SourceText
from trainlint.core.spec import MEGATRON_LM, TrainingSpec
from trainlint.files.writing import (
    BATCH_KEYS,
    BufferEdit,
    Texts,
    TextMapping,
    Writer,
    WritebackError,
    as_int,
    fill_batch,
    same_file,
    virtual_documents,
    where,
)


_PARALLEL_FLAGS = ("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
                   "--sequence-parallel", "--use-distributed-optimizer", "--num-layers-per-virtual-pipeline-stage",
                   "--num-virtual-stages-per-pipeline-rank", "--expert-model-parallel-size", "--model-parallel-size")
_BATCH_FLAGS = ("--micro-batch-size", "--global-batch-size", "--batch-size", "--rampup-batch-size")
_RECOMPUTE_FLAGS = ("--recompute-granularity", "--recompute-method", "--recompute-num-layers",
                    "--recompute-activations", "--checkpoint-activations", "--checkpoint-num-layers",
                    "--distribute-saved-activations")
_FALLBACK_FLAGS = ("--seq-length", "--train-iters", "--train-samples", "--num-layers", "--hidden-size")


def _groups_for(flag: str) -> list[tuple[str, ...]]:
    """Flags to put a new flag next to, best first: its own kind, then the other layout flags."""
    groups = [_PARALLEL_FLAGS, _BATCH_FLAGS, _RECOMPUTE_FLAGS]
    own = next((g for g in groups if flag in g), None)
    if own is None:
        return [_FALLBACK_FLAGS, *groups]
    return [own, *[g for g in groups if g is not own], _FALLBACK_FLAGS]


def _rank(flag: str, groups: list[tuple[str, ...]]) -> int:
    return next((i for i, g in enumerate(groups) if flag in g), len(groups))


@dataclass
class _Op:
    kind: str        # "set" | "bool" | "drop"
    dests: tuple[str, ...]
    """Destinations that may already be written for this setting (the first one given is edited)."""
    flag: str        # flag to add when none is given
    value: Any = None


class MegatronWriter(Writer):
    unverified = frozenset({"batch.grad_accum"})  # derived by Megatron from the global batch, micro batch and DP

    def __init__(self, texts: Texts, result: FileResult, spec: TrainingSpec, changes: dict[str, Any],
                 index: int) -> None:
        from trainlint.adapters.base import LoadContext
        from trainlint.adapters.megatron.adapter import load_runs

        self.texts = texts
        self.result = result
        self.spec = spec
        self.changes = changes
        self.touched: set[str] = set()
        main = texts.original(result.path)
        context = LoadContext(read=texts.reader({}), environment=texts.environment, frameworks=result.frameworks)
        loaded, runs = load_runs(SourceText(result.path, main), context)
        if not result.run[1:]:  # read as the round trip reads the original (no other file of a declared run)
            self.reading = loaded
        if index >= len(runs):
            raise WritebackError(f"{result.path}: the run {spec.label} was not found again when re-reading the script")
        self.run_ = runs[index]
        if self.run_.shell is not None:
            for path, ft in self.run_.shell.files.items():
                texts.add_known(path, ft.text)
        self.given = set(self.run_.parsed.settings)
        self.dialect = self.run_.spec.dialect
        # MODEL_ARGS YAML files are read without a shell evaluation
        self.backend: _ScriptArgs | _YamlArgs = (_YamlArgs(texts, result.path, self.run_)
                                                 if self.run_.shell is None else _ScriptArgs(texts, self.run_))
        self.ds_json = self._deepspeed_json()

    def _deepspeed_json(self) -> DeepSpeedJson | None:
        setting = self.run_.parsed.settings.get("deepspeed_config") or self.run_.parsed.settings.get("deepscale_config")
        if setting is None:
            return None
        virtual = virtual_documents(self.result)
        script_docs = {d.path for d in self.result.documents if d.format == "megatron"}
        candidates = [d for d in self.result.documents if d.format == "deepspeed"]
        written = setting.value_fields[0].text if setting.value_fields else None
        for doc in candidates:
            if written and not (doc.path.endswith(os.path.basename(written)) or id(doc) in virtual):
                continue
            return DeepSpeedJson(self.texts, doc, virtual=id(doc) in virtual or doc.path in script_docs)
        return None

    # -- planning ----------------------------------------------------------------------------
    def run(self) -> None:
        c, spec = self.changes, self.spec
        current = self.dialect == MEGATRON_LM or not self.dialect
        legacy = self.dialect == "legacy"
        ops: list[_Op] = []
        if "parallel.tensor" in c:
            dests = ("tensor_model_parallel_size", "model_parallel_size") if not current else ("tensor_model_parallel_size",)
            ops.append(_Op("set", dests, "--model-parallel-size" if legacy else "--tensor-model-parallel-size",
                           c["parallel.tensor"]))
        if "parallel.pipeline" in c:
            ops.append(_Op("set", ("pipeline_model_parallel_size", "pipe_parallel_size"), "--pipeline-model-parallel-size",
                           c["parallel.pipeline"]))
        if "parallel.virtual_pipeline" in c:
            ops.extend(self._virtual_ops(c["parallel.virtual_pipeline"]))
        if "parallel.context" in c:
            ops.append(_Op("set", ("context_parallel_size",), "--context-parallel-size", c["parallel.context"]))
        if "parallel.sequence_parallel" in c:
            ops.append(_Op("bool", ("sequence_parallel",), "--sequence-parallel", bool(c["parallel.sequence_parallel"])))
        if "parallel.distributed_optimizer" in c:
            ops.append(_Op("bool", ("use_distributed_optimizer",), "--use-distributed-optimizer",
                           bool(c["parallel.distributed_optimizer"])))
        if "batch.micro_batch" in c:
            ops.append(_Op("set", ("micro_batch_size", "batch_size"), "--micro-batch-size", c["batch.micro_batch"]))
        if "batch.global_batch" in c:
            ops.extend(self._global_batch_ops(c["batch.global_batch"]))
        if "batch.grad_accum" in c and "gas" in self.given:
            ops.append(_Op("set", ("gas",), "--gas", c["batch.grad_accum"]))
        if "memory.recompute" in c:
            ops.extend(self._recompute_ops(c["memory.recompute"], current))
        if "memory.recompute_method" in c:
            ops.extend(self._method_ops(c["memory.recompute_method"]))
        if "memory.recompute_num_layers" in c:
            ops.extend(self._num_layers_ops(c["memory.recompute_num_layers"]))
        if "parallel.zero_stage" in c:
            self._zero_stage(c["parallel.zero_stage"], ops)
        if "parallel.pipeline_engine" in c:
            self.unsupported(spec, "parallel.pipeline_engine", c["parallel.pipeline_engine"], "a Megatron-LM script")
        self.backend.apply(ops)
        for op in ops:
            self.touched.update(op.dests)
            self.touched.update(self.backend.dest_of(op.flag))
        self._mirror_deepspeed_batch()
        if self.ds_json is not None:
            # the merged DeepSpeed view of the batch and DP follows the flags
            self.touched.update({"deepspeed:batch.micro_batch", "deepspeed:batch.grad_accum",
                                 "deepspeed:batch.global_batch", "deepspeed:parallel.data"})

    def _virtual_ops(self, vp: int | None) -> list[_Op]:
        vp = 1 if vp is None else vp
        k_dest, v_dest = "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank"
        if vp <= 1:
            return [_Op("drop", (k_dest,), ""), _Op("drop", (v_dest,), "")]
        if k_dest in self.given or (self.dialect not in (MEGATRON_LM, "") and v_dest not in self.given):
            layers = as_int(self.spec.value("model.num_layers"))
            pp = as_int(self.changes.get("parallel.pipeline", self.spec.value("parallel.pipeline")))
            if not layers or not pp or layers % (pp * vp):
                raise WritebackError(f"cannot write {vp} virtual stages as --num-layers-per-virtual-pipeline-stage: "
                                     f"{layers} layers do not split into {pp} x {vp} equal chunks")
            return [_Op("set", (k_dest,), "--num-layers-per-virtual-pipeline-stage", layers // (pp * vp)),
                    _Op("drop", (v_dest,), "")]
        return [_Op("set", (v_dest,), "--num-virtual-stages-per-pipeline-rank", vp)]

    def _global_batch_ops(self, value: int) -> list[_Op]:
        if "global_batch_size" not in self.given and self.ds_json is not None:
            entry = self.spec.batch.global_batch
            if entry is not None and entry.provenance.origin is Origin.FILE and \
                    entry.provenance.key == "train_batch_size":
                return []  # the DeepSpeed JSON gives it: written there by the mirror
        return [_Op("set", ("global_batch_size",), "--global-batch-size", value)]

    def _recompute_ops(self, rec: str, current: bool) -> list[_Op]:
        gran, act, ckpt = "recompute_granularity", "recompute_activations", "checkpoint_activations"
        if rec == "none":
            return [_Op("drop", (gran,), ""), _Op("drop", (act,), ""), _Op("drop", (ckpt,), "")]
        if current or gran in self.given:
            return [_Op("set", (gran,), "--recompute-granularity", rec), _Op("drop", (act,), ""),
                    _Op("drop", (ckpt,), "")]
        # Megatron-DeepSpeed and older copies: full recompute is --checkpoint-activations there
        if rec == "full":
            return [_Op("bool", (ckpt,), "--checkpoint-activations", True), _Op("drop", (act,), "")]
        if self.dialect == "legacy":
            raise WritebackError("this script targets an old Megatron-LM copy without selective recompute "
                                 "(--recompute-granularity); cannot write memory.recompute selective")
        return [_Op("set", (gran,), "--recompute-granularity", rec), _Op("drop", (act,), ""), _Op("drop", (ckpt,), "")]

    def _checkpoint_style(self) -> bool:
        """Whether full recompute is (or will be) written as --checkpoint-activations."""
        if self.dialect == MEGATRON_LM or not self.dialect:
            return False  # current Megatron-LM reads only the --recompute-* flags
        rec = self.changes.get("memory.recompute")
        if rec is not None:
            return "recompute_granularity" not in self.given and rec == "full"
        return "checkpoint_activations" in self.given and "recompute_granularity" not in self.given

    def _method_ops(self, method: str | None) -> list[_Op]:
        if method is None:
            return [_Op("drop", ("recompute_method",), "")]
        if self._checkpoint_style() and method == "uniform" and "recompute_method" not in self.given:
            return []  # uniform is what --checkpoint-activations does
        return [_Op("set", ("recompute_method",), "--recompute-method", method)]

    def _num_layers_ops(self, n: int | None) -> list[_Op]:
        if n is None:
            return [_Op("drop", ("recompute_num_layers",), ""), _Op("drop", ("checkpoint_num_layers",), "")]
        if "recompute_num_layers" in self.given:
            return [_Op("set", ("recompute_num_layers",), "--recompute-num-layers", n)]
        if "checkpoint_num_layers" in self.given or self._checkpoint_style():
            return [_Op("set", ("checkpoint_num_layers",), "--checkpoint-num-layers", n)]
        return [_Op("set", ("recompute_num_layers",), "--recompute-num-layers", n)]

    def _zero_stage(self, stage: int, ops: list[_Op]) -> None:
        entry = self.spec.parallel.zero_stage
        from_json = entry is not None and entry.provenance.origin is Origin.FILE and \
            (entry.provenance.key or "").startswith("zero_optimization")
        written = False
        if "zero_stage" in self.given:  # Megatron-DeepSpeed's flag: kept equal to the JSON's
            ops.append(_Op("set", ("zero_stage",), "--zero-stage", stage))
            written = True
        if self.ds_json is not None and (from_json or not written):
            self.ds_json.set(["zero_optimization", "stage"], stage)
            self.touched.update({"deepspeed:zero_optimization.stage", "deepspeed:parallel.zero_stage"})
            written = True
        if not written:
            self.unsupported(self.spec, "parallel.zero_stage", stage, "this Megatron-LM script (no DeepSpeed config)")

    def _mirror_deepspeed_batch(self) -> None:
        """A --deepspeed_config JSON that repeats the batch sizes follows the flags."""
        ds = self.ds_json
        if ds is None:
            return
        wanted = {k: v for k, v in self.changes.items() if k in BATCH_KEYS and v is not None}
        if not wanted:
            return
        written = {k: ds.written(name) for k, name in DS_BATCH_KEYS.items()}
        dp = as_int(self.changes.get("parallel.data")) or as_int(self.spec.value("parallel.data"))
        values = fill_batch(written, wanted, dp)
        for key, value in values.items():
            name = DS_BATCH_KEYS[key]
            entry = self.spec.batch.global_batch if key == "batch.global_batch" else None
            json_gives_global = entry is not None and entry.provenance.key == name and "global_batch_size" not in self.given
            if written[key] is not None or json_gives_global:
                ds.set([name], value)
                self.touched.add(f"deepspeed:{name}")
        self.touched.update(f"deepspeed:{t}" for t in ds.touched)
        if ds.touched:
            self.touched.update({"deepspeed:batch.micro_batch", "deepspeed:batch.grad_accum",
                                 "deepspeed:batch.global_batch", "deepspeed:parallel.data"})


# -- Megatron launch scripts ---------------------------------------------------------------


_SEP = re.compile(r"(?:[ \t]|\\\n)*")


def _past_separators(text: str, i: int) -> int:
    """After the blanks and \\-newlines at ``i``."""
    found = _SEP.match(text, i)
    return found.end() if found else i
_VAR_REF = re.compile(r'^"?\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-=][^}]*)?\}|([A-Za-z_][A-Za-z0-9_]*))"?$')


class _Syntax:
    """A file of the run as tree-sitter-bash parses it: the same grammar, parser and offsets the
    reader (:mod:`trainlint.adapters.megatron.shell`) evaluated, with character <-> byte offsets."""

    _ATOMIC = frozenset({"expansion", "simple_expansion", "command_substitution", "arithmetic_expansion",
                         "process_substitution"})

    def __init__(self, ft: Any) -> None:
        from trainlint.adapters.megatron.shell_text import _parser

        self.ft = ft
        self.root = _parser().parse(ft.data).root_node

    def byte(self, char: int) -> int:
        if self.ft._char_of_byte is None:
            return char
        return len(self.ft.text[:char].encode("utf-8", errors="surrogatepass"))

    def char(self, byte: int) -> int:
        return self.ft.char(byte)

    def span(self, node: Any) -> tuple[int, int]:
        return self.char(node.start_byte), self.char(node.end_byte)

    def argument_at(self, start: int, end: int) -> tuple[Any, str | None]:
        """The argument (word, string, array element...) the characters ``start:end`` are written in,
        and the quote they are inside of (``"``, ``'``, or None)."""
        node = self.root.descendant_for_byte_range(self.byte(start), self.byte(end))
        quote = None
        while node is not None and node.parent is not None and node.parent.type not in _ARGUMENT_PARENTS:
            if quote is None and node.type in ("string", "raw_string"):
                quote = '"' if node.type == "string" else "'"
            node = node.parent
        if node is not None and quote is None and node.type in ("string", "raw_string"):
            quote = '"' if node.type == "string" else "'"
        return node, quote

    def token_end(self, string: Any, a: int, quote: str) -> int:
        """The end of the blank-separated token starting at ``a`` inside the quoted ``string``
        node (an expansion in it is one piece): how a flag's value is found in ``"--tp 2 --pp $PP"``."""
        text = self.ft.text
        atomic = sorted(self.span(c) for c in string.named_children if c.type in self._ATOMIC)
        _, close = self.span(string)
        close -= 1  # the closing quote
        i = a
        while i < close:
            inside = next((e for s, e in atomic if s == i), None)
            if inside is not None:
                i = inside
                continue
            if text[i] in " \t\n":
                break
            i += 2 if text[i] == "\\" and quote == '"' else 1
        return min(i, close)

    def references(self, name: str) -> list[tuple[int, int]]:
        """Where the variable ``name`` is read: ``$NAME``, ``${NAME...}``, a bare name in
        arithmetic, ``export NAME`` (not where it is assigned)."""
        out = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            if node.type == "variable_name" and node.text.decode("utf-8", "replace") == name and self._reads(node):
                out.append(self.span(node))
        return out

    @staticmethod
    def _reads(node: Any) -> bool:
        """A variable name that reads the variable: in an expansion, in arithmetic, or exported."""
        parent = node.parent
        if parent is None:
            return False
        if parent.type in ("simple_expansion", "expansion"):
            return True
        if parent.type == "declaration_command":
            return parent.children[0].type == "export"
        while parent is not None:
            if parent.type == "arithmetic_expansion" or (parent.type == "compound_statement" and parent.children
                                                         and parent.children[0].type == "(("):
                return True
            parent = parent.parent
        return False


# where an argument ends: its parent is a command, an array, an assignment or a declaration
_ARGUMENT_PARENTS = frozenset({"command", "array", "variable_assignment", "declaration_command", "redirected_statement",
                               "program", "list", "pipeline", "heredoc_body"})


@dataclass
class _FlagAt:
    """A flag written literally in a file: where it and its argument are."""

    path: str
    start: int       # the flag's word (with its quotes when quoted alone)
    flag_end: int
    end: int         # the end of the flag and its argument
    arg: tuple[int, int] | None
    quote: str | None
    """The quote the flag is written inside of, with other words (``"--tp 2 --pp 1"``)."""


class _ScriptArgs:
    """Edits the arguments of one invocation in a launch script (and the files it sources)."""

    def __init__(self, texts: Texts, run: Any) -> None:
        from trainlint.adapters.megatron.flag_table import flag_table

        self.texts = texts
        self.run = run
        self.parsed = run.parsed
        self.shell = run.shell
        self.table = flag_table()
        self.removals: dict[int, tuple[str, int, int]] = {}
        """Flags to remove, by id of their Setting: (path, start, end)."""
        self.removed: dict[int, Any] = {}
        self.after_line: dict[tuple[str, int], list[BufferEdit]] = {}
        """Lines added after a \\-continued line, by (path, that line's start)."""
        self._parsed: dict[str, _Syntax | None] = {}

    def dest_of(self, flag: str) -> set[str]:
        return {info.dest for info in self.table.candidates(flag)} if flag else set()

    # -- locating --------------------------------------------------------------------------
    def locate(self, setting: Any) -> _FlagAt | None:
        segs = [s for s in setting.flag_field.segs if s.text or s.unknown]
        if not segs or segs[0].unknown is not None or segs[0].loc is None:
            return None
        seg = segs[0]
        if not seg.text.startswith(setting.flag_text):
            return None
        path = seg.loc.path
        text = self.texts.buffer(path).text
        if seg.exact:
            start = seg.loc.start
        else:
            # A string with \-newlines (ARGS=" \ --flag 1 \ ...") is read as one piece: find the
            # flag in it, when it is there exactly once.
            region = text[seg.loc.start:seg.loc.end]
            found = [m.start() for m in re.finditer(r"(?<![\w-])" + re.escape(setting.flag_text) + r"(?![\w-])", region)]
            if len(found) != 1:
                return None
            start = seg.loc.start + found[0]
        flag_end = start + len(setting.flag_text)
        syntax = self._syntax(path)
        if text[start:flag_end] != setting.flag_text or syntax is None:
            return None
        arg, quote = syntax.argument_at(start, flag_end)
        if arg is None:
            return None
        arg_start, arg_end = syntax.span(arg)
        word_start, after = start, flag_end
        if quote and (arg_start, arg_end) == (start - 1, flag_end + 1):
            # "--flag" quoted on its own: the word includes the quotes, the value is another word
            word_start, after, quote = arg_start, arg_end, None
        if not setting.info.takes_value or not setting.value_fields:
            return _FlagAt(path, word_start, flag_end, after, None, quote)
        if setting.inline:
            if text[flag_end:flag_end + 1] != "=":
                return None
            a = flag_end + 1
            b = syntax.token_end(arg, a, quote) if quote else arg_end
        elif quote:  # the value is the next word inside the same string
            a = after
            while True:
                a = _past_separators(text, a)
                if text[a:a + 1] != "\n":
                    break
                a += 1
            b = syntax.token_end(arg, a, quote)
        else:  # the next argument of the command or array (after blanks, \-newlines, line breaks)
            value = arg.next_named_sibling
            while value is not None and value.type == "comment":
                value = value.next_named_sibling
            if value is None:
                return None
            a, b = syntax.span(value)
        if b <= a:
            return None
        end = b
        if quote and (arg_start, arg_end) == (word_start - 1, b + 1):
            # "--flag value" quoted as one word (an array element): the word includes the quotes
            word_start, end = arg_start, arg_end
        return _FlagAt(path, word_start, flag_end, end, (a, b), quote)

    def _syntax(self, path: str) -> _Syntax | None:
        """The parsed file (parsed once per writer), None when the reader did not parse it."""
        if path not in self._parsed:
            ft = self.shell.files.get(path) if self.shell is not None else None
            self._parsed[path] = _Syntax(ft) if ft is not None and ft.text else None
        return self._parsed[path]

    def _describe(self, setting: Any) -> str:
        loc = setting.value_loc or setting.flag_field.value_loc or setting.flag_field.site
        if loc is None:
            return f"`{setting.flag_text}`"
        buf = self.texts.buffer(loc.path)
        return f"`{setting.flag_text}` ({where(loc.path, buf.span(loc.start, loc.end))})"

    # -- operations --------------------------------------------------------------------------
    def apply(self, ops: list[_Op]) -> None:
        adds: list[tuple[str, Any]] = []
        for op in ops:
            given = [self.parsed.settings[d] for d in op.dests if d in self.parsed.settings]
            if op.kind == "drop" or (op.kind != "set" and not op.value) or (op.kind == "set" and op.value is None):
                for dest in op.dests:
                    for setting in self.parsed.order:
                        if setting.info.dest == dest:
                            self.remove(setting)
            elif op.kind == "bool":
                if given and given[0].value is True and given[0].info.action == "store_true":
                    continue
                if given:  # --no-... or a store_false spelling: drop it, add the positive flag
                    for setting in self.parsed.order:
                        if setting.info.dest in op.dests:
                            self.remove(setting)
                adds.append((op.flag, None))
            elif given:
                self.set_value(given[0], op.value)
            else:
                adds.append((op.flag, op.value))
        for flag, value in adds:
            self.add(flag, value)
        self._flush_removals()

    def set_value(self, setting: Any, value: Any) -> None:
        what = self._describe(setting)
        if setting.unresolved:
            raise WritebackError(f"{what} takes its value from {setting.unresolved}; trainlint cannot rewrite it")
        if len(setting.value_fields) != 1:
            raise WritebackError(f"{what} has {len(setting.value_fields)} values; trainlint rewrites single values only")
        literal = _shell_word(value)
        segs = [s for s in setting.value_fields[0].segs if s.text or s.unknown]
        at = self.locate(setting)
        if len(segs) != 1:
            if at is not None and at.arg is not None:
                self._replace_arg(setting, at, literal)
                return
            raise WritebackError(f"the value of {what} is assembled from several pieces; trainlint cannot rewrite it")
        seg = segs[0]
        if seg.env is not None:
            raise WritebackError(f"the value of {what} comes from the environment variable {seg.env} (given to "
                                 "trainlint with --env or the project config); change it there")
        if seg.loc is None:
            raise WritebackError(f"the value of {what} is not written in any file trainlint read")
        buf = self.texts.buffer(seg.loc.path)
        if not seg.exact and at is not None and at.arg is not None and at.path == seg.loc.path \
                and seg.loc.start <= at.arg[0] and at.arg[1] <= seg.loc.end \
                and buf.text[at.arg[0]:at.arg[1]] == seg.text:
            buf.replace(at.arg[0], at.arg[1], literal)  # a literal inside a string with \-newlines
            return
        if not seg.exact:
            written = buf.text[seg.loc.start:seg.loc.end]
            how = "computed by the arithmetic expression" if written.startswith("$((") else "written as"
            raise WritebackError(f"the value of {what} is {how} `{_short(written)}` at "
                                 f"{where(seg.loc.path, buf.span(seg.loc.start, seg.loc.end))}; trainlint does not "
                                 "rewrite expressions")
        loc = seg.loc
        if at is not None and at.arg is not None and at.path == loc.path and at.arg[0] <= loc.start and loc.end <= at.arg[1]:
            buf.replace(loc.start, loc.end, literal)  # a literal argument (or the default of ${VAR:-x})
            return
        assignment = self._assignment_at(loc)
        token = self.texts.buffer(at.path).text[at.arg[0]:at.arg[1]] if at is not None and at.arg else None
        ref = _VAR_REF.match(token) if token else None
        name = (ref.group(1) or ref.group(2)) if ref else None
        if assignment is not None and name == assignment.name and self._plain(assignment, seg) \
                and not seg.uncertain and self._used_once(assignment):
            buf.replace(loc.start, loc.end, literal)  # TP=4, used only by this flag
            return
        if name is not None and at is not None:
            self._replace_arg(setting, at, literal)  # the variable is used elsewhere: only this flag changes
            return
        place = where(loc.path, buf.span(loc.start, loc.end))
        raise WritebackError(f"the value of {what} is written at {place} and reaches the flag through "
                             f"`{_short(token or '?')}`; trainlint cannot rewrite it safely")

    def _replace_arg(self, setting: Any, at: _FlagAt, literal: str) -> None:
        a, b = at.arg  # type: ignore[misc]
        buf = self.texts.buffer(at.path)
        token = buf.text[a:b]
        if "$(" in token and not _VAR_REF.match(token):
            raise WritebackError(f"the value of {self._describe(setting)} is computed by `{_short(token)}`; trainlint "
                                 "does not rewrite expressions")
        buf.replace(a, b, literal)

    def _assignment_at(self, loc: Any) -> Any:
        best = None
        for a in self.shell.assignments if self.shell else ():
            if a.loc.path == loc.path and a.loc.start <= loc.start and loc.end <= a.loc.end \
                    and (best is None or (a.loc.end - a.loc.start) < (best.loc.end - best.loc.start)):
                best = a
        return best

    @staticmethod
    def _plain(assignment: Any, seg: Any) -> bool:
        value = assignment.value
        if value.is_array or value.scalar is None:
            return False
        segs = [s for s in value.scalar if s.text or s.unknown]
        return len(segs) == 1 and segs[0].loc == seg.loc and segs[0].text == seg.text

    def _used_once(self, assignment: Any) -> bool:
        """The variable is read exactly once (by the flag) in every file the script reads, and
        not exported to the processes it starts."""
        text = self.texts.buffer(assignment.loc.path).text
        line = text[text.rfind("\n", 0, assignment.loc.start) + 1:assignment.loc.start]
        if re.search(r"\b(export|declare\s+-\w*x|readonly)\b", line):
            return False
        count = 0
        for path in (self.shell.files if self.shell else ()):
            syntax = self._syntax(path)
            for start, end in (syntax.references(assignment.name) if syntax is not None else ()):
                if path == assignment.loc.path and assignment.loc.start <= start and end <= assignment.loc.end:
                    continue  # TP=${TP:-4} reads itself
                count += 1
        return count == 1

    def remove(self, setting: Any) -> None:
        at = self.locate(setting)
        if at is None:
            raise WritebackError(f"{self._describe(setting)} is not written as a plain word trainlint can remove")
        if id(setting) in self.removed:
            return
        self.removed[id(setting)] = setting
        self.removals[id(setting)] = (at.path, at.start, at.end)

    def add(self, flag: str, value: Any) -> None:
        words = flag if value is None else f"{flag} {_shell_word(value)}"
        own_group = _groups_for(flag)[0]
        for key, setting in list(self.removed.items()):
            if setting.flag_text in own_group:
                # a flag of the same kind goes away (--recompute-activations for
                # --recompute-granularity): the new one takes its place
                at = self.locate(setting)
                if at is not None:
                    self.texts.buffer(at.path).replace(at.start, at.end, words)
                    del self.removed[key], self.removals[key]
                    return
        anchor = self._anchor(flag)
        if anchor is None:
            raise WritebackError(f"cannot find where to add `{flag}`: no flag of this run is written as a plain word")
        at, _setting = anchor
        buf = self.texts.buffer(at.path)
        text = buf.text
        ls, le = buf.line_start(at.start), buf.line_end(at.end)
        if text[ls:at.start].strip():
            buf.insert(at.end, f" {words}")  # several flags on the line: one more, inline
            return
        indent = text[ls:at.start]
        rest = text[at.end:le].strip()
        prev = text[buf.line_start(ls - 1):ls - 1] if ls > 0 else ""
        if rest == "\\":  # a \-continued line: a new continued line after it
            edit = buf.insert(le, f"\n{indent}{words} \\")
            self.after_line.setdefault((at.path, ls), []).append(edit)
        elif prev.rstrip().endswith("\\"):  # the last line of a continued command: before it
            buf.insert(ls, f"{indent}{words} \\\n")
        elif rest == "" or rest.startswith("#"):  # an array element or a line of a string
            buf.insert(le, f"\n{indent}{words}")
        else:  # the line closes the array or string: before it
            buf.insert(ls, f"{indent}{words}\n")

    def _anchor(self, flag: str) -> tuple[_FlagAt, Any] | None:
        main = self.run.spec.path
        candidates: list[tuple[int, int, _FlagAt, Any]] = []
        groups = _groups_for(flag)
        for pos, setting in enumerate(self.parsed.order):
            if id(setting) in self.removed:
                continue
            rank = _rank(setting.flag_text, groups)
            at = self.locate(setting)
            if at is None:
                continue
            candidates.append((rank + (0 if same_file(at.path, main) else 1000), -pos, at, setting))
        if not candidates:
            return None
        candidates.sort(key=lambda c: (c[0], c[1]))
        return candidates[0][2], candidates[0][3]

    def _flush_removals(self) -> None:
        by_path: dict[str, list[tuple[int, int]]] = {}
        for path, a, b in self.removals.values():
            by_path.setdefault(path, []).append((a, b))
        for path, regions in by_path.items():
            buf = self.texts.buffer(path)
            text = buf.text
            whole: dict[int, tuple[int, int, bool]] = {}   # line start -> (start, end, continued)
            inline: list[tuple[int, int]] = []
            per_line: dict[int, list[tuple[int, int]]] = {}
            for a, b in sorted(regions):
                per_line.setdefault(buf.line_start(a), []).append((a, b))
            for ls, regs in per_line.items():
                le = buf.line_end(max(b for _, b in regs))
                kept, pos = [], ls
                for a, b in regs:
                    kept.append(text[pos:a])
                    pos = max(pos, b)
                kept.append(text[pos:le])
                rest = "".join(kept).strip()
                if rest in ("", "\\") or rest.startswith("#"):  # nothing else on the line: the line goes
                    whole[ls] = (ls, min(le + 1, len(text)), rest == "\\")
                else:
                    inline.extend(regs)
            for ls, (start, end, continued) in sorted(whole.items()):
                buf.replace(start, end, "")
                if continued or ls == 0:
                    continue
                # This line ended a \-continued command: the nearest kept line before it now does.
                p = buf.line_start(ls - 1)
                while p in whole and p > 0:
                    p = buf.line_start(p - 1)
                if p in whole:
                    continue
                added = self.after_line.get((path, p))
                if added:  # lines were added after that one: the last of them ends the command
                    added[-1].text = added[-1].text[:-2]
                    continue
                line = text[p:buf.line_end(p)]
                stripped = line.rstrip()
                if stripped.endswith("\\") and not stripped.endswith("\\\\"):
                    k = p + len(stripped) - 1
                    while k > p and text[k - 1] in " \t":
                        k -= 1
                    buf.replace(k, p + len(stripped), "")
            for a, b in inline:
                ls = buf.line_start(a)
                k = a
                while k > ls and text[k - 1] in " \t":
                    k -= 1
                if k < a:
                    buf.replace(k, b, "")
                else:
                    j = b
                    while j < len(text) and text[j] in " \t":
                        j += 1
                    buf.replace(a, j, "")


def _shell_word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if re.fullmatch(r"[A-Za-z0-9_.,:/+-]+", text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


def _short(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= 50 else text[:47] + "..."


# -- Megatron MODEL_ARGS YAML -------------------------------------------------------------


class _YamlArgs:
    """Edits the ``MODEL_ARGS`` mapping of a Megatron functional-test / model-zoo YAML."""

    def __init__(self, texts: Texts, path: str, run: Any) -> None:
        from trainlint.adapters.megatron.flag_table import flag_table
        from trainlint.adapters.text.yaml_tree import parse_yaml

        buf = texts.buffer(path)
        tree = parse_yaml(buf.text, path)
        if not tree.ok or not isinstance(tree.data, dict) or not isinstance(tree.data.get("MODEL_ARGS"), dict):
            raise WritebackError(f"{path}: cannot read MODEL_ARGS to rewrite it")
        self.map = TextMapping(buf, tree.data, tree.key_spans, tree.value_spans, "yaml")
        self.table = flag_table()
        self.parent = pointer(["MODEL_ARGS"])
        self.run = run
        self.deleted: set[str] = set()

    def dest_of(self, flag: str) -> set[str]:
        return {info.dest for info in self.table.candidates(flag)} if flag else set()

    def _written(self, dests: Iterable[str]) -> list[str]:
        dests = set(dests)
        out = []
        for ptr in self.map.children(self.parent):
            flag = pointer_parts(ptr)[-1]
            if any(info.dest in dests for info in self.table.candidates(flag)):
                out.append(ptr)
        return out

    def _merged(self, dests: Iterable[str]) -> list[str]:
        """Flags MODEL_ARGS gets from a YAML merge key (``<<: *BASE_MODEL_ARGS``), not written in it."""
        dests = set(dests)
        own = {pointer_parts(p)[-1] for p in self.map.children(self.parent)}
        section = self.map.get(self.parent, {})
        return [flag for flag in section if isinstance(flag, str) and flag not in own
                and any(info.dest in dests for info in self.table.candidates(flag))]

    def apply(self, ops: list[_Op]) -> None:
        # removals first, so that no flag is added next to one that goes away
        off = [op for op in ops if op.kind == "drop" or (op.kind == "bool" and not op.value)
               or (op.kind == "set" and op.value is None)]
        for op in off + [op for op in ops if op not in off]:
            written = [p for p in self._written(op.dests) if p not in self.deleted]
            merged = self._merged(op.dests)
            section = self.map.get(self.parent, {})
            if op in off:
                inherited = [f for f in merged if section.get(f) is not False]
                for ptr in written:
                    if self.map.get(ptr) is False:
                        continue
                    if inherited:  # deleting would bring the merged value back: say false
                        self.map.replace(ptr, False)
                    else:
                        self.map.delete(ptr)
                        self.deleted.add(ptr)
                if inherited and not written:
                    self._add(inherited[-1], False)  # overrides the merged mapping's value
            elif op.kind == "bool":
                if any(self.map.get(p) is not False for p in written):
                    continue
                if written:
                    self.map.replace(written[-1], True)
                elif not any(section.get(f) not in (False, None) for f in merged):
                    self._add(op.flag, True)
            elif written:
                ptr = written[-1]
                value = self.map.get(ptr)
                if isinstance(value, str) and "$" in value:
                    raise WritebackError(f"{self.map.where(ptr)}: `{pointer_parts(ptr)[-1]}` is the placeholder "
                                         f"{value!r}, filled by the launcher; trainlint does not rewrite it")
                self.map.replace(ptr, op.value)
            else:  # not written, or only through a merge key: an explicit key wins over the merge
                self._add(merged[-1] if merged else op.flag, op.value)

    def _add(self, flag: str, value: Any) -> None:
        groups = _groups_for(flag)
        present = [p for p in self.map.children(self.parent) if p not in self.deleted]
        best = None
        for ptr in present:
            rank = _rank(pointer_parts(ptr)[-1], groups)
            if best is None or rank <= best[0]:
                best = (rank, ptr)
        self.map.insert(self.parent, flag, value, after=best[1] if best else None)
