"""The TL0xx family: problems with the input itself, found while reading a file.

Adapters report these directly (they are not pluggable rules: they come from the parser and
the schema check). Each has a stable code, a kebab-case name and a default severity; an
adapter may raise or lower the severity where the framework itself treats the problem
differently (DeepSpeed ignores unknown top-level keys but refuses unknown keys in sections).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainlint.core.diagnostics import Diagnostic, Related, Severity
from trainlint.core.positions import FILE_START, Span


@dataclass(frozen=True)
class InputCode:
    """A TL0xx input diagnostic: its code, name, default severity and summary."""

    code: str
    name: str
    severity: Severity
    summary: str


_CODES = [
    InputCode("TL001", "unreadable-file", Severity.ERROR,
              "The file cannot be read as text (I/O error, binary content, bad encoding, too large)."),
    InputCode("TL002", "syntax-error", Severity.ERROR,
              "The file is not valid JSON, YAML or shell syntax as the framework would read it."),
    InputCode("TL003", "duplicate-key", Severity.ERROR,
              "A key is given twice; DeepSpeed refuses duplicates, NeoX refuses them across merged files."),
    InputCode("TL004", "unknown-key", Severity.ERROR,
              "A key or flag the framework does not know (with a did-you-mean suggestion)."),
    InputCode("TL005", "wrong-type", Severity.ERROR,
              "A value of the wrong type for its key."),
    InputCode("TL006", "invalid-value", Severity.ERROR,
              "A value outside the allowed choices or range."),
    InputCode("TL007", "unresolved-value", Severity.INFO,
              "A value that is only known at launch time (\"auto\", a template placeholder, an environment "
              "variable or a command substitution); trainlint does not guess it."),
    InputCode("TL008", "deprecated-option", Severity.WARNING,
              "A renamed, deprecated or removed option."),
    InputCode("TL009", "yaml-float-as-string", Severity.ERROR,
              "A number in scientific notation without a dot (1e-5) that YAML 1.1 reads as a string."),
    InputCode("TL010", "non-portable-json", Severity.INFO,
              "JSON that only hjson accepts (comments, trailing commas, unquoted strings); DeepSpeed reads "
              "it, json.load and most tools do not."),
    InputCode("TL011", "conflicting-spelling", Severity.WARNING,
              "The same option given twice (hyphen and underscore spellings, or a repeated flag); the last "
              "one wins."),
    InputCode("TL012", "unsupported-construct", Severity.INFO,
              "A shell construct that cannot be followed statically (eval, a loop over unknown values); the "
              "arguments behind it are not checked."),
    InputCode("TL013", "missing-file", Severity.WARNING,
              "A file the config refers to (a --deepspeed_config JSON, a NeoX config) does not exist."),
    InputCode("TL014", "framework-source", Severity.INFO,
              "The framework source a config is checked against, said when trainlint reads it for the first time "
              "(a fork's checkout beside the config, a configured path, the installed package), with the time it took; "
              "later checks take its argument definitions from the cache."),
    InputCode("TL016", "unrecognised-file", Severity.ERROR,
              "A file named on the command line that no adapter reads as a DeepSpeed, Megatron-LM or GPT-NeoX "
              "config: nothing in it was checked, so a passing check says nothing about it. (A directory walk "
              "passes such files by quietly; only a file the user names is reported.)"),
    InputCode("TL998", "plugin-error", Severity.ERROR,
              "A plugin could not be loaded, or one of its rules failed; the other rules still ran."),
    InputCode("TL999", "internal-error", Severity.ERROR,
              "trainlint itself failed on this file; please report it."),
    InputCode("TL015", "plugins-not-loaded", Severity.WARNING,
              "The project config names local plugins (Python files or modules) that were not imported because "
              "they are not trusted: the config must be the user's own, at or below the current directory, and "
              "trusted explicitly (--allow-plugins, TRAINLINT_ALLOW_PLUGINS=1, or the trusted-projects list)."),
    InputCode("TL020", "unused-suppression", Severity.WARNING,
              "A `# trainlint: disable` comment (or, with report-unused-per-file-ignores, a per-file-ignores "
              "entry) that suppresses no finding: remove it, or it will hide a future one (as ruff's RUF100)."),
]

INPUT_CODES: dict[str, InputCode] = {c.code: c for c in _CODES}


def input_diagnostic(
    code: str,
    message: str,
    span: Span = FILE_START,
    *,
    path: str | None = None,
    severity: Severity | None = None,
    fix: str | None = None,
    related: tuple[Related, ...] = (),
    subject: str | None = None,
    choices: tuple[str, ...] = (),
) -> Diagnostic:
    """Build a TL0xx diagnostic with the code's name and (unless overridden) its severity."""
    entry = INPUT_CODES[code]
    return Diagnostic(
        code=code,
        name=entry.name,
        severity=severity or entry.severity,
        message=message,
        span=span,
        path=path,
        fix=fix,
        related=related,
        subject=subject,
        choices=choices,
    )
