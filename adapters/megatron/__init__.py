"""Megatron-LM: launch scripts, argument lists and MODEL_ARGS YAML (see :mod:`.adapter`)."""

from typing import Any

from trainlint.adapters.megatron.detect import FORMAT, MegatronAdapter

__all__ = ["FORMAT", "MegatronAdapter", "load_argv", "load_script", "load_yaml"]


def __getattr__(name: str) -> Any:
    # The readers (shell evaluator, flag tables, tree-sitter) are imported on first use, so that
    # sniffing a file that is not Megatron's costs nothing.
    if name in ("load_argv", "load_script", "load_yaml"):
        from trainlint.adapters.megatron import adapter

        return getattr(adapter, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
