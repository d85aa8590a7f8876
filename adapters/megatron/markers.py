"""What marks a file as Megatron-LM's: the format's name and the patterns of a MODEL_ARGS YAML.

A leaf module: the adapter class's sniffing (:mod:`.detect`) and the reader (:mod:`.adapter`) both
ask them, and neither imports the other for them.
"""

from __future__ import annotations

import re

FORMAT = "megatron"

SNIFF_YAML = re.compile(r"^MODEL_ARGS:[ \t]*(?:#.*)?$", re.M)
"""A MODEL_ARGS YAML (Megatron-LM's functional tests and recipes): its top-level key."""
YAML_FLAG_KEY = re.compile(r"^[ \t]+[\"']?--[A-Za-z]", re.M)
"""An indented ``--flag:`` key under it."""


def model_args_yaml(head: str) -> bool:
    """A ``MODEL_ARGS:`` line (a functional-test YAML). The substring test first: the multi-line
    pattern tries every line start of a script, and nearly no file has the word at all."""
    return "MODEL_ARGS:" in head and SNIFF_YAML.search(head) is not None
