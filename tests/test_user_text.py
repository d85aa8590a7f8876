"""What users read names its sources by title, never by the project's internal names.

The design notes call the planning sources "seed 000/001/002"; a user does not know what that is.
The README, docs/, every ``--help`` and every rule's ``explain`` must cite them by title
(e.g. "Transformer Math 101", Korthikanti et al. 2022) instead.
"""

from __future__ import annotations

import re

import pytest

from trainlint.cli import build_parser, main
from trainlint.commands import COMMAND_MODULES

from conftest import REPO

INTERNAL = re.compile(r"\bseeds?[ _-]?0\d\d\b|\bseeds? (?:0\d\d|and)\b|shared/seeds", re.I)


def _offending(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if INTERNAL.search(line)]


@pytest.mark.parametrize("doc", ["README.md", *sorted(p.name for p in (REPO / "docs").glob("*.md"))])
def test_docs_name_no_internal_sources(doc):
    path = REPO / doc if doc == "README.md" else REPO / "docs" / doc
    assert _offending(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("command", sorted(COMMAND_MODULES))
def test_help_names_no_internal_sources(command):
    parser = build_parser(command)
    sub = parser._subparsers._group_actions[0].choices[command]
    assert _offending(sub.format_help()) == []


def test_explain_names_no_internal_sources(capsys):
    assert main(["rules", "--isolated", "--format", "markdown"]) == 0
    text, _ = capsys.readouterr()
    assert "TL501" in text and "Transformer Math 101" in text  # the sources are cited, by title
    assert _offending(text) == []


def test_the_pattern_has_teeth():
    assert _offending("Seed 000 (training time)\nseed 002's roofline\nSeeds 000 and 002.") != []
    assert len(_offending("Seed 000 x\nseed 002's y\nSeeds 000 and 002.")) == 3
    assert _offending("--seed 1234, dataloader_seed") == []
