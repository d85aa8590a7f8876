"""The one way every face (``check``, ``run``, ``estimate``, ``suggest``, ``plan``, the language
server) opens a project and works on it.

:func:`open_session` reads the project config, loads the plugins (local ones only as
:mod:`trainlint.files.trust` allows), builds the registry of rules, adapters, GPUs and model presets,
resolves the selection and checks that the named GPU and model exist. The :class:`Session` it
returns then reads files (:meth:`Session.check_paths`), lints them (:meth:`Session.lint`) and
estimates specs (:meth:`Session.estimate`) in that one context, so a plugin adapter, a plugin
GPU or a project's rule option is seen the same way by every face. A face parses its own
arguments into :class:`SessionOptions` and renders what the session gives back; nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from trainlint.core.exit_codes import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.presets.catalog import GPU
    from trainlint.files.checker import FileTask
    from trainlint.core.results import FileResult
    from trainlint.project.config import ProjectConfig
    from trainlint.project.engine import LintSettings
    from trainlint.estimator.context import EstimateContext
    from trainlint.layout.startup_check import StartupRules
    from trainlint.presets.models import ModelPreset
    from trainlint.project.registry import Registry
    from trainlint.core.spec import TrainingSpec


@dataclass(frozen=True)
class EstimateOptions:
    """What an estimate needs that a config may not say (``--gpu``, ``--nodes``, ... or the
    editor's initialization options); None leaves it to the project config, the spec, a default."""

    gpu: str | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    model: str | None = None
    vocab_size: int | None = None
    micro_batch: int | None = None
    seq_length: int | None = None
    grad_accum: int | None = None


@dataclass(frozen=True)
class SessionOptions:
    """How to open a project: which config, which plugins may load, which rules are selected, the
    launch-script environment, the extra runs and the estimate's context."""

    config: str | None = None
    """A project config to use instead of searching for one from the start folder."""
    config_is_users: bool = True
    """Whether ``config`` is the user's own choice (``--config``), trusted to name paths outside its
    project; the language server passes the config it found, which is the repository's."""
    isolated: bool = False
    """Ignore every project config file."""
    allow_plugins: bool = False
    """``--allow-plugins``: the user allows the config's local plugins (see :mod:`trainlint.files.trust`)."""
    editor_trusted: bool | None = None
    """The editor's workspace trust (the language server), None outside an editor."""
    trust_roots: tuple[str, ...] | None = None
    """Folders standing in for the current directory in the trust decision (a workspace folder)."""
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    preview: bool | None = None
    """``--preview`` / ``--no-preview``: run the preview rules (None: the project config's ``preview``)."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """``--arg`` / ``--env`` values for launch scripts (over the project config's ``env``)."""
    runs: tuple[tuple[str, ...], ...] = ()
    """``--run a.yml,b.yml``: files merged in order as one run (after the project config's runs)."""
    estimate: EstimateOptions = field(default_factory=EstimateOptions)
    framework_source: str | None = None
    """``--framework-source PATH``: the framework checkout every config is judged against (over the
    project config's ``framework`` / ``framework-source``), relative to the current directory."""


@dataclass
class Session:
    """A project opened once: its config, registry, selection and estimator context."""

    options: SessionOptions
    project: ProjectConfig
    registry: Registry
    settings: LintSettings
    environment: dict[str, str]
    """The launch-script environment: the project config's, then the options' (which win)."""
    runs: list[list[str]]
    gpus: dict[str, GPU]
    """The GPUs of the ``trainlint_gpus`` hooks (the shipped catalog, then the plugins'), plus the project's ``gpus`` tables."""
    _startup_rules: StartupRules | None = field(default=None, repr=False)
    _context_kept: tuple[tuple, EstimateContext] | None = field(default=None, repr=False, compare=False)
    """The last context :meth:`estimate` made for a spec, with what it was made from (see :meth:`_spec_context`)."""

    @property
    def model_presets(self) -> Mapping[str, ModelPreset]:
        """The model presets of the ``trainlint_model_presets`` hooks: the shipped ones (the built-in
        plugin's) with the plugins' over them."""
        return self.registry.model_presets

    # ------------------------------------------------------------------ reading

    @property
    def adapters(self) -> list:
        return self.registry.adapters

    @property
    def frameworks(self) -> Any:
        """This project's ``framework`` settings (a FrameworkSettings, or None): every file the
        session reads resolves its framework target with them, never with another project's."""
        return self.project.framework_settings

    def plan_files(self, paths: Sequence[str]) -> list[FileTask]:
        """What :meth:`check_paths` reads, in order (the runs first), for splitting over processes."""
        from trainlint.files.checker import plan_files

        return plan_files(paths, self.adapters, self.runs)

    def check_task(self, task: FileTask) -> FileResult:
        from trainlint.files.checker import check_task

        return check_task(task, self.adapters, self.environment, self.frameworks)

    def check_paths(self, paths: Sequence[str]) -> list[FileResult]:
        """Read every config under ``paths`` (and the runs) into specs, with every adapter."""
        return [self.check_task(task) for task in self.plan_files(paths)]

    def check_command(self, launch: Any) -> list[FileResult]:
        """What a launch command line (:func:`trainlint.adapters.launch.command_line.parse_launch`) trains with,
        read with this session's adapters and environment (``trainlint run``)."""
        from trainlint.adapters.launch.command_line import read_command

        return read_command(launch, self.adapters, self.environment, self.frameworks, list(self.registry.frameworks))

    # ------------------------------------------------------------------ linting

    def declare_cluster(self, results: Sequence[FileResult]) -> None:
        """Put what the user declared about the cluster (``--gpu``/``--nodes``/``--gpus-per-node``,
        or the project config's keys) into the specs where the config itself says nothing, so the
        start-up rules (bf16 on a V100, world size divisibility) see it with its provenance."""
        from trainlint.core.provenance import Origin, Provenance, Value, derived

        given = self.options.estimate
        declared = []
        for name, field_name, cli_value in (("gpu", "cluster.gpu", given.gpu), ("nodes", "cluster.nodes", given.nodes),
                                            ("gpus-per-node", "cluster.gpus_per_node", given.gpus_per_node)):
            if cli_value is not None:
                declared.append((field_name, Value(cli_value, Provenance(Origin.CLI, key=f"--{name}",
                                                                         note=f"--{name} {cli_value}"))))
            elif self.project.estimation.by_key(name) is not None:
                declared.append((field_name, Value(self.project.estimation.by_key(name), Provenance(
                    Origin.PROJECT_CONFIG, path=self.project.path, key=name, note=f"{name} in {self.project.path}"))))
        for result in results:
            for spec in result.specs:
                for field_name, value in declared:
                    if spec.get(field_name) is None:
                        spec.set(field_name, value)
                nodes, per_node = spec.cluster.nodes, spec.cluster.gpus_per_node
                if spec.cluster.world_size is None and nodes is not None and per_node is not None \
                        and isinstance(nodes.value, int) and isinstance(per_node.value, int):
                    spec.cluster.world_size = derived(nodes.value * per_node.value, "nodes x GPUs per node",
                                                      nodes, per_node)

    def lint(self, results: Sequence[FileResult], *, write_fixes: bool | None = None) -> list[FileResult]:
        """The declared cluster, then rules, severities, selection and suppressions. ``write_fixes``
        overrides the session's setting for this call (the editor asks for the written layout fixes
        only when it shows a finding's code actions)."""
        from trainlint.project.engine import lint

        self.declare_cluster(results)
        settings = self.settings
        if write_fixes is not None and write_fixes != settings.write_fixes:
            settings = replace(settings, write_fixes=write_fixes)
        return lint(results, self.registry, settings)

    def plugin_failures(self) -> list[FileResult]:
        """One TL998 per plugin that failed (TL015 for untrusted local plugins), at the project config."""
        from trainlint.project.engine import plugin_failures

        return plugin_failures(self.registry, self.project)

    def startup_rules(self) -> StartupRules:
        """The registry's TL1xx rules with the project's options: what a layout must not break."""
        if self._startup_rules is None:
            from trainlint.project.engine import startup_rules

            self._startup_rules = startup_rules(self.registry, self.settings.rule_options, preview=self.settings.preview)
        return self._startup_rules

    # ------------------------------------------------------------------ estimating

    def context(self, spec: TrainingSpec | None = None, **overrides: Any) -> EstimateContext:
        """The estimate's context for ``spec``: the options (``overrides`` replace some, e.g.
        ``gpu=`` for a comparison), then the project config, the spec and the defaults.
        Raises ContextError when a named GPU or model does not exist."""
        from trainlint.estimator import build_context

        given = replace(self.options.estimate, **overrides) if overrides else self.options.estimate
        return build_context(spec, gpu=given.gpu, nodes=given.nodes, gpus_per_node=given.gpus_per_node,
                             model=given.model, vocab_size=given.vocab_size, micro_batch=given.micro_batch,
                             seq_length=given.seq_length, grad_accum=given.grad_accum,
                             project=self.project,
                             gpus=self.gpus, presets=self.model_presets)

    def estimate(self, spec: TrainingSpec, context: EstimateContext | None = None, **overrides: Any) -> Any:
        """The spec's Estimate (or MissingInputs) in ``context`` (one :meth:`context` gave), else
        in :meth:`context` with ``overrides``. Raises ContextError, InvariantError (a bug)."""
        from trainlint.estimator import estimate

        if context is None:
            context = self._spec_context(spec) if not overrides else self.context(spec, **overrides)
        return estimate(spec, context)

    def _spec_context(self, spec: TrainingSpec) -> EstimateContext:
        """:meth:`context` of ``spec``, made again only when what it reads changed: of the spec, the
        cluster's GPU, GPUs per node and nodes (immutable Values, compared by identity: the variants a
        rule estimates, other world sizes or a fix, keep them); the session's options, project and GPU
        table. The rules of one run estimate ~2-20 variants of it, each of which built the context
        again. The estimator does not change its context. With a model named (``--model``, ``model =``)
        it is made every time, as before: it reads the preset or Hugging Face config from disk, which
        a language server's session must see change."""
        if self.options.estimate.model is not None or self.project.estimation.model is not None:
            return self.context(spec)
        cluster = spec.cluster
        key = (cluster.gpu, cluster.gpus_per_node, cluster.nodes, self.options.estimate, self.project, self.gpus)
        kept = self._context_kept
        if kept is not None and all(a is b for a, b in zip(kept[0], key, strict=True)):
            return kept[1]
        context = self.context(spec)
        self._context_kept = (key, context)
        return context

    def find_gpu(self, name: str) -> GPU:
        """A GPU of this session's table by id or alias; raises ContextError."""
        from trainlint.estimator.context import find_gpu_in

        return find_gpu_in(name, self.gpus)

    def find_model(self, name: str) -> ModelPreset:
        """A model preset of this session (or a local HF config.json); raises ContextError."""
        from trainlint.estimator.context import resolve_model
        from trainlint.core.provenance import Origin

        preset: ModelPreset = resolve_model(name, Origin.CLI, presets=self.model_presets).value
        return preset


def open_session(options: SessionOptions, start: Path, *, validate: bool = True) -> Session:
    """Open the project whose config is found from ``start`` upwards (or ``options.config``).
    ``validate``: fail now on settings that name rules or options that do not exist and on a GPU
    or model that does not exist (off for ``trainlint rules``/``explain``, which list what exists).
    Raises ConfigError or ValueError (ContextError included): usage errors, exit 2."""
    from trainlint.project.config import discover
    from trainlint.project.engine import check_settings, settings_from
    from trainlint.estimator.context import custom_gpus
    from trainlint.project.plugins import project_host
    from trainlint.project.registry import build_registry

    project = discover(start, options.config, options.isolated)
    from trainlint.files.containment import TrustGiven, confine_project

    confine_project(project, explicit=options.config is not None and options.config_is_users,
                    trust_given=TrustGiven(options.allow_plugins, options.trust_roots, options.editor_trusted))
    if options.framework_source:
        import os

        from trainlint.files.config_files import ConfigError
        from trainlint.frameworks.locate import FrameworkSettingError, clear_caches, with_source

        try:
            settings_ = with_source(project.framework_settings, options.framework_source, os.getcwd())
        except FrameworkSettingError as exc:
            raise ConfigError(f"--framework-source: {exc}") from None
        clear_caches()
        project = replace(project, framework_settings=settings_)
    host = project_host(project, allow=options.allow_plugins,
                        roots=list(options.trust_roots) if options.trust_roots is not None else None,
                        editor_trusted=options.editor_trusted)
    registry = build_registry(host)
    settings = settings_from(project, select=list(options.select) if options.select is not None else None,
                             extend_select=options.extend_select, ignore=options.ignore, preview=options.preview)
    if validate:
        check_settings(registry, settings)
    base = dict(registry.gpus)  # the shipped catalog and the plugins' GPUs, all from trainlint_gpus
    try:
        gpus = custom_gpus(project, base=base)
    except ValueError:  # malformed `gpus` tables: a usage error, unless only listing what exists
        if validate:
            raise
        gpus = base
    session = Session(options, project, registry, settings, {**project.environment, **options.environment},
                      project.runs + [list(run) for run in options.runs], gpus)
    if validate:
        session.context(None)  # the named GPU and model exist: a usage error now, not one per file
    settings.estimate = session.estimate
    settings.gpus = gpus
    settings.adapters = registry.adapters
    settings.environment = session.environment
    settings.layout_advice = _layout_advice(session)
    return session


def _layout_advice(session: Session) -> Callable[..., Any]:
    return _LazyLayoutAdvice(session)


class _LazyLayoutAdvice:
    """The session's :class:`~trainlint.rules.estimation.fixes.LayoutAdvice`, made on the first
    question: most checks ask none, and its module (the rules' fix search) is ~1.5 ms of start-up."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.made: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.made is None:
            from trainlint.rules.estimation.fixes import LayoutAdvice

            session = self.session
            self.made = LayoutAdvice(session.estimate, session.startup_rules, session.adapters)
        return self.made(*args, **kwargs)

    def forget(self) -> None:
        """Empty the memoised searches: the next question searches again."""
        if self.made is not None:
            self.made.found.clear()


def exit_code(results: Sequence[FileResult], *, exit_zero: bool = False) -> int:
    """2 when trainlint failed (TL998 a plugin, TL999 itself), else 1 when an error was reported
    (0 with ``exit_zero``), else 0."""
    if any(d.code in ("TL998", "TL999") for r in results for d in r.diagnostics):
        return EXIT_ERROR
    if exit_zero:
        return EXIT_CLEAN
    has_error = any(d.severity.value == "error" for r in results for d in r.diagnostics)
    return EXIT_FINDINGS if has_error else EXIT_CLEAN
