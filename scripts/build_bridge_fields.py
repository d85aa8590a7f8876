"""Build ``adapters/bridge/core_fields.json``: the Megatron-Core config fields a Megatron-Bridge
ConfigContainer writes that have a Megatron-LM argument, by section.

Facts, read with ``ast`` (nothing is imported): the dataclass fields of Megatron-Core's
``TransformerConfig`` / ``MLATransformerConfig`` and their base ``ModelParallelConfig`` (Bridge's
``model`` section: its model providers subclass them), ``OptimizerConfig`` (``optimizer``) and
``DistributedDataParallelConfig`` (``ddp``), at the Megatron-LM commit Bridge pins as its
``3rdparty/Megatron-LM`` submodule. A field has a Megatron-LM argument when its name is an argparse
dest of trainlint's Megatron-LM schema (Megatron-LM copies every such dest into the config by name:
``core_transformer_config_from_args``, ``get_megatron_optimizer_config``, ``get_megatron_ddp_config``);
the fields those functions fill from a differently named argument are the ``renamed`` table, kept by
hand below from their source (``megatron/training/argument_utils.py``, ``training.py``).

Usage: python scripts/build_bridge_fields.py GIT_DIR COMMIT [SCHEMA] > adapters/bridge/core_fields.json
(GIT_DIR: a Megatron-LM clone, bare or not; COMMIT: the submodule commit of Bridge's recipes.json commit.)
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SECTIONS = {
    "model": [("megatron/core/model_parallel_config.py", "ModelParallelConfig"),
              ("megatron/core/transformer/transformer_config.py", "TransformerConfig"),
              ("megatron/core/transformer/transformer_config.py", "MLATransformerConfig")],
    "optimizer": [("megatron/core/optimizer/optimizer_config.py", "OptimizerConfig")],
    "ddp": [("megatron/core/distributed/distributed_data_parallel_config.py", "DistributedDataParallelConfig")],
}

RENAMED = {
    # core_transformer_config_from_args (megatron/training/argument_utils.py)
    "model.num_moe_experts": ["num_experts", "same"],
    "model.num_layers_in_first_pipeline_stage": ["decoder_first_pipeline_num_layers", "same"],
    "model.num_layers_in_last_pipeline_stage": ["decoder_last_pipeline_num_layers", "same"],
    "model.fp8_param": ["fp8_param_gather", "same"],
    "model.fp4_param": ["fp4_param_gather", "same"],
    "model.persist_layer_norm": ["no_persist_layer_norm", "negate"],
    "model.gated_linear_unit": ["swiglu", "same"],
    # get_megatron_ddp_config (megatron/training/training.py)
    "ddp.grad_reduce_in_fp32": ["accumulate_allreduce_grads_in_fp32", "same"],
    "ddp.check_for_nan_in_grad": ["check_for_nan_in_loss_and_grad", "same"],
    "ddp.num_buckets": ["ddp_num_buckets", "same"],
    "ddp.bucket_size": ["ddp_bucket_size", "same"],
    "ddp.pad_buckets_for_high_nccl_busbw": ["ddp_pad_buckets_for_high_nccl_busbw", "same"],
    "ddp.reduce_scatter_with_fp32_accumulation": ["ddp_reduce_scatter_with_fp32_accumulation", "same"],
    "ddp.average_in_collective": ["ddp_average_in_collective", "same"],
}
"""Fields Megatron-LM fills from an argument of another name (field -> [dest, same | negate])."""

NOT_ARGUMENTS = {
    "model.batch_p2p_comm": "Megatron-LM sets it to `not --overlap-p2p-comm` (overlap_p2p_comm is mapped itself)",
    "model.pipeline_dtype": "Megatron-LM sets it to params_dtype; no argument of its own",
    "model.deallocate_pipeline_outputs": "Megatron-LM always sets True; no argument",
    "model.bias_activation_fusion": "--bias-swiglu-fusion or --bias-gelu-fusion, by the activation",
    "model.activation_func": "a function (--swiglu, --squared-relu, --quick-geglu choose it)",
    "model.is_hybrid_model": "Megatron-LM sets it when --hybrid-layer-pattern is given",
    "model.inference_sampling_seed": "Megatron-LM sets it to --seed",
    "model.config_logger_dir": "a path for config logging, not a run setting trainlint reads",
}
"""Fields Megatron-LM derives from other arguments (no argument that means the field): not mapped."""


def _reader(git_dir: str, commit: str):
    def read(path: str) -> str:
        return subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], check=True,
                              capture_output=True, text=True).stdout
    return read


def dataclass_fields(text: str, name: str) -> list[str]:
    """The annotated class-level names of class ``name`` (its own, not its bases')."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                    and not s.target.id.startswith("_")]
    raise SystemExit(f"class {name} not found")


def build(read, commit: str, dests: set[str]) -> dict:
    out: dict = {"source": "NVIDIA/Megatron-LM", "commit": commit,
                 "how": "scripts/build_bridge_fields.py: dataclass fields (ast) whose name is a Megatron-LM dest",
                 "same": {}, "renamed": {}, "not_arguments": NOT_ARGUMENTS, "without_argument": {}}
    for section, classes in SECTIONS.items():
        same, without = [], []
        for path, cls in classes:
            for name in dataclass_fields(read(path), cls):
                dotted = f"{section}.{name}"
                if dotted in RENAMED or dotted in NOT_ARGUMENTS or name in same or name in without:
                    continue
                (same if name in dests else without).append(name)
        out["same"][section] = sorted(same)
        out["without_argument"][section] = sorted(without)
    out["renamed"] = {k: v for k, v in sorted(RENAMED.items()) if v[0] in dests}
    return out


def main(argv: list[str]) -> None:
    git_dir, commit = argv[0], argv[1]
    schema = Path(argv[2]) if len(argv) > 2 else Path(__file__).resolve().parents[1] / "schemas" / "megatron.schema.json"
    dests = set(json.loads(schema.read_text(encoding="utf-8"))["properties"])
    data = build(_reader(git_dir, commit), commit, dests)
    json.dump(data, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
