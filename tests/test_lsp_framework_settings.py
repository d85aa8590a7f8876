"""One language server, two projects: each project's ``framework`` setting decides the target of its
own files. The settings travel with each session (``Session.frameworks`` into the adapters'
``LoadContext``), so the project opened last does not win for the other (issue 19)."""

from __future__ import annotations

from pathlib import Path

from trainlint.lsp.workspace import Linter

SCRIPT = ("torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
          "--max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 8\n")


def _project(root: Path, release: str) -> Path:
    root.mkdir()
    (root / ".trainlint.toml").write_text(f'framework = {{megatron = "{release}"}}\n')
    script = root / "train.sh"
    script.write_text(SCRIPT)
    return script


def _target(linter: Linter, script: Path, folder: Path):
    linted = linter.lint(str(script), SCRIPT, 1, folder=str(folder))
    assert linted.result is not None and linted.result.specs, linted.by_path
    target = linted.result.specs[0].target
    return target.variant, target.version, target.origin.value


def test_two_workspace_folders_keep_their_own_framework_target(tmp_path):
    old = _project(tmp_path / "old", "core_v0.4.0")
    new = _project(tmp_path / "new", "core_v0.8.0")
    linter = Linter()
    first = _target(linter, old, old.parent)
    assert first == ("Megatron-LM", "core_v0.4.0", "project-config")
    assert _target(linter, new, new.parent) == ("Megatron-LM", "core_v0.8.0", "project-config")
    # the first project again, after the second one's session was opened: still its own release
    assert _target(linter, old, old.parent) == first


def test_two_sessions_in_one_process(tmp_path):
    from trainlint.project.session import SessionOptions, open_session

    old = _project(tmp_path / "old", "core_v0.4.0")
    new = _project(tmp_path / "new", "core_v0.8.0")
    sessions = [open_session(SessionOptions(), script.parent) for script in (old, new)]
    versions = [s.check_paths([str(script)])[0].specs[0].target.version for s, script in zip(sessions, (old, new))]
    assert versions == ["core_v0.4.0", "core_v0.8.0"]
    # in the other order too: nothing process-wide is left from the last one opened
    assert sessions[0].check_paths([str(old)])[0].specs[0].target.version == "core_v0.4.0"
