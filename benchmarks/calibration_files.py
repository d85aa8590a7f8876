"""A calibration row written as the files its user would write, and the `trainlint estimate` command line.

One writer per framework, the same for every row of that framework, and each writes only what the
row states (nothing is filled in to make a row "fit"):

* Megatron-LM runs: a bash launch script (``torchrun ... pretrain_gpt.py --num-layers ...``);
* Megatron-DeepSpeed runs (BLOOM): the launch script with ``--deepspeed --deepspeed_config ds_config.json
  --zero-stage N`` and that DeepSpeed JSON, as the tr11 scripts wrote them;
* GPT-NeoX runs: the run's YAML;
* Hugging Face Trainer + DeepSpeed runs: the DeepSpeed JSON, with the model given to trainlint as the
  model's Hugging Face ``config.json`` (``trainlint estimate ds_config.json --model config.json``), as the
  estimate's own message tells a user to do for a DeepSpeed JSON, which names no model.

The GPU is given as a user gives it: ``--gpu ID`` of a catalog part (A800, H800, B200 ... GB300 and the
500 W H100 are catalog parts).

The vocabulary is a property of the tokenizer, which none of these formats states as a number: the
scripts give it the way each framework lets a user state it (Megatron ``--vocab-size``, NeoX
``padded_vocab_size``); for rows whose source does not state it, the vocabulary comes from the row's
``vocab_hint`` or, failing that, from ``--model PRESET`` of the model the row names (see ``vocab_of``).

Rows of frameworks trainlint reads no file of (Composer/llm-foundry, nanotron, torchtitan) are written as
the nearest user path, a Megatron-LM launch (``TRANSLATIONS`` states the difference per family);
low-confidence rows whose layout is unpublished raise :class:`NoUserPath`: they are reported apart.
Megatron-Bridge perf-recipe rows get the flags the release's recipes set (``bridge_recipe``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml


class Skip(Exception):
    """The row lacks a fact a user would have to write (micro batch, precision ...)."""


class NoUserPath(Skip):
    """trainlint has no adapter for the file format this run's users write (reported apart from Skip)."""


@dataclass
class Case:
    """The files of one row and the ``trainlint estimate`` arguments, paths relative to the case's directory."""

    row: dict
    how: str                                  # megatron-lm | megatron-deepspeed | neox | deepspeed+hf
    files: dict[str, str] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    memory_unwritten: str = ""
    """Why the written launch cannot carry the run's memory policy (empty: it does): the run's "fits" verdict is
    then one on the written files, not on the run, and the benchmark counts it apart."""


# --------------------------------------------------------------------------- facts of a row


TRANSLATIONS = {
    "llm-foundry": "Composer FSDP FULL_SHARD written as the nearest user path, a Megatron-DeepSpeed launch with DeepSpeed "
                   "ZeRO-3 (parameters, gradients and optimizer states sharded over DP); MPT's ALiBi and low-precision "
                   "LayerNorm are not Megatron flags (the positions cost nothing in the estimate); its attn_impl triton "
                   "(a copy of flash-attn 1.x's Triton kernel) as Megatron-DeepSpeed's --use-flash-attn-triton, which "
                   "runs that kernel",
    "nanotron": "nanotron TP/PP/DP layout written as Megatron-LM flags (ZeRO-1 = --use-distributed-optimizer, TP mode "
                "REDUCE_SCATTER = --sequence-parallel, its dropout-free Llama = --hidden-dropout 0 --attention-dropout 0); "
                "nanotron's own kernels and its 1F1B engine are Megatron's in the estimate. Not carried by any Megatron "
                "flag: with accumulate_grad_in_fp32 (the benchmark config) nanotron keeps each micro-batch's bf16 "
                "gradients until its backward ends before adding them to the fp32 buffer (optim/gradient_accumulator.py "
                "FP32GradientAccumulator.backward), and at ZeRO 0 wraps the model in torch DDP whose bf16 buckets sit "
                "beside those gradients (trainer.py _init_model, helpers.py init_optimizer_and_grad_accumulator): "
                "2 bytes per parameter more than Megatron at ZeRO 1 at the end of a backward, 4 at ZeRO 0. Its SwiGLU is "
                "GLUActivation (src/nanotron/models/llama.py at c252843: act(gate_states) * up_states on a split of the merged "
                "gate_up output), unfused, which keeps the SiLU output for the multiply: --no-bias-swiglu-fusion, "
                "Megatron-Core's unfused glu() that keeps the same tensors",
    "torchtitan": "torchtitan FSDP2 (+TP/CP) written as a Megatron-DeepSpeed launch with ZeRO-3 (with PP, which ZeRO-3 "
                  "does not take: Megatron-LM with the distributed optimizer; CP as DeepSpeed-Ulysses "
                  "--ds-sequence-parallel-size, the same split of the activations with an all-to-all instead of "
                  "torchtitan's ring); torchtitan's op-level selective recompute as Megatron's selective recompute",
}
"""Frameworks trainlint reads no file of, each written as the nearest user path (a Megatron-LM launch),
with the difference stated (the row's note)."""


def translation_of(row: dict) -> tuple[str, str] | None:
    """(family, the translation stated) when the row's framework has no adapter and is written as the
    nearest user path; None when trainlint reads the framework's own files."""
    p = row["parallel"]
    text = f"{p.get('framework') or ''} {row.get('source') or ''} {row['id']}".lower()
    for key in ("llm-foundry", "nanotron", "torchtitan"):
        if key in text or (key == "llm-foundry" and "composer" in text):
            return key, TRANSLATIONS[key]
    return None


OP_LEVEL_SAC = ("torchtitan op-level selective activation checkpointing (matmul outputs saved, the rest recomputed): "
                "no format trainlint reads states it; the launch's selective recompute keeps what no recompute keeps")


def triton_attention(row: dict) -> bool:
    """An llm-foundry row that ran ``attn_impl: triton``: its scripts/train/benchmarking/submit_benchmarks.py defaults
    ``--attn_impl`` to ``triton`` and sweep.sh passes none (commit 5e85bd6, the tables' source), as the row's source
    states."""
    text = f"{row.get('source') or ''} {row.get('notes') or ''}"
    return "attn_impl default 'triton'" in text or "attn_impl: triton" in text


def op_level_sac(row: dict) -> bool:
    """A torchtitan run with its op-level selective activation checkpointing (the row's "selective")."""
    translated = translation_of(row)
    return translated is not None and translated[0] == "torchtitan" and recompute_of(row) == "selective"


def framework_of(row: dict) -> str:
    """Which engine ran the row, from what the row says (``parallel.framework`` or its source); a framework
    with no adapter is written as its nearest user path (:func:`translation_of`)."""
    p = row["parallel"]
    text = f"{p.get('framework') or ''} {row.get('source') or ''} {row['id']}".lower()
    if translation_of(row) is not None:
        sharded = int(p.get("zero_stage") or 0) >= 3 or p.get("fsdp_degree") or p.get("fsdp")
        if sharded and int(p.get("cp") or 1) > 1 and int(p.get("pp") or 1) > 1:
            raise NoUserPath("FSDP with context and pipeline parallelism: no fully sharded engine trainlint reads "
                             "takes both")
        if op_level_sac(row) and row["kind"] == "peak_memory_gb":
            # torchtitan's op-level SAC saves matmul outputs and recomputes the rest (every other mm): no
            # format trainlint reads states that policy, and the memory depends on it (throughput rows stay)
            raise NoUserPath("torchtitan op-level selective activation checkpointing: no equivalent in a format "
                             "trainlint reads (memory rows only)")
        if sharded and int(p.get("pp") or 1) == 1:
            return "megatron-deepspeed"  # FSDP full-shard as DeepSpeed ZeRO-3 (Megatron-DeepSpeed --zero-stage 3)
        return "megatron-lm"
    if re.search(r"(^|-)(lora|peft)(-|$)", str(row["id"]).lower()):
        # Megatron-Bridge's LoRA recipes freeze the base model: no gradients, optimizer states or weight-gradient
        # GEMMs for it. No Megatron-LM flag states that; written as a launch it would be a full fine-tune
        raise NoUserPath("LoRA fine-tuning (a frozen base model): no Megatron-LM launch states it")
    if (p.get("fsdp") or p.get("fsdp_degree")) and "megatron" not in text:
        raise NoUserPath("PyTorch FSDP training script: no trainlint adapter")
    if "hf transformers" in text:
        return "deepspeed+hf"
    if "megatron-deepspeed" in text:
        return "megatron-deepspeed"
    if "gpt-neox" in text or "neox" in row["id"]:
        return "neox"
    if "megatron" in text or "narayanan" in text:
        return "megatron-lm"
    raise NoUserPath(f"framework not stated ({p.get('framework')!r})")


def _need(value: Any, what: str) -> Any:
    if value is None:
        raise Skip(f"{what} not stated")
    return value


def vocab_of(row: dict) -> tuple[int | None, str | None, str]:
    """(vocabulary, preset to pass with --model instead, note): the row's vocab, else the padded size its
    ``vocab_hint`` states, else the model preset whose name the row's id names (the user's --model)."""
    m = row["model"]
    if m.get("vocab"):
        return int(m["vocab"]), None, ""
    if m.get("vocab_assumed_by_source"):
        n = int(m["vocab_assumed_by_source"])
        return n, None, f"vocab {n:,} as the source's own model assumes it (the measured runs do not state it)"
    hint = str(m.get("vocab_hint") or "")
    padded = re.search(r"padded to (\d{4,})", hint)
    if padded:
        return int(padded.group(1)), None, f"vocab {padded.group(1)} from the row's vocab_hint"
    preset = _preset_named_by(row["id"])
    if preset:
        return None, preset, f"vocab from --model {preset}, the model the row names (its vocabulary is null)"
    raise Skip("vocabulary size unknown")


def _preset_named_by(row_id: str) -> str | None:
    """The longest model-preset id that the row's id spells (ignoring case and punctuation): the model a
    user would pass with --model for the tokenizer, as the estimate's message asks."""
    from trainlint.presets.models import load_model_presets

    squash = lambda text: re.sub(r"[^a-z0-9]", "", text.lower())  # noqa: E731
    name = squash(row_id)
    hits = [pid for pid in load_model_presets() if squash(pid) and squash(pid) in name]
    return max(hits, key=len) if hits else None


GPU_NAMES = (("GB300", "gb300"), ("GB200", "gb200"), ("B300", "b300"), ("B200", "b200"), ("H800", "h800-sxm"),
             ("H200", "h200"), ("H20", "h20"), ("A800", "a800-sxm4-80gb"), ("MI300X", "mi300x"))
"""The catalog part a row's GPU names (the first match, longest names first)."""


def gpu_of(row: dict) -> tuple[str, dict | None, str]:
    """(id, custom table or None, note): the catalog id of the row's GPU, or a custom GPU the user declares."""
    text = str(row["gpu"])
    for name, gpu in GPU_NAMES:
        if re.search(rf"\b{name}\b", text):
            return gpu, None, ""
    if re.search(r"A100", text):
        mem = re.search(r"(40|80)\s*GB", text)
        if not mem:
            return "a100-80gb", None, "A100 memory variant not stated: the 80 GB part (2.0 TB/s) assumed"
        return f"a100-{mem.group(1)}gb", None, ""
    if re.search(r"H100", text):
        if re.search(r"500\s*W", text):
            return "h100-sxm-500w", None, ""
        mem = re.search(r"(\d+)\s*GB", text)
        if mem and mem.group(1) != "80":
            raise NoUserPath(f"{text}: not a catalog part")
        return "h100-sxm", None, ""
    raise Skip(f"GPU {text!r} not in the catalog")


def precision_of(row: dict) -> str:
    if row.get("precision") is None and "vtrain" in row["id"].lower():
        return "fp16"  # the source's notes: vTrain profiles in fp16 (see precision_note)
    text = str(_need(row.get("precision"), "precision")).lower()
    if "fp4" in text:
        raise Skip("NVFP4: trainlint reads no FP4 recipe flag and has no FP4 GEMM term")
    if "fp8" in text or "float8" in text:
        return "fp8"
    if "bf16" in text:
        return "bf16"
    if "fp16" in text:
        return "fp16"
    raise Skip(f"precision {row.get('precision')!r} not understood")


def zero_of(row: dict) -> int:
    """The ZeRO stage written: the row's, or 3 for an FSDP full-shard run written as DeepSpeed."""
    p = row["parallel"]
    if translation_of(row) is not None and (p.get("fsdp_degree") or p.get("fsdp")):
        return 3
    return int(p.get("zero_stage") or 0)


def zero_unknown(row: dict) -> bool:
    """A Megatron-DeepSpeed row whose ZeRO stage its source does not publish (vTrain: ``zero_stage`` null): its
    DeepSpeed config is not written (nothing in it is known), and the estimate assumes the stage and says so."""
    p = row["parallel"]
    return (p.get("zero_stage") is None and translation_of(row) is None and not (p.get("fsdp") or p.get("fsdp_degree"))
            and "megatron-deepspeed" in f"{p.get('framework') or ''} {row.get('source') or ''}".lower())


def recompute_of(row: dict) -> str:
    """none | selective | full, from the row's words ("selective (--recompute-activations)")."""
    text = str(row.get("recompute") or "none").lower()
    for mode in ("full", "selective"):
        if text.startswith(mode):
            return mode
    return "none"


def bridge_recipe(row: dict) -> bool:
    """A Megatron-Bridge perf-recipe row: the table restates the layout, not the recipe's flags."""
    return "megatron-bridge" in f"{row['parallel'].get('framework') or ''} {row.get('source') or ''}".lower()


def no_dropout(row: dict) -> bool:
    """The model the row trains has no dropout, which a Megatron launch states as ``--hidden-dropout 0
    --attention-dropout 0`` (Megatron's default 0.1 keeps a mask per residual branch): Megatron-Bridge's
    model bridges set ``provider.hidden_dropout = 0.0`` for every model of the perf recipes (llama_bridge.py,
    qwen3_bridge.py, qwen3_moe_bridge.py, deepseek_v3_bridge.py, gpt_oss_bridge.py, kimi_bridge.py at
    067f987); llm-foundry's MPTConfig defaults resid_pdrop, emb_pdrop and attn_pdrop to 0.0, which its
    benchmark YAMLs keep; nanotron's Llama has no dropout module at all (src/nanotron/models/llama.py at c252843,
    the commit of the benchmark rows: its attention calls flash_attn_varlen_func with ``dropout_p=0.0`` and the
    decoder layer is norm, attention, residual add, norm, MLP, residual add)."""
    translated = translation_of(row)
    return bridge_recipe(row) or (translated is not None and translated[0] in ("llm-foundry", "nanotron"))


def bridge_split(row: dict, layers: int, pp: int, vpp: int) -> str | None:
    """The pipeline split a Megatron-Bridge perf recipe sets for an uneven model, as the Megatron-LM flag
    that states it (Megatron-Bridge at 067f987), or None for an even split:

    * Llama-3.1-405B and Qwen3-235B-A22B count the embedding and the loss as one layer each
      (recipes/llama/h100/llama3.py and recipes/qwen/h100/qwen3_moe.py: account_for_embedding_in_pipeline_split
      and account_for_loss_in_pipeline_split = True): (layers + 2) over PP x VPP virtual stages;
    * DeepSeek-V3 and Kimi-K2 (61 layers) take a layout per (PP, VPP) (recipes/deepseek/h100/deepseek_v3.py
      _get_deepseek_v3_pipeline_layout, recipes/kimi/..._get_kimi_k2_pipeline_layout; the perf recipes'
      explicit "Et*4|(t*4|)*14tmL" and "Et|(tt|)*30mL"): every stage ceil(layers / stages) layers, the
      embedding's first and the loss's last stage taking the rest. The MTP layer of those layouts is left out:
      the rows do not state that MTP was on."""
    stages = pp * vpp
    if pp <= 1 or (layers % pp == 0 and (layers // pp) % vpp == 0):
        return None
    arch = str(row["model"].get("arch") or "").lower()
    if ("llama" in arch or "qwen3" in arch) and (layers + 2) % stages == 0:
        return "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"
    if "deepseek" in arch or "kimi" in arch:
        k = -(-layers // stages)
        if k * (stages - 1) <= layers:
            first, last = k, layers - k * (stages - 1)
        else:
            first, last = layers - k * (stages - 2), 0
        if first < 0 or stages < 2:
            return None
        middle = f"(t*{k}|)*{stages - 2}" if stages > 2 else ""
        return f'--pipeline-model-parallel-layout "Et*{first}|{middle}' + (f"t*{last}" if last else "") + 'L"'
    return None


def bridge_ep_overlap(row: dict) -> bool:
    """The recipe overlaps the expert all-to-all with another micro-batch (comm_overlap.
    overlap_moe_expert_parallel_comm): DeepSeek-V3 MXFP8 on GB200 / GB300 / B300 in the 26.08 container, whose
    recipes are those of the snapshot the rows cite (Megatron-Bridge 067f987, perf_recipes/deepseek/{gb200,gb300,
    b300}/deepseek_v3.py *_fp8mx_config -> common._enable_deepseek_full_iteration_mxfp8). Rows of other releases
    cite no recipe source, and the flag is not written for them."""
    text = f"{row['parallel'].get('framework') or ''} {row['id']}".lower()
    return ("nemo 26.08 container" in text and "deepseek" in text and "mxfp8" in text
            and re.search(r"-(gb200|gb300|b300)-", text) is not None)


BRIDGE_FSDP_OFFLOAD = {
    ("llama3-70b", "gb200", "bf16"): 20, ("llama3-70b", "gb200", "fp8"): 40,
    ("llama3-70b", "gb300", "bf16"): 30, ("llama3-70b", "gb300", "fp8"): 20,
    ("llama3-70b", "b200", "fp8"): 5,
    ("llama31-405b", "gb200", "fp8"): 92, ("llama31-405b", "gb300", "bf16"): 40, ("llama31-405b", "gb300", "fp8"): 10,
}
"""``cpu_offloading_num_layers`` of Megatron-Bridge's Megatron-FSDP perf recipes (the layers whose activations
Megatron-Core offloads to host memory), by model, GPU and precision, as every release from 25.11 to 26.04 sets them:
scripts/performance/configs/llama/llama3_workload_base_configs.py and llama31_workload_base_configs.py at v0.2.0,
v0.3.0 and v0.4.0 (LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS_V1/V2 ``cpu_offloading_num_layers=40`` ...), and the
flat recipes at 067f987 (perf_recipes/llama/gb200/llama3.py ...). 25.09 (scripts/performance/configs/llama3/
llama3_70b_llm_pretrain.yaml at v0.1.0rc4) sets the same Llama-3 70B values; its Llama-3.1 405B GB200 FP8 run
offloads 95 layers (llama31_405b_llm_pretrain.yaml), :data:`BRIDGE_FSDP_OFFLOAD_2509`. The tables restate the layout,
not the recipe's memory settings, so the writer takes them from the recipe the run used, as its user would."""

BRIDGE_FSDP_OFFLOAD_2509 = {("llama31-405b", "gb200", "fp8"): 95}


def bridge_offload_layers(row: dict) -> int:
    """The recipe's CPU activation offloading of a Megatron-Bridge Megatron-FSDP row (0: none or not a recipe
    that offloads)."""
    p = row["parallel"]
    if not bridge_recipe(row) or not (p.get("fsdp_column") or 0) > 0:
        return 0
    rid = str(row["id"]).lower()
    model = next((m for m in ("llama31-405b", "llama3-70b") if m in rid), None)
    if model is None:
        return 0
    try:
        gpu, dtype = gpu_of(row)[0], precision_of(row)
    except Skip:
        return 0
    key = (model, gpu, dtype)
    if rid.startswith("mbridge-2509-") and key in BRIDGE_FSDP_OFFLOAD_2509:
        return BRIDGE_FSDP_OFFLOAD_2509[key]
    return BRIDGE_FSDP_OFFLOAD.get(key, 0)


BRIDGE_DSV3_RECOMPUTE_MODULES = {"gb300": {"bf16": ("moe_act",), "fp8": ("mla_up_proj",)}}
"""``recompute_modules`` (selective recompute) of Megatron-Bridge's DeepSeek-V3 perf recipes on GB300, by compute
precision, as the 26.02 and 26.04 releases set them: scripts/performance/configs/deepseek/
deepseek_workload_base_configs.py at v0.3.0 and at v0.4.0 (identical there): DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_V1
``recompute_modules=["mla_up_proj"]`` (micro batch 2, PP 2 VPP 8, EP 32), which the FP8_CS / FP8_MX / NVFP4 presets
and the V2 (GBS 4096) presets take, and DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_BF16_V1 ``recompute_modules=["moe_act"]``.
The 26.06 / 26.08 rows cite the flat recipes of 067f987 (perf_recipes/deepseek/gb300/deepseek_v3.py: MXFP8 at
micro batch 1 with ``recompute_modules = []``), which differ, and are not written from this table; GB200 changed
between v0.3.0 (mla_up_proj) and v0.4.0 (mlp) and is left out rather than guessed per release."""

BRIDGE_DSV3_RECOMPUTE_RELEASES = ("mbridge-2602-", "mbridge-260201-", "mbridge-2604-", "mbridge-260401-")


# -- MoE (s33-moe)
BRIDGE_RELEASE_TAGS = (("mbridge-2511-", "v0.2.0"), ("mbridge-2602-", "v0.3.0"), ("mbridge-260201-", "v0.3.0"),
                       ("mbridge-2604-", "v0.4.0"), ("mbridge-260401-", "v0.4.0"), ("mbridge-2606-", "067f987"),
                       ("mbridge-260601-", "067f987"), ("mbridge-2608-", "067f987"))
"""The Megatron-Bridge source a release's perf table was run from (25.11: the v0.2.0 tag's scripts/performance/
configs, 26.02: v0.3.0, 26.04: v0.4.0, as BRIDGE_FSDP_OFFLOAD and BRIDGE_DSV3_RECOMPUTE_MODULES read them; 26.06 and
26.08: the flat perf recipes of the snapshot the rows cite, src/megatron/bridge/perf_recipes at 067f987)."""

_MLA = ("mla_up_proj",)
BRIDGE_MOE_RECOMPUTE_MODULES: dict[tuple[str, str], dict[str, dict[str, tuple[str, ...]]]] = {
    ("deepseekv3", "gb200"): {"v0.2.0": {"bf16": _MLA, "fp8": _MLA}, "v0.3.0": {"bf16": _MLA, "fp8": _MLA},
                              "v0.4.0": {"bf16": _MLA, "fp8": ("mlp",)}},
    ("deepseekv3", "b200"): {tag: {"bf16": _MLA, "fp8": _MLA} for tag in ("v0.2.0", "v0.3.0", "v0.4.0")},
    ("deepseekv3", "h100"): {tag: {"bf16": _MLA + ("mlp",), "fp8": _MLA + ("mlp",)}
                             for tag in ("v0.2.0", "v0.3.0", "v0.4.0")},
    **{("gptoss120b", gpu): {tag: {"bf16": ("layernorm", "moe_act"), "fp8": ("layernorm", "moe_act")}
                             for tag in ("v0.2.0", "v0.3.0", "v0.4.0")} for gpu in ("gb200", "b200", "h100")},
    **{("kimi-k2", gpu): {"v0.4.0": {"bf16": _MLA, "fp8": _MLA}} for gpu in ("gb300", "gb200", "b200")},
}
BRIDGE_MOE_RECOMPUTE_MODULES[("deepseekv3", "gb200")]["067f987"] = {"bf16": _MLA, "fp8_cs": ("mlp",), "fp8_mx": _MLA}
BRIDGE_MOE_RECOMPUTE_MODULES[("deepseekv3", "b200")]["067f987"] = {"bf16": _MLA, "fp8_cs": _MLA, "fp8_mx": _MLA + ("mlp",)}
BRIDGE_MOE_RECOMPUTE_MODULES[("deepseekv3", "h100")]["067f987"] = {"bf16": _MLA + ("mlp",), "fp8": _MLA + ("mlp",)}
BRIDGE_MOE_RECOMPUTE_MODULES[("kimi-k2", "gb300")]["067f987"] = {"bf16": _MLA, "fp8": _MLA}
"""``recompute_modules`` (selective recompute) of Megatron-Bridge's MoE perf recipes other than DeepSeek-V3 on GB300
(BRIDGE_DSV3_RECOMPUTE_MODULES), by model, GPU, release tag and compute precision, as the tags' presets set them:
scripts/performance/configs/deepseek/workload_base_configs.py at v0.2.0 (DEEPSEEK_V3_GB200_BASE_CONFIG and
DEEPSEEK_V3_B200_BASE_CONFIG ``recompute_modules=["mla_up_proj"]``, DEEPSEEK_V3_H100_BASE_CONFIG ``["mla_up_proj",
"mlp"]``, every precision the same preset) and deepseek_workload_base_configs.py at v0.3.0 (the same, *_V1) and v0.4.0
(DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_V1 ``["mlp"]`` for FP8 CS / MX, GB200_BF16_V1 ``["mla_up_proj"]``); gpt_oss/
workload_base_configs.py (v0.2.0) and gpt_oss_workload_base_configs.py (v0.3.0, v0.4.0: the FP8 MX presets are the
BF16 ones): GB200, B200 and H100 ``["layernorm", "moe_act"]``, GB300 and B300 none; kimi/kimi_workload_base_configs.py
at v0.4.0: GB300, GB200 and B200 ``["mla_up_proj"]`` (no Kimi preset before). 26.06 / 26.08: the flat recipes at
067f987 (perf_recipes/deepseek/gb200/deepseek_v3.py: BF16 and MXFP8 ``["mla_up_proj"]``, FP8 CS ``["mlp"]``;
deepseek/b200: BF16, FP8 CS ``["mla_up_proj"]``, MXFP8 ``["mla_up_proj", "mlp"]``; deepseek/h100 ``["mla_up_proj",
"mlp"]``; kimi/gb300/kimi_k2.py ``["mla_up_proj"]``). FP8 keys: ``fp8_cs`` / ``fp8_mx`` where the recipes differ by
scaling (the row id says which), ``fp8`` where they do not. B300 DeepSeek-V3 is left out (its V1 and V2 presets
differ and the rows' layouts match neither for certain), and so is 25.09 (other recipe files)."""


def bridge_recompute_modules(row: dict) -> tuple[str, ...]:
    """The selective recompute modules a Megatron-Bridge MoE perf recipe sets (empty: none stated)."""
    rid = str(row["id"]).lower()
    if not bridge_recipe(row):
        return ()
    try:
        gpu, dtype = gpu_of(row)[0], precision_of(row)
    except Skip:
        return ()
    if dtype not in ("bf16", "fp8"):
        return ()
    key = "bf16" if dtype == "bf16" else "fp8"
    if "deepseek" in rid and rid.startswith("mbridge-2509-"):
        return BRIDGE_DSV3_RECOMPUTE_2509.get(gpu, ())
    if "deepseek" in rid and gpu == "gb300":
        if not rid.startswith(BRIDGE_DSV3_RECOMPUTE_RELEASES):
            return ()
        return BRIDGE_DSV3_RECOMPUTE_MODULES.get(gpu, {}).get(key, ())
    tag = next((t for prefix, t in BRIDGE_RELEASE_TAGS if rid.startswith(prefix)), None)
    model = next((m for m in ("deepseekv3", "gptoss120b", "kimi-k2") if f"-{m}-" in rid), None)
    if tag is None or model is None:
        return ()
    by_precision = BRIDGE_MOE_RECOMPUTE_MODULES.get((model, gpu), {}).get(tag, {})
    if key == "fp8":
        scaling = "fp8_mx" if re.search(r"mxfp8|fp8-mx", rid) else "fp8_cs" if "fp8-cs" in rid else None
        if scaling in by_precision:
            return by_precision[scaling]
        if any(k in by_precision for k in ("fp8_mx", "fp8_cs")):
            return ()  # the recipes differ by scaling and the row does not say which
    return by_precision.get(key, ())


def bridge_expandable_segments(row: dict) -> bool:
    """The recipe's launch sets ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``: Llama-3.1-405B pretraining on
    GB200 in FP8 (current scaling or MXFP8), in every release the rows cite: scripts/performance/perf_plugins.py at
    v0.2.0 (``model_name in ["llama31"] and model_size in ["405b"] and gpu in ["gb200"]``, fp8_cs / fp8_mx), v0.3.0
    and v0.4.0 (``model_recipe_name in ["llama31_405b"]``, gb200 / gb200+gb300, fp8_cs / fp8_mx), and every GB200
    flat recipe at 067f987 (perf_recipes/llama/gb200/llama31.py ``cfg.env_vars``). Other models' settings of it
    (DeepSeek-V3 on H100 / GB200, Llama-3.1-405B on GB300 from v0.4.0) are not written here."""
    rid = str(row["id"]).lower()
    if not bridge_recipe(row) or "llama31-405b" not in rid or not rid.startswith("mbridge-"):
        return False
    try:
        return gpu_of(row)[0] == "gb200" and precision_of(row) == "fp8"
    except Skip:
        return False


def _layout(row: dict) -> tuple[int, int, int, int]:
    p = row["parallel"]
    n = int(row["num_gpus"])
    tp, pp = int(_need(p.get("tp"), "tensor parallel size")), int(_need(p.get("pp"), "pipeline parallel size"))
    cp = int(p.get("cp") or 1)
    dp = n // (tp * pp * cp)
    if p.get("dp") is not None and int(p["dp"]) != dp:
        raise Skip(f"dp {p['dp']} != GPUs / (TP x PP x CP) = {dp}")
    return tp, pp, cp, dp


def _launcher(n: int, row: dict | None = None) -> tuple[int, int]:
    """(GPUs per node, nodes) as the launch writes them: the GPU's node (4 on a GB200/GB300 compute tray)."""
    per_node = min(_node_of(row), n)
    if n % per_node:
        raise Skip(f"{n} GPUs is not whole nodes of {per_node}")
    return per_node, n // per_node


def _node_of(row: dict | None) -> int:
    if row is None:
        return 8
    from trainlint.presets.catalog import load_gpus

    try:
        gpu = load_gpus().get(gpu_of(row)[0])
    except Skip:
        return 8
    return int(gpu.gpus_per_node or 8) if gpu is not None else 8


# --------------------------------------------------------------------------- writers


def _megatron_args(row: dict, vocab: int | None, *, deepspeed: bool) -> list[str]:
    m, p, b = row["model"], row["parallel"], row["batch"]
    tp, pp, cp, _dp = _layout(row)
    args = [f"--num-layers {_need(m.get('layers'), 'layers')}", f"--hidden-size {_need(m.get('hidden'), 'hidden size')}",
            f"--num-attention-heads {_need(m.get('heads'), 'heads')}"]
    if m.get("multi_latent_attention"):
        # MLA: Megatron --multi-latent-attention with the row's latent ranks and head sizes
        args.append("--multi-latent-attention")
        for key, flag in (("q_lora_rank", "--q-lora-rank"), ("kv_lora_rank", "--kv-lora-rank"),
                          ("qk_head_dim", "--qk-head-dim"), ("qk_rope_head_dim", "--qk-pos-emb-head-dim"),
                          ("v_head_dim", "--v-head-dim")):
            if m.get(key):
                args.append(f"{flag} {m[key]}")
        if m.get("qk_head_dim"):
            args.append(f"--kv-channels {m['qk_head_dim']}")
    elif m.get("kv_heads") and m["kv_heads"] != m["heads"]:
        args.append(f"--group-query-attention --num-query-groups {m['kv_heads']}")
    if m.get("head_dim") and not m.get("multi_latent_attention"):
        args.append(f"--kv-channels {m['head_dim']}")
    if m.get("ffn_hidden"):
        args.append(f"--ffn-hidden-size {m['ffn_hidden']}")
    if m.get("swiglu"):
        args.append("--swiglu")
    if re.search(r"no (linear )?bias", str(m.get("arch") or "").lower()):
        args.append("--disable-bias-linear")
    if m.get("untied_embeddings") or (m.get("tie_word_embeddings") is False):
        args.append("--untie-embeddings-and-output-weights")
    experts = m.get("num_moe_experts") or m.get("num_experts")
    if experts and int(experts) > 1:
        args.append(f"--num-experts {experts}")
        if m.get("moe_router_topk"):
            args.append(f"--moe-router-topk {m['moe_router_topk']}")
        if m.get("moe_ffn_hidden") and m.get("moe_ffn_hidden") != m.get("ffn_hidden"):
            # Megatron's default is the FFN size, in every release (core_v0.6 has no --moe-ffn-hidden-size at all)
            args.append(f"--moe-ffn-hidden-size {m['moe_ffn_hidden']}")
        if m.get("moe_shared_expert_ffn_hidden"):
            args.append(f"--moe-shared-expert-intermediate-size {m['moe_shared_expert_ffn_hidden']}")
        ep = int(p.get("ep") or 1)
        if ep > 1:
            args.append(f"--expert-model-parallel-size {ep}")
        if p.get("etp"):
            args.append(f"--expert-tensor-parallel-size {p['etp']}")
        elif bridge_recipe(row) and tp > 1 and re.search(r"qwen3|deepseek", str(m.get("arch") or "").lower()):
            # the Qwen3 MoE and DeepSeek-V3 recipes set expert_tensor_parallel_size = 1 (recipes/qwen/h100/
            # qwen3_moe.py, perf_recipes/qwen/*/qwen3_moe.py, recipes/deepseek/h100/deepseek_v3.py at 067f987);
            # Megatron's default would be the TP size
            args.append("--expert-tensor-parallel-size 1")
        etp = int(p.get("etp") or (1 if any("--expert-tensor-parallel-size 1" in a for a in args) else tp))
        if int(row["num_gpus"]) % (ep * etp * pp):
            raise Skip(f"the expert grid EP {ep} x expert-TP {etp} x PP {pp} does not divide {row['num_gpus']} GPUs: "
                       "not a layout Megatron-Core takes")
        dense = int(m.get("moe_first_k_dense_layers") or 0)
        if dense:
            # Megatron's list form of --moe-layer-freq: the first k layers dense
            args.append(f'--moe-layer-freq "([0]*{dense}+[1]*{int(m["layers"]) - dense})"')
    seq = _need(m.get("seq_len"), "sequence length")
    args.append(f"--seq-length {seq} --max-position-embeddings {seq}")
    if vocab:
        args.append(f"--vocab-size {vocab}")
    args.append(f"--micro-batch-size {_need(b.get('micro'), 'micro batch')} --global-batch-size {_need(b.get('global'), 'global batch')}")
    args.append(f"--tensor-model-parallel-size {tp} --pipeline-model-parallel-size {pp}")
    layers = int(m["layers"])
    vpp = int(p.get("vpp") or 1)
    recipe_split = bridge_split(row, layers, pp, vpp) if bridge_recipe(row) and not deepspeed else None
    if recipe_split is not None:
        args.append(recipe_split)
    elif pp > 1 and layers % pp and vpp > 1:
        raise Skip("uneven pipeline with interleaving: the recipe's --pipeline-model-parallel-layout is not restated")
    elif pp > 1 and layers % pp and layers - -(-layers // pp) * (pp - 1) < 1:
        raise Skip(f"{layers} layers over {pp} stages: no first/last-stage split Megatron takes")
    elif pp > 1 and layers % pp:
        # an uneven split (DeepSeek-V3's 61 layers): the last stage takes what is left
        base = -(-layers // pp)
        args.append(f"--decoder-last-pipeline-num-layers {layers - base * (pp - 1)}")
    if cp > 1 and deepspeed and translation_of(row) is not None:
        # a fully sharded run with CP: the sequence split of DeepSpeed-Ulysses, the user path of ZeRO-3 with
        # a sequence split (Megatron-DeepSpeed has no ring context parallelism)
        args.append(f"--ds-sequence-parallel-size {cp}")
    elif cp > 1:
        args.append(f"--context-parallel-size {cp}")
    if p.get("vpp") and int(p["vpp"]) > 1 and not (recipe_split or "").startswith("--pipeline-model-parallel-layout"):
        per_stage = int(m["layers"]) // pp
        if per_stage % int(p["vpp"]) or int(m["layers"]) % pp:
            args.append(f"--num-virtual-stages-per-pipeline-rank {int(p['vpp'])}")
        else:
            args.append(f"--num-layers-per-virtual-pipeline-stage {per_stage // int(p['vpp'])}")
    recipe = bridge_recipe(row) and not deepspeed
    translated = translation_of(row)
    nanotron = translated is not None and translated[0] == "nanotron"
    # nanotron's default TP mode REDUCE_SCATTER is sequence parallelism (the source's notes)
    if (p.get("sequence_parallel") or ((recipe or nanotron) and p.get("sequence_parallel") is None)) and tp > 1:
        args.append("--sequence-parallel")
    fsdp = bool((p.get("fsdp_column") or 0) > 0) and translated is None
    if fsdp and not deepspeed:
        args.append("--use-megatron-fsdp --ckpt-format fsdp_dtensor")  # Megatron-FSDP's checkpoint format
    elif (p.get("distributed_optimizer") or recipe or (translated and (int(p.get("zero_stage") or 0) >= 1
                                                                       or p.get("fsdp_degree")))) and not deepspeed:
        args.append("--use-distributed-optimizer")
    if not deepspeed and (p.get("overlap_grad_reduce") or str(p.get("ddp_impl") or "") == "torch" or recipe):
        # torch DDP all-reduces gradient buckets during backward: --overlap-grad-reduce in today's Megatron-LM
        args.append("--overlap-grad-reduce")
    if (p.get("overlap_param_gather") or recipe) and not deepspeed:
        args.append("--overlap-param-gather")
    if recipe and not re.search(r"kimi", row["id"]):
        # the perf recipes reduce gradients in bf16 (perf_recipes/_common.py _benchmark_common and _perf_precision:
        # grad_reduce_in_fp32 = False, and grad_reduce_in_fp32: false in the release YAMLs since 2025-08;
        # Kimi-K2's recipe sets it back to True)
        args.append("--grad-reduce-in-bf16")
    if recipe and bridge_ep_overlap(row):
        # with the HybridEP flex dispatcher the same recipe function sets (_enable_deepseek_full_iteration_mxfp8)
        args.append("--overlap-moe-expert-parallel-comm --moe-token-dispatcher-type flex "
                    "--moe-flex-dispatcher-backend hybridep")
    elif recipe and bridge_dispatcher(row):
        args.append(BRIDGE_DISPATCHER_FLAGS[bridge_dispatcher(row)])
        if bridge_moe_ep_overlap(row):
            args.append("--overlap-moe-expert-parallel-comm")
    if p.get("tp_comm_overlap") or (recipe and tp > 1 and p.get("tp_comm_overlap") is None):
        args.append("--tp-comm-overlap")
    dtype = precision_of(row)
    args.append("--fp16" if dtype == "fp16" else "--bf16")
    if dtype == "fp8":
        args.append("--fp8-format hybrid")
        if recipe:
            # every FP8 recipe of Megatron-Bridge (current scaling, MXFP8, delayed) keeps FP8 primary weights:
            # training/mixed_precision.py bf16_with_*_mixed ``cfg.fp8_param_gather = True``, since 2025-08 (#450)
            args.append("--fp8-param-gather")
    offload = bridge_offload_layers(row) if recipe else 0
    if offload:
        args.append(f"--cpu-offloading-num-layers {offload}")
    if no_dropout(row):
        args.append("--hidden-dropout 0 --attention-dropout 0")
    if nanotron and m.get("swiglu") and not deepspeed:
        # nanotron's GLUActivation: silu(gate) * up as separate ops (TRANSLATIONS), Megatron-Core's unfused glu()
        args.append("--no-bias-swiglu-fusion")
    recompute = recompute_of(row)
    if recompute == "full":
        args.append("--checkpoint-activations" if deepspeed else
                    "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1")
    elif recompute == "selective":
        args.append("--recompute-activations")
    elif recompute == "none" and recipe and bridge_recompute_modules(row):
        # the recipe's selective recompute (BRIDGE_DSV3_RECOMPUTE_MODULES), as Megatron-Core's flags write it
        args.append("--recompute-granularity selective --recompute-modules "
                    + " ".join(bridge_recompute_modules(row)))
    if "narayanan" in row["id"]:
        # 2021 Megatron-LM: Megatron's own attention with a fused softmax, no flash kernel
        args.append("--attention-backend unfused")
    if deepspeed and translated is not None and translated[0] == "llm-foundry" and triton_attention(row):
        # llm-foundry's attn_impl triton (its flash_attn_triton.py, a copy of flash-attn 1.x's Triton kernel): the
        # same kernel Megatron-DeepSpeed runs with --use-flash-attn-triton (flash_attn.flash_attn_triton)
        args.append("--use-flash-attn-triton")
    elif deepspeed and translated is not None:
        # llm-foundry's attn_impl flash and torchtitan (SDPA's flash backend): FlashAttention-2's CUDA kernels
        args.append("--use-flash-attn-v2")
    if deepspeed:
        if zero_unknown(row):
            # the source does not publish its DeepSpeed config: the launch names one the reader cannot see (a path
            # only known at launch), so the engine's ZeRO stage is trainlint's stated assumption, not a fact
            args.append('--deepspeed --deepspeed_config "$DS_CONFIG"')
        else:
            args.append(f"--deepspeed --deepspeed_config ds_config.json --zero-stage {zero_of(row)}"
                        + (" --no-pipeline-parallel" if zero_of(row) >= 3 and pp == 1 else ""))
        if recompute == "full":
            args.append("--deepspeed-activation-checkpointing")
    args.append("--train-iters 100 --lr 1e-4")
    return args


def _script(row: dict, args: list[str]) -> str:
    per_node, nodes = _launcher(int(row["num_gpus"]), row)
    body = " \\\n    ".join(args)
    # the recipe's allocator setting, exported before the launch as its launcher does (bridge_expandable_segments)
    env = "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n" if bridge_expandable_segments(row) else ""
    return (f"#!/bin/bash\n# {row['id']}: written by benchmarks/accuracy.py from the calibration row\n{env}"
            f"torchrun --nproc_per_node {per_node} --nnodes {nodes} pretrain_gpt.py \\\n    {body}\n")


def _ds_json(row: dict, *, with_batch: bool) -> str:
    b, _p = row["batch"], row["parallel"]
    dtype = precision_of(row)
    cfg: dict[str, Any] = {}
    if with_batch:
        _, _, _, dp = _layout(row)
        micro, glob = int(_need(b.get("micro"), "micro batch")), int(_need(b.get("global"), "global batch"))
        cfg.update(train_micro_batch_size_per_gpu=micro, train_batch_size=glob,
                   gradient_accumulation_steps=glob // (micro * dp))
    else:
        cfg.update(train_micro_batch_size_per_gpu=int(_need(b.get("micro"), "micro batch")),
                   train_batch_size=int(_need(b.get("global"), "global batch")))
    cfg["gradient_clipping"] = 1.0
    cfg["zero_optimization"] = {"stage": zero_of(row)}
    if dtype == "fp16":
        cfg["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 12}
    else:
        cfg["bf16"] = {"enabled": True}
    cfg["steps_per_print"] = 2000
    cfg["wall_clock_breakdown"] = False
    return json.dumps(cfg, indent=2) + "\n"


def _neox_yaml(row: dict, vocab: int | None) -> str:
    m, p, b = row["model"], row["parallel"], row["batch"]
    tp, pp, _, dp = _layout(row)
    micro, glob = int(_need(b.get("micro"), "micro batch")), int(_need(b.get("global"), "global batch"))
    cfg: dict[str, Any] = {
        "pipe_parallel_size": pp, "model_parallel_size": tp,
        "num_layers": m["layers"], "hidden_size": m["hidden"], "num_attention_heads": m["heads"],
        "seq_length": m["seq_len"], "max_position_embeddings": m["seq_len"],
        "train_micro_batch_size_per_gpu": micro, "gradient_accumulation_steps": glob // (micro * dp),
        "zero_optimization": {"stage": int(p.get("zero_stage") or 0)},
        "checkpoint_activations": recompute_of(row) == "full",
        "train_iters": 100,
    }
    if m.get("ffn_hidden") and m["ffn_hidden"] != 4 * m["hidden"]:
        cfg["intermediate_size"] = m["ffn_hidden"]
    if "rotary" in str(m.get("pos_emb") or ""):
        cfg["pos_emb"] = "rotary"
        pct = re.search(r"(\d+)%", str(m["pos_emb"]))
        if pct:
            cfg["rotary_pct"] = int(pct.group(1)) / 100
    if m.get("parallel_residual"):
        cfg["gpt_j_residual"] = True
    if m.get("untied_embeddings"):
        cfg["no_weight_tying"] = True
    if vocab:
        cfg["padded_vocab_size"] = vocab
    dtype = precision_of(row)
    cfg["fp16" if dtype == "fp16" else "bf16"] = {"enabled": True}
    return yaml.safe_dump(cfg, sort_keys=False)


def _hf_config(row: dict, vocab: int) -> str:
    m = row["model"]
    if not m.get("swiglu"):
        raise Skip("HF Trainer row of a non-Llama model: no config.json writer")
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_act": "silu",
           "num_hidden_layers": m["layers"], "hidden_size": m["hidden"], "num_attention_heads": m["heads"],
           "num_key_value_heads": m.get("kv_heads") or m["heads"],
           "intermediate_size": _need(m.get("ffn_hidden"), "FFN size"), "vocab_size": vocab,
           "max_position_embeddings": m["seq_len"], "rms_norm_eps": 1e-5,
           "tie_word_embeddings": bool(m.get("tie_word_embeddings", False))}
    return json.dumps(cfg, indent=2) + "\n"


def write_case(row: dict) -> Case:
    """The files and command line of one row; raises Skip or NoUserPath."""
    if row.get("confidence") == "low" and not row["parallel"].get("tp"):
        raise NoUserPath("layout unpublished (low-confidence sanity row)")
    how = framework_of(row)
    gpu, custom, gnote = gpu_of(row)
    vocab, preset, vnote = vocab_of(row)
    case = Case(row, how)
    if op_level_sac(row):
        case.memory_unwritten = OP_LEVEL_SAC
    translated = translation_of(row)
    for note in (translated[1] if translated else "", gnote, vnote,
                 "precision not stated: fp16, as vTrain profiles" if row.get("precision") is None else "",
                 "the release's perf recipe: distributed optimizer, grad-reduce / param-gather overlap, sequence "
                 "parallelism and TP-communication overlap with TP > 1, bf16 gradient reduction (not Kimi-K2), no "
                 "dropout, FP8 primary weights (--fp8-param-gather) with FP8, and the Megatron-FSDP recipes' CPU "
                 "activation offloading" if bridge_recipe(row) else ""):
        if note:
            case.notes.append(note)
    if how == "megatron-lm":
        case.files["train.sh"] = _script(row, _megatron_args(row, vocab, deepspeed=False))
        case.paths = ["train.sh"]
    elif how == "megatron-deepspeed":
        case.files["train.sh"] = _script(row, _megatron_args(row, vocab, deepspeed=True))
        if zero_unknown(row):
            case.notes.append("ZeRO stage not published: the DeepSpeed config is named by $DS_CONFIG, which the "
                              "estimate cannot read; it assumes ZeRO 0 and says so")
        else:
            case.files["ds_config.json"] = _ds_json(row, with_batch=False)
        case.paths = ["train.sh"]
    elif how == "neox":
        case.files["run.yml"] = _neox_yaml(row, vocab)
        case.paths = ["run.yml"]
        per_node, nodes = _launcher(int(row["num_gpus"]), row)
        case.argv += ["--nodes", str(nodes), "--gpus-per-node", str(per_node)]
    elif how == "deepspeed+hf":
        case.files["ds_config.json"] = _ds_json(row, with_batch=True)
        case.files["config.json"] = _hf_config(row, _need(vocab, "vocabulary"))
        case.paths = ["ds_config.json"]
        per_node, nodes = _launcher(int(row["num_gpus"]), row)
        case.argv += ["--model", "config.json", "--nodes", str(nodes), "--gpus-per-node", str(per_node)]
    if preset:
        case.argv += ["--model", preset]
    release = megatron_release(row) if how == "megatron-lm" else None
    if custom is None and release is None:
        case.argv += ["--gpu", gpu]
        case.argv += ["--isolated"]
    elif custom is None:
        # the Megatron-Core release the run used, as a user states it to trainlint (docs: framework = {megatron = ...})
        case.argv += ["--gpu", gpu]
        case.files["pyproject.toml"] = f'[tool.trainlint]\nframework = {{megatron = "{release}"}}\n'
    else:
        table = "\n".join(f"{k} = {json.dumps(v)}" for k, v in custom.items())
        head = f'[tool.trainlint]\ngpu = "{gpu}"\n' + (f'framework = {{megatron = "{release}"}}\n' if release else "")
        case.files["pyproject.toml"] = f'{head}\n[tool.trainlint.gpus.{gpu}]\n{table}\n'
    return case


# -- MoE (s33-moe)
MEGATRON_CORE_RELEASES = (("240226", "core_v0.5.0"), ("240418", "core_v0.6.0"), ("240530", "core_v0.7.0"))
"""Megatron-Core releases by tag date (YYMMDD, NVIDIA/Megatron-LM: git log -1 of core_v0.5.0 2024-02-26, core_v0.6.0
2024-04-18, core_v0.7.0 2024-05-30): a checkout named by its date ("Megatron-LM-240405") is judged as the release
before it, the version whose code it had."""


def megatron_release(row: dict) -> str | None:
    """The Megatron-Core release a row's run used, where its source says (``core_v0.6.0``, or a dated checkout
    ``Megatron-LM-240405`` as the last release before that date); None otherwise (judged against upstream)."""
    text = str(row["parallel"].get("framework") or "")
    m = re.search(r"\bcore_v(\d+\.\d+\.\d+)", text)
    if m:
        return f"core_v{m.group(1)}"
    m = re.search(r"Megatron-LM-(\d{6})\b", text)
    if m:
        before = [name for date, name in MEGATRON_CORE_RELEASES if date <= m.group(1)]
        return before[-1] if before else None
    return None


# --- s34-acc-bridge-moe ---
_HYBRIDEP = "hybridep"
_A2A = "alltoall"
BRIDGE_MOE_DISPATCHER: dict[str, dict[str, dict[str, str]]] = {
    "deepseekv3": {
        "v0.1.0rc4": {"h100-sxm": "deepep", "b200": _A2A, "gb200": _A2A},
        "v0.2.0": {"gb300": _HYBRIDEP, "gb200": _HYBRIDEP, "h100-sxm": "deepep", "b200": _A2A},
        **{tag: dict.fromkeys(("gb300", "gb200", "b300", "b200", "h100-sxm"), _HYBRIDEP) for tag in ("v0.3.0", "v0.4.0")},
    },
    "qwen3-235b-a22b": {
        "v0.1.0rc4": dict.fromkeys(("gb200", "b200", "h100-sxm"), _A2A),
        **{tag: {"gb300": _HYBRIDEP, "gb200": _HYBRIDEP, "b300": _A2A, "b200": _A2A, "h100-sxm": _A2A}
           for tag in ("v0.2.0", "v0.3.0", "v0.4.0")},
    },
    "qwen3-30b-a3b": {
        "v0.1.0rc4": dict.fromkeys(("gb200", "b200", "h100-sxm"), _A2A),
        "v0.2.0": {"gb300": _HYBRIDEP, "gb200": _HYBRIDEP, "b200": _A2A, "h100-sxm": _A2A},
        "v0.3.0": {"gb300": _HYBRIDEP, "gb200": _HYBRIDEP, "b300": _HYBRIDEP, "b200": _A2A, "h100-sxm": "deepep"},
        "v0.4.0": dict.fromkeys(("gb300", "gb200", "b300", "b200", "h100-sxm"), _HYBRIDEP),
    },
}
"""The MoE token dispatcher of Megatron-Bridge's DeepSeek-V3 and Qwen3 MoE perf runs, by model, release tag and GPU,
as the tag selects it: the model provider's ``moe_token_dispatcher_type = "alltoall"`` (models/deepseek/
deepseek_provider.py and models/qwen/qwen_provider.py at v0.1.0rc4, v0.2.0, v0.3.0; deepseek_v3_bridge.py and
qwen3_moe_bridge.py at v0.4.0) unless the run switches to the flex dispatcher with the preset's
``moe_flex_dispatcher_backend``:

* 25.09 (v0.1.0rc4 scripts/performance/run_script.py): DeepSeek-V3 takes DeepEP on H100 (``enable_deepep = gpu in
  ["h100"]``); its B200 and GB200 runs use token drop (``use_tokendrop``), which keeps alltoall (apply_moe_token_drop
  asserts it), as do both Qwen3 MoE models (``recipe.model = apply_moe_token_drop(recipe.model)``);
* 25.11 (v0.2.0 configs/deepseek/workload_base_configs.py, configs/qwen3/workload_base_configs.py): ``"hybridep"`` on
  GB300 and GB200 for all three models, ``"deepep"`` for DeepSeek-V3 on H100; training/flex_dispatcher_backend.py
  apply_flex_dispatcher_backend takes HybridEP only on "NVIDIA GB200" / "NVIDIA GB300";
* 26.02 (v0.3.0 deepseek_workload_base_configs.py, qwen/qwen3_workload_base_configs.py): DeepSeek-V3 ``"hybridep"`` on
  every GPU, Qwen3-235B on GB300 / GB200, Qwen3-30B on GB300 / GB200 / B300 and ``"deepep"`` on H100;
  apply_flex_dispatcher_backend now takes HybridEP on every GPU of compute capability 8-10;
* 26.04 (v0.4.0): as 26.02, and Qwen3-30B ``"hybridep"`` on B200 and H100 too.

V1 and V2 presets of a tag inherit the backend of V1. The Megatron-Core those tags pin (3rdparty/Megatron-LM at
0d8e071, b0cc270, d728871: 0.16.0rc0, 0.16.0, 0.17.0rc0) always fuses the permutation into HybridEP's kernels; today's
Megatron-LM states that with ``--moe-permute-fusion-into-hybridep`` (core_v0.18.0 on), which the launch writes.
26.06 / 26.08 rows (the flat recipes of 067f987, one per precision) and other models are not written from this
table."""

BRIDGE_MOE_EP_OVERLAP: dict[str, dict[str, frozenset[str]]] = {
    "deepseekv3": {"v0.1.0rc4": frozenset({"h100-sxm"}), "v0.2.0": frozenset({"h100-sxm"})},
    "qwen3-235b-a22b": {"v0.2.0": frozenset({"b200", "h100-sxm"}), "v0.3.0": frozenset({"b300", "h100-sxm"}),
                        "v0.4.0": frozenset({"h100-sxm"})},
    "qwen3-30b-a3b": {"v0.2.0": frozenset({"h100-sxm"}), "v0.3.0": frozenset({"h100-sxm"})},
}
"""Where those presets overlap the expert all-to-all with another micro-batch's compute (comm_overlap.
overlap_moe_expert_parallel_comm): DeepSeek-V3 on H100 in 25.09 (run_script.py ``A2A_1F1B = gpu in ["h100"]``) and
25.11 (DEEPSEEK_V3_H100_BASE_CONFIG ``moe_a2a_overlap=True``); the Qwen3 presets with ``moe_a2a_overlap=True``
(v0.2.0: 235B on B200 and H100, 30B on H100; v0.3.0: 235B on B300 and H100, 30B on H100; v0.4.0: 235B on H100),
which scripts/performance/utils/helpers.py set_moe_a2a_overlap_overrides turns into
``overlap_moe_expert_parallel_comm = True``."""

BRIDGE_DISPATCHER_TAGS = (("mbridge-2509-", "v0.1.0rc4"),) + BRIDGE_RELEASE_TAGS

BRIDGE_DISPATCHER_FLAGS = {
    "alltoall": "--moe-token-dispatcher-type alltoall",
    "deepep": "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep",
    "hybridep": "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep --moe-permute-fusion-into-hybridep",
}


def _bridge_moe_key(row: dict) -> tuple[str, str, str] | None:
    """(model, release tag, GPU) of a Megatron-Bridge MoE perf row the dispatcher tables cover, else None."""
    rid = str(row["id"]).lower()
    if not bridge_recipe(row):
        return None
    model = next((m for m in BRIDGE_MOE_DISPATCHER if f"-{m}-" in rid), None)
    tag = next((t for prefix, t in BRIDGE_DISPATCHER_TAGS if rid.startswith(prefix)), None)
    try:
        gpu = gpu_of(row)[0]
    except Skip:
        return None
    return (model, tag, gpu) if model and tag else None


def bridge_dispatcher(row: dict) -> str:
    """The token dispatcher (BRIDGE_MOE_DISPATCHER) of a Megatron-Bridge MoE perf row; "" where the table does not
    say (other models, releases from 26.06)."""
    key = _bridge_moe_key(row)
    return BRIDGE_MOE_DISPATCHER[key[0]].get(key[1], {}).get(key[2], "") if key else ""


def bridge_moe_ep_overlap(row: dict) -> bool:
    """The row's preset overlaps the expert all-to-all (BRIDGE_MOE_EP_OVERLAP)."""
    key = _bridge_moe_key(row)
    return bool(key and key[2] in BRIDGE_MOE_EP_OVERLAP.get(key[0], {}).get(key[1], frozenset()))


BRIDGE_DSV3_RECOMPUTE_2509 = {"h100-sxm": ("mla_up_proj", "mlp"), "b200": ("mla_up_proj",), "gb200": ("mla_up_proj",)}
"""``recompute_modules`` of Megatron-Bridge's DeepSeek-V3 perf runs in 25.09, every precision alike: v0.1.0rc4
scripts/performance/run_script.py (``if args.gpu.lower() in ["h100"]: recipe.model.recompute_modules = ["mla_up_proj",
"mlp"]``; B200 ``["mla_up_proj"]``; GB200 with token drop, its default there, ``["mla_up_proj"]``), with
``recompute_granularity: "selective"`` from configs/deepseek/deepseek_v3_llm_pretrain.yaml."""


# --- s35-a2a ---
BRIDGE_DISPATCHER_TAGS = (("mbridge-2606-", "v0.5.0"), ("mbridge-260601-", "v0.5.0")) + BRIDGE_DISPATCHER_TAGS
"""The 26.06 and 26.06.01 rows' dispatcher is read at v0.5.0, the Megatron-Bridge of the NeMo 26.06 container
(docs/releases/software-versions.md at 067f987: "NeMo Framework 26.06 ... Megatron-Bridge 0.5.0"), whose
scripts/performance/configs presets they were run with; 26.08 stays at the flat perf recipes of 067f987 (v0.6.0 moved
the presets there)."""

_HYB = "hybridep"
_BLACKWELL = ("gb300", "gb200", "b300")
BRIDGE_MOE_DISPATCHER["deepseekv3"]["v0.5.0"] = dict.fromkeys(_BLACKWELL, _HYB)
BRIDGE_MOE_DISPATCHER["qwen3-235b-a22b"]["v0.5.0"] = dict.fromkeys(("gb300", "gb200"), _HYB)
BRIDGE_MOE_DISPATCHER["qwen3-235b-a22b"]["067f987"] = dict.fromkeys(("gb300", "gb200"), _HYB)
BRIDGE_MOE_DISPATCHER["qwen3-30b-a3b"]["v0.5.0"] = dict.fromkeys(_BLACKWELL + ("h100-sxm",), _HYB)
BRIDGE_MOE_DISPATCHER["qwen3-30b-a3b"]["067f987"] = dict.fromkeys(("gb300", "gb200"), _HYB)
BRIDGE_MOE_DISPATCHER["gptoss120b"] = {
    "v0.2.0": dict.fromkeys(("gb300", "gb200", "b200", "h100-sxm"), _A2A),
    "v0.3.0": dict.fromkeys(("gb300", "gb200", "b300", "b200", "h100-sxm"), _A2A),
    "v0.4.0": {"gb300": _A2A, "gb200": _HYB, "b300": _HYB, "b200": _HYB, "h100-sxm": _A2A},
    "v0.5.0": dict.fromkeys(_BLACKWELL, _HYB),
    "067f987": dict.fromkeys(("gb300", "gb200"), _HYB),
}
BRIDGE_MOE_DISPATCHER["kimi-k2"] = {tag: {"gb300": _HYB} for tag in ("v0.4.0", "v0.5.0")}
"""The dispatcher of the rows the s34 table left to Megatron's default (allgather), as each tag's presets choose it for
the layout and precision the row states (the 26.06 rows are MXFP8 on Blackwell and FP8 current scaling on H100; the
presets matched by their parallel layout, global and micro batch):

* 26.06 / 26.06.01 (v0.5.0 scripts/performance/configs/*_workload_base_configs.py, ``moe_flex_dispatcher_backend``, which
  the llm_pretrain functions apply with apply_flex_dispatcher_backend on compute capability 8-10): ``"hybridep"`` for
  DeepSeek-V3 (GB300 FP8_MX_V2 and GBS15360, GB200 FP8_MX_V2, B300 FP8_MX_V2), Qwen3-235B (GB300 / GB200 FP8_MX_V2),
  Qwen3-30B (GB300 / GB200 / B300 FP8_MX_V1, H100 FP8_CS_V1), GPT-OSS 120B (B300 / GB200 / GB300 FP8_MX_V2) and Kimi-K2
  (KIMI_K2_PRETRAIN_CONFIG_GB300_FP8_MX);
* 26.08 (067f987 src/megatron/bridge/perf_recipes): Qwen3 ``*_fp8mx_config`` on GB300 / GB200 set ``"hybridep"`` with
  ``moe_token_dispatcher_type = "flex"``; GPT-OSS 120B's GB300 / GB200 fp8mx configs through gpt_oss/common.py
  _apply_gpt_oss_120b_full_iter_fp8mx_configs;
* GPT-OSS 120B before: the model's own ``moe_token_dispatcher_type = "alltoall"`` (gpt_oss_provider.py at v0.2.0 and
  v0.3.0, gpt_oss_bridge.py and recipes/gpt_oss/gpt_oss.py at v0.4.0), whose presets set no backend (v0.2.0
  configs/gpt_oss/workload_base_configs.py, v0.3.0 gpt_oss_workload_base_configs.py), except v0.4.0's V2 presets
  (global batch 1280, the rows' 26.04 layouts): ``"hybridep"`` on GB200, B300, B200;
* Kimi-K2 on GB300 at v0.4.0 and v0.5.0: KIMI_K2_PRETRAIN_CONFIG_GB300 ``"hybridep"`` (kimi_llm_pretrain.py applies
  it). The 26.02.01 Kimi row is left alone: v0.3.0 has no Kimi perf preset to read."""

BRIDGE_MOE_EP_OVERLAP["deepseekv3"]["v0.5.0"] = frozenset({"gb300", "gb200"})
BRIDGE_MOE_EP_OVERLAP["qwen3-235b-a22b"]["v0.5.0"] = frozenset({"gb300", "gb200"})
BRIDGE_MOE_EP_OVERLAP["qwen3-235b-a22b"]["067f987"] = frozenset({"gb300", "gb200"})
BRIDGE_MOE_EP_OVERLAP["qwen3-30b-a3b"]["v0.5.0"] = frozenset(_BLACKWELL)
BRIDGE_MOE_EP_OVERLAP["qwen3-30b-a3b"]["067f987"] = frozenset({"gb300", "gb200"})
BRIDGE_MOE_EP_OVERLAP["gptoss120b"] = {"v0.4.0": frozenset({"gb200"}), "v0.5.0": frozenset({"gb300", "gb200"}),
                                       "067f987": frozenset({"gb300", "gb200"})}
"""Where those presets overlap the expert all-to-all (``moe_a2a_overlap=True``, or the 26.08 recipes'
``comm_overlap.overlap_moe_expert_parallel_comm = True``): v0.5.0 DeepSeek-V3 GB300 / GB200 FP8_MX (not B300), Qwen3-235B
GB300 / GB200 FP8_MX_V2, Qwen3-30B GB300 / GB200 / B300 FP8_MX_V1 (not H100 FP8_CS_V1), GPT-OSS 120B GB300 / GB200
FP8_MX_V2 and v0.4.0 GB200 BF16_V2; 067f987 qwen/common.py _enable_hybridep_full_iteration_mxfp8 (Qwen3 fp8mx on GB300 /
GB200) and gpt_oss/common.py _apply_gpt_oss_120b_full_iter_fp8mx_configs."""
