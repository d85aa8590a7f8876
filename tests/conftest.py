"""Shared fixtures. Tests over the real-config corpus skip, with the reason, when ../shared is absent."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"
EXAMPLES = REPO / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not (CORPUS / "MANIFEST.tsv").is_file():
        pytest.skip(f"corpus not found at {CORPUS} (../shared is absent in this checkout)")
    return CORPUS


def corpus_manifest() -> list[dict[str, str]]:
    """MANIFEST.tsv rows (path, source_repo, source_path, commit, format, license); [] when absent."""
    manifest = CORPUS / "MANIFEST.tsv"
    if not manifest.is_file():
        return []
    with manifest.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


@pytest.fixture(scope="session")
def manifest(corpus_dir: Path) -> list[dict[str, str]]:
    return corpus_manifest()
