"""``trainlint rules`` (the list) and ``trainlint explain CODE`` (one rule's documentation)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainlint.core.exit_codes import EXIT_CLEAN, EXIT_ERROR
from trainlint.core.escape import printable


def register(sub: argparse._SubParsersAction) -> None:
    rules = sub.add_parser("rules", help="list every rule: code, name, severity, summary")
    rules.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    rules.add_argument("--config", metavar="FILE", help="project config (for its local plugins)")
    rules.add_argument("--isolated", action="store_true", help="ignore every project config file")
    rules.add_argument("--allow-plugins", action="store_true",
                        help="import the local plugins the project config names (see docs/plugins.md: Trust)")
    rules.set_defaults(func=run_rules)
    explain = sub.add_parser("explain", help="show the documentation of a rule")
    explain.add_argument("code", metavar="CODE", help="a code (TL110) or rule name (zero-pipeline-conflict)")
    explain.add_argument("--config", metavar="FILE", help="project config (for its local plugins)")
    explain.add_argument("--isolated", action="store_true", help="ignore every project config file")
    explain.add_argument("--allow-plugins", action="store_true",
                        help="import the local plugins the project config names (see docs/plugins.md: Trust)")
    explain.set_defaults(func=run_explain)


def _registry(args: argparse.Namespace):
    """The project's registry (its plugins under the trust rule); its rule settings are not
    checked here: listing the rules is how a user finds the name a setting should use."""
    from trainlint.project.session import SessionOptions, open_session

    options = SessionOptions(config=args.config, isolated=args.isolated,
                             allow_plugins=bool(getattr(args, "allow_plugins", False)))
    return open_session(options, Path("."), validate=False).registry


def run_rules(args: argparse.Namespace) -> int:
    from trainlint.files.config_files import ConfigError
    from trainlint.core.input_codes import INPUT_CODES
    from trainlint.rules.docs import render_markdown

    try:
        registry = _registry(args)
    except ConfigError as exc:
        print(printable(f"trainlint: error: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    rows = [(c.code, c.name, c.severity.value, c.summary, "trainlint") for c in INPUT_CODES.values()]
    rows += [(r.code, r.name, r.default_severity.value, r.summary, r.plugin) for r in registry.rules.values()]
    preview = {r.code for r in registry.rules.values() if r.lifecycle == "preview"}
    if args.format == "markdown":
        sys.stdout.write(render_markdown(registry.rules.values()))
    elif args.format == "json":
        json.dump([dict(zip(("code", "name", "severity", "summary", "plugin"), row, strict=True)) for row in rows], sys.stdout,
                  indent=2)
        sys.stdout.write("\n")
    else:
        width = max(len(r[1]) for r in rows)
        for code, name, severity, summary, plugin in rows:
            origin = "" if plugin in ("trainlint", "trainlint.builtin") else f"  [{plugin}]"
            if code in preview:
                origin += "  [preview: runs with --preview]"
            print(printable(f"{code}  {name:<{width}}  {severity:<7}  {summary}{origin}"))
    for failure in registry.failures:
        what = f"plugin `{failure.plugin}`: " if failure.code == "TL998" else ""
        print(printable(f"trainlint: warning: {what}{failure.reason}"), file=sys.stderr)
    return EXIT_CLEAN


def run_explain(args: argparse.Namespace) -> int:
    from trainlint.files.config_files import ConfigError
    from trainlint.core.input_codes import INPUT_CODES
    from trainlint.rules.docs import explain, explain_input_code
    from trainlint.files.did_you_mean import hint

    try:
        registry = _registry(args)
    except ConfigError as exc:
        print(printable(f"trainlint: error: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    wanted = args.code.strip()
    if wanted.upper() in INPUT_CODES:
        sys.stdout.write(explain_input_code(wanted.upper()))
        return EXIT_CLEAN
    for rule in registry.rules.values():
        if wanted.upper() == rule.code or wanted == rule.name:
            sys.stdout.write(printable(explain(rule), keep="\n"))  # a plugin's docs: its lines kept, controls shown
            return EXIT_CLEAN
    known = [*INPUT_CODES, *registry.rules, *(r.name for r in registry.rules.values())]
    print(printable(f"trainlint: error: no rule {wanted!r}{hint(wanted, known)}"), file=sys.stderr)
    return EXIT_ERROR
