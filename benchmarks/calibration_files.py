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

The GPU is given as a user gives it: ``--gpu ID`` for a catalog part, or a custom GPU table in the
project config (``[tool.trainlint.gpus.<id>]``) for a part the catalog lacks (A800, H100 96 GB at 500 W).

The vocabulary is a property of the tokenizer, which none of these formats states as a number: the
scripts give it the way each framework lets a user state it (Megatron ``--vocab-size``, NeoX
``padded_vocab_size``); for rows whose source does not state it, the vocabulary comes from the row's
``vocab_hint`` or, failing that, from ``--model PRESET`` of the model the row names (see ``vocab_of``).

Rows of frameworks trainlint reads no file of (Composer/llm-foundry, nanotron, torchtitan, the
low-confidence rows whose layout is unpublished) raise :class:`NoUserPath`: they are reported apart.
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


# --------------------------------------------------------------------------- facts of a row


def framework_of(row: dict) -> str:
    """Which engine ran the row, from what the row says (``parallel.framework`` or its source)."""
    p = row["parallel"]
    text = f"{p.get('framework') or ''} {row.get('source') or ''} {row['id']}".lower()
    if "llm-foundry" in text or "composer" in text:
        raise NoUserPath("Composer/llm-foundry YAML (FSDP): no trainlint adapter")
    if "nanotron" in text:
        raise NoUserPath("nanotron YAML: no trainlint adapter")
    if "torchtitan" in text:
        raise NoUserPath("torchtitan TOML (FSDP2): no trainlint adapter")
    if p.get("fsdp") or p.get("fsdp_degree"):
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
    from trainlint.catalog import load_model_presets

    squash = lambda text: re.sub(r"[^a-z0-9]", "", text.lower())  # noqa: E731
    name = squash(row_id)
    hits = [pid for pid in load_model_presets() if squash(pid) and squash(pid) in name]
    return max(hits, key=len) if hits else None


CUSTOM_GPUS = {
    # A800: the A100 SXM4 80GB chip with NVLink cut to 400 GB/s bidirectional (200 per direction);
    # FlagPerf's tables count it at 312 TFLOP/s dense 16-bit.
    "a800-sxm4-80gb": {"name": "NVIDIA A800-SXM4-80GB", "memory_gb": 80, "memory_gib": 80, "bf16_tflops": 312,
                       "fp16_tflops": 312, "tf32_tflops": 156, "fp32_tflops": 19.5, "hbm_bandwidth_tbps": 2.039,
                       "intra_node_bw_gbps": 200, "inter_node_bw_gbps": 25, "gpus_per_node": 8},
    # H800 SXM: the H100 SXM chip with NVLink cut to 400 GB/s bidirectional (200 per direction)
    "h800-sxm": {"name": "NVIDIA H800 SXM5 80GB", "memory_gb": 80, "memory_gib": 79.6, "bf16_tflops": 989,
                 "fp16_tflops": 989, "fp8_tflops": 1979, "tf32_tflops": 494, "fp32_tflops": 67,
                 "hbm_bandwidth_tbps": 3.35, "intra_node_bw_gbps": 200, "inter_node_bw_gbps": 50, "gpus_per_node": 8},
}


def gpu_of(row: dict) -> tuple[str, dict | None]:
    """(id, custom table or None): the catalog id of the row's GPU, or a custom GPU the user declares."""
    text = str(row["gpu"])
    if re.search(r"A800", text):
        return "a800-sxm4-80gb", CUSTOM_GPUS["a800-sxm4-80gb"]
    if re.search(r"H800", text):
        return "h800-sxm", CUSTOM_GPUS["h800-sxm"]
    if re.search(r"A100", text):
        mem = re.search(r"(40|80)\s*GB", text)
        if not mem:
            raise Skip("A100 without memory size")
        return f"a100-{mem.group(1)}gb", None
    if re.search(r"H100", text):
        mem = re.search(r"(\d+)\s*GB", text)
        if mem and mem.group(1) != "80":
            raise NoUserPath(f"{text}: not a catalog part")
        return "h100-sxm", None
    raise Skip(f"GPU {text!r} not in the catalog")


def precision_of(row: dict) -> str:
    text = str(_need(row.get("precision"), "precision")).lower()
    if "fp8" in text or "float8" in text:
        return "fp8"
    if "bf16" in text:
        return "bf16"
    if "fp16" in text:
        return "fp16"
    raise Skip(f"precision {row.get('precision')!r} not understood")


def _layout(row: dict) -> tuple[int, int, int, int]:
    p = row["parallel"]
    n = int(row["num_gpus"])
    tp, pp = int(_need(p.get("tp"), "tensor parallel size")), int(_need(p.get("pp"), "pipeline parallel size"))
    cp = int(p.get("cp") or 1)
    dp = n // (tp * pp * cp)
    if p.get("dp") is not None and int(p["dp"]) != dp:
        raise Skip(f"dp {p['dp']} != GPUs / (TP x PP x CP) = {dp}")
    return tp, pp, cp, dp


def _launcher(n: int) -> tuple[int, int]:
    per_node = min(8, n)
    if n % per_node:
        raise Skip(f"{n} GPUs is not whole nodes of {per_node}")
    return per_node, n // per_node


# --------------------------------------------------------------------------- writers


def _megatron_args(row: dict, vocab: int | None, *, deepspeed: bool) -> list[str]:
    m, p, b = row["model"], row["parallel"], row["batch"]
    tp, pp, cp, _ = _layout(row)
    args = [f"--num-layers {_need(m.get('layers'), 'layers')}", f"--hidden-size {_need(m.get('hidden'), 'hidden size')}",
            f"--num-attention-heads {_need(m.get('heads'), 'heads')}"]
    if m.get("kv_heads") and m["kv_heads"] != m["heads"]:
        args.append(f"--group-query-attention --num-query-groups {m['kv_heads']}")
    if m.get("ffn_hidden"):
        args.append(f"--ffn-hidden-size {m['ffn_hidden']}")
    if m.get("swiglu"):
        args.append("--swiglu")
    if m.get("untied_embeddings"):
        args.append("--untie-embeddings-and-output-weights")
    seq = _need(m.get("seq_len"), "sequence length")
    args.append(f"--seq-length {seq} --max-position-embeddings {seq}")
    if vocab:
        args.append(f"--vocab-size {vocab}")
    args.append(f"--micro-batch-size {_need(b.get('micro'), 'micro batch')} --global-batch-size {_need(b.get('global'), 'global batch')}")
    args.append(f"--tensor-model-parallel-size {tp} --pipeline-model-parallel-size {pp}")
    if cp > 1:
        args.append(f"--context-parallel-size {cp}")
    if p.get("vpp") and int(p["vpp"]) > 1:
        per_stage = int(m["layers"]) // pp
        args.append(f"--num-layers-per-virtual-pipeline-stage {per_stage // int(p['vpp'])}")
    if p.get("sequence_parallel") and tp > 1:
        args.append("--sequence-parallel")
    if p.get("distributed_optimizer") and not deepspeed:
        args.append("--use-distributed-optimizer")
    if not deepspeed and (p.get("overlap_grad_reduce") or str(p.get("ddp_impl") or "") == "torch"):
        # torch DDP all-reduces gradient buckets during backward: --overlap-grad-reduce in today's Megatron-LM
        args.append("--overlap-grad-reduce")
    if p.get("overlap_param_gather") and not deepspeed:
        args.append("--overlap-param-gather")
    if p.get("tp_comm_overlap"):
        args.append("--tp-comm-overlap")
    dtype = precision_of(row)
    args.append("--fp16" if dtype == "fp16" else "--bf16")
    if dtype == "fp8":
        args.append("--fp8-format hybrid")
    recompute = row.get("recompute") or "none"
    if recompute == "full":
        args.append("--checkpoint-activations" if deepspeed else
                    "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1")
    elif recompute == "selective":
        args.append("--recompute-activations")
    if "narayanan" in row["id"]:
        # 2021 Megatron-LM: Megatron's own attention with a fused softmax, no flash kernel
        args.append("--attention-backend unfused")
    if deepspeed:
        args.append(f"--deepspeed --deepspeed_config ds_config.json --zero-stage {int(p.get('zero_stage') or 0)}")
        if recompute == "full":
            args.append("--deepspeed-activation-checkpointing")
    args.append("--train-iters 100 --lr 1e-4")
    return args


def _script(row: dict, args: list[str]) -> str:
    per_node, nodes = _launcher(int(row["num_gpus"]))
    body = " \\\n    ".join(args)
    return (f"#!/bin/bash\n# {row['id']}: written by benchmarks/accuracy.py from the calibration row\n"
            f"torchrun --nproc_per_node {per_node} --nnodes {nodes} pretrain_gpt.py \\\n    {body}\n")


def _ds_json(row: dict, *, with_batch: bool) -> str:
    b, p = row["batch"], row["parallel"]
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
    cfg["zero_optimization"] = {"stage": int(p.get("zero_stage") or 0)}
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
        "checkpoint_activations": row.get("recompute") == "full",
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
    gpu, custom = gpu_of(row)
    vocab, preset, vnote = vocab_of(row)
    case = Case(row, how)
    if vnote:
        case.notes.append(vnote)
    if how == "megatron-lm":
        case.files["train.sh"] = _script(row, _megatron_args(row, vocab, deepspeed=False))
        case.paths = ["train.sh"]
    elif how == "megatron-deepspeed":
        case.files["train.sh"] = _script(row, _megatron_args(row, vocab, deepspeed=True))
        case.files["ds_config.json"] = _ds_json(row, with_batch=False)
        case.paths = ["train.sh"]
    elif how == "neox":
        case.files["run.yml"] = _neox_yaml(row, vocab)
        case.paths = ["run.yml"]
        per_node, nodes = _launcher(int(row["num_gpus"]))
        case.argv += ["--nodes", str(nodes), "--gpus-per-node", str(per_node)]
    elif how == "deepspeed+hf":
        case.files["ds_config.json"] = _ds_json(row, with_batch=True)
        case.files["config.json"] = _hf_config(row, _need(vocab, "vocabulary"))
        case.paths = ["ds_config.json"]
        per_node, nodes = _launcher(int(row["num_gpus"]))
        case.argv += ["--model", "config.json", "--nodes", str(nodes), "--gpus-per-node", str(per_node)]
    if preset:
        case.argv += ["--model", preset]
    if custom is None:
        case.argv += ["--gpu", gpu]
        case.argv += ["--isolated"]
    else:
        table = "\n".join(f"{k} = {json.dumps(v)}" for k, v in custom.items())
        case.files["pyproject.toml"] = f'[tool.trainlint]\ngpu = "{gpu}"\n\n[tool.trainlint.gpus.{gpu}]\n{table}\n'
    return case
