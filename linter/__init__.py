"""trainlint: lint large-model training configs before the job is launched.

This module holds only the pluggy marker, as pluggy's own example does: plugins import
``trainlint.hookimpl`` and nothing else from here.
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover
    import pluggy

    hookimpl: pluggy.HookimplMarker
    """Marker for trainlint hook implementations (built-ins use it too)."""


def __getattr__(name: str) -> Any:
    # ``hookimpl`` is made on first use, so that ``import trainlint.cli`` does not import pluggy
    # (and inspect) before the CLI has set up: the commands that need plugins import it then.
    if name == "hookimpl":
        import pluggy

        marker = pluggy.HookimplMarker("trainlint")
        globals()["hookimpl"] = marker
        return marker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
