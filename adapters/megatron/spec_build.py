"""From Megatron arguments (as read by :mod:`flags`) to a TrainingSpec with provenance.

Layout fields that Megatron defaults (TP = PP = CP = EP = 1, no sequence parallelism...) get the
default with its source; values Megatron computes at start-up (DP, the global batch when it is
not given, the FFN size, the number of KV heads, VPP from layers per virtual stage) are derived,
with the inputs they came from. Nothing that depends on the launch environment is guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from trainlint.core.diagnostics import Diagnostic
from trainlint.core.positions import Span
from trainlint.core.provenance import Origin, Provenance, Value, default, derived
from trainlint.core.spec import EngineSpec, TrainingSpec

from trainlint.adapters.megatron.pipeline_split import pipeline_split
from trainlint.adapters.megatron.flags import CURRENT, DEEPSPEED, LEGACY, ParsedArgs, Setting, is_core_entry
from trainlint.adapters.megatron.vocab import vocab_fields
from trainlint.adapters.megatron.words import Field, Loc

DEFAULT_NOTES = {
    CURRENT: "Megatron-LM default (megatron/training/arguments.py)",
    DEEPSPEED: "Megatron-DeepSpeed default (megatron/arguments.py)",
    "legacy": "Megatron-LM v1.1.5 default (megatron/arguments.py, as vendored in DeepSpeedExamples)",
}

ARCHITECTURES = (
    ("pretrain_gpt", "gpt"), ("pretrain_llama", "gpt"), ("pretrain_bert", "bert"), ("pretrain_t5", "t5"),
    ("pretrain_mamba", "mamba"), ("pretrain_hybrid", "hybrid"), ("pretrain_retro", "gpt"),
    ("pretrain_vlm", "other"), ("pretrain_vision", "other"), ("pretrain_ict", "bert"),
)


@dataclass
class BuildContext:
    path: str
    label: str
    dialect: str
    entry: str | None
    span_of: Callable[[Loc | None], tuple[str | None, Span | None]]
    world: dict[str, Field] = field(default_factory=dict)
    all_local_gpus: bool = False
    launchers: list[str] = field(default_factory=list)
    anchor: Span | None = None
    """The launch command, when it is in the checked file itself."""


class SpecBuilder:
    fast_path = True
    """:meth:`_settings` turns the usual setting into its Value itself (False: every one through
    :meth:`value_of`, for the tests that compare the two)."""

    def __init__(self, parsed: ParsedArgs, ctx: BuildContext) -> None:
        self.parsed = parsed
        self.ctx = ctx
        self.spec = TrainingSpec(framework="megatron", path=ctx.path, label=ctx.label, sources=[ctx.path],
                                 dialect=ctx.dialect, entry_point=ctx.entry, anchor=ctx.anchor)
        self.note = DEFAULT_NOTES.get(ctx.dialect, DEFAULT_NOTES[CURRENT])
        self.diagnostics: list[Diagnostic] = []
        """What building the spec found wrong with a launcher's value (``--nproc_per_node -8``)."""
        self._made: dict[str, Value | None] = {}
        """The Value of each setting as :meth:`_settings` made it: :meth:`get` gives the same one."""
        self.places: dict[str, tuple[Setting, str | None, Span | None, str | None, Span | None]] = {}
        """dest -> (the setting, its flag's path and span, its value's path and span), for each setting
        with a value place that :meth:`value_of` turned into spans: the document's key and value spans
        are the same ones (the adapter's ``_document`` takes them from here, for the setting it names)."""

    # ------------------------------------------------------------- values

    def value_of(self, setting: Setting, value: Any = None, use: Any = ...) -> Value | None:
        v = setting.value if use is ... else use
        if v is None:
            return None
        values = setting.value_fields
        env, uncertain = _doubt_of(values) if values else (None, False)  # a switch: neither
        if env is not None:
            if env.startswith("$"):
                return Value(v, Provenance(Origin.CLI, key=setting.flag_text, note=f"launch argument {env}"))
            return Value(v, Provenance(Origin.PROJECT_CONFIG, key=setting.flag_text,
                                       note=f"shell variable {env} from the project config ([tool.trainlint] env)"))
        flag_loc = setting.flag_field.value_loc
        value_loc = setting.value_loc or flag_loc
        fpath, fspan = self.ctx.span_of(flag_loc)
        # a switch's value is its flag: one place, turned once
        path, span = (fpath, fspan) if value_loc is flag_loc else self.ctx.span_of(value_loc)
        if setting.value_loc is not None:
            self.places[setting.info.dest] = (setting, fpath, fspan, path, span)
        note = ""
        apart = fspan is not None and (path != fpath or (span is not fspan and span != fspan))  # `is`: a switch, no __eq__ call
        if apart and fspan is not None:
            where = f"{fpath}:{fspan}" if fpath and fpath != path else f"line {fspan.line}, column {fspan.column}"
            note = f"value of {setting.flag_text} given at {where}"
        if uncertain:
            note = (note + "; " if note else "") + "assigned inside a branch trainlint could not decide"
        # positional: every value of every run makes one (keywords cost ~40% more per Provenance)
        return Value(v, Provenance(Origin.FILE, path or self.ctx.path, span, setting.flag_text, note, (), uncertain, apart))

    def get(self, dest: str) -> Value | None:
        s = self.parsed.settings.get(dest)
        if s is None:
            return None
        if dest in self._made:
            return self._made[dest]
        return self.value_of(s)

    def raw(self, dest: str) -> Any:
        s = self.parsed.settings.get(dest)
        return None if s is None else s.value

    def given(self, dest: str) -> bool:
        return dest in self.parsed.settings

    def dflt(self, value: Any) -> Value:
        return default(value, self.note)

    def get_or_default(self, dest: str, value: Any) -> Value | None:
        s = self.parsed.settings.get(dest)
        if s is not None:
            return self.get(dest)  # None when unresolved: nothing is guessed
        return self.dflt(value)

    # --------------------------------------------------------------- build

    def build(self) -> TrainingSpec:
        self._settings()
        self._model()
        self._cluster()
        self._parallel()
        self.spec.model.vocab_size, self.spec.model.vocab_pad_multiple = vocab_fields(self)
        self._batch()
        self._precision()
        self._memory()
        self._run()
        framework_facts(self.spec)
        return self.spec

    def _settings(self) -> None:
        made, out, places = self._made, self.spec.settings, self.places
        span_of, here, fast = self.ctx.span_of, self.ctx.path, self.fast_path
        for dest, setting in self.parsed.settings.items():
            # value_of written out for the usual setting (tests/test_megatron_fast_paths.py compares
            # the two): a value written in one piece or a switch, not from the declared environment
            # or an undecided branch; its spans kept for the document
            value, values, value_loc = setting.value, setting.value_fields, setting.value_loc
            if fast and value is not None and value_loc is not None and len(values) < 2:
                seg = None
                if values:
                    only = values[0]
                    segs = only.segs
                    if len(segs) == 1 and not only.uncertain:
                        seg = segs[0]
                        if seg.env or seg.uncertain:
                            seg = None
                if seg is not None or not values:
                    flag_loc = setting.flag_field.value_loc
                    fpath, fspan = span_of(flag_loc)
                    path, span = (fpath, fspan) if value_loc is flag_loc else span_of(value_loc)
                    places[dest] = (setting, fpath, fspan, path, span)
                    if fspan is None or span is fspan:
                        apart = False
                    elif path != fpath or span is None:
                        apart = True
                    else:  # Span's __eq__, field by field
                        apart = not (span.line == fspan.line and span.column == fspan.column and
                                     span.end_line == fspan.end_line and span.end_column == fspan.end_column)
                    note = ""
                    if apart:
                        assert fspan is not None
                        where = f"{fpath}:{fspan}" if fpath and fpath != path else f"line {fspan.line}, column {fspan.column}"
                        note = f"value of {setting.flag_text} given at {where}"
                    out[dest] = made[dest] = Value(value, Provenance(Origin.FILE, path or here, span, setting.flag_text,
                                                                     note, (), False, apart))
                    continue
            v = made[dest] = self.value_of(setting)
            if v is not None:
                out[dest] = v
            elif setting.unresolved:
                path, span = self.ctx.span_of(setting.flag_field.site)
                self.spec.unresolved[dest] = Provenance(Origin.FILE, path=path, span=span, key=setting.flag_text,
                                                        note=str(setting.unresolved))

    def _latent_dims(self) -> Value | None:
        """MLA's projection sizes (ModelSpec.latent_dims), Megatron's defaults where not written
        (megatron/training/arguments.py: --q-lora-rank None, --kv-lora-rank 32, --qk-head-dim 128,
        --qk-pos-emb-head-dim 64, --v-head-dim 128); None when one is written but unresolved."""
        dims: dict[str, int] = {}
        used: list[Value] = []
        for key, dest, fallback in (("q_lora_rank", "q_lora_rank", 0), ("kv_lora_rank", "kv_lora_rank", 32),
                                    ("qk_head_dim", "qk_head_dim", 128), ("qk_rope_head_dim", "qk_pos_emb_head_dim", 64),
                                    ("v_head_dim", "v_head_dim", 128)):
            entry = self.get(dest) if self.given(dest) else None
            if self.given(dest) and entry is None:
                return None  # written, not resolved: nothing is guessed
            value = entry.value if entry is not None else fallback
            if value is None and key == "q_lora_rank":
                value = 0  # --q-lora-rank None: the query is not compressed
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return None
            dims[key] = value
            if entry is not None:
                used.append(entry)
        return derived(dims, "--multi-latent-attention's projection sizes (Megatron's defaults where not written)", *used)

    def _model(self) -> None:
        m = self.spec.model
        entry = (self.ctx.entry or "").rsplit("/", 1)[-1]
        for prefix, arch in ARCHITECTURES:
            if entry.startswith(prefix):
                m.architecture = derived(arch, f"from the entry point {entry}")
                break
        m.num_layers = self.get("num_layers") or self.get("encoder_num_layers")
        m.hidden_size = self.get("hidden_size")
        m.num_attention_heads = self.get("num_attention_heads")
        m.latent_attention = self.spec.settings.get("multi_latent_attention")
        if self.raw("multi_latent_attention"):
            m.latent_dims = self._latent_dims()
        m.hidden_dropout = self.get("hidden_dropout")  # not given: Megatron's default 0.1 keeps a mask
        if self.raw("group_query_attention") and self.given("num_query_groups"):
            m.num_kv_heads = self.get("num_query_groups")
        elif self.given("num_key_value_heads"):
            m.num_kv_heads = self.get("num_key_value_heads")
        elif self.raw("group_query_attention") and not self.raw("multi_latent_attention"):
            # --num-query-groups defaults to 1 (megatron/training/arguments.py), used as is with GQA on
            m.num_kv_heads = default(1, "--group-query-attention without --num-query-groups (Megatron's default 1)")
        elif m.num_attention_heads is not None and self.raw("multi_latent_attention"):
            # MLA up-projects keys and values for every attention head from the compressed latent
            m.num_kv_heads = derived(m.num_attention_heads.value,
                                     "--multi-latent-attention: keys and values up-projected per attention head",
                                     m.num_attention_heads)
        elif m.num_attention_heads is not None and not self.raw("group_query_attention"):
            m.num_kv_heads = derived(m.num_attention_heads.value,
                                     "no --group-query-attention: one KV head per attention head",
                                     m.num_attention_heads)
        m.kv_channels = self.get("kv_channels")
        if m.kv_channels is None and m.hidden_size is not None and m.num_attention_heads is not None:
            h, a = m.hidden_size.value, m.num_attention_heads.value
            if isinstance(h, int) and isinstance(a, int) and a > 0 and h % a == 0:
                m.kv_channels = derived(h // a, "hidden_size / num_attention_heads (Megatron's default)",
                                        m.hidden_size, m.num_attention_heads)
        swiglu = self.get_or_default("swiglu", False)
        m.gated_mlp = swiglu
        m.ffn_hidden_size = self.get("ffn_hidden_size") or self.get("intermediate_size")
        if m.ffn_hidden_size is None and m.hidden_size is not None and isinstance(m.hidden_size.value, int) \
                and not self.given("ffn_hidden_size") and swiglu is not None:
            h = m.hidden_size.value
            if swiglu.value:
                m.ffn_hidden_size = derived(int((4 * h * 2 / 3) / 64) * 64,
                                            "int(4 * hidden_size * 2/3 / 64) * 64 with --swiglu (Megatron's default)",
                                            m.hidden_size, swiglu)
            else:
                m.ffn_hidden_size = derived(4 * h, "4 * hidden_size (Megatron's default)", m.hidden_size)
        m.seq_length = self.get("seq_length") or self.get("encoder_seq_length")
        m.max_position_embeddings = self.get("max_position_embeddings")
        if self.given("untie_embeddings_and_output_weights"):
            s = self.parsed.settings["untie_embeddings_and_output_weights"]
            m.tied_embeddings = self.value_of(s, use=None if s.value is None else not s.value)
        elif self.ctx.dialect == CURRENT or self.given("num_layers"):
            m.tied_embeddings = self.dflt(True)
        m.num_experts = self.get("num_experts") or self.get("num_experts_switch")
        if m.num_experts is not None and isinstance(m.num_experts.value, list):
            # Megatron-DeepSpeed: --num-experts takes one count per MoE layer group (nargs='+')
            counts = [n for n in m.num_experts.value if type(n) is int]
            m.num_experts = Value(max(counts), m.num_experts.provenance) if counts else None
        if m.num_experts is not None:
            if self.ctx.dialect == CURRENT:
                m.moe_top_k = self.get_or_default("moe_router_topk", 2)
            elif self.ctx.dialect == DEEPSPEED:
                m.moe_top_k = self.get_or_default("topk", 1)
            else:
                m.moe_top_k = self.get("topk")
            m.moe_ffn_hidden_size = self.get("moe_ffn_hidden_size")
            if m.moe_ffn_hidden_size is None and m.ffn_hidden_size is not None and not self.given("moe_ffn_hidden_size"):
                m.moe_ffn_hidden_size = derived(m.ffn_hidden_size.value, "ffn_hidden_size (Megatron's default for MoE)",
                                                m.ffn_hidden_size)
            if self.ctx.dialect == CURRENT:
                m.moe_shared_expert_ffn = self.get("moe_shared_expert_intermediate_size")

    def _cluster(self) -> None:
        c = self.spec.cluster
        w = self.ctx.world
        gpn = self._launch_int(w.get("gpus_per_node"), "gpus per node")
        nodes = self._launch_int(w.get("nodes"), "nodes")
        world = self._launch_int(w.get("world_size"), "processes")
        from_hostfile = False
        if "deepspeed" in self.ctx.launchers and "hostfile" in w and world is None:
            gpn, nodes, world = self._hostfile(w["hostfile"], gpn, nodes)
            from_hostfile = nodes is not None and nodes.provenance.key == "hostfile"
        if gpn is None and "include" in w and not from_hostfile:
            inc = w["include"]
            if inc.text is not None:
                count = _count_include(inc.text)
                if count is not None:
                    path, span = self.ctx.span_of(inc.value_loc)
                    gpn = Value(count, Provenance(Origin.FILE, path=path, span=span, key="--include",
                                                  note=f"GPUs listed in --include {inc.text}"))
        if "deepspeed" in self.ctx.launchers and nodes is None and gpn is not None and "hostfile" not in w:
            nodes = default(1, "DeepSpeed launcher default (one node without --num_nodes or a hostfile)")
        if "torchrun" in self.ctx.launchers[-1:] or any(name.startswith("python -m torch") for name in self.ctx.launchers):
            if nodes is None and "nodes" not in w:
                nodes = default(1, "torchrun default (--nnodes 1)")
            if gpn is None and "gpus_per_node" not in w:
                gpn = default(1, "torchrun default (--nproc_per_node 1)")
        c.gpus_per_node = gpn
        c.nodes = nodes
        if world is not None:
            c.world_size = world
        elif gpn is not None and nodes is not None and isinstance(gpn.value, int) and isinstance(nodes.value, int):
            c.world_size = derived(gpn.value * nodes.value, "gpus per node x nodes (launcher arguments)", gpn, nodes)
        elif self.ctx.launchers == ["python"] or self.ctx.launchers == ["direct"]:
            c.world_size = derived(1, "a single process (plain python, no distributed launcher)")

    def _hostfile(self, f: Field, gpn: Value | None, nodes: Value | None):
        """(gpus per node, nodes, world size) with a DeepSpeed hostfile in the project: its hosts (the
        first --num_nodes of them), each with its slots or --num_gpus GPUs; unchanged when the file
        is not found, outside the project or not ``host slots=N`` lines."""
        from trainlint.adapters.launch.hostfile import find_hostfile, read_hostfile

        path = find_hostfile(f.text, self.ctx.path) if f.text else None
        hosts = read_hostfile(path) if path else None
        if not hosts:
            return gpn, nodes, None
        hosts = _select_hosts(hosts, self.ctx.world.get("include"), self.ctx.world.get("exclude"))
        if not hosts:
            return gpn, nodes, None
        if nodes is not None and isinstance(nodes.value, int) and nodes.value > 0:
            hosts = hosts[:nodes.value]
        where = Span(hosts[0].line, 1, hosts[-1].line + 1, 1)
        listed = ", ".join(f"{h.name} slots={h.slots}" for h in hosts[:4]) + (", ..." if len(hosts) > 4 else "")
        if nodes is None:
            nodes = Value(len(hosts), Provenance(Origin.FILE, path=path, span=where, key="hostfile",
                                                 note=f"hosts in the hostfile {f.text}: {listed}"))
        if gpn is None:
            if len({h.slots for h in hosts}) == 1:
                gpn = Value(hosts[0].slots, Provenance(Origin.FILE, path=path, span=where, key="hostfile",
                                                       note=f"slots per host in the hostfile {f.text}"))
            else:
                return None, nodes, Value(sum(h.slots for h in hosts), Provenance(
                    Origin.FILE, path=path, span=where, key="hostfile",
                    note=f"sum of the slots in the hostfile {f.text}: {listed}"))
        return gpn, nodes, None

    def _launch_int(self, f: Field | None, what: str) -> Value | None:
        if f is None or f.text is None:
            return None
        try:
            n = int(f.text)
        except ValueError:
            return None
        path, span = self.ctx.span_of(f.value_loc)
        if n < 1:
            # no launcher starts -8 processes per node (torchrun, the DeepSpeed runner): the run fails
            # at launch; the value is not used (the estimate never sees a negative GPU count)
            from trainlint.core.input_codes import input_diagnostic
            from trainlint.core.positions import FILE_START

            self.diagnostics.append(input_diagnostic(
                "TL006", f"the launcher's {what} must be at least 1, got {n}: the job cannot start",
                span or FILE_START, path=path or self.ctx.path))
            return None
        env, doubt = _variable_and_doubt([f])
        if env is not None and env.startswith("$"):
            return Value(n, Provenance(Origin.CLI, key=f"launcher {what}", note=f"launch argument {env}"))
        if env is not None:
            return Value(n, Provenance(Origin.PROJECT_CONFIG, key=f"launcher {what}",
                                       note=f"shell variable {env} from the project config ([tool.trainlint] env)"))
        # doubt: from an undecided branch, or a scheduler variable's default (${SLURM_NNODES:-1}): a guess
        note = f"the {what} the script gives outside the branch or scheduler that sets it at launch" if doubt else ""
        return Value(n, Provenance(Origin.FILE, path=path, span=span, key=f"launcher {what}", note=note, uncertain=doubt))

    def _parallel(self) -> None:
        p = self.spec.parallel
        legacy = self.ctx.dialect != CURRENT
        tp = self.get("tensor_model_parallel_size")
        if tp is None and legacy and self.given("model_parallel_size"):
            tp = self.get("model_parallel_size")
        if tp is None and not self.given("tensor_model_parallel_size") and not (legacy and self.given("model_parallel_size")):
            tp = self.dflt(1)
        p.tensor = tp
        pp = self.get("pipeline_model_parallel_size")
        if pp is None and self.given("pipe_parallel_size"):
            s = self.parsed.settings["pipe_parallel_size"]
            pp = self.value_of(s, use=None if s.value is None else max(1, s.value))
        if pp is None and not self.given("pipeline_model_parallel_size") and not self.given("pipe_parallel_size"):
            pp = self.dflt(1)
        p.pipeline = pp
        if self.given("num_virtual_stages_per_pipeline_rank"):
            p.virtual_pipeline = self.get("num_virtual_stages_per_pipeline_rank")
        elif self.given("num_layers_per_virtual_pipeline_stage"):
            k = self.get("num_layers_per_virtual_pipeline_stage")
            L = self.spec.model.num_layers
            if k is not None and L is not None and pp is not None:
                per_stage, rem = divmod(L.value, pp.value) if pp.value else (0, 1)
                if rem == 0 and k.value and per_stage % k.value == 0:
                    p.virtual_pipeline = derived(per_stage // k.value,
                                                 "num_layers / pipeline size / layers per virtual stage", L, pp, k)
        p.context = self.get_or_default("context_parallel_size", 1)
        uly = self.get("ds_sequence_parallel_size") if self.ctx.dialect == DEEPSPEED else None
        if uly is not None and type(uly.value) is int and uly.value > 1 and not self.given("context_parallel_size"):
            # DeepSpeed-Ulysses (Megatron-DeepSpeed --ds-sequence-parallel-size): every GPU of the group holds
            # 1/N of the sequence outside attention and 1/N of the heads inside it (all-to-all before and
            # after the attention core), so activations split like context parallelism; the world is
            # TP x PP x SP x DP (megatron/core/parallel_state.py sequence_parallel_size)
            p.context = derived(uly.value, f"DeepSpeed-Ulysses sequence parallelism over {uly.value} GPUs "
                                           "(--ds-sequence-parallel-size)", uly)
        if self.ctx.dialect == DEEPSPEED and self.given("moe_expert_parallel_size"):
            p.expert = self.get("moe_expert_parallel_size")
        else:
            p.expert = self.get_or_default("expert_model_parallel_size", 1)
        if self.given("expert_tensor_parallel_size"):
            p.expert_tensor = self.get("expert_tensor_parallel_size")
        elif tp is not None and not legacy:
            p.expert_tensor = derived(tp.value, "defaults to the tensor-parallel size", tp)
        p.sequence_parallel = self.get_or_default("sequence_parallel", False)
        p.distributed_optimizer = self.get_or_default("use_distributed_optimizer", False)
        if self.given("zero_stage"):
            p.zero_stage = self.get("zero_stage")
        if self.ctx.dialect == DEEPSPEED and self.raw("deepspeed"):
            npp = self.raw("no_pipeline_parallel")
            p.pipeline_engine = self.get("no_pipeline_parallel") if npp else self.dflt(True)
            if npp and p.pipeline_engine is not None:
                p.pipeline_engine = Value(False, p.pipeline_engine.provenance)
        world = self.spec.cluster.world_size
        cp = p.context
        if world is not None and tp is not None and pp is not None and cp is not None:
            prod = tp.value * pp.value * cp.value
            if isinstance(world.value, int) and prod > 0 and world.value % prod == 0:
                p.data = derived(world.value // prod, "world size / (TP x PP x CP)", world, tp, pp, cp)

    def _batch(self) -> None:
        b = self.spec.batch
        # --rampup-batch-size (Megatron-LM, megatron/core/num_microbatches_calculator.py) or
        # --step-batch-size-schedule (Megatron-DeepSpeed): the first steps' global batch is the schedule's
        for dest in ("rampup_batch_size", "step_batch_size_schedule"):
            if b.schedule is None:
                b.schedule = self.spec.settings.get(dest)
        b.micro_batch = self.get("micro_batch_size")
        if b.micro_batch is None and self.given("batch_size"):
            b.micro_batch = self.get("batch_size")
        b.global_batch = self.get("global_batch_size")
        dp = self.spec.parallel.data
        if self.given("gas"):
            b.grad_accum = self.get("gas")
        if b.global_batch is None and not self.given("global_batch_size") and not self.given("step_batch_size_schedule") \
                and b.micro_batch is not None and dp is not None and self.ctx.dialect in (CURRENT, DEEPSPEED):
            b.global_batch = derived(b.micro_batch.value * dp.value,
                                     "micro batch x data-parallel size: Megatron's default without --global-batch-size",
                                     b.micro_batch, dp)
        if b.grad_accum is None and b.global_batch is not None and b.micro_batch is not None and dp is not None:
            denom = b.micro_batch.value * dp.value
            if isinstance(b.global_batch.value, int) and denom > 0 and b.global_batch.value % denom == 0:
                b.grad_accum = derived(b.global_batch.value // denom, "global batch / (micro batch x DP)",
                                       b.global_batch, b.micro_batch, dp)

    def _precision(self) -> None:
        pr = self.spec.precision
        fp16 = self.get_or_default("fp16", False)
        bf16 = self.get_or_default("bf16", False)
        pr.fp16_enabled = fp16
        pr.bf16_enabled = bf16
        if bf16 is not None and bf16.value:
            pr.dtype = Value("bf16", bf16.provenance)
        elif fp16 is not None and fp16.value:
            pr.dtype = Value("fp16", fp16.provenance)
        elif fp16 is not None and bf16 is not None:
            pr.dtype = self.dflt("fp32")
        if self.given("fp8"):
            pr.fp8 = self.get("fp8")
        elif self.given("fp8_hybrid") and self.raw("fp8_hybrid"):
            pr.fp8 = self.value_of(self.parsed.settings["fp8_hybrid"], use="hybrid")
        elif self.given("fp8_e4m3") and self.raw("fp8_e4m3"):
            pr.fp8 = self.value_of(self.parsed.settings["fp8_e4m3"], use="e4m3")
        if self.given("fp8_param_gather"):
            pr.fp8_params = self.get("fp8_param_gather")
        if self.given("accumulate_allreduce_grads_in_fp32") and self.raw("accumulate_allreduce_grads_in_fp32"):
            pr.grad_accum_dtype = self.value_of(self.parsed.settings["accumulate_allreduce_grads_in_fp32"], use="fp32")
        elif self.given("main_grads_dtype"):
            pr.grad_accum_dtype = self.get("main_grads_dtype")
        elif self.ctx.dialect == CURRENT:
            pr.grad_accum_dtype = self.dflt("fp32")
        if self.ctx.dialect == CURRENT:
            pr.optimizer = self.get_or_default("optimizer", "adam")
        else:
            pr.optimizer = self.get("optimizer")

    def _memory(self) -> None:
        mem = self.spec.memory
        legacy = self.ctx.dialect != CURRENT
        if self.given("recompute_granularity"):
            mem.recompute = self.get("recompute_granularity")
        elif self.given("recompute_activations") and self.raw("recompute_activations"):
            mem.recompute = self.value_of(self.parsed.settings["recompute_activations"], use="selective")
        elif self.given("checkpoint_activations") and self.raw("checkpoint_activations"):
            # Megatron-DeepSpeed and older copies: full activation checkpointing of every layer chunk.
            mem.recompute = self.value_of(self.parsed.settings["checkpoint_activations"], use="full")
        else:
            mem.recompute = self.dflt("none")
        if self.given("recompute_method"):
            mem.recompute_method = self.get("recompute_method")
        elif legacy and mem.recompute is not None and mem.recompute.value == "full":
            mem.recompute_method = self.dflt("uniform")
        if self.given("recompute_num_layers"):
            mem.recompute_num_layers = self.get("recompute_num_layers")
        elif legacy and mem.recompute is not None and mem.recompute.value == "full":
            mem.recompute_num_layers = self.get_or_default("checkpoint_num_layers", 1)
        if self.given("recompute_modules"):
            mem.recompute_modules = self.get("recompute_modules")
        if self.given("use_flash_attn") and self.raw("use_flash_attn"):
            mem.flash_attention = self.get("use_flash_attn")
        elif self.given("use_flash_attn_v2") and self.raw("use_flash_attn_v2"):
            mem.flash_attention = self.get("use_flash_attn_v2")
        elif self.given("attention_backend"):
            s = self.parsed.settings["attention_backend"]
            if s.value == "flash":
                mem.flash_attention = self.value_of(s, use=True)
            elif s.value in ("unfused", "local"):
                mem.flash_attention = self.value_of(s, use=False)
        # Megatron-DeepSpeed hands --partition-activations and --checkpoint-in-cpu to
        # deepspeed.checkpointing.configure only under --deepspeed --deepspeed-activation-checkpointing
        # (megatron/initialize.py: "if args.deepspeed and args.deepspeed_activation_checkpointing:
        # setup_deepspeed_random_and_activation_checkpointing(args)"); without them Megatron's own
        # checkpointing runs and the flags do nothing
        ds_ckpt = (self.given("deepspeed_activation_checkpointing") and bool(self.raw("deepspeed_activation_checkpointing"))
                   and self.given("deepspeed") and bool(self.raw("deepspeed")))
        for dest, field_name in (("partition_activations", "partition_activations"), ("checkpoint_in_cpu", "cpu_checkpointing")):
            if not self.given(dest):
                continue
            value = self.get(dest)
            if value is not None and value.value and not ds_ckpt:
                value = derived(False, f"--{dest.replace('_', '-')} acts only with --deepspeed "
                                       "--deepspeed-activation-checkpointing (megatron/initialize.py)", value)
            setattr(mem, field_name, value)

        # the gated activation: Megatron-Core's MLP runs bias_swiglu_impl (one fused kernel saving only its input) when
        # bias_activation_fusion is on (--bias-swiglu-fusion, the default), else glu(): F.silu(x[0]) * x[1], whose
        # multiply keeps the silu output for its backward (core/transformer/mlp.py)
        gated = self.spec.model.gated_mlp
        if gated is not None and gated.value is True and self.ctx.dialect != CURRENT:
            # Megatron-DeepSpeed's ParallelMLP has only the unfused form: swiglu(x) = F.silu(x[0]) * x[1]
            # (megatron/model/transformer.py), no fusion flag
            mem.gated_activation = derived("unfused", "Megatron-DeepSpeed's swiglu: F.silu(x[0]) * x[1]", gated)
        elif gated is not None and gated.value is True:
            fusion = self.get_or_default("bias_swiglu_fusion", True)
            if fusion is not None and isinstance(fusion.value, bool):
                mem.gated_activation = derived("fused" if fusion.value else "unfused",
                                               "bias_swiglu_impl" if fusion.value else "unfused glu: F.silu(x[0]) * x[1]",
                                               fusion)
        # the loss: Megatron-Core's compute_language_model_loss (models/common/language_module/language_module.py)
        # calls TE's parallel_cross_entropy for cross_entropy_loss_fusion with cross_entropy_fusion_impl 'te', whose
        # triton kernel stores the gradient into the 16-bit logits in place (transformer_engine/pytorch/triton/
        # cross_entropy.py); the native fusion and the unfused path cast the logits to fp32 (calculate_logits_max)
        if self.given("cross_entropy_loss_fusion"):
            fused = self.get("cross_entropy_loss_fusion")
            impl = self.get_or_default("cross_entropy_fusion_impl", "native")
            if fused is not None and fused.value is True and impl is not None and impl.value == "te":
                mem.cross_entropy = derived("in-place", "Transformer Engine's fused cross entropy writes the gradient "
                                                        "into the 16-bit logits", fused, impl)
            elif fused is not None and impl is not None:
                mem.cross_entropy = derived("fp32", "Megatron's vocab-parallel cross entropy on fp32 logits", fused, impl)
        # Megatron-Core's CPU activation offloading (core/transformer/transformer_block.py: TE's
        # get_cpu_offload_context(cpu_offloading, cpu_offloading_num_layers, num_layers,
        # cpu_offloading_activations, cpu_offloading_weights, ...)); arguments.py turns cpu_offloading on for
        # --cpu-offloading-num-layers > 0, with cpu_offloading_activations True (model_parallel_config.py)
        if self.given("cpu_offloading_num_layers"):
            layers = self.get("cpu_offloading_num_layers")
            acts = self.parsed.settings.get("cpu_offloading_activations")
            if layers is not None and acts is not None and acts.value is False:
                layers = derived(0, "cpu_offloading_activations false: only weights are offloaded", layers)
            mem.cpu_offload_layers = layers

    def _run(self) -> None:
        r = self.spec.run
        r.train_iters = self.get("train_iters")
        r.train_samples = self.get("train_samples")
        # --use-checkpoint-args: load_args_from_checkpoint (megatron/training/checkpointing.py) overrides
        # the model shape and parallel flags with the checkpoint's
        r.shape_from_checkpoint = self.spec.settings.get("use_checkpoint_args")
        # ``$EXTRA_ARGS``, ``"$@"``: fields whose words are only known at launch, any flag among them; an
        # entry point not Megatron's own may give validate_args defaults of its own (``args_defaults``)
        hidden = list(dict.fromkeys(_short_text(f) for f in getattr(self.parsed, "passthrough", ())))
        if self.ctx.entry is None or not is_core_entry(self.ctx.entry):
            hidden.append(f"the defaults of entry point {self.ctx.entry or '(none)'}")
        if hidden and not self.spec.core_configs_only:  # a config that builds Megatron-Core's configs has no command line
            r.open_arguments = derived(hidden, "arguments only known at launch")
        if self.parsed.other_release:
            r.other_release = derived(list(self.parsed.other_release),
                                      "flags the assumed Megatron-LM release does not define")


def _short_text(f: Field) -> str:
    text = f.partial_text
    return text if len(text) <= 60 else text[:59] + "…"


def framework_facts(spec: TrainingSpec) -> None:
    """The Megatron settings (``spec.settings``, by argparse dest) the rules and the estimator need,
    as typed fields: each is read here, from Megatron's own argument names, and nowhere else."""
    settings = spec.settings
    spec.model.grouped_query_attention = settings.get("group_query_attention")
    p = spec.parallel
    p.uneven_pipeline = next((settings[d] for d in UNEVEN_PIPELINE if settings.get(d) is not None), None)
    extra = [(d, settings[d]) for d in ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")
             if settings.get(d) is not None and settings[d].value is True and not settings[d].provenance.uncertain]
    if extra:
        p.pipeline_split_extra = Value(["--" + d.replace("_", "-") for d, _ in extra], extra[0][1].provenance)
    _stage_layers(spec)
    p.virtual_stage_layers = settings.get("num_layers_per_virtual_pipeline_stage")
    p.virtual_stages = settings.get("num_virtual_stages_per_pipeline_rank")
    spec.memory.distribute_saved_activations = settings.get("distribute_saved_activations")
    r = spec.run
    r.fine_tuning = _fine_tuning(settings)
    r.task = settings.get("task")
    unmodelled = [[flag, why] for dest, flag, why in UNMODELLED_SETTINGS
                  if settings.get(dest) is not None and _truthy(settings[dest].value)]
    if unmodelled:
        r.unmodelled = derived(unmodelled, "settings the estimator does not model")
    r.other_model = next((derived([flag, why], f"{flag} is read by another model's training script", settings[dest])
                          for dest, flag, why in OTHER_MODEL_FLAGS
                          if settings.get(dest) is not None and settings[dest].value is not None), None)
    launch_only = [[flag, f"{flag} is only known at launch; an estimate would take Megatron's default for it"]
                   for flag in ("--" + d.replace("_", "-") for d in LAYOUT_DESTS
                                if d in spec.unresolved and settings.get(d) is None)]
    if launch_only:
        r.launch_only = derived(launch_only, "written but only known at launch")


def _stage_layers(spec: TrainingSpec) -> None:
    """The uneven split of the layers over the pipeline (and its chunk count when a layout states it)."""
    settings, p = spec.settings, spec.parallel
    dests = ("pipeline_model_parallel_layout", "decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers",
             "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")
    given = [settings[d] for d in dests if settings.get(d) is not None]
    if not given:
        return
    layers, pp, vpp = spec.model.num_layers, p.pipeline, p.virtual_pipeline
    split = pipeline_split({d: settings[d].value for d in dests if settings.get(d) is not None},
                           _plain_int(layers), _plain_int(pp), _plain_int(vpp))
    if split is None:
        return
    p.stage_layers = derived([list(chunks) for chunks in split.layers],
                             f"decoder layers per pipeline rank and chunk ({split.how})", *given, layers, pp)
    if split.chunks > 1 and vpp is None:
        p.virtual_pipeline = derived(split.chunks, "stages of --pipeline-model-parallel-layout / pipeline size",
                                     settings["pipeline_model_parallel_layout"], pp)


def _plain_int(entry: Value | None) -> int | None:
    value = None if entry is None else entry.value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _truthy(value: Any) -> bool:
    return value not in (None, False, "", 0, "false", "False")


def _fine_tuning(settings: dict[str, Value]) -> Value | None:
    """Why the run starts from trained weights: --finetune, --pretrained-checkpoint, --sft, or --load
    with --no-load-optim (weights without the optimizer: a new run from a checkpoint, not a resumed
    one). A bare --load is how pre-training resumes: not a sign."""
    def on(dest: str) -> Value | None:
        entry = settings.get(dest)
        return entry if entry is not None and _truthy(entry.value) else None

    for dest, flag in (("finetune", "--finetune"), ("pretrained_checkpoint", "--pretrained-checkpoint"), ("sft", "--sft")):
        entry = on(dest)
        if entry is not None:
            return Value(flag, entry.provenance)
    load, no_optim = on("load"), on("no_load_optim")
    if load is not None and no_optim is not None:
        return derived("--load with --no-load-optim", "weights without the optimizer: a new run", load, no_optim)
    return None


UNEVEN_PIPELINE = ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers",
                   "pipeline_model_parallel_layout", "hybrid_layer_pattern", "hybrid_override_pattern",
                   "encoder_num_layers", "decoder_num_layers", "num_layers_in_first_pipeline_stage",
                   "num_layers_in_last_pipeline_stage")
"""Megatron-LM settings that split the layers over the pipeline stages other than evenly."""

# Megatron-LM settings (argparse dests) whose models the estimator does not describe.
UNMODELLED_SETTINGS = (
    ("hybrid_layer_pattern", "--hybrid-layer-pattern", "Mamba layers of a hybrid model are not modelled"),
    ("hybrid_override_pattern", "--hybrid-override-pattern", "Mamba layers of a hybrid model are not modelled"),
    ("freeze_LM", "--freeze-LM", "a frozen language model keeps no gradients or optimizer states"),
    ("use_megatron_fsdp", "--use-megatron-fsdp", "Megatron-FSDP's sharding of parameters and gradients is not modelled"),
    ("use_torch_fsdp2", "--use-torch-fsdp2", "PyTorch FSDP2's sharding of parameters and gradients is not modelled"),
)

# Megatron-LM arguments that only another model's training script reads (megatron/training/arguments.py):
# --decoder-num-layers is the decoder of an encoder-decoder (T5), --bert-no-binary-head BERT's
# sentence-order head, --img-h / --img-w a vision encoder's input. A file that states them (a CI
# test case's model_config.yaml names no entry point) describes that model, not a GPT decoder.
OTHER_MODEL_FLAGS = (
    ("decoder_num_layers", "--decoder-num-layers", "an encoder-decoder (T5) model: the estimator models a GPT decoder "
                                                   "(no decoder cross-attention)"),
    ("bert_binary_head", "--bert-no-binary-head", "an encoder (BERT) model: the estimator models a GPT decoder "
                                                  "(no masked-LM and pooler heads)"),
    ("img_h", "--img-h", "the vision encoder and multimodal inputs are not modelled"),
)

# Settings that decide memory and time per GPU: written but unknown statically (`$SLURM_GPUS_PER_NODE`),
# the estimate would silently use the framework default (swiss-ai's 70B read as TP 1: a false OOM).
LAYOUT_DESTS = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
                "expert_model_parallel_size", "micro_batch_size", "num_layers", "hidden_size", "seq_length")


def _host_slots(text: str) -> dict[str, int | None] | None:
    """``worker-1:0,1@worker-2`` -> {"worker-1": 2, "worker-2": None (all its slots)}; None when not readable."""
    out: dict[str, int | None] = {}
    for part in text.split("@"):
        name, colon, slots = part.partition(":")
        if not name.strip():
            return None
        out[name.strip()] = len([x for x in slots.split(",") if x.strip()]) if colon else None
    return out


def _select_hosts(hosts: list, include: Field | None, exclude: Field | None) -> list:
    """The hostfile's hosts after DeepSpeed's --include / --exclude (``host[:slot,slot]@host``):
    include keeps the named hosts (only the listed slots when given), exclude drops a named host or
    its listed slots. An option trainlint cannot read leaves no hosts (the world stays unknown)."""
    from dataclasses import replace

    if include is not None:
        wanted = _host_slots(include.text or "")
        if wanted is None:
            return []
        hosts = [replace(h, slots=wanted[h.name] or h.slots) for h in hosts if h.name in wanted]
    if exclude is not None:
        dropped = _host_slots(exclude.text or "")
        if dropped is None:
            return []
        hosts = [replace(h, slots=h.slots - (dropped[h.name] or h.slots)) if h.name in dropped else h for h in hosts]
        hosts = [h for h in hosts if h.slots > 0]
    return hosts


def _count_include(text: str) -> int | None:
    """``localhost:0,1,2`` -> 3 GPUs on that host (the first host when several are listed)."""
    host = text.split("@")[0]
    if ":" not in host:
        return None
    slots = host.split(":", 1)[1]
    try:
        return len([s for s in slots.split(",") if s.strip() != ""])
    except ValueError:
        return None


def _doubt_of(fields: list[Field]) -> tuple[str | None, bool]:
    """:func:`_variable_and_doubt`, answered without its loops for one value of one piece (most flags)."""
    if len(fields) == 1:
        only = fields[0]
        segs = only.segs
        if len(segs) == 1:
            seg = segs[0]
            return ((seg.env or None) if (seg.text or seg.unknown) else None), (only.uncertain or seg.uncertain)
    return _variable_and_doubt(fields)


def _variable_and_doubt(fields: list[Field]) -> tuple[str | None, bool]:
    """(the variable's name when the fields' value came entirely from the user's declared
    environment, whether some of them was assigned inside a branch trainlint could not decide or
    comes from a scheduler variable's default), in one pass over the pieces."""
    first: str | None = None
    from_env = True
    uncertain = False
    for f in fields:
        uncertain = uncertain or f.uncertain
        for seg in f.segs:
            uncertain = uncertain or seg.uncertain
            if from_env and (seg.text or seg.unknown):
                if not seg.env:
                    from_env = False
                elif first is None:
                    first = seg.env
    return (first if from_env else None), uncertain


# ------------------------------------------------------------------------------------ engine

MEGATRON_ARGS_PY = "megatron/training/arguments.py"
MDS_ARGS_PY = "megatron/arguments.py (Megatron-DeepSpeed)"


_CORE_RELEASE = re.compile(r"^core_[vr](\d+)\.(\d+)")


def _moe_dispatcher_generation(spec: TrainingSpec) -> None:
    """Engine facts of the MoE token dispatcher that changed between Megatron-Core releases, set only where the run's
    target names a release (``framework = {megatron = "core_v0.6.0"}``; an unknown checkout or upstream: the newest):

    * the router's weights multiply the experts' outputs before 0.12 (core_r0.11 token_dispatcher.py: the allgather
      dispatcher's ``hidden_states * permuted_probs`` before ``unpermute``, the alltoall one's ``unpermute(...,
      probs=self.probs)``; core_v0.6 ``unpermuted_local_hidden * scores``), from 0.12 the experts apply them to their
      activation (experts.py ``activation_func_with_probs``);
    * the allgather dispatcher (Megatron's default ``--moe-token-dispatcher-type``) permutes with ``torch.gather``
      over expanded indices and unpermutes with ``scatter`` / ``scatter_add`` into zero-filled tensors up to 0.8;
      0.9 moved it to moe_utils.permute / unpermute."""
    target = spec.target
    version = getattr(target, "version", None) if target is not None else None
    m = _CORE_RELEASE.match(str(version or ""))
    if m is None:
        return
    release = (int(m.group(1)), int(m.group(2)))
    why = f"Megatron-Core {version} (the run's target)"
    spec.engine.moe_probs_on_output = derived(release < (0, 12), f"{why}: the router's weights multiply the experts' "
                                                                 "outputs before 0.12, their activation from 0.12")
    dispatcher = _setting(spec, "moe_token_dispatcher_type")
    allgather = dispatcher is None or str(dispatcher.value) == "allgather"
    spec.engine.moe_unfused_permute = derived(allgather and release <= (0, 8),
                                              f"{why}: the allgather dispatcher's gather / scatter permutation up to "
                                              "0.8, moe_utils.permute from 0.9")


_HYBRIDEP_FUSION_FLAG_RELEASE = (0, 18)
"""The first Megatron-Core release whose HybridEP path permutes outside the exchange unless
``--moe-permute-fusion-into-hybridep`` is given (core_v0.18.0 transformer_config.py
``moe_permute_fusion_into_hybridep``, default False); core_v0.16 / v0.17 always fuse it (token_dispatcher.py
_HybridEPManager: "Permute tokens for communication, perform all-to-all communication, and permute tokens for
experts in single step", fused_a2a.hybrid_ep_dispatch "fused dispatch for permute + dispatch a2a + permute")."""


def _moe_dispatcher(spec: TrainingSpec) -> None:
    """``engine.moe_dispatcher`` as the run's flags select Megatron-Core's token dispatcher
    (``--moe-token-dispatcher-type``; not set for the default, ``allgather``; ``flex`` with ``--moe-flex-dispatcher-backend``
    ``deepep`` (default) or ``hybridep``, or ``--moe-enable-deepep``). HybridEP with the permutation inside its
    kernels is ``flex-fused``: always in the releases before 0.18, from 0.18 with
    ``--moe-permute-fusion-into-hybridep`` (an unknown checkout or upstream: the newest)."""
    chosen = _setting(spec, "moe_token_dispatcher_type")
    kind = str(chosen.value).lower() if chosen is not None else ""
    if chosen is None or kind not in ("allgather", "alltoall", "flex"):
        return  # Megatron's default, allgather: the estimator's own default
    if kind != "flex":
        spec.engine.moe_dispatcher = derived(kind, f"--moe-token-dispatcher-type {kind}", chosen)
        return
    backend = _setting(spec, "moe_flex_dispatcher_backend")
    if backend is None or str(backend.value).lower() != "hybridep":
        spec.engine.moe_dispatcher = derived("flex", "--moe-token-dispatcher-type flex with DeepEP: its dispatch, then "
                                                     "one permute of the received tokens into expert order", chosen)
        return
    m = _CORE_RELEASE.match(str(getattr(spec.target, "version", None) or "") if spec.target is not None else "")
    release = (int(m.group(1)), int(m.group(2))) if m else None
    flag = _on(spec, "moe_permute_fusion_into_hybridep")
    if flag is not None or (release is not None and release < _HYBRIDEP_FUSION_FLAG_RELEASE):
        why = ("--moe-permute-fusion-into-hybridep" if flag is not None else
               f"Megatron-Core {release[0]}.{release[1]} (the run's target) always fuses it" if release else "")
        spec.engine.moe_dispatcher = derived("flex-fused", "HybridEP flex dispatcher with the permutation fused into its "
                                                           f"dispatch and combine kernels ({why})", flag or backend)
        return
    spec.engine.moe_dispatcher = derived("flex", "HybridEP flex dispatcher with the permutation as kernels of their "
                                                 "own (--moe-permute-fusion-into-hybridep not given)", backend)


_PATTERN_TERM = re.compile(r"^\[\s*([01](?:\s*,\s*[01])*)\s*,?\s*\](?:\s*\*\s*(\d{1,6}))?$")


def moe_layer_pattern(text: str) -> list[int] | None:
    """The per-layer MoE pattern of Megatron's ``--moe-layer-freq`` list form (``"([0]*3+[1]*58)"``,
    ``"[1,0,1,0]"``: megatron/training/arguments.py moe_freq_type evaluates it as Python), read as a literal sum of
    repeated 0/1 lists without evaluating anything; None for any other text."""
    body = text.strip()
    while body.startswith("(") and body.endswith(")"):
        body = body[1:-1].strip()
    out: list[int] = []
    for term in body.split("+"):
        m = _PATTERN_TERM.match(term.strip())
        if m is None:
            return None
        items = [int(x) for x in m.group(1).replace(" ", "").split(",")]
        out.extend(items * int(m.group(2) or 1))
        if len(out) > 100_000:
            return None
    return out or None


def _setting(spec: TrainingSpec, dest: str) -> Value | None:
    entry = spec.settings.get(dest)
    return entry if entry is not None and entry.value is not None else None


def _on(spec: TrainingSpec, dest: str) -> Value | None:
    """The setting when it is written and true (a store_true flag given)."""
    entry = _setting(spec, dest)
    return entry if entry is not None and entry.value is True else None


def deepspeed_runs(spec: TrainingSpec) -> bool:
    """Megatron-DeepSpeed hands the model to DeepSpeed's engine only with ``--deepspeed``
    (megatron/training.py setup_model_and_optimizer: ``if args.deepspeed: deepspeed.initialize``),
    as do the DeepSpeed-integrated Megatron-LM v1.1.5 copies (DeepSpeedExamples, legacy dialect)."""
    return spec.dialect in (DEEPSPEED, LEGACY) and _on(spec, "deepspeed") is not None


def set_engine(spec: TrainingSpec) -> None:
    """``spec.engine`` as the run's engine has it: DeepSpeed's (ZeRO / BF16_Optimizer, from the
    ``--deepspeed_config`` JSON merged into the spec) for a Megatron-DeepSpeed run with
    ``--deepspeed``, else Megatron's own optimizer. Attention, MoE layout and the batch are
    Megatron's in both cases (its model code and its batch flags)."""
    spec.engine = EngineSpec()
    e = spec.engine
    current = spec.dialect == CURRENT
    note = DEFAULT_NOTES.get(spec.dialect, DEFAULT_NOTES[CURRENT])
    e.deepspeed_flag = spec.settings.get("deepspeed")  # --deepspeed as written, whatever the dialect
    if deepspeed_runs(spec):
        from trainlint.adapters.deepspeed.adapter import deepspeed_engine

        pipe = spec.parallel.pipeline_engine
        deepspeed_engine(spec, prefix="deepspeed:", pipeline=bool(pipe is not None and pipe.value))
    else:
        _megatron_optimizer(spec, note)
    ep_overlap = _setting(spec, "overlap_moe_expert_parallel_comm")
    e.ep_overlap = ep_overlap if ep_overlap is not None and isinstance(ep_overlap.value, bool) else \
        default(False, f"{note}: expert all-to-all not overlapped (--overlap-moe-expert-parallel-comm off)")
    if current:
        _moe_dispatcher_generation(spec)
        _moe_dispatcher(spec)
    uly = _setting(spec, "ds_sequence_parallel_size") if spec.dialect == DEEPSPEED else None
    if uly is not None and type(uly.value) is int and uly.value > 1 and _setting(spec, "context_parallel_size") is None:
        # DeepSpeed-Ulysses (deepspeed/sequence/layer.py DistributedAttention): all-to-alls of Q, K, V before
        # the attention core and of its output after it, over the sequence-parallel group
        e.sequence_exchange = derived("all-to-all", "DeepSpeed-Ulysses sequence parallelism (--ds-sequence-parallel-size): "
                                                    "all-to-all of Q, K, V and the attention output", uly)
    # attention kernel
    flash_flags = [(d, _on(spec, d)) for d in ("use_flash_attn", "use_flash_attn_v2", "use_flash_attn_triton",
                                               "use_flash_attn_builder")]
    flash_flag = next(((d, v) for d, v in flash_flags if v is not None), None)
    backend = _setting(spec, "attention_backend")
    impl = _setting(spec, "transformer_impl")
    if flash_flag is not None:
        # Megatron-DeepSpeed's --use-flash-attn-triton runs flash_attn.flash_attn_triton, the Triton kernel, whatever
        # else is given (megatron/model/transformer.py ParallelAttention: ``if self.use_flash_attn_triton:
        # FlashSelfAttentionTriton``); the other flags flash-attn's CUDA kernels
        triton = _on(spec, "use_flash_attn_triton")
        e.attention = Value("flash-triton", triton.provenance) if triton is not None else \
            Value("flash", flash_flag[1].provenance)
    elif current and backend is not None and str(backend.value) in ("unfused", "local"):
        e.attention = Value("unfused", backend.provenance)
    elif current and backend is not None and str(backend.value) in ("flash", "fused"):
        e.attention = Value("flash", backend.provenance)
    elif current and impl is not None and str(impl.value) == "local":
        e.attention = derived("unfused", "--transformer-impl local: Megatron's own DotProductAttention keeps the "
                                         "softmax scores (no fused attention kernel)", impl)
    elif current:
        e.attention = default("flash", f"Megatron-LM default --attention-backend auto: Transformer Engine picks a "
                                       f"flash or cuDNN fused attention kernel ({MEGATRON_ARGS_PY})")
    else:
        e.attention = default("unfused", f"{note}: attention scores are materialised (fused softmax at most) "
                                         "unless --use-flash-attn* is given")
    # MoE layout
    if current:
        freq = _setting(spec, "moe_layer_freq")
        pattern = moe_layer_pattern(freq.value) if freq is not None and isinstance(freq.value, str) else None
        if freq is not None and type(freq.value) is int and freq.value >= 1:
            e.moe_layer_interval = freq
        elif pattern is not None:
            e.moe_layer_pattern = derived(pattern, "--moe-layer-freq's list of MoE (1) and dense (0) layers, read as "
                                                   "a literal (never evaluated)", freq)
            e.moe_layer_interval = derived(1, "--moe-layer-freq lists the MoE layers (engine.moe_layer_pattern)", freq)
        else:
            e.moe_layer_interval = default(1, f"Megatron-LM default --moe-layer-freq 1: every layer is a MoE layer "
                                              f"({MEGATRON_ARGS_PY})")
    elif spec.dialect == DEEPSPEED:
        interval = _setting(spec, "expert_interval")
        if interval is not None and type(interval.value) is int and interval.value >= 1:
            e.moe_layer_interval = interval
        else:
            e.moe_layer_interval = default(2, f"Megatron-DeepSpeed default --expert-interval 2: every second layer "
                                              f"is a MoE layer ({MDS_ARGS_PY})")
    e.deepspeed_micro_batch = spec.settings.get("deepspeed:train_micro_batch_size_per_gpu")
    e.batch_owner = default("megatron", "Megatron's batch flags: the global batch is micro x DP x microbatches "
                                        "(megatron/core/num_microbatches_calculator.py); Megatron-DeepSpeed sets "
                                        "DeepSpeed's batch from them each step (set_train_batch_size)")


def _megatron_optimizer(spec: TrainingSpec, note: str) -> None:
    e = spec.engine
    dist = spec.parallel.distributed_optimizer
    on = dist is not None and dist.value is True
    e.optimizer_owner = derived("megatron", "Megatron's own optimizer (no DeepSpeed engine)", dist)
    e.shard_stage = derived(1 if on else 0, "--use-distributed-optimizer shards the fp32 master weights and optimizer "
                                            "states over data x context parallel ranks" if on else
                            "no --use-distributed-optimizer: every rank keeps the whole optimizer", dist)
    e.shard_group = default("dp_cp", "Megatron's distributed optimizer shards over the data-parallel group with "
                                     "context parallelism (megatron/core/optimizer, docs dist_optimizer.md)")
    fsdp = _on(spec, "use_megatron_fsdp") or _on(spec, "use_torch_fsdp2")
    if fsdp is not None:
        # Megatron-FSDP shards what --data-parallel-sharding-strategy says (default optim_grads_params:
        # ZeRO-3-like); torch FSDP2 shards parameters, gradients and optimizer states.
        strategy = _setting(spec, "data_parallel_sharding_strategy")
        stages = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}
        if _on(spec, "use_megatron_fsdp") is not None and strategy is not None and str(strategy.value) in stages:
            e.shard_stage = derived(stages[str(strategy.value)], f"--use-megatron-fsdp with --data-parallel-sharding-"
                                                                 f"strategy {strategy.value}", fsdp, strategy)
        else:
            e.shard_stage = derived(3, "Megatron-FSDP (default --data-parallel-sharding-strategy optim_grads_params) / "
                                       "torch FSDP2: parameters, gradients and optimizer states sharded "
                                       f"({MEGATRON_ARGS_PY})", fsdp)
    dtype_v = spec.precision.dtype
    dtype = dtype_v.value if dtype_v is not None else None
    bf16_reduce = _on(spec, "grad_reduce_in_bf16")
    main = _setting(spec, "main_grads_dtype")
    fp32_acc = _on(spec, "accumulate_allreduce_grads_in_fp32")
    if dtype == "bf16":
        if bf16_reduce is not None:
            e.grad_dtype = Value("bf16", bf16_reduce.provenance)
        elif main is not None and str(main.value) in ("bf16", "bfloat16"):
            e.grad_dtype = Value("bf16", main.provenance)
        else:
            e.grad_dtype = derived("fp32", f"bf16: Megatron accumulates and all-reduces gradients in fp32 main grads "
                                           f"({MEGATRON_ARGS_PY}: accumulate_allreduce_grads_in_fp32)", dtype_v)
    elif dtype == "fp16":
        e.grad_dtype = (Value("fp32", fp32_acc.provenance) if fp32_acc is not None else
                        derived("fp16", "fp16: gradients in fp16 (without --accumulate-allreduce-grads-in-fp32)", dtype_v))
    elif dtype == "fp32":
        e.grad_dtype = derived("fp32", "fp32 training", dtype_v)
    e.offload_optimizer = default("none", f"{note}: no optimizer offload")
    e.offload_params = default("none", f"{note}: no parameter offload")
    overlap = _setting(spec, "overlap_grad_reduce")
    e.dp_overlap = overlap if overlap is not None and isinstance(overlap.value, bool) else \
        default(False, f"{note}: --overlap-grad-reduce off")
    tp = _setting(spec, "tp_comm_overlap")
    e.tp_overlap = tp if tp is not None and isinstance(tp.value, bool) else default(False, f"{note}: --tp-comm-overlap off")
    p2p = _setting(spec, "overlap_p2p_comm")
    e.p2p_overlap = p2p if p2p is not None and isinstance(p2p.value, bool) else \
        default(spec.dialect == CURRENT, f"{note}: overlap_p2p_comm on (--no-overlap-p2p-communication turns it off; "
                                         "the interleaved schedule overlaps its sends with compute)"
                if spec.dialect == CURRENT else f"{note}: pipeline sends not overlapped")
