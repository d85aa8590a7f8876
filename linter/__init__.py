"""trainlint: lint large-model training configs before the job is launched.

This module holds the hook implementation marker, as pluggy's own example does (plugins import
``trainlint.hookimpl``, or everything they need from :mod:`trainlint.plugin`), and keeps the module
paths of before the layer packages importable (issue 31, see ``_MOVED``).
"""

import sys
from typing import TYPE_CHECKING, cast

__version__ = "0.1.0"

# Start-up (issue 33). Before anything imports inspect (dataclasses, pluggy) or ipaddress (pathlib,
# through urllib.parse): each is loaded on first use, which a check with trainlint's own plugins never
# makes. Before any module of trainlint defines a
# dataclass: the methods the decorator generates come from a table of compiled code kept beside the
# bytecode (their compilation was close to half a cold check's instructions).
from trainlint.core import dataclass_code as _dataclass_code
from trainlint.core import deferred_stdlib as _deferred_stdlib
from trainlint.core.hook_markers import HookimplMarker as _HookimplMarker

_deferred_stdlib.defer_stdlib()
_dataclass_code.install()

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec
    from types import ModuleType

hookimpl = _HookimplMarker("trainlint")
"""Marker for trainlint hook implementations (built-ins use it too). It writes what
``pluggy.HookimplMarker("trainlint")`` writes (either marks a plugin's hooks), without importing pluggy:
a check with trainlint's own plugins never makes pluggy's manager (:mod:`trainlint.core.hook_markers`)."""


# The modules that were top-level modules of trainlint until the layers became packages (issue 31),
# by the package that holds them now. A published plugin may import one by its old path (the
# diagnostics module, the spec, the framework protocol...); that import still works and gives the
# very same module object, with a DeprecationWarning naming the new path, so the plugin neither
# breaks nor keeps working unknowingly. New code imports :mod:`trainlint.plugin`. Names only, never
# dotted paths, so that the move script (which rewrites every old dotted path) leaves this table be.
_MOVED: dict[str, tuple[str, ...]] = {
    "core": ("spec", "results", "escape", "project_settings", "provenance", "positions", "diagnostics", "document",
             "values", "framework", "input_codes", "numbers", "exit_codes", "cancel", "hookspecs"),
    "files": ("config_files", "containment", "trust", "checker", "discovery", "schema_check", "writing", "safe_write",
              "checkout", "comments", "key_edits", "sources", "did_you_mean"),
    "presets": ("catalog", "models", "hf_cache"),
    "project": ("session", "engine", "registry", "plugins", "config", "config_groups", "selection", "suppressions",
                "unused_suppressions", "baseline", "fixes", "fix_check", "process_pool", "estimate_memo", "audit"),
}
_NEW_PATH = {f"{__name__}.{module}": f"{__name__}.{package}.{module}"
             for package, modules in _MOVED.items() for module in modules}


class _MovedModuleLoader:
    """Loads an old path as the module at its new path (imported there, under its own name)."""

    def __init__(self, new: str) -> None:
        self.new = new
        self.spec: ModuleSpec | None = None

    def create_module(self, spec: "ModuleSpec") -> "ModuleType":
        import importlib
        import warnings

        warnings.warn(f"{spec.name} is now {self.new} (a plugin imports from trainlint.plugin)", DeprecationWarning,
                      stacklevel=2)
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: "ModuleType") -> None:
        # the import system has set the old path's spec on the module; give it back its own
        module.__spec__ = self.spec


class _MovedModuleFinder:
    """A meta path finder that answers for the old paths only (after every other finder)."""

    def find_spec(self, fullname: str, path: "Sequence[str] | None" = None,
                  target: "ModuleType | None" = None) -> "ModuleSpec | None":
        new = _NEW_PATH.get(fullname)
        if new is None:
            return None
        from importlib.machinery import ModuleSpec

        # a loader by protocol (create_module, exec_module): importlib.abc costs start-up time
        return ModuleSpec(fullname, cast("Loader", _MovedModuleLoader(new)))


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())
