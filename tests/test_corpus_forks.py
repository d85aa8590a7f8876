"""Issue 17's check in place: each fork of ../shared/corpus/forks checked where it lives, beside its
own argument module, gets no error-level unknown-name finding (TL004 / TL006) on a name that
module defines; and every TL004 error there names what the fork lacks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.frameworks.catalog import marker, read_checkout

FAMILIES = ("megatron", "neox")


def _forks(corpus: Path) -> list[tuple[Path, str]]:
    out = []
    for root in sorted((corpus / "forks").iterdir()) if (corpus / "forks").is_dir() else []:
        family = next((f for f in FAMILIES if root.is_dir() and marker(root, f)), None)
        if family:
            out.append((root, family))
    return out


@pytest.mark.slow
def test_forks_checked_in_place_raise_no_error_on_their_own_names(corpus_dir: Path, tmp_path: Path):
    forks = _forks(corpus_dir)
    if not forks:
        pytest.skip("no fork checkouts under the corpus")
    env = {**os.environ, "TRAINLINT_CACHE_DIR": str(tmp_path / "cache")}
    problems, errors_seen = [], 0
    for root, family in forks:
        catalog = read_checkout(root, family, use_cache=False)
        assert catalog is not None and len(catalog.args) > 100, root
        done = subprocess.run([sys.executable, "-m", "trainlint", "check", "--exit-zero", "--format", "json", "."],
                              cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        for f in json.loads(done.stdout)["files"]:
            for d in f["diagnostics"]:
                if d["severity"] != "error" or d["code"] not in ("TL004", "TL006"):
                    continue
                errors_seen += 1
                name = re.search(r"`([^`]+)`", d["message"])
                assert name is not None, d["message"]
                flag = name.group(1)
                if d["code"] == "TL004" and flag in catalog:
                    problems.append(f"{root.name}/{f['path']}:{d['line']} TL004 on `{flag}`, which the fork defines")
                if d["code"] == "TL004" and root.name not in d["message"]:
                    problems.append(f"{root.name}/{f['path']}:{d['line']} TL004 does not name the fork: {d['message']}")
    assert problems == []
