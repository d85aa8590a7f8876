"""trainlint: lint large-model training configs before the job is launched.

This module holds only the pluggy marker, as pluggy's own example does: plugins import
``trainlint.hookimpl`` and nothing else from here.
"""

import pluggy

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("trainlint")
"""Marker for trainlint hook implementations (built-ins use it too)."""
