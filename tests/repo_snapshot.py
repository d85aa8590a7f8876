"""This working tree as the git repository a user would clone, for tests that run pre-commit.

``pre-commit`` clones only committed files, so pointing it at the checkout itself would test the
last commit (or nothing, before ``.pre-commit-hooks.yaml`` is committed): a snapshot of the files
pip needs to install trainlint, and the hooks file, is committed into a temporary repository.

:func:`as_canonical_url` makes git fetch the canonical repository URL from that snapshot (git's
``url.<base>.insteadOf``, passed in ``GIT_CONFIG_*`` variables, which pre-commit hands on to git),
so a documented ``pre-commit try-repo https://github.com/...`` command or ``.pre-commit-config.yaml``
runs exactly as written, without the network.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CANONICAL_URL = "https://github.com/trainlint/trainlint"
"""The one repository URL the README and docs name (issue 32)."""
SNAPSHOT = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "linter", "adapters", "schemas")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=trainlint tests", "-c", "user.email=tests@trainlint.invalid",
         "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def commit_all(path: Path) -> str:
    """``git init`` and commit everything in ``path``; the commit's hash."""
    git("init", "-q", cwd=path)
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "snapshot", cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


def snapshot(target: Path) -> str:
    """Copy the installable part of this tree into ``target`` and commit it; the commit's hash."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SNAPSHOT:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        else:
            shutil.copy2(source, target / name)
    return commit_all(target)


def as_canonical_url(repository: Path) -> dict[str, str]:
    """Environment variables that make git (and pre-commit, which keeps ``GIT_CONFIG_*``) fetch
    :data:`CANONICAL_URL` from ``repository``."""
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.{repository}.insteadOf",
            "GIT_CONFIG_VALUE_0": CANONICAL_URL}
