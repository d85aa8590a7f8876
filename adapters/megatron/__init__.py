"""Megatron-LM: launch scripts, argument lists and MODEL_ARGS YAML (see :mod:`.adapter`)."""

from trainlint.adapters.megatron.adapter import FORMAT, MegatronAdapter, load_argv, load_script, load_yaml

__all__ = ["FORMAT", "MegatronAdapter", "load_argv", "load_script", "load_yaml"]
