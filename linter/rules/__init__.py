"""Rules: the checks that run on a TrainingSpec (and its estimate) and yield findings.

A rule is a class with a stable ``code``, a kebab-case ``name``, a ``default_severity``, a
one-line ``summary``, its documentation as the class docstring (ruff's headings: What it does /
Why is this bad? / Example / Fix / References) and ``options`` with defaults. ``check()`` yields
:class:`Finding` objects that point at spec fields or raw settings; the engine turns them into
positioned diagnostics, so a rule never computes a line number.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator, Mapping, Sequence

from trainlint.core.diagnostics import Applicability, Edit, Severity
from trainlint.core.provenance import Value
from trainlint.core.spec import TrainingSpec

CODE_PATTERN = re.compile(r"^[A-Z]{1,3}[0-9]{3}$")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")

Target = str | Value | None
"""Where a finding points: a spec field (``"parallel.tensor"``), a raw setting
(``"settings:zero_optimization.stage"``), a Value, or None (the run itself)."""


@dataclass(frozen=True)
class Option:
    """A rule option: its default value and a one-line help."""

    default: Any
    help: str


@dataclass
class Finding:
    """What a rule reports: the message, where it points, the other places involved, and the fix."""

    message: str
    at: Target = None
    """The most useful place to point at."""
    also: tuple[tuple[Target, str], ...] = ()
    """Other places that contributed, each with a short note ("micro batch set here")."""
    fix: str | None = None
    severity: Severity | None = None
    """Overrides the rule's severity for this finding (a rule that warns or errs by degree)."""
    applicability: Applicability | None = None
    """How the fix may be applied (safe / unsafe / display); None: no machine-applicable fix."""
    edits: tuple[Edit, ...] = ()
    """The fix as text edits in the file's own format (see :class:`trainlint.core.diagnostics.Edit`)."""
    changes: Mapping[str, Any] | None = None
    """The fix as layout changes (keys of :data:`trainlint.layout.changes.CHANGE_KEYS`, e.g.
    ``{"batch.micro_batch": 2}``) when it has no ``edits``: for ``check --fix`` the engine asks the
    run's adapter to write them (``Adapter.writer``, round trip verified) and makes the edits of that."""


@dataclass
class RuleContext:
    """What a rule may use besides the spec."""

    options: dict[str, Any] = field(default_factory=dict)
    estimate: Any = None
    """For rules with ``needs_estimate = True``: the estimator's result for this spec, an
    ``Estimate`` or a ``MissingInputs`` saying what is missing (None when no estimator is set)."""
    estimator: Callable[[TrainingSpec], Any] | None = None
    """Re-estimates a modified copy of the spec in the same context, for fix hints with numbers
    ("with --recompute-granularity selective: 71.4 of 80 GiB")."""
    project: Any = None
    gpus: Mapping[str, Any] | None = None
    """The GPU table in force (catalog, plugin GPUs, the project's ``gpus``), by id; None: the catalog."""
    layout_advice: Callable[[TrainingSpec, float], Any] | None = None
    """The fastest whole layout ``trainlint suggest`` finds for a spec under a memory headroom
    (None when there is none), in the session's context and start-up rules."""
    adapters: Sequence[Any] = ()
    """The session's adapters (plugin adapters included): the run's adapter spells a fix hint in
    its own format (``Adapter.spell_changes``). Empty: the built-in adapters."""
    shared: dict[str, Any] = field(default_factory=dict)
    """What the rules of one spec's run compute once and share (the memory verdict TL201, TL202 and
    TL900 all ask for); one dict per spec, made by the engine, so nothing outlives the run."""


def capabilities(spec: TrainingSpec) -> frozenset[str]:
    """The capabilities of ``spec``'s run, as its framework declares them."""
    from trainlint.core.framework import framework_of

    return framework_of(spec).capabilities(spec)


def applies(rule: type[Rule] | DeferredRule, spec: TrainingSpec, caps: frozenset[str] | None = None) -> bool:
    """Whether ``rule`` runs on ``spec``: its framework has every capability the rule requires (and,
    for a rule limited by name, it is one of the rule's frameworks)."""
    if rule.frameworks and spec.framework not in rule.frameworks:
        return False
    return rule.requires <= (caps if caps is not None else capabilities(spec))


def frameworks_of(rule: Any) -> list[str]:
    """The names of the built-in frameworks a rule runs on, for its documentation and SARIF tags: its
    ``frameworks``, else those whose capabilities cover its ``requires``; none when it runs on every run."""
    if getattr(rule, "frameworks", ()):
        return list(rule.frameworks)
    requires: frozenset[str] = getattr(rule, "requires", frozenset())
    if not requires:
        return []
    from trainlint.adapters import builtin_frameworks

    return sorted(f.name for f in builtin_frameworks() if requires <= f.capabilities(TrainingSpec(framework=f.name, path="")))


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    default_severity: ClassVar[Severity] = Severity.ERROR
    summary: ClassVar[str]
    requires: ClassVar[frozenset[str]] = frozenset()
    """The capabilities (:data:`trainlint.core.framework.CAPABILITIES`) a run's framework must have for the
    rule to run on it (``Framework.capabilities``); empty: every run. A rule names what it needs,
    never a framework, so a new framework gets every rule its runs support."""
    frameworks: ClassVar[tuple[str, ...]] = ()
    """Framework names the rule is limited to (empty: no limit). For a plugin rule about one
    framework only; trainlint's own rules declare ``requires`` instead."""
    options: ClassVar[dict[str, Option]] = {}
    needs_estimate: ClassVar[bool] = False
    """Set on rules that read ``ctx.estimate``; the engine then estimates the spec once."""
    gate: ClassVar[Callable[..., bool] | None] = None
    """A test of the run that a family of rules shares, false only where :meth:`check` yields nothing
    (the Megatron-LM start-up rules: a current Megatron-LM run; Bridge's: a Bridge run). The engine asks
    it once per run and passes by every rule of the family when it is false: a legacy Megatron-DeepSpeed
    script meets ~70 rules that each return at once. A subclass that overrides ``check`` so that it may
    yield where the gate is false sets its own (None: no gate)."""
    lifecycle: ClassVar[str] = "stable"
    """``stable``, or ``preview``: runs only in preview mode (``--preview``, ``preview = true``). A
    built-in rule's is its row in :mod:`trainlint.rules.codes`; a plugin's rule may declare it."""
    plugin: ClassVar[str] = "trainlint"
    """Set by the registry: which plugin provided the rule."""
    release_dependent: ClassVar[bool | None] = None
    """Whether the verdict depends on which release (or fork, or branch) of the framework runs the
    config: True for a check quoted from one release's source (Megatron-LM's ``validate_args`` at
    trainlint's commit), False for one every release makes (world size divisibility, the batch
    triple) and for trainlint's own estimates. Every built-in rule declares it (a test over the
    registry); the engine lowers an error of a release-dependent rule to a warning when the run's
    target is *assumed* (no framework source found in the project and none stated), naming the
    assumption: an error is a certainty about the framework the config targets (docs/rules.md).
    A plugin's rule that leaves it None is taken as it says (its severity is not changed)."""
    behaviour_changed: ClassVar[str] = ""
    """For a release-dependent rule: where the behaviour differs between releases, for the lowered
    finding ("Megatron-LM up to 23.06 defaulted --recompute-num-layers to 1"); empty: not known."""

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:  # pragma: no cover - interface
        raise NotImplementedError

    @classmethod
    def triggers(cls) -> frozenset[str] | None:
        """Settings (``spec.settings`` keys) of which the run must write at least one for :meth:`check` to
        yield anything; None (the default): no such test. The engine passes by a rule none of whose
        triggers the run writes without making it: a table of Megatron-LM's checks, ~35 rules a run,
        each of which would only find that none of its rows' first options is written."""
        return None

    @classmethod
    def documentation(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or cls.summary)

    @classmethod
    def validate(cls) -> list[str]:
        """Problems with the rule's declaration (empty when it is well-formed)."""
        problems = []
        if not CODE_PATTERN.match(getattr(cls, "code", "")):
            problems.append(f"code {getattr(cls, 'code', None)!r} is not 1-3 capitals and 3 digits")
        if not NAME_PATTERN.match(getattr(cls, "name", "")):
            problems.append(f"name {getattr(cls, 'name', None)!r} is not kebab-case")
        if not getattr(cls, "summary", ""):
            problems.append("summary is missing")
        if not isinstance(getattr(cls, "default_severity", None), Severity):
            problems.append("default_severity is not a Severity")
        return problems


class DeferredRule:
    """A rule declared without importing it: its code, name, module, the capabilities it requires
    and its lifecycle, which are all the engine needs to decide whether the rule runs on a run.
    The module is imported on the first :meth:`load` (the engine loads a rule once it is selected
    and applies to a run it read), so a check imports only the rules of the files it meets.

    A rule bundle's ``trainlint_rules`` may return these beside (or instead of) rule classes;
    trainlint's own families return one per row of the codes table
    (:func:`trainlint.rules.codes.family_declarations`). A module that cannot be imported, or
    whose rule does not match its declaration, loads as a rule that fails when it runs (a TL998
    naming the plugin), never as a traceback."""

    __slots__ = ("_lifecycle", "_rule", "code", "frameworks", "module", "name", "plugin", "requires")

    def __init__(self, code: str, name: str, module: str, *, requires: frozenset[str] = frozenset(),
                 frameworks: tuple[str, ...] = (), lifecycle: str = "stable") -> None:
        self.code, self.name, self.module = code, name, module
        self.requires, self.frameworks, self._lifecycle = frozenset(requires), tuple(frameworks), lifecycle
        self.plugin = "trainlint"
        """Set by the registry: which plugin declared the rule (given to the class when loaded)."""
        self._rule: type[Rule] | None = None

    def __repr__(self) -> str:
        return f"DeferredRule({self.code!r}, {self.name!r}, {self.module!r})"

    @property
    def loaded(self) -> bool:
        return self._rule is not None

    @property
    def lifecycle(self) -> str:
        """As declared; once loaded, the class's (which the declaration set, and which is the rule's
        own attribute for everything else that reads it)."""
        return self._rule.lifecycle if self._rule is not None else self._lifecycle

    def load(self) -> type[Rule]:
        """The rule class, its module imported on the first call."""
        rule = self._rule
        if rule is None:
            rule = self._rule = self._import()
        return rule

    def _import(self) -> type[Rule]:
        try:
            module = importlib.import_module(self.module)
        except Exception as exc:  # noqa: BLE001 - a plugin's module may fail in any way
            return self._unloadable(f"{self.module} not imported: {type(exc).__name__}: {exc}")
        rule = next((value for value in vars(module).values()
                     if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__
                     and getattr(value, "code", None) == self.code), None)
        if rule is None:
            return self._unloadable(f"{self.module} defines no rule with code {self.code}")
        problems = rule.validate()
        if rule.name != self.name:
            problems.append(f"declared as {self.name!r}, its class says {rule.name!r}")
        if rule.requires != self.requires or tuple(rule.frameworks) != self.frameworks:
            problems.append("its class requires other capabilities or frameworks than declared")
        if problems:
            return self._unloadable("; ".join(problems))
        rule.lifecycle = self._lifecycle
        rule.plugin = self.plugin
        return rule

    def _unloadable(self, reason: str) -> type[Rule]:
        declared = self

        class Unloadable(Rule):
            code = declared.code
            name = declared.name
            summary = f"not loaded: {reason}"
            requires = declared.requires
            frameworks = declared.frameworks
            lifecycle = declared._lifecycle
            plugin = declared.plugin
            release_dependent = False

            def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
                raise RuntimeError(f"rule not loaded: {reason}")

        Unloadable.__module__ = self.module
        return Unloadable


RuleEntry = type[Rule] | DeferredRule
"""A registered rule: its class, or its declaration (:class:`DeferredRule`) until it is needed."""


def load(entry: RuleEntry) -> type[Rule]:
    """The rule class of a registered rule (importing a deferred rule's module)."""
    return entry.load() if isinstance(entry, DeferredRule) else entry
