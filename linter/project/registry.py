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
    model_presets: dict[str, Any] = field(default_factory=dict)
    """Model presets from ``trainlint_model_presets``, by id: the shipped ones, then the plugins' (an
    equal id replaces a shipped preset)."""
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
        try:
            result = impl.function()
        except Exception as exc:  # noqa: BLE001
            failures.append(PluginFailure(impl.plugin_name, f"{hook_name}() failed: {type(exc).__name__}: {exc}"))
            continue
        if result:
            yield impl.plugin_name, result


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
    for plugin_name, entries in _call_each(host, "trainlint_model_presets", registry.failures):
        _add_entries(plugin_name, entries, "model preset", registry.model_presets, registry.failures)
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
    from trainlint.presets.catalog import GPU, gpu_from_dict
    from trainlint.presets.models import ModelPreset, model_preset_from_dict

    build = gpu_from_dict if kind == "GPU" else model_preset_from_dict
    built = GPU if kind == "GPU" else ModelPreset
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
