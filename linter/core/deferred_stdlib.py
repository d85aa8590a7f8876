"""``inspect`` and ``ipaddress`` imported on first use rather than at start-up (issue 33).

``dataclasses`` and pluggy import ``inspect`` (with ``ast``, ``dis``, ``tokenize``, ``linecache``) when
they are imported, and use it only later: ``dataclasses`` for the ``__doc__`` of a class that has none,
pluggy to register a plugin. A cold check of one file with trainlint's own plugins uses neither (every
dataclass of that path has a docstring; the plugin host reads trainlint's own hook implementations
without pluggy's manager, :class:`trainlint.project.plugins.PluginHost`), and that import alone was
~9% of its instructions. :func:`defer_inspect` puts in ``sys.modules`` a module object for
``inspect`` whose code runs on the first attribute anyone reads (but ``__spec__``, which the import
system reads of a module it finds there: ``importlib.util.LazyLoader`` loads on that too, before
Python 3.12, so it cannot serve here); the module is then the same, whole, ``inspect``. Only when
nobody has imported ``inspect`` yet.

``ipaddress`` likewise: ``urllib.parse`` imports it (and ``pathlib`` imports ``urllib.parse``) for one
check of a bracketed host name (``_check_bracketed_host``), which no check of a config makes; its
16 classes were ~1 ms of every start.
"""

import sys
import types


class _OnFirstUse(types.ModuleType):
    """A module whose code runs when one of its attributes is first read, written or deleted."""

    def _load(self) -> None:
        spec = object.__getattribute__(self, "__spec__")
        object.__setattr__(self, "__class__", types.ModuleType)
        spec.loader.exec_module(self)

    def __getattribute__(self, attr: str) -> object:
        if attr == "__spec__":
            return object.__getattribute__(self, attr)
        _OnFirstUse._load(self)
        return getattr(self, attr)

    def __setattr__(self, attr: str, value: object) -> None:
        _OnFirstUse._load(self)
        setattr(self, attr, value)

    def __delattr__(self, attr: str) -> None:
        _OnFirstUse._load(self)
        delattr(self, attr)


DEFERRED = ("inspect", "ipaddress")
"""The standard modules :func:`defer_stdlib` defers."""


def defer_stdlib() -> None:
    for name in DEFERRED:
        defer(name)


def defer(name: str) -> None:
    """Put a module object for the top-level module ``name`` in ``sys.modules`` whose code runs on first use
    (unless it is imported already, or is not a module of source or bytecode the path finder finds)."""
    if name in sys.modules:
        return
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec(name)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return
    module = _OnFirstUse(name)
    for attr, value in (("__spec__", spec), ("__loader__", spec.loader), ("__file__", spec.origin),
                        ("__cached__", spec.cached), ("__package__", "")):
        object.__setattr__(module, attr, value)
    sys.modules[name] = module


def is_loaded(name: str) -> bool:
    """Whether module ``name`` was imported and, if it was deferred, loaded (without loading it)."""
    module = sys.modules.get(name)
    return module is not None and type(module) is not _OnFirstUse
