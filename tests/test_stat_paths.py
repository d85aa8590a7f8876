"""``frameworks.stat_paths`` answers as pathlib does for the paths the folder walks build as strings."""

from __future__ import annotations

from pathlib import Path

from trainlint.frameworks.stat_paths import path_exists, path_is_file


def test_exists_and_is_file_match_pathlib(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder").mkdir()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "to-file").symlink_to(tmp_path / "file")
    names = ["file", "folder", "missing", "file/below", "dangling", "loop", "to-file", "loop/below", "nul\0name"]
    for name in names:
        path = str(tmp_path / name)
        assert path_exists(path) == Path(path).exists(), name
        assert path_is_file(path) == Path(path).is_file(), name
