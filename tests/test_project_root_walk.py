"""project_root walks each folder above a config once (issue 33): the memo of the git work tree and
of the project config gives what a walk from every folder gives, and clear_caches forgets it."""

from __future__ import annotations

from pathlib import Path

from trainlint.files.config_files import find_config
from trainlint.frameworks import locate


def _plain_git_root(start: Path) -> Path | None:
    return next((f for f in (start, *start.parents) if (f / ".git").exists()), None)


def test_memoised_walks_equal_plain_walks(tmp_path: Path) -> None:
    locate.clear_caches()
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "proj" / "a" / "b").mkdir(parents=True)
    (tmp_path / "proj" / ".trainlint.toml").write_text("")
    (tmp_path / "proj" / "a" / "pyproject.toml").write_text("[tool.other]\nx = 1\n")  # not trainlint's: passed by
    folders = [tmp_path / "repo" / "x" / "y", tmp_path / "repo", tmp_path / "proj" / "a" / "b", tmp_path / "proj" / "a",
               tmp_path / "proj", tmp_path / "none" / "deep" / "er", tmp_path / "none", tmp_path]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    for order in (folders, folders[::-1]):
        locate.clear_caches()
        for folder in order:
            config = find_config(folder)
            assert locate.config_root(folder.resolve()) == (config.parent if config else None), folder
            assert locate.git_root(folder.resolve()) == _plain_git_root(folder.resolve()), folder
    assert locate.config_root((tmp_path / "proj" / "a" / "b").resolve()) == (tmp_path / "proj").resolve()


def test_clear_caches_forgets_the_walks(tmp_path: Path) -> None:
    locate.clear_caches()
    folder = (tmp_path / "w" / "x").resolve()
    folder.mkdir(parents=True)
    before = locate.git_root(folder)
    (tmp_path / "w" / ".git").mkdir()
    assert locate.git_root(folder) == before  # remembered while trainlint runs
    locate.clear_caches()
    assert locate.git_root(folder) == (tmp_path / "w").resolve()
