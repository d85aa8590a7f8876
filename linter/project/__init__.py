"""The engine/session layer: opening a project (its config, plugins, registry, selection,
suppressions, baseline) and checking it (the rule engine, fixes verified by re-reading, check -j N)."""
