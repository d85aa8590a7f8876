"""Framework variants and versions: which one a config targets, and its argument definitions.

* :mod:`.target`  — the :class:`FrameworkTarget` a spec records (variant, version, provenance).
* :mod:`.argscan` — argument definitions read from framework source with ``ast`` (never run).
* :mod:`.markers` — the argument module that marks a checkout of each family.
* :mod:`.catalog` — an :class:`ArgCatalog` (one version's names), shipped ones and the cache.
* :mod:`.locate`  — finding the target: project config, source beside the config, installed
  package, else upstream as trainlint's built-in table has it.
"""
