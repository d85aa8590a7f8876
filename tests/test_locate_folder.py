"""``frameworks.locate._folder`` remembers the folders it resolved (``real_path``), ``..`` paths included (issue 33): its
answer is always ``Path(config).resolve().parent``, through links and from any current directory."""

from __future__ import annotations

import os
from pathlib import Path

from trainlint.frameworks import locate


def test_folder_memo_gives_the_resolved_parent_with_dotdot_and_links(tmp_path: Path, monkeypatch) -> None:
    real = tmp_path / "real" / "deep"
    real.mkdir(parents=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "link").symlink_to(real)  # link/.. is real/, not tmp_path
    for folder in (real, tmp_path / "other", tmp_path):
        (folder / "c.json").write_text("{}")
    (tmp_path / "file-link.json").symlink_to(real / "c.json")
    written = ["link/../c.json", "link/../deep/c.json", "other/../link/c.json", "./link/./../deep/c.json",
               "link/c.json", "file-link.json", "c.json", "other/c.json", "../" + tmp_path.name + "/link/../c.json"]
    for cwd in (tmp_path, tmp_path / "other", real):
        monkeypatch.chdir(cwd)
        for _ in range(2):  # the second round answers from the memo
            for path in written + [str(tmp_path / p) for p in written]:
                assert locate._folder(path) == str(Path(path).resolve().parent), (os.getcwd(), path)
    assert locate._real  # the resolved prefixes are remembered (real_path), `..` paths included
