"""The Bridge format's name and its settings' prefix, apart from the spec builder: rules that only compare
a spec's format or read its settings import these without the builder (and the Megatron-LM flag table it
loads), which a check of a DeepSpeed JSON never needs."""

from __future__ import annotations

FORMAT = "bridge"
ENGINE = "megatron"
"""A Bridge run is a Megatron-Core run: its spec's ``framework`` (``format`` is :data:`FORMAT`). Here, in the
leaf, so that the adapter asks that framework for its key catalog without importing ``framework.py``
(which imports the adapter: an import cycle)."""
BAD_ENV_NAME = "env_vars!name"
"""Where an ``env_vars`` name that is not a non-empty string is kept (``env_vars!name.<index>``: its value is the
name as YAML read it), apart from the variables, so no environment reader takes it for one."""
SETTING_PREFIX = "bridge:"
"""``spec.settings`` keys of the ConfigContainer's fields as written (``bridge:train.train_iters``)."""
TARGET_KEY = "_target_"
"""The key that names a ConfigContainer node's class (``_target_: megatron.bridge...``)."""
