"""The rule engine: run the selected rules on every spec of every file, place their findings,
and apply severities, selection and inline suppressions to everything reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from trainlint.core.results import FileResult
from trainlint.project.config import ProjectConfig
from trainlint.files.config_files import ConfigError
from trainlint.project.estimate_memo import EstimateMemo
from trainlint.core.diagnostics import Applicability, Diagnostic, Edit, Related, Severity
from trainlint.core.input_codes import input_diagnostic
from trainlint.core.positions import FILE_START, Span
from trainlint.core import cancel
from trainlint.core.numbers import long_numbers
from trainlint.core.provenance import Value, first_span
from trainlint.project.registry import Registry
from trainlint.rules import Finding, Rule, RuleContext, RuleEntry, Target, applies, capabilities, load
from trainlint.project.selection import Selection
from trainlint.core.spec import TrainingSpec
from trainlint.files.did_you_mean import hint
from trainlint.project.suppressions import Suppressions, parse_suppressions

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.layout.startup_check import StartupRules


@dataclass
class LintSettings:
    """What the rule engine runs with: selection, severities, rule options, the project, and the session's estimate and layout advice."""

    selection: Selection = field(default_factory=Selection)
    severity: dict[str, str] = field(default_factory=dict)
    rule_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    project: ProjectConfig | None = None
    estimate: Callable[[TrainingSpec], Any] | None = None
    """Makes the estimate a rule sees; None (or a None result) when no estimate can be made."""
    gpus: Mapping[str, Any] | None = None
    """The GPU table rules resolve a target GPU in (the session's); None: the catalog."""
    layout_advice: Callable[[TrainingSpec, float], Any] | None = None
    """The session's whole-layout search for fix hints (see :class:`RuleContext`)."""
    adapters: Sequence[Any] = ()
    """The session's adapters: they spell fix hints and write a finding's ``changes`` as edits."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """The launch-script environment files were read with (a rewritten script is read again with it)."""
    write_fixes: bool = False
    """Turn findings' ``changes`` into edits through the run's adapter (``check --fix`` / ``--diff``):
    a write-back and a re-read per finding, so only when a fix will be applied or shown."""
    memo: dict[tuple, list] = field(default_factory=dict, repr=False, compare=False)
    """The registered rules, and those of them that run on a file with their options, for each
    state of the registry, options and selection they come from (see :func:`_rules_for`): the same
    on every lint of a session (the language server lints on each change)."""
    options_memo: dict[tuple, dict[type[Rule], dict[str, Any]]] = field(default_factory=dict, repr=False, compare=False)
    """Each rule's options (:func:`resolve_options`), once per state of the registry and options."""
    preview: bool = False
    """Run the preview rules too (``--preview`` / ``preview = true``; :mod:`trainlint.rules.codes`)."""
    warnings: list[str] = field(default_factory=list)
    """What the settings said that the faces print as warnings (a removed code, and what replaced it)."""
    reuse_findings: bool = False
    """Keep what the rules found on each run and give it again while the run is the same (see
    :func:`_run_rules`). The language server's sessions turn it on: it re-lints on every change,
    and most changes (a comment, a blank, a value no run reads) leave every run as it was."""
    findings: dict[tuple, tuple[TrainingSpec, Any, tuple[Diagnostic, ...]]] = field(
        default_factory=dict, repr=False, compare=False)
    """With ``reuse_findings``: per rule set, selection, file, run label and estimate flag, the
    last run seen (a copy), its framework catalog and the diagnostics the rules made of it."""
    builtin_only: dict[tuple, bool] = field(default_factory=dict, repr=False, compare=False)
    """Whether the rules chosen under a key of :func:`_rules_for` are all built-in (their findings
    may be reused), asked on every run."""


def settings_from(project: ProjectConfig, *, select: list[str] | None = None, extend_select: Sequence[str] = (),
                  ignore: Sequence[str] = (), preview: bool | None = None) -> LintSettings:
    """CLI selectors over the project config, as ruff: ``--select`` replaces, the others add;
    ``preview`` (``--preview``) over the config's ``preview``. A removed code, wherever a code is
    written (selectors, per-file ignores, severities, rule options), means the code that replaced it,
    with a warning (:func:`trainlint.rules.codes.redirected`)."""
    from trainlint.rules.codes import redirected

    warnings: list[str] = []

    def codes(selectors: Sequence[str]) -> list[str]:
        return [redirected(s, warnings) for s in selectors]

    selection = Selection(
        select=codes(select) if select is not None else (codes(project.select) if project.select is not None else ["ALL"]),
        extend_select=codes([*project.extend_select, *extend_select]),
        ignore=codes([*project.ignore, *ignore]),
        per_file_ignores={pattern: codes(selectors) for pattern, selectors in project.per_file_ignores.items()},
        root=project.root,
    )
    severity = {redirected(key, warnings): value for key, value in project.severity.items()}
    rule_options = {redirected(key, warnings): value for key, value in project.rule_options.items()}
    return LintSettings(selection, severity, rule_options, project,
                        preview=project.preview if preview is None else preview, warnings=warnings)


def resolve_options(rule: type[Rule], configured: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The rule's option defaults overlaid with the project config's values (by code or name)."""
    options = {name: opt.default for name, opt in rule.options.items()}
    for key in (rule.code, rule.name):
        for name, value in configured.get(key, {}).items():
            if name not in rule.options:
                raise ConfigError(f"rule {rule.code} ({rule.name}) has no option `{name}`{hint(name, rule.options)}")
            options[name] = value
    return options


def startup_rules(registry: Registry, rule_options: dict[str, dict[str, Any]] | None = None, *,
                  preview: bool = False) -> StartupRules:
    """The registry's TL1xx rules with their options (the project's, else the defaults), for the
    layout search's start-up check; the preview rules only in preview mode, as in a check."""
    return [(load(entry), resolve_options(load(entry), rule_options or {})) for entry in registry.entries_by_selector("TL1")
            if preview or entry.lifecycle != "preview"]


def check_settings(registry: Registry, settings: LintSettings) -> None:
    """Fail early (exit 2) on settings that name rules or options that do not exist."""
    from trainlint.core.input_codes import INPUT_CODES

    entries = registry.rules.entries
    names = {r.name for r in entries.values()} | {c.name for c in INPUT_CODES.values()}
    codes = set(entries) | set(INPUT_CODES)
    for key in [*settings.severity, *settings.rule_options]:
        if key not in codes and key not in names:
            raise ConfigError(f"no rule named `{key}`{hint(key, codes | names)}")
    # only a rule the options name can have an option that does not exist: only those are imported
    for entry in entries.values():
        if entry.code in settings.rule_options or entry.name in settings.rule_options:
            resolve_options(load(entry), settings.rule_options)


def lint(results: Sequence[FileResult], registry: Registry, settings: LintSettings) -> list[FileResult]:
    """Rules over every spec, then severities, selection and suppressions over every diagnostic."""
    rules_key, rules = _with_options(registry, settings)
    out = []
    text_cache: dict[str, Suppressions] = {}
    for result in results:
        cancel.check()  # between files
        diagnostics = list(result.diagnostics)
        # a file that could not be read or parsed whole gives a partial spec: launch rules still
        # see what was read, but an estimate of half a config would only mislead (or say "missing")
        partial = any(d.code in ("TL001", "TL002") for d in result.diagnostics)
        for spec in result.specs:
            diagnostics.extend(_run_rules(spec, rules, settings, estimate=not partial, result=result,
                                          rules_key=rules_key))
        kept = []
        used: set[tuple] = set()
        for diag in diagnostics:
            diag = _apply_severity(diag, settings.severity)
            path = diag.path or result.path
            if not settings.selection.enabled(diag.code, diag.name, path):
                used.update(_file_ignores_used(settings.selection, diag, path))
                continue
            hits = _suppressing(diag, path, result, text_cache)
            if hits:
                used.update(("inline", path, line, selector) for line, selector in hits)
                continue
            kept.append(diag)
        out.append(replace(result, diagnostics=kept, used_suppressions=frozenset(used)))
    return out


def _file_ignores_used(selection: Selection, diag: Diagnostic, path: str) -> list[tuple]:
    """The per-file-ignores entries that turned this finding off (none when the global
    selection did)."""
    if not selection.per_file_ignores or not selection.enabled(diag.code, diag.name, None):
        return []
    from trainlint.project.selection import _file_ignores, _specificity

    out: list[tuple] = []
    for pattern, selectors in selection.per_file_ignores.items():
        if _file_ignores(path, selection.root, ((pattern, tuple(selectors)),)):
            out.extend(("per-file", pattern, s) for s in selectors if _specificity(s, diag.code, diag.name) >= 0)
    return out


def _with_options(registry: Registry, settings: LintSettings) -> tuple[tuple, list[RuleEntry]]:
    """Every registered rule (a class, or a declaration not imported yet), and the key the rules
    chosen from them are memoised under: the registry's rules and the options, by value."""
    entries = tuple(registry.rules.entries.values())
    return ("options", entries, repr(settings.rule_options)), list(entries)


def _options(rule: type[Rule], settings: LintSettings, rules_key: tuple | None) -> dict[str, Any]:
    """:func:`resolve_options` of a rule, once per rule and state of the options (``rules_key``)."""
    if rules_key is None:
        return resolve_options(rule, settings.rule_options)
    by_rule = settings.options_memo.get(rules_key)
    if by_rule is None:
        if len(settings.options_memo) > 64:  # a session's settings rarely change: bound the memo all the same
            settings.options_memo.clear()
        by_rule = settings.options_memo[rules_key] = {}
    options = by_rule.get(rule)
    if options is None:
        options = by_rule[rule] = resolve_options(rule, settings.rule_options) if rule.options else _NO_OPTIONS
    return options


_NO_OPTIONS: dict[str, Any] = {}
"""The options of every rule that declares none (most of them): one dict, so that the rules of a run
share one context (see :func:`_run_rules_unlimited`). No rule writes to its options."""


def _rules_for(spec: TrainingSpec, rules: list[RuleEntry], settings: LintSettings,
               rules_key: tuple | None) -> tuple[tuple | None, list[tuple[type[Rule], dict]]]:
    """The rules that run on a spec with their options (see :func:`resolve_options`): its
    framework's, selected for its file; and the key they are memoised under (None without a
    ``rules_key``): the rule list, the selection (by value: a Selection is a plain dataclass), the
    framework and its capabilities, and the file only when per-file
    ignores make the selection depend on it (a repository of 10,000 files would choose the same
    rules 10,000 times). Only these rules are imported (a declared rule is decided on its
    declaration: code, name, lifecycle, capabilities)."""
    sel = settings.selection
    key = None
    caps = capabilities(spec)
    if rules_key is not None:
        key = ("for", rules_key, settings.preview, tuple(sel.select), tuple(sel.extend_select), tuple(sel.ignore),
               tuple((k, tuple(v)) for k, v in sel.per_file_ignores.items()), sel.root,
               spec.path if sel.per_file_ignores else None, spec.framework, caps)
        chosen = settings.memo.get(key)
        if chosen is not None:
            return key, chosen
    chosen = []
    for entry in rules:
        if applies(entry, spec, caps) and (settings.preview or entry.lifecycle != "preview") \
                and sel.enabled(entry.code, entry.name, spec.path):
            rule = load(entry)
            chosen.append((rule, _options(rule, settings, rules_key)))
    if key is not None:
        if len(settings.memo) > 64:
            settings.memo.clear()
        settings.memo[key] = chosen
    return key, chosen


def plugin_failures(registry: Registry, project: ProjectConfig | None) -> list[FileResult]:
    """One TL998 per plugin that could not be loaded (one TL015 when local plugins were not
    trusted), located at the project config."""
    if not registry.failures:
        return []
    path = (project.path if project and project.path else "<plugins>")
    return [FileResult(path, None, [
        input_diagnostic(f.code, f"plugin `{f.plugin}`: {f.reason}" if f.code == "TL998" else f"plugins {f.plugin}: {f.reason}",
                         path=path)
        for f in registry.failures])]


def _run_rules(spec: TrainingSpec, rules: list[RuleEntry], settings: LintSettings,
               estimate: bool = True, result: FileResult | None = None, rules_key: tuple | None = None) -> list[Diagnostic]:
    for_key, chosen = _rules_for(spec, rules, settings, rules_key)
    key = None
    if settings.reuse_findings and not settings.write_fixes and for_key is not None \
            and _all_builtin(chosen, for_key, settings):
        # The built-in rules are functions of the run and the session (its estimator, GPU table,
        # options, adapters): the same run, compared whole (every value with its provenance,
        # positions included, the framework target and the catalog object it was read with),
        # gets the same diagnostics. A plugin's rule may read anything: never reused. Written
        # fixes read the file itself: never reused either.
        key = (for_key, spec.path, spec.label, estimate)
        kept = settings.findings.get(key)
        if kept is not None and kept[1] is _catalog(spec) and kept[0] == spec:
            return list(kept[2])
    # rules and the estimator format config values and their products in f-strings: a product of
    # clamped 4,300-digit values is beyond Python's int-to-text limit (see numbers.long_numbers)
    with long_numbers():
        out = _run_rules_unlimited(spec, chosen, settings, estimate, result)
    if key is not None:
        settings.findings.pop(key, None)
        if len(settings.findings) >= 64:  # the oldest first: runs of documents no longer edited
            settings.findings.pop(next(iter(settings.findings)))
        settings.findings[key] = (spec.copy(), _catalog(spec), tuple(out))
    return out


def _all_builtin(chosen: list[tuple[type[Rule], dict]], for_key: tuple, settings: LintSettings) -> bool:
    """Whether every rule chosen is a built-in one: the same for every run chosen under ``for_key``."""
    hit = settings.builtin_only.get(for_key)
    if hit is None:
        builtin = _builtin_plugin()
        hit = all(rule.plugin == builtin for rule, _ in chosen)
        if len(settings.builtin_only) > 64:  # as settings.memo: a session's rule sets rarely change
            settings.builtin_only.clear()
        settings.builtin_only[for_key] = hit
    return hit


def _builtin_plugin() -> str:
    from trainlint.project.plugins import BUILTIN_PLUGIN  # imported when used: pluggy stays out of the engine's import

    return BUILTIN_PLUGIN


def _catalog(spec: TrainingSpec) -> Any:
    """The key catalog the run was read with (one object per release read: a FrameworkTarget compares
    without its release, so a re-read checkout is told apart by this)."""
    from trainlint.core.framework import framework_of

    return framework_of(spec).key_catalog(spec.target)


def _run_rules_unlimited(spec: TrainingSpec, chosen: list[tuple[type[Rule], dict]], settings: LintSettings,
                         estimate: bool, file_result: FileResult | None = None) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    estimate_made = False
    result = None
    shared: dict = {}  # the rules of this spec share what they compute once (RuleContext.shared)
    # the rules' fix searches estimate the same candidate specs: each distinct spec once, in this lint only
    estimator = EstimateMemo(settings.estimate) if settings.estimate else None
    # what every rule's context holds but its options; the rules with the same options (most have
    # none: _NO_OPTIONS) share one copy of it (~50 rules a run, ~10 distinct options)
    base = RuleContext(estimate=result, estimator=estimator, project=settings.project, gpus=settings.gpus,
                       layout_advice=settings.layout_advice, adapters=settings.adapters, shared=shared)
    contexts: dict[int, RuleContext] = {}
    token = cancel.current()  # the language server's lint token; None in the CLI (no safe point to pass)
    gates: dict[Any, bool] = {}  # each family's gate (Rule.gate), asked once for this run
    written = spec.settings
    for rule, options, gate, needs_estimate, triggers in _plan(chosen):
        if triggers is not None and triggers.isdisjoint(written):
            continue  # none of the settings the rule starts from is written: its check would yield nothing
        if gate is not None:
            open_ = gates.get(gate)
            if open_ is None:
                try:
                    open_ = gates[gate] = bool(gate(spec))
                except Exception:  # noqa: BLE001 - a failing gate decides nothing: the rules run (and report)
                    open_ = gates[gate] = True
            if not open_:
                continue  # the rule's check would yield nothing
        if needs_estimate and not estimate:
            continue
        if token is not None:
            token.check()  # between rules (and before the estimate)
        if needs_estimate and not estimate_made:
            estimate_made = True
            try:
                result = estimator(spec) if estimator else None
            except Exception as exc:  # noqa: BLE001 - an estimator bug is reported, the launch rules still run
                out.append(input_diagnostic("TL999", f"the estimate failed: {type(exc).__name__}: {exc}",
                                            spec.anchor or FILE_START, path=spec.path))
            base.estimate = result
            for made in contexts.values():  # the contexts made before the estimate: as a new one would be
                made.estimate = result
        ctx = contexts.get(id(options))
        if ctx is None:
            ctx = contexts[id(options)] = _context(base, options)
        try:
            for finding in rule().check(spec, ctx):
                if finding.changes and not finding.edits and finding.fix and settings.write_fixes \
                        and file_result is not None:
                    finding = _written_by_adapter(finding, spec, file_result, settings)
                out.append(_place(rule, finding, spec))
        except Exception as exc:  # noqa: BLE001 - one failing rule must not stop the others
            path, span = spec.path, spec.anchor or FILE_START
            out.append(input_diagnostic(
                "TL998", f"rule {rule.code} ({rule.name}) from plugin `{rule.plugin}` failed: {type(exc).__name__}: {exc}",
                span, path=path))
    return out


_PLANS: dict[int, tuple[list, list[tuple[type[Rule], dict, Any, bool, frozenset[str] | None]]]] = {}


def _plan(chosen: list[tuple[type[Rule], dict]]) -> list[tuple[type[Rule], dict, Any, bool, frozenset[str] | None]]:
    """``chosen`` with each rule's gate, whether it needs the estimate and its triggers
    (:meth:`Rule.triggers`), read once per list of chosen rules (the memoised lists of
    :func:`_rules_for` are the same object on every run)."""
    kept = _PLANS.get(id(chosen))
    if kept is not None and kept[0] is chosen:
        return kept[1]
    plan = [(rule, options, getattr(rule, "gate", None), bool(getattr(rule, "needs_estimate", False)), _triggers(rule))
            for rule, options in chosen]
    if len(_PLANS) > 64:
        _PLANS.clear()
    _PLANS[id(chosen)] = (chosen, plan)  # the list itself is kept: its id is not reused while here
    return plan


def _triggers(rule: type[Rule]) -> frozenset[str] | None:
    """:meth:`Rule.triggers` of ``rule``; None (no test) when the rule has none or asking fails (the
    rule then runs, and reports its own failure)."""
    triggers = getattr(rule, "triggers", None)
    if triggers is None:
        return None
    try:
        found = triggers()
    except Exception:  # noqa: BLE001 - a plugin's failing declaration skips nothing
        return None
    return frozenset(found) if found is not None else None


def _context(base: RuleContext, options: dict[str, Any]) -> RuleContext:
    """A rule's own context: ``base``'s fields with the rule's options (a copy of the instance
    dict instead of the dataclass __init__ with eight keywords)."""
    ctx = object.__new__(RuleContext)
    ctx.__dict__.update(base.__dict__)
    ctx.options = options
    return ctx


def locate(spec: TrainingSpec, target: Target) -> tuple[str, Span, Value | None]:
    """Where a finding's target is written; defaults and unknown targets fall back to the run's anchor."""
    value: Value | None = None
    if isinstance(target, Value):
        value = target
    elif isinstance(target, str):
        if target.startswith("settings:"):
            value = spec.settings.get(target[len("settings:"):])
        else:
            value = spec.get(target)
    path, span = first_span(value)
    if span is None:
        return spec.path, spec.anchor or FILE_START, value
    return path or spec.path, span, value


def _written_by_adapter(finding: Finding, spec: TrainingSpec, result: FileResult, settings: LintSettings) -> Finding:
    """The finding with its ``changes`` written as text edits by the run's adapter (its writer, the
    round trip verified by re-reading), unsafe: a layout change alters the run. Unchanged when the
    format has no writer or cannot write these changes (the hint stays a hint)."""
    from trainlint.project.fixes import edits_between
    from trainlint.layout.writeback import WritebackError, rewrite_files

    try:
        files = rewrite_files(result, spec, dict(finding.changes or {}), environment=dict(settings.environment),
                              adapters=list(settings.adapters) or None)
    except WritebackError:
        return finding
    from trainlint.files.safe_write import text_hash
    from trainlint.files.sources import UnreadableSource, read_source

    originals = {doc.path: doc.text for doc in result.documents}
    edits: list[Edit] = []
    for rewritten in files:
        original = originals.get(rewritten.path)
        if original is None:  # an adapter that keeps no Document: the text as read (the writer's start)
            try:
                original = read_source(rewritten.path).text
            except UnreadableSource:
                return finding
        if text_hash(original) != rewritten.original_hash:
            return finding  # not the text the writer started from: no edits to anchor
        edits.extend(edits_between(original, rewritten.text, rewritten.path))
    if not edits:
        return finding
    return replace(finding, edits=tuple(edits), applicability=finding.applicability or Applicability.UNSAFE)


def _place(rule: type[Rule], finding: Finding, spec: TrainingSpec) -> Diagnostic:
    path, span, _ = locate(spec, finding.at)
    related = []
    for target, note in finding.also:
        other_path, other_span, other = locate(spec, target)
        if other is not None and first_span(other)[1] is None:
            continue  # a default or a CLI flag: nowhere in a file to point at
        if (other_path, other_span) != (path, span):
            related.append(Related(note, other_span, other_path))
    severity, message = finding.severity or rule.default_severity, finding.message
    if severity is Severity.ERROR and rule.release_dependent and assumed_target(spec):
        severity, message = Severity.WARNING, message + assumed_note(rule, spec)
    # a config value of thousands of digits is named by its length by Diagnostic itself
    return Diagnostic(
        code=rule.code,
        name=rule.name,
        severity=severity,
        message=message,
        span=span,
        path=path,
        fix=finding.fix,
        related=tuple(related),
        applicability=finding.applicability if finding.fix else None,
        edits=tuple(finding.edits) if finding.fix else (),
    )


def assumed_target(spec: TrainingSpec) -> bool:
    """Whether the release the run is checked against is assumed (no framework source in the
    project, none stated): a release-dependent verdict is then no certainty (docs/rules.md)."""
    target = spec.target
    return target is None or not getattr(target, "known", True)


def assumed_note(rule: type[Rule], spec: TrainingSpec) -> str:
    """The tail of a release-dependent error lowered to a warning: the assumption, and where the
    behaviour changed when the rule says (the file's TL014 says once how to point at the source)."""
    target = spec.target
    what = target.describe() if target is not None else f"the current {spec.framework} release"
    changed = f"; {rule.behaviour_changed}" if rule.behaviour_changed else ""
    return f" [a check of {what}, assumed: the release that runs this config may not make it{changed}]"


def _apply_severity(diag: Diagnostic, overrides: dict[str, str]) -> Diagnostic:
    level = overrides.get(diag.code) or overrides.get(diag.name)
    if level and diag.code not in ("TL998", "TL999"):
        return replace(diag, severity=Severity(level))
    return diag


def _suppressing(diag: Diagnostic, path: str, result: FileResult, cache: dict[str, Suppressions]) -> list[tuple[int, str]]:
    return suppressions_of(path, result, cache).suppressing(diag.code, diag.name, diag.span.line)


def suppressions_of(path: str, result: FileResult | None, cache: dict[str, Suppressions]) -> Suppressions:
    """The file's suppression comments (JSON has none), parsed once per lint."""
    if path not in cache:
        text = next((d.text for d in result.documents if d.path == path), None) if result is not None else None
        if text is None:
            from trainlint.files.sources import read_text_lenient

            text = read_text_lenient(path) or ""
        cache[path] = parse_suppressions(text, path) if not path.endswith(".json") else Suppressions()
    return cache[path]
