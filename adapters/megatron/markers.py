"""What marks a file as Megatron-LM's: the format's name and the patterns of a MODEL_ARGS YAML.

A leaf module: the adapter class's sniffing (:mod:`.detect`) and the reader (:mod:`.adapter`) both
ask them, and neither imports the other for them.
"""

from __future__ import annotations

import re
from functools import cache

FORMAT = "megatron"


# The patterns are compiled on first use, not at import: a check whose files name no MODEL_ARGS
# (nearly every one, and every cold one-file check of a JSON or a script) never compiles them.
@cache
def sniff_yaml() -> re.Pattern[str]:
    """A MODEL_ARGS YAML (Megatron-LM's functional tests and recipes): its top-level key."""
    return re.compile(r"^MODEL_ARGS:[ \t]*(?:#.*)?$", re.M)


@cache
def yaml_flag_key() -> re.Pattern[str]:
    """An indented ``--flag:`` key under it."""
    return re.compile(r"^[ \t]+[\"']?--[A-Za-z]", re.M)


def model_args_yaml(head: str) -> bool:
    """A ``MODEL_ARGS:`` line (a functional-test YAML). The substring test first: the multi-line
    pattern tries every line start of a script, and nearly no file has the word at all."""
    return "MODEL_ARGS:" in head and sniff_yaml().search(head) is not None
