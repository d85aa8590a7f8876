"""The project config: ``[tool.trainlint]`` in pyproject.toml, or a ``.trainlint.toml`` /
``trainlint.toml`` (the same keys without the header).

Found by walking up from each checked file (or the working directory); the nearest folder
holding one wins, for that file (``trainlint.project.config_groups``: one session per distinct config).
Within one folder, as ruff orders ``.ruff.toml`` / ``ruff.toml`` / ``pyproject.toml``:
``.trainlint.toml`` wins over ``trainlint.toml``, which wins over a pyproject.toml with a
``[tool.trainlint]`` table. CLI flags win over the file. Paths in the file are relative to the
file's directory, and must lie inside its checkout unless the user trusts it
(:func:`trainlint.files.containment.confine_project`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainlint.files.config_files import ConfigError, find_config, read_section, string_list
from trainlint.core.project_settings import EstimationSettings, PlanningSettings


KNOWN_KEYS = {
    # input and runs
    "runs", "env", "plugins", "source-roots",
    # the framework version configs are written for (a release or a checkout per framework)
    "framework", "framework-source",
    # rule selection and configuration
    "select", "extend-select", "ignore", "per-file-ignores", "severity", "rules", "preview",
    # estimation context (read by trainlint.estimator.context)
    "gpu", "nodes", "gpus-per-node", "model", "vocab-size", "gpus",
    # planning limits and prices
    "max-days", "max-cost", "price-per-gpu-hour", "prices",
    # adoption: the baseline file (relative to the config's folder), unused-suppression reports
    "baseline", "report-unused-per-file-ignores",
}


@dataclass
class ProjectConfig:
    """A project config as read: runs, environment, selection, severities, rule options, plugins, framework,
    estimation and planning settings."""

    path: str | None = None
    runs: list[list[str]] = field(default_factory=list)
    """Multi-file runs: each a list of files merged in order (NeoX takes several YAMLs)."""
    environment: dict[str, str] = field(default_factory=dict)
    """Values for shell variables of launch scripts (``TP = "4"``), for static resolution."""
    raw: dict[str, Any] = field(default_factory=dict)
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    severity: dict[str, str] = field(default_factory=dict)
    """Code or name -> error | warning | info."""
    rule_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Code or name -> {option: value}, from [tool.trainlint.rules.<code-or-name>]."""
    plugins: list[str] = field(default_factory=list)
    source_roots: list[str] = field(default_factory=list)
    """Directories (relative to the config) outside the checkout that ``source`` and
    ``--deepspeed_config`` may read (see :mod:`trainlint.files.containment`)."""
    framework: dict[str, str] = field(default_factory=dict)
    """``framework = {megatron = "core_v0.8.0", neox = "../gpt-neox"}``: a shipped release or a checkout
    (relative to the config file) per framework; see :mod:`trainlint.frameworks.locate`."""
    framework_settings: Any = None
    """``framework``, checked: the :class:`trainlint.frameworks.locate.FrameworkSettings` this
    project's session passes to the adapters (None: no project config says)."""
    estimation: EstimationSettings = field(default_factory=EstimationSettings)
    planning: PlanningSettings = field(default_factory=PlanningSettings)
    baseline: str | None = None
    """The baseline file, relative to the config's folder."""
    report_unused_per_file_ignores: bool = False
    preview: bool = False
    """``preview = true``: run the preview rules too (see :mod:`trainlint.rules.codes`)."""

    @property
    def root(self) -> str | None:
        return str(Path(self.path).parent) if self.path else None


def load_config(path: Path) -> ProjectConfig:
    section = read_section(path)
    base = path.parent
    runs = section.get("runs", [])
    if not isinstance(runs, list) or not all(isinstance(r, list) and r and all(isinstance(p, str) for p in r) for r in runs):
        raise ConfigError(f"{path}: `runs` must be a list of lists of file paths, "
                          "e.g. runs = [[\"configs/125M.yml\", \"configs/local_setup.yml\"]]")
    environment = section.get("env", {})
    if not isinstance(environment, dict) or not all(isinstance(v, (str, int)) for v in environment.values()):
        raise ConfigError(f"{path}: `env` must be a table of strings, e.g. env = {{ TP = \"4\" }}")
    unknown = sorted(set(section) - KNOWN_KEYS)
    if unknown:
        from trainlint.files.did_you_mean import hint

        raise ConfigError(f"{path}: unknown setting `{unknown[0]}`{hint(unknown[0], KNOWN_KEYS)}")
    if "baseline" in section and not isinstance(section["baseline"], str):
        raise ConfigError(f"{path}: `baseline` must be a file path, e.g. baseline = \".trainlint-baseline.json\"")
    if "report-unused-per-file-ignores" in section and not isinstance(section["report-unused-per-file-ignores"], bool):
        raise ConfigError(f"{path}: `report-unused-per-file-ignores` must be true or false")
    if any(k in section for k in ("max-days", "max-cost", "price-per-gpu-hour", "prices")):
        from trainlint.planning.inputs import planning_key_problems

        problems = planning_key_problems(section)
        if problems:
            raise ConfigError(f"{path}: {problems[0]}")
    framework = section.get("framework", {})
    if not isinstance(framework, dict) or not all(isinstance(v, str) for v in framework.values()):
        raise ConfigError(f"{path}: `framework` must be a table of strings, e.g. "
                          "framework = {{megatron = \"core_v0.8.0\", neox = \"../gpt-neox\"}}".replace("{{", "{").replace("}}", "}"))
    frameworks = _framework_settings(framework, str(base), path)
    source = section.get("framework-source")
    if source is not None:
        if not isinstance(source, str) or not source.strip():
            raise ConfigError(f"{path}: `framework-source` must be a path to a framework checkout (relative to the "
                              "project root)")
        frameworks = _with_source(frameworks, source, path)
    return ProjectConfig(
        path=str(path),
        framework=dict(framework),
        framework_settings=frameworks,
        runs=[[str(base / p) for p in run] for run in runs],
        environment={str(k): str(v) for k, v in environment.items()},
        raw=section,
        select=_selectors(section, "select", path) if "select" in section else None,
        extend_select=_selectors(section, "extend-select", path),
        ignore=_selectors(section, "ignore", path),
        per_file_ignores=_per_file_ignores(section, path),
        severity=_severities(section, path),
        rule_options=_rule_options(section, path),
        plugins=string_list(section, "plugins", path),
        source_roots=string_list(section, "source-roots", path),
        estimation=EstimationSettings(section.get("gpu"), section.get("nodes"), section.get("gpus-per-node"),
                                      section.get("model"), section.get("vocab-size"), section.get("gpus")),
        planning=PlanningSettings(section.get("max-days"), section.get("max-cost"), section.get("price-per-gpu-hour"),
                                  dict(section.get("prices", {}))),
        baseline=section.get("baseline"),
        report_unused_per_file_ignores=bool(section.get("report-unused-per-file-ignores", False)),
        preview=_flag(section, "preview", path),
    )


def _flag(section: dict, key: str, path: Path) -> bool:
    value = section.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: `{key}` must be true or false")
    return value


def _selectors(section: dict, key: str, path: Path) -> list[str]:
    return string_list(section, key, path)


def _per_file_ignores(section: dict, path: Path) -> dict[str, list[str]]:
    value = section.get("per-file-ignores", {})
    if not isinstance(value, dict) or not all(
            isinstance(v, list) and all(isinstance(c, str) for c in v) for v in value.values()):
        raise ConfigError(f"{path}: `per-file-ignores` must map globs to lists of codes, "
                          "e.g. \"configs/legacy/*.json\" = [\"TL004\"]")
    return value


def _severities(section: dict, path: Path) -> dict[str, str]:
    value = section.get("severity", {})
    if not isinstance(value, dict) or not all(v in ("error", "warning", "info") for v in value.values()):
        raise ConfigError(f"{path}: `severity` must map codes to \"error\", \"warning\" or \"info\"")
    return value


def _rule_options(section: dict, path: Path) -> dict[str, dict[str, Any]]:
    value = section.get("rules", {})
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ConfigError(f"{path}: `rules` must be tables of options, e.g. [tool.trainlint.rules.TL201]")
    return value


def _framework_settings(framework: dict[str, str], base: str | None, path: Path | None) -> Any:
    """The project config's ``framework`` table, checked (a FrameworkSettings for this project's
    session only: the language server serves several projects in one process). Reading a config
    also forgets the targets found so far, so a long-running server sees a checkout added since."""
    from trainlint.frameworks.locate import FrameworkSettingError, clear_caches, configure

    clear_caches()
    try:
        return configure(framework, base)
    except FrameworkSettingError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _with_source(frameworks: Any, source: str, path: Path) -> Any:
    """``framework-source``: a checkout, relative to the project root (the git work tree holding the
    config, else the config's folder), the target of every family it holds."""
    from trainlint.frameworks.locate import FrameworkSettingError, project_root, with_source

    try:
        return with_source(frameworks, source, str(project_root(path.resolve().parent)))
    except FrameworkSettingError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _forget_targets() -> None:
    from trainlint.frameworks.locate import clear_caches

    clear_caches()


def discover(start: Path, explicit: str | None = None, isolated: bool = False) -> ProjectConfig:
    if isolated:
        _forget_targets()
        return ProjectConfig()
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise ConfigError(f"config file not found: {explicit}")
        return load_config(p)
    found = find_config(start)
    if found is None:
        _forget_targets()
        return ProjectConfig()
    return load_config(found)
