"""The plugin host: pluggy manager with trainlint's hookspecs, its built-ins, entry-point
plugins and local plugin files named in the project config.

Built-in rules and adapters are plugins too (:mod:`trainlint.builtin`), registered through
the same hooks a team's plugin implements. Plugins are loaded one at a time: one that fails
to import is recorded (and reported as TL998 with its name) and the others still load; so is one
that implements a hook trainlint does not specify (a misspelled ``trainlint_rulez``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import FunctionType, ModuleType
from typing import TYPE_CHECKING, Any, Sequence

from trainlint import hookimpl
from trainlint.core import hookspecs
from trainlint.rules.codes import FAMILIES, SHARED_FAMILIES

if TYPE_CHECKING:  # pragma: no cover
    import pluggy

ENTRY_POINT_GROUP = "trainlint"
BUILTIN_PLUGIN = "trainlint.builtin"
# trainlint's own plugins: the built-in adapters, frameworks, GPUs and model presets (BUILTIN_PLUGIN),
# and one rule bundle per rule family, each registered through its own trainlint_rules hook
# implementation (as sqlfluff's rule packages are): the family package returns its rules from the codes
# table (trainlint.rules.codes). The host registers here only the families no framework owns; a
# framework's own start-up families are registered through its Framework object (Framework.rules(),
# register_framework_rules), as a plugin framework's are. Their rules are all reported as coming from
# BUILTIN_PLUGIN (the plugin that registered the framework).
RULE_BUNDLES = tuple(FAMILIES[family] for family in SHARED_FAMILIES)
BUILTIN_PLUGINS = (BUILTIN_PLUGIN, *RULE_BUNDLES)
_OWN_MODULES = frozenset((BUILTIN_PLUGIN, *FAMILIES.values()))
"""trainlint's own plugin modules (every family package, whoever registers it), scanned for their
``trainlint_*`` names only."""


@dataclass
class PluginFailure:
    """A plugin that could not be loaded or used, and why (reported as TL998, or TL015 when not trusted)."""

    plugin: str
    reason: str
    code: str = "TL998"
    """TL998 (a plugin failed) or TL015 (local plugins not loaded: not trusted)."""


class PluginHost:
    """trainlint's hooks and plugins (a pluggy manager), and the failures met loading them.

    While only trainlint's own plugin modules are registered (a check with no installed or local
    plugin, the common case), their hook implementations are read off the modules, in the order pluggy
    calls them (registration order: none of them is a wrapper, ``tryfirst``, ``trylast`` or renamed
    with ``specname``, else the manager is made). The pluggy manager is made on first use of
    :attr:`manager` (any other plugin's registration, a test), with the same modules registered in
    the same order: pluggy needs ``inspect`` to register anything, and with it a cold one-file check
    took ~9% more instructions (issue 33); pluggy itself is imported only then (its import was ~6% of
    that check's instructions; trainlint's markers are :mod:`trainlint.core.hook_markers`).
    ``tests/test_plugin_host.py`` compares the two."""

    def __init__(self, manager: pluggy.PluginManager | None = None, failures: list[PluginFailure] | None = None,
                 owners: dict[str, str] | None = None) -> None:
        self._manager = manager
        self.failures: list[PluginFailure] = failures if failures is not None else []
        self.owners: dict[str, str] = owners if owners is not None else {}
        """Rule bundle (its plugin name) -> the plugin whose framework registered it (Framework.rules())."""
        self._own: list[tuple[str, ModuleType, dict[str, Any]]] = []
        """(name, module, hook name -> implementation) of the own modules registered without a manager."""

    @property
    def manager(self) -> pluggy.PluginManager:
        if self._manager is None:
            manager = _manager_class()("trainlint")
            manager.add_hookspecs(hookspecs)
            for name, module, _ in self._own:
                manager.register(module, name=name)
            self._manager = manager
            self._own = []
        return self._manager

    @property
    def hook(self) -> Any:
        return self.manager.hook if self._manager is not None else _OwnHooks(self._own)

    def has_plugin(self, name: str) -> bool:
        if self._manager is not None:
            return self._manager.has_plugin(name)
        return any(own == name for own, _, _ in self._own)

    def register(self, plugin: Any, name: str) -> None:
        """Register ``plugin`` under ``name`` (pluggy's errors propagate)."""
        if self._manager is None and isinstance(plugin, ModuleType) and plugin.__name__ in _OWN_MODULES:
            impls = _own_hookimpls(plugin)
            if impls is not None and not self.has_plugin(name):
                self._own.append((name, plugin, impls))
                return
        self.manager.register(plugin, name=name)

    def unknown_hooks(self, only: frozenset[str] | None = None) -> dict[str, list[str]]:
        """Plugin -> the hooks it implements that trainlint does not specify (``optionalhook`` ones aside)."""
        unknown: dict[str, list[str]] = {}
        if self._manager is None:
            specified = _specified()
            for name, _, impls in self._own:
                if only is None or name in only:
                    for hook_name, function in impls.items():
                        if hook_name not in specified and not _impl_opts(function).get("optionalhook"):
                            unknown.setdefault(name, []).append(hook_name)
            return unknown
        import pluggy

        try:
            self._manager.check_pending()
        except pluggy.PluginValidationError:
            pass
        else:
            return unknown
        for hook_name, caller in vars(self._manager.hook).items():
            if hook_name.startswith("_") or caller.has_spec():
                continue
            for impl in caller.get_hookimpls():
                if not impl.optionalhook and (only is None or impl.plugin_name in only):
                    unknown.setdefault(impl.plugin_name, []).append(hook_name)
        return unknown


def _impl_opts(function: Any) -> dict[str, Any]:
    opts = getattr(function, "trainlint_impl", None)
    return opts if isinstance(opts, dict) else {}


def _own_hookimpls(module: ModuleType) -> dict[str, Any] | None:
    """An own module's ``trainlint_*`` hook implementations by hook name, as pluggy's
    ``_Manager.parse_hookimpl_opts`` finds them; None when one of them changes pluggy's calling order or
    hook (a wrapper, ``tryfirst``, ``trylast``, ``specname``): then pluggy registers the module."""
    impls: dict[str, Any] = {}
    for name, value in vars(module).items():
        if not name.startswith("trainlint_") or not isinstance(value, FunctionType):
            continue
        opts = getattr(value, "trainlint_impl", None)
        if not isinstance(opts, dict):
            continue
        if any(opts.get(key) for key in ("wrapper", "hookwrapper", "tryfirst", "trylast", "specname")):
            return None
        impls[name] = value
    return impls


def _specified() -> frozenset[str]:
    return frozenset(name for name, value in vars(hookspecs).items()
                     if name.startswith("trainlint_") and hasattr(value, "trainlint_spec"))


@dataclass(frozen=True)
class _OwnImpl:
    """What the registry reads of a hook implementation (pluggy's ``HookImpl`` has the same two)."""

    plugin_name: str
    function: Any


class _OwnCaller:
    def __init__(self, impls: list[_OwnImpl]) -> None:
        self._impls = impls

    def get_hookimpls(self) -> list[_OwnImpl]:
        return list(self._impls)


class _OwnHooks:
    """``manager.hook`` for the own modules registered without a manager: ``hook.<name>.get_hookimpls()``."""

    def __init__(self, own: list[tuple[str, ModuleType, dict[str, Any]]]) -> None:
        self._own = own

    def __getattr__(self, hook_name: str) -> _OwnCaller:
        if not hook_name.startswith("trainlint_"):
            raise AttributeError(hook_name)
        return _OwnCaller([_OwnImpl(name, impls[hook_name]) for name, _, impls in self._own if hook_name in impls])


def _manager_class() -> type[pluggy.PluginManager]:
    """pluggy's manager, which scans trainlint's own plugin modules for their ``trainlint_*`` names only
    (a class made on first use: pluggy is imported only when a manager is needed).

    pluggy looks at every name of a plugin statically (``inspect.getattr_static``, ~0.1 ms a module of
    rules) and trainlint registers seven modules of its own at every start (the built-ins and the
    rule families), whose hook implementations all carry their hook's name. Any other
    plugin is scanned as pluggy does: its implementations may carry any name (``specname=``)."""
    global _MANAGER
    if _MANAGER is None:
        import pluggy

        class _Manager(pluggy.PluginManager):
            def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
                if (not name.startswith("trainlint_") and isinstance(plugin, ModuleType)
                        and plugin.__name__ in _OWN_MODULES):
                    return None
                return super().parse_hookimpl_opts(plugin, name)

        _MANAGER = _Manager
    return _MANAGER


_MANAGER: type[pluggy.PluginManager] | None = None


def create_host(local_plugins: Sequence[str] = (), base_dir: Path | None = None, *,
                entry_points: bool = True) -> PluginHost:
    host = PluginHost()
    for name in BUILTIN_PLUGINS:
        host.register(importlib.import_module(name), name=name)
    if entry_points:
        _load_entry_points(host)
    for item in local_plugins:
        _load_local(host, item, base_dir or Path.cwd())
    _check_pending(host)
    return host


def _check_pending(host: PluginHost, only: frozenset[str] | None = None) -> None:
    """One TL998 per plugin that implements a hook trainlint has no spec for (``trainlint_rulez``):
    pluggy keeps such an implementation and never calls it, so the rules it meant to add would be
    silently missing. The plugin's other hooks still count. ``check_pending`` is pluggy's own test
    (an implementation marked ``optionalhook=True`` is allowed); it stops at the first, so when it
    fails every unknown hook is collected, by plugin."""
    unknown = host.unknown_hooks(only)
    for plugin, names in unknown.items():
        host.failures.append(PluginFailure(plugin, "; ".join(_unknown_hook(name) for name in sorted(names))))


class _RuleBundle:
    """The rule classes a plugin framework's ``rules()`` returned, as one bundle: registered through the
    ``trainlint_rules`` hook like every other rule."""

    def __init__(self, rules: list[Any]) -> None:
        self._rules = rules

    @hookimpl
    def trainlint_rules(self) -> list[Any]:
        return self._rules


def register_framework_rules(host: PluginHost, frameworks: Sequence[tuple[str, Any]]) -> None:
    """Register each framework's own start-up rules (``Framework.rules()``, from the plugin that
    registered the framework) as rule bundles on ``host``, so the registry collects every rule one
    way, through ``trainlint_rules``. An entry of ``rules()`` is a bundle's module name (a module
    whose ``trainlint_rules`` returns the rules: trainlint's own families, imported by name so no
    framework imports the rules layer) or a rule class (a plugin framework's; its classes become one
    bundle named ``<plugin>:<framework>``). A bundle that cannot be loaded is one TL998 naming the
    plugin. Registering twice (a second registry of one host) adds nothing."""
    added: set[str] = set()
    for plugin_name, framework in frameworks:
        try:
            entries = list(framework.rules())
        except Exception as exc:  # noqa: BLE001 - a plugin's framework may raise
            host.failures.append(PluginFailure(plugin_name, f"framework {framework.name!r}: rules() failed: "
                                                            f"{type(exc).__name__}: {exc}"))
            continue
        classes = [entry for entry in entries if not isinstance(entry, str)]
        bundles: list[tuple[str, Any]] = [(entry, None) for entry in entries if isinstance(entry, str)]
        if classes:
            bundles.append((f"{plugin_name}:{framework.name}", _RuleBundle(classes)))
        for name, plugin in bundles:
            if name in host.owners or host.has_plugin(name):
                continue  # registered already (by this host's earlier registry, or as a plugin of its own)
            if plugin is None:
                try:
                    plugin = importlib.import_module(name)
                except Exception as exc:  # noqa: BLE001
                    host.failures.append(PluginFailure(plugin_name, f"framework {framework.name!r}: rule bundle "
                                                                    f"{name!r} not loaded: {type(exc).__name__}: {exc}"))
                    continue
            host.owners[name] = plugin_name
            _register(host, plugin, name)
            added.add(name)
    if added:
        _check_pending(host, frozenset(added))


def _unknown_hook(name: str) -> str:
    import difflib

    known = [n for n in dir(hookspecs) if n.startswith("trainlint_")]
    close = difflib.get_close_matches(name, known, n=1)
    return f"unknown hook `{name}`, never called" + (f" (did you mean `{close[0]}`?)" if close else "")


def project_host(project: Any, *, allow: bool = False, roots: Sequence[str] | None = None,
                 editor_trusted: bool | None = None) -> PluginHost:
    """The plugin host for a project config: its local plugins only when :mod:`trainlint.files.trust`
    allows them (else one TL015 notice); built-ins and installed entry points always."""
    plugins = list(getattr(project, "plugins", []) or [])
    config = getattr(project, "path", None)
    base = Path(project.root) if getattr(project, "root", None) else None
    if not plugins or config is None:
        return create_host(plugins if config is None else (), base)
    from trainlint.files import trust  # only for a project that names local plugins

    decision = trust.decide(config, allow_flag=allow, roots=roots, editor_trusted=editor_trusted)
    if decision.allowed:
        return create_host(plugins, base)
    host = create_host((), base)
    names = ", ".join(f"`{p}`" for p in plugins)
    host.failures.append(PluginFailure(
        names, f"local plugins from {config} not loaded ({decision.reason}): {trust.how_to_allow(config)}", "TL015"))
    return host


def _load_entry_points(host: PluginHost) -> None:
    if not _may_declare_entry_points(ENTRY_POINT_GROUP):
        return  # importlib.metadata (email, zipfile, csv, ...) costs ~20 ms of start-up for nothing
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if host.has_plugin(ep.name):
            continue
        if _from_current_directory(ep):
            host.failures.append(PluginFailure(ep.name, f"entry point {ep.value} not loaded: its distribution lies in the "
                                               "current directory (on sys.path through PYTHONPATH or the interpreter's "
                                               "start), i.e. in the checkout, not installed by the user", "TL015"))
            continue
        try:
            plugin = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the others
            host.failures.append(PluginFailure(ep.name, f"cannot load entry point {ep.value}: {type(exc).__name__}: {exc}"))
            continue
        _register(host, plugin, ep.name)


def _from_current_directory(ep: Any) -> bool:
    """Whether an entry point's distribution is a ``*.dist-info`` folder directly in the current
    directory (``sys.path`` holds ``""`` or the directory itself): a file of the checkout being
    linted, not a package the user installed. Such plugins are not imported whatever the entry
    (``python -m``, ``PYTHONPATH=.``)."""
    import os

    dist = getattr(ep, "dist", None)
    if dist is None:
        return False
    try:
        location = os.path.realpath(str(dist.locate_file("")))
        return location == os.path.realpath(os.getcwd())
    except (OSError, ValueError, TypeError, AttributeError):
        return False


def _load_local(host: PluginHost, item: str, base_dir: Path) -> None:
    """``tools/lint_rules.py`` (a file, relative to the project config) or ``pkg.module``."""
    try:
        if item.endswith(".py") or "/" in item or "\\" in item:
            path = (base_dir / item).resolve()
            if not path.is_file():
                host.failures.append(PluginFailure(item, f"plugin file not found: {path}"))
                return
            module_name = f"trainlint_local_plugin_{path.stem}_{abs(hash(str(path))) % 10**8}"
            spec = importlib.util.spec_from_file_location(module_name, path)
            if spec is None or spec.loader is None:
                host.failures.append(PluginFailure(item, "not a Python module"))
                return
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(item)
    except Exception as exc:  # noqa: BLE001
        host.failures.append(PluginFailure(item, f"cannot import: {type(exc).__name__}: {exc}"))
        return
    _register(host, module, item)


def _register(host: PluginHost, plugin: Any, name: str) -> None:
    try:
        host.register(plugin, name)
    except Exception as exc:  # noqa: BLE001 - e.g. a hookimpl with an unknown argument
        host.failures.append(PluginFailure(name, f"cannot register: {type(exc).__name__}: {exc}"))


def _may_declare_entry_points(group: str) -> bool:
    """False only when no installed distribution can declare an entry point in ``group``.

    A cheap look at the ``entry_points.txt`` files that ``importlib.metadata`` would read (the
    ``*.dist-info`` / ``*.egg-info`` folders of every ``sys.path`` entry, sections read as its
    ``Sectioned.read`` does). Whenever the answer is not certain (another distribution finder,
    a zip or ``.egg`` on the path, a file that cannot be decoded) this says True, and the real
    ``entry_points()`` decides, so the plugins loaded are always the same."""
    import os
    from importlib.machinery import PathFinder

    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        return True
    for entry in sys.path:
        root = entry or "."
        if not isinstance(entry, str) or root.lower().endswith(".egg"):
            return True
        try:
            children = os.listdir(root)
        except NotADirectoryError:
            return True  # a zip file on sys.path
        except OSError:
            continue
        for child in children:
            if not child.lower().endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(root, child, "entry_points.txt"), encoding="utf-8") as handle:
                    text = handle.read()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
                continue
            except Exception:  # noqa: BLE001 - let importlib.metadata meet (and report) it
                return True
            if _has_section_entries(text, group):
                return True
    return False


def _has_section_entries(text: str, group: str) -> bool:
    section = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section == group:
            return True
    return False
