"""Collecting rules and adapters from plugins, and resolving rule selectors.

Each plugin's hook implementation is called on its own, so a rule list that fails to build
is reported with the plugin's name and the other plugins' rules still run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from trainlint.plugins import BUILTIN_PLUGIN, BUILTIN_PLUGINS, PluginFailure, PluginHost
from trainlint.rules import Rule


@dataclass
class Registry:
    rules: dict[str, type[Rule]] = field(default_factory=dict)
    adapters: list = field(default_factory=list)
    failures: list[PluginFailure] = field(default_factory=list)

    def by_selector(self, selector: str) -> list[type[Rule]]:
        """``ALL``, a code (``TL110``), a prefix (``TL1``, ``TL``) or a rule name."""
        selector = selector.strip()
        if selector.upper() == "ALL":
            return list(self.rules.values())
        upper = selector.upper()
        found = [r for code, r in self.rules.items() if code.startswith(upper)]
        if not found:
            found = [r for r in self.rules.values() if r.name == selector]
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
    for plugin_name, rules in _call_each(host, "trainlint_rules", registry.failures):
        for rule in rules:
            problems = rule.validate() if isinstance(rule, type) and issubclass(rule, Rule) else ["not a Rule subclass"]
            if problems:
                registry.failures.append(PluginFailure(plugin_name, f"rule {getattr(rule, 'code', rule)!r}: {'; '.join(problems)}"))
                continue
            if rule.code in registry.rules:
                other = registry.rules[rule.code]
                registry.failures.append(PluginFailure(
                    plugin_name, f"rule code {rule.code} already used by {other.plugin} ({other.name})"))
                continue
            rule.plugin = BUILTIN_PLUGIN if plugin_name in BUILTIN_PLUGINS else plugin_name
            registry.rules[rule.code] = rule
    for _, adapters in _call_each(host, "trainlint_adapters", registry.failures):
        registry.adapters.extend(adapters)
    registry.rules = dict(sorted(registry.rules.items()))
    return registry
