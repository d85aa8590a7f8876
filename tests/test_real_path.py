"""frameworks.locate.real_path: the resolved path, built one remembered component at a time, is
exactly what ``Path(path).resolve()`` gives, for links (to files, folders, relative, through ``..``),
``..`` after a link, missing components, relative paths and odd spellings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainlint.frameworks import locate
from trainlint.frameworks.locate import real_path

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symlinks and the posix walk")


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "elsewhere" / "deep").mkdir(parents=True)
    (root / "a" / "b" / "c" / "run.sh").write_text("x")
    (root / "elsewhere" / "deep" / "file.sh").write_text("y")
    (root / "a" / "to_deep").symlink_to(root / "elsewhere" / "deep")  # absolute link to a folder
    (root / "a" / "b" / "rel").symlink_to("../../elsewhere")  # relative link, through ..
    (root / "a" / "b" / "c" / "linked.sh").symlink_to("../../../elsewhere/deep/file.sh")  # a linked file
    (root / "a" / "dangling").symlink_to(root / "missing" / "x")
    (root / "a" / "loop1").symlink_to(root / "a" / "loop2")
    (root / "a" / "loop2").symlink_to(root / "a" / "loop1")
    return root


def _spellings(root: Path) -> list[str]:
    r = str(root)
    return [
        f"{r}/a/b/c/run.sh", f"{r}/a/b/c", f"{r}/a/b/c/", f"{r}//a/./b//c/run.sh",
        f"{r}/a/to_deep/file.sh", f"{r}/a/to_deep/..", f"{r}/a/to_deep/../deep/file.sh",
        f"{r}/a/b/rel/deep/file.sh", f"{r}/a/b/rel/..", f"{r}/a/b/rel/../a/b",
        f"{r}/a/b/c/linked.sh", f"{r}/a/dangling", f"{r}/a/dangling/more",
        f"{r}/a/missing/../b", f"{r}/a/b/c/../../..", f"{r}/../../..", "/", "//", "/..",
        "run.sh", "c/run.sh", "../b/c", ".", "", "./c/../c/run.sh",
    ]


def test_real_path_is_path_resolve(tmp_path: Path, monkeypatch) -> None:
    root = _tree(tmp_path)
    monkeypatch.chdir(root / "a" / "b")
    locate.clear_caches()
    for rounds in range(2):  # the second round answers from the remembered prefixes
        for spelled in _spellings(root):
            assert real_path(spelled) == str(Path(spelled).resolve()), (rounds, spelled)


def test_a_link_loop_raises_as_resolve_does(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    locate.clear_caches()
    spelled = f"{root}/a/loop1/x"
    with pytest.raises(RuntimeError):
        Path(spelled).resolve()
    with pytest.raises(RuntimeError):
        real_path(spelled)


def test_config_folder_matches_resolved_parent(tmp_path: Path, monkeypatch) -> None:
    """``_folder`` (the folder a config's target is resolved for) is its resolved parent, relative
    spellings with ``..`` included (``trainlint check ../configs``)."""
    root = _tree(tmp_path)
    monkeypatch.chdir(root / "elsewhere")
    locate.clear_caches()
    for spelled in ("../a/b/c/run.sh", "../a/b/c/linked.sh", "../a/to_deep/file.sh", "deep/file.sh"):
        assert locate._folder(spelled) == str(Path(spelled).resolve().parent), spelled

