"""Shared fixtures. Tests over the real-config corpus skip, with the reason, when ../shared is absent.

``TRAINLINT_NO_SHARED=1`` puts ../shared out of reach as in a fresh clone (CI runs the suite
once that way): every test module takes SHARED / CORPUS / CALIBRATION from here, never its own.
"""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
NO_SHARED = os.environ.get("TRAINLINT_NO_SHARED", "") not in ("", "0")
# with the switch on, a path that does not exist: every ../shared test skips as in a fresh clone
SHARED = REPO.parent / ("shared (hidden by TRAINLINT_NO_SHARED)" if NO_SHARED else "shared")
SHARED_ABSENT = "TRAINLINT_NO_SHARED is set" if NO_SHARED else "../shared is absent in this checkout"
CORPUS = SHARED / "corpus"
EXAMPLES = REPO / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CALIBRATION = SHARED / "calibration" / "published-runs.yaml"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not (CORPUS / "MANIFEST.tsv").is_file():
        pytest.skip(f"corpus not found at {CORPUS} ({SHARED_ABSENT})")
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


CALIBRATION_MORE = SHARED / "calibration" / "published-runs-more.yaml"
CALIBRATION_2026 = SHARED / "calibration" / "published-runs-2026.yaml"


def calibration_rows(*, more: bool = True, every: bool = False) -> list[dict]:
    """The published runs of ../shared/calibration: the first two files (or only published-runs.yaml);
    ``every``: the three files; [] when absent."""
    rows: list[dict] = []
    paths = (CALIBRATION, CALIBRATION_MORE, CALIBRATION_2026) if every else \
        (CALIBRATION, CALIBRATION_MORE) if more else (CALIBRATION,)
    for path in paths:
        if path.is_file():
            rows += yaml.safe_load(path.read_text(encoding="utf-8"))
    return rows


@pytest.fixture(scope="module")
def accuracy():
    """benchmarks/accuracy.py (it reads a calibration row into a spec and an estimate context)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import accuracy as module
    finally:
        sys.path.pop(0)
    return module


@pytest.fixture(autouse=True, scope="session")
def _framework_cache(tmp_path_factory):
    """Catalogs read from framework sources are cached in a folder of this test session, not in
    the user's cache; subprocesses inherit it through the environment."""
    import os

    folder = tmp_path_factory.mktemp("trainlint-cache")
    old = os.environ.get("TRAINLINT_CACHE_DIR")
    os.environ["TRAINLINT_CACHE_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("TRAINLINT_CACHE_DIR", None)
    else:
        os.environ["TRAINLINT_CACHE_DIR"] = old


def estimate_runs(text: str) -> list[dict]:
    """The runs of ``trainlint estimate --format json``: always one object ``{"runs": [...]}``
    (never an object for one run and a list for several), checked here for every reader."""
    import json

    data = json.loads(text)
    assert isinstance(data, dict) and list(data) == ["runs"] and isinstance(data["runs"], list), text[:300]
    assert all(isinstance(run, dict) for run in data["runs"]), text[:300]
    return data["runs"]


def estimate_run(text: str) -> dict:
    """The one run of ``trainlint estimate --format json`` (asserts there is exactly one)."""
    runs = estimate_runs(text)
    assert len(runs) == 1, f"{len(runs)} runs: {text[:300]}"
    return runs[0]
