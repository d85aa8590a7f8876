"""Collecting rules, adapters, GPUs and model presets from plugins, and resolving rule selectors.

Each plugin's hook implementation is called on its own, so a rule list that fails to build
is reported with the plugin's name and the other plugins' rules still run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from trainlint.core.framework import Framework, Frameworks
from trainlint.project.plugins import BUILTIN_PLUGIN, BUILTIN_PLUGINS, PluginFailure, PluginHost, register_framework_rules
from trainlint.rules import CODE_PATTERN, NAME_PATTERN, DeferredRule, Rule, RuleEntry, load


class RuleTable(Mapping[str, type[Rule]]):
    """The registered rules by code, in code order. Looking a rule up (``table[code]``, ``.values()``)
    gives its class, importing a deferred rule's module then; :attr:`entries` gives what was
    registered, a class or a :class:`~trainlint.rules.DeferredRule`, without importing anything
    (code, name, lifecycle, ``requires``, ``frameworks``, ``plugin``: what selection needs)."""

    def __init__(self, entries: Mapping[str, RuleEntry] | None = None) -> None:
        self.entries: dict[str, RuleEntry] = dict(entries or {})

    def __getitem__(self, code: str) -> type[Rule]:
        return load(self.entries[code])

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, code: object) -> bool:
        return code in self.entries

    def __repr__(self) -> str:
        return f"RuleTable({list(self.entries)})"


@dataclass
class Registry:
    """What the plugins contributed: rules by code, adapters, GPUs, model presets, and the plugins that failed."""

    rules: RuleTable = field(default_factory=RuleTable)
    adapters: list = field(default_factory=list)
    failures: list[PluginFailure] = field(default_factory=list)
    gpus: dict[str, Any] = field(default_factory=dict)
    """GPUs from ``trainlint_gpus``, by id: the shipped catalog (the built-in plugin's), then the other
    plugins' (an equal id replaces a shipped GPU)."""
    model_presets: Mapping[str, Any] = field(default_factory=dict)
    """Model presets from ``trainlint_model_presets``, by id: the shipped ones, then the plugins' (an
    equal id replaces a shipped preset); the shipped ones are read on first use (:class:`ModelPresets`)."""
    frameworks: Frameworks = field(default_factory=Frameworks)
    """Frameworks from ``trainlint_frameworks``, by name (built-in and plugin)."""

    def by_selector(self, selector: str) -> list[type[Rule]]:
        """``ALL``, a code (``TL110``), a prefix (``TL1``, ``TL``) or a rule name."""
        return [load(entry) for entry in self.entries_by_selector(selector)]

    def entries_by_selector(self, selector: str) -> list[RuleEntry]:
        """:meth:`by_selector` without importing the rules (see :class:`RuleTable`)."""
        selector = selector.strip()
        entries = self.rules.entries
        if selector.upper() == "ALL":
            return list(entries.values())
        upper = selector.upper()
        found = [r for code, r in entries.items() if code.startswith(upper)]
        if not found:
            found = [r for r in entries.values() if r.name == selector]
        return found


def _call_each(host: PluginHost, hook_name: str, failures: list[PluginFailure]) -> Iterable[tuple[str, Any]]:
    # Any: a plugin's hook returns whatever its author wrote
    caller = getattr(host.hook, hook_name)
    for impl in caller.get_hookimpls():
        result = _call(impl.plugin_name, impl.function, hook_name, failures)
        if result:
            yield impl.plugin_name, result


def _call(plugin_name: str, function: Any, hook_name: str, failures: list[PluginFailure]) -> Any:
    try:
        return function()
    except Exception as exc:  # noqa: BLE001
        failures.append(PluginFailure(plugin_name, f"{hook_name}() failed: {type(exc).__name__}: {exc}"))
        return None


class ModelPresets(Mapping[str, Any]):
    """The model presets of every ``trainlint_model_presets`` implementation, by id, in the order the
    hooks are called (a later equal id replaces an earlier one). The other plugins' hooks are called
    and their entries checked when the registry is built (their TL998s are reported whether or not a
    model is named); the built-in plugin's (the shipped ``models.json``, ~2% of a cold one-file check
    with its module) is read on first use: a check that names no model never reads it."""

    HOOK = "trainlint_model_presets"

    def __init__(self, failures: list[PluginFailure]) -> None:
        self._failures = failures
        self._parts: list[tuple[str, Any, dict[str, Any] | None]] = []
        self._entries: dict[str, Any] | None = None

    def defer(self, plugin_name: str, function: Any) -> None:
        self._parts.append((plugin_name, function, None))

    def add(self, plugin_name: str, returned: Any) -> None:
        entries: dict[str, Any] = {}
        if returned:
            _add_entries(plugin_name, returned, "model preset", entries, self._failures)
        self._parts.append((plugin_name, None, entries))

    def _all(self) -> dict[str, Any]:
        if self._entries is None:
            merged: dict[str, Any] = {}
            for plugin_name, function, entries in self._parts:
                if entries is None:
                    entries = {}
                    returned = _call(plugin_name, function, self.HOOK, self._failures)
                    if returned:
                        _add_entries(plugin_name, returned, "model preset", entries, self._failures)
                merged.update(entries)
            self._entries = merged
        return self._entries

    def __getitem__(self, key: str) -> Any:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __contains__(self, key: object) -> bool:
        return key in self._all()

    def __repr__(self) -> str:
        return f"ModelPresets({self._all()!r})"


def _model_presets(host: PluginHost, failures: list[PluginFailure]) -> ModelPresets:
    presets = ModelPresets(failures)
    for impl in getattr(host.hook, ModelPresets.HOOK).get_hookimpls():
        if impl.plugin_name == BUILTIN_PLUGIN:
            presets.defer(impl.plugin_name, impl.function)
        else:
            presets.add(impl.plugin_name, _call(impl.plugin_name, impl.function, ModelPresets.HOOK, failures))
    return presets


def build_registry(host: PluginHost) -> Registry:
    registry = Registry(failures=list(host.failures))
    frameworks = _frameworks(host, registry.failures)
    # one way to register rules: a framework's own start-up rules become rule bundles on the host,
    # collected with every other bundle through trainlint_rules (each reported as its framework's plugin's)
    known_failures = len(host.failures)
    register_framework_rules(host, frameworks)
    registry.failures.extend(host.failures[known_failures:])
    rules: dict[str, RuleEntry] = {}
    for bundle, returned in _call_each(host, "trainlint_rules", registry.failures):
        plugin_name = host.owners.get(bundle, bundle)
        for rule in returned:
            problems = _problems(rule)
            if problems:
                registry.failures.append(PluginFailure(plugin_name, f"rule {getattr(rule, 'code', rule)!r}: {'; '.join(problems)}"))
                continue
            if rule.code in rules:
                other = rules[rule.code]
                registry.failures.append(PluginFailure(
                    plugin_name, f"rule code {rule.code} already used by {other.plugin} ({other.name})"))
                continue
            rule.plugin = BUILTIN_PLUGIN if plugin_name in BUILTIN_PLUGINS else plugin_name
            rules[rule.code] = rule
    for _, adapters in _call_each(host, "trainlint_adapters", registry.failures):
        registry.adapters.extend(adapters)
    registry.frameworks = Frameworks([f for _, f in frameworks])
    for _, framework in frameworks:
        # a framework's formats, unless trainlint_adapters already returned the same adapter class
        known = {type(a) for a in registry.adapters}
        registry.adapters.extend(a for a in framework.adapters() if type(a) not in known)
    from trainlint.core.framework import remember_frameworks

    remember_frameworks(list(registry.frameworks))
    for plugin_name, entries in _call_each(host, "trainlint_gpus", registry.failures):
        _add_entries(plugin_name, entries, "GPU", registry.gpus, registry.failures)
    registry.model_presets = _model_presets(host, registry.failures)
    registry.rules = RuleTable(dict(sorted(rules.items())))
    return registry


def _problems(rule: Any) -> list[str]:
    """What is wrong with a rule a bundle returned: a class is validated whole; a declaration by
    what it declares (its class is checked against it when loaded, :class:`DeferredRule`)."""
    if isinstance(rule, DeferredRule):
        problems = []
        if not isinstance(rule.code, str) or not CODE_PATTERN.match(rule.code):
            problems.append(f"code {rule.code!r} is not 1-3 capitals and 3 digits")
        if not isinstance(rule.name, str) or not NAME_PATTERN.match(rule.name):
            problems.append(f"name {rule.name!r} is not kebab-case")
        return problems
    return rule.validate() if isinstance(rule, type) and issubclass(rule, Rule) else ["not a Rule subclass"]


def _frameworks(host: PluginHost, failures: list[PluginFailure]) -> list[tuple[str, Framework]]:
    """(plugin, Framework) from ``trainlint_frameworks``; a non-Framework entry, a framework
    without a name, or a name registered twice is one TL998 naming the plugin."""
    out: list[tuple[str, Framework]] = []
    seen: dict[str, str] = {}
    for plugin_name, entries in _call_each(host, "trainlint_frameworks", failures):
        for entry in entries if isinstance(entries, (list, tuple)) else [entries]:
            if not isinstance(entry, Framework) or not isinstance(entry.name, str) or not entry.name:
                failures.append(PluginFailure(plugin_name, f"framework {entry!r}: not a trainlint.core.framework.Framework "
                                                           "with a `name`"))
                continue
            if entry.name in seen:
                failures.append(PluginFailure(plugin_name, f"framework {entry.name!r} already registered by {seen[entry.name]}"))
                continue
            seen[entry.name] = plugin_name
            out.append((plugin_name, entry))
    return out


def _add_entries(plugin_name: str, entries: object, kind: str, into: dict[str, Any],
                 failures: list[PluginFailure]) -> None:
    """Catalog entries a plugin returned (dicts with the fields of gpus.json / models.json and an
    ``id``), built as the shipped ones are, or entries already built (the built-in plugin's catalog);
    a malformed entry is one TL998 naming the plugin."""
    build: Any
    built: Any
    if kind == "GPU":
        from trainlint.presets.catalog import GPU as built, gpu_from_dict as build
    else:  # the model presets' module only for them (a check that names no model never imports it)
        from trainlint.presets.models import ModelPreset as built, model_preset_from_dict as build

    for entry in entries if isinstance(entries, (list, tuple)) else [entries]:
        if isinstance(entry, built):
            into[entry.id] = entry
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"]:
            failures.append(PluginFailure(plugin_name, f"{kind} entry {entry!r}: not a dict with an `id`"))
            continue
        try:
            into[entry["id"]] = build(entry["id"], {"name": entry["id"], **entry})
        except (KeyError, TypeError, ValueError) as exc:
            failures.append(PluginFailure(plugin_name, f"{kind} {entry['id']!r}: missing or invalid field "
                                                       f"{exc} (see the hook's documentation)"))
