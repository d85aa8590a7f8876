"""The Bridge format's name and its settings' prefix, apart from the spec builder: rules that only compare
a spec's format or read its settings import these without the builder (and the Megatron-LM flag table it
loads), which a check of a DeepSpeed JSON never needs."""

from __future__ import annotations

FORMAT = "bridge"
SETTING_PREFIX = "bridge:"
"""``spec.settings`` keys of the ConfigContainer's fields as written (``bridge:train.train_iters``)."""
TARGET_KEY = "_target_"
"""The key that names a ConfigContainer node's class (``_target_: megatron.bridge...``)."""
