"""Entry point scripts are recognised by one pattern made of ENTRY_NAMES: the same answer as
one pattern per name (any of them), on real and generated paths."""

from __future__ import annotations

import random
import re

from trainlint.adapters.megatron.invocation import ENTRY_NAMES, NOT_ENTRY, _is_entry_path


def one_per_name(path: str) -> bool:
    return any(re.search(r"(^|/)" + name + r"\.py$", path) for name in ENTRY_NAMES)


def test_the_combined_pattern_answers_as_one_per_name():
    paths = ["pretrain_gpt.py", "/x/Megatron-LM/pretrain_gpt.py", "tasks/main.py", "tasks/glue/main.py",
             "examples/multimodal/train.py", "mimo/train.py", "finetune_gpt.py", "examples/detxoify_lm/finetune_gpt.py",
             "tools/run_text_generation_server.py", "run_mcore_text_generation.py", "modelopt/quantize.py",
             "examples/inference/gpt/simple_gpt_inference.py", "launch_inference_server.py", "train.py",
             "pretrain_.py", "xpretrain_gpt.py", "tasks/main.pyc", "a/tasks/x/y/main.py", "finetune.py.bak", ""]
    rng = random.Random(7)
    pieces = ["pretrain_", "gpt", "tasks/", "main", "train_rl", "mimo/", "train", "finetune", "_inference",
              "modelopt/", "run_", "text_generation", "launch_inference_server", ".py", "/", "x", "_", "-"]
    paths += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))) for _ in range(3000)]
    for path in paths:
        assert _is_entry_path(path) == (one_per_name(path) and not NOT_ENTRY.search(path)), path
