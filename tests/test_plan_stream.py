"""The check's plan is walked as the check goes (issue 33): it keeps no list of its files, and gives
the same files, in the same order, each once, with the same session, as a plan made as a list."""

from __future__ import annotations

import gc
import json
import os
import shutil
from pathlib import Path

import pytest

from trainlint.files.checker import FileTask, _key, plan_files
from trainlint.project import config_groups
from trainlint.project.session import SessionOptions, open_session

from conftest import REPO


def _listed(paths: list[str], runs: list[list[str]]) -> list[str]:
    """What a plan made as a list gives (checker.plan_files: the runs first, each file once)."""
    from trainlint.adapters import builtin_adapters

    return [t.path for t in plan_files(paths, builtin_adapters(), runs)]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "examples", tmp_path / "a")
    shutil.copytree(REPO / "examples", tmp_path / "a" / "sub")
    files = sorted(p for p in (tmp_path / "a").rglob("*.json"))
    os.symlink(files[0], tmp_path / "a" / "0_link.json")  # met before the file it points to
    os.symlink(files[1], tmp_path / "a" / "sub" / "zz_link.json")  # met after it
    return tmp_path


@pytest.mark.parametrize("isolated", [True, False])
def test_each_file_once_in_the_order_a_list_gives(tree, isolated):
    a = str(tree / "a")
    sub = str(tree / "a" / "sub")
    one = str(next((tree / "a" / "sub").glob("*.json")))
    run = [str(p) for p in sorted((tree / "a").glob("*.yml"))[:2]]
    options = SessionOptions(isolated=isolated, runs=(tuple(run),) if isolated else ())
    paths = [sub, a, one, sub]
    made = config_groups.plan(options, paths, [] if isolated else [run])
    items = list(made.items())
    expected = _listed(paths, [run])
    assert len(list(config_groups._walked(paths, made.first.adapters))) > len(expected) + 5  # met twice
    assert [t.path for t, _ in items] == expected
    assert made.count == len(expected) == len({_key(p) for p in expected})
    assert made.tasks == [t for t, _ in items] and made.owners == [s for _, s in items]
    assert len(made.sessions) == 1
    assert list(made.items()) == items  # walked again, the same


def test_no_list_of_the_files_is_kept(tmp_path):
    """After planning, and while its items are walked, only a handful of tasks exist."""
    for copy in range(20):
        shutil.copytree(REPO / "examples", tmp_path / f"c{copy}")
    made = config_groups.plan(SessionOptions(isolated=True), [str(tmp_path)], [])
    assert made.count >= 20 * 5

    def alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, FileTask))

    before = alive()
    assert before <= 2
    walked = 0
    for _ in made.items():
        walked += 1
        if walked == made.count // 2:
            assert alive() <= before + 2
    assert walked == made.count


def test_each_file_with_its_own_config(tmp_path):
    """Two folders with their own configs: each file gets its folder's session, in walk order."""
    for name, ignore in (("one", "TL101"), ("two", "ALL")):
        shutil.copytree(REPO / "examples", tmp_path / name)
        (tmp_path / name / ".trainlint.toml").write_text(f'ignore = ["{ignore}"]\n')
    made = config_groups.plan(SessionOptions(), [str(tmp_path / "two"), str(tmp_path / "one")], [],
                              opener=lambda o, start: open_session(o, start))
    items = list(made.items())
    assert len(made.sessions) == 2 and made.first is made.sessions[0]
    for task, session in items:
        folder = Path(task.path).relative_to(tmp_path).parts[0]
        assert Path(session.project.path).parent.name == folder
    assert [t.path for t, _ in items] == _listed([str(tmp_path / "two"), str(tmp_path / "one")], [])
    assert json.dumps(made.count) == json.dumps(len(items))


def test_the_plans_folder_memo_is_bounded(tmp_path, monkeypatch) -> None:
    """The memo of resolved folders forgets past FOLDERS_KEPT (memory flat in the folders, issue 33)
    and every key is still the resolved path (a folder reached through a link included)."""
    import os

    from trainlint.files import checker

    monkeypatch.setattr(checker, "FOLDERS_KEPT", 2)
    real = tmp_path / "real"
    paths = []
    for n in range(5):
        (real / f"d{n}").mkdir(parents=True)
        (real / f"d{n}" / "a.json").write_text("{}")
        paths.append(str(real / f"d{n}" / "a.json"))
    os.symlink(real, tmp_path / "link")
    paths += [str(tmp_path / "link" / "d3" / "a.json"), str(real / "d0" / "a.json")]
    folders: dict[str, str] = {}
    keys = []
    for p in paths:
        keys.append(checker._key(p, folders))
        assert len(folders) <= 2
    assert keys == [str(os.path.realpath(p)) for p in paths]
