"""Issue 29, second round: a repository trainlint lints (a pull request, a cloned checkout) runs no
code, reads nothing outside the checkout, stays within 10 s and 1 GB, fails the gate where the file
fails, and puts no raw control character and no traceback in any output. See docs/security.md."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from security_cases import CASES, SECRET, Case

from trainlint.cli import main

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
LIMIT_BYTES = 1024 ** 3


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES + 512 * 1024 ** 2, LIMIT_BYTES + 512 * 1024 ** 2))


def run_trainlint(argv: list[str], cwd: Path, env: dict[str, str] | None = None,
                  module: bool = False) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "trainlint", *argv] if module else [
        sys.executable, "-c", "import sys; from trainlint.cli import main; sys.exit(main())", *argv]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=10,
                          env={**os.environ, "XDG_CONFIG_HOME": str(cwd / ".xdg"), **(env or {})},
                          preexec_fn=_limit_memory)


@pytest.mark.parametrize("case", CASES, ids=[c.name.split(":")[0] + "-" + c.build.__name__ for c in CASES])
def test_red_team_case_holds(case: Case, tmp_path: Path) -> None:
    argv = case.build(tmp_path)
    done = run_trainlint(argv, tmp_path / case.cwd, case.env)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-2000:]
    assert SECRET not in output
    assert not CONTROL.search(output), repr(CONTROL.search(output))
    assert not [line for line in done.stderr.splitlines() if line.startswith("::")], done.stderr
    assert done.returncode in case.expect_exit, (done.returncode, output[-2000:])
    for code in case.expect_codes:
        assert code in done.stdout, (code, output[-2000:])
    for code in case.absent_codes:
        assert code not in done.stdout, (code, output[-2000:])


# ---------------------------------------------------------------------------------------------- S1


def test_python_m_imports_nothing_from_the_current_directory(tmp_path: Path) -> None:
    """A checkout holding ``yaml.py`` and an ``x.dist-info`` with a trainlint entry point: ``python -m
    trainlint`` (as the console script) imports neither."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    marker = tmp_path / "RAN"
    (repo / "yaml.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('yaml')\nraise SystemExit(7)\n")
    (repo / "evil.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('entry point')\n")
    dist = repo / "evil-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[trainlint]\nevil = evil\n")
    (repo / "neox.yml").write_text("num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\n")
    done = run_trainlint(["check", "--format", "json", "neox.yml"], repo, module=True)
    assert not marker.exists(), marker.read_text()
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr


# ---------------------------------------------------------------------------------------------- S2


def test_trust_list_takes_only_absolute_directories(tmp_path: Path, monkeypatch) -> None:
    """A line a baseline write could leave there (``"message": "/../../..``) resolves to ``/`` against
    the current directory: it must not make every repository trusted."""
    from trainlint.files import trust

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("TRAINLINT_ALLOW_PLUGINS", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".trainlint.toml").write_text('plugins = ["p.py"]\n')
    monkeypatch.chdir(repo)
    trust.trust_file().parent.mkdir(parents=True)
    depth = "/..".join([""] * (len(repo.parts) + 3))
    trust.trust_file().write_text(f'  "message": "{depth}",\nsubdir\n/\n')
    assert not trust.decide(repo / ".trainlint.toml").allowed
    trust.trust_file().write_text(f"{repo}\n")
    assert trust.decide(repo / ".trainlint.toml").allowed


def test_baseline_outside_the_checkout_is_refused_and_the_editor_offers_no_write(tmp_path: Path, monkeypatch,
                                                                                  capsys) -> None:
    pytest.importorskip("lsprotocol")
    from lsprotocol import types as lsp

    from trainlint.lsp import actions
    from trainlint.lsp.server import to_lsp, uri_for
    from trainlint.lsp.workspace import Linter

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    trusted = tmp_path / "xdg" / "trainlint" / "trusted-projects"
    (repo / ".trainlint.toml").write_text(f'baseline = "{os.path.relpath(trusted, repo)}"\n')
    (repo / "ds_config.json").write_text(BAD_DS := '{"train_batch_size": 999, "train_micro_batch_size_per_gpu": 4}\n')
    code = main(["check", "--format", "json", str(repo / "ds_config.json")])
    err = capsys.readouterr().err
    assert code == 2 and "outside" in err, err
    linted = Linter({}).lint(str(repo / "ds_config.json"), BAD_DS, folder=str(repo))
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(5, 0))
    assert any(d.code == "TL100" for d in linted.by_path[linted.path])
    titles = [a.title for a in actions.code_actions(linted, uri_for(linted.path), whole, uri_for, to_lsp)]
    assert not [t for t in titles if "baseline" in t], titles


# ---------------------------------------------------------------------------------------------- S3


def test_a_trusted_project_may_still_widen_source_roots(tmp_path: Path, monkeypatch, capsys) -> None:
    """The user's trust (here TRAINLINT_ALLOW_PLUGINS) lets the project's source-roots reach outside."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    shared = tmp_path / "cluster"
    shared.mkdir()
    (shared / "env.sh").write_text("TP=4\n")
    (repo / ".trainlint.toml").write_text('source-roots = ["../cluster"]\n')
    (repo / "train.sh").write_text(f"source {shared / 'env.sh'}\n"
                                   "python pretrain_gpt.py --tensor-model-parallel-size $TP --num-layers 2\n")
    monkeypatch.chdir(repo)
    argv = ["check", "--format", "json", "--select", "TL012", str(repo / "train.sh")]
    main(argv)
    assert "outside the project" in capsys.readouterr().out
    monkeypatch.setenv("TRAINLINT_ALLOW_PLUGINS", "1")
    main(argv)
    assert "outside the project" not in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------- S7


def test_language_server_without_a_workspace_folder_trusts_nothing(tmp_path: Path, monkeypatch) -> None:
    from trainlint.lsp.workspace import Linter

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TRAINLINT_ALLOW_PLUGINS", "1")
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    (repo / "tools" / "evil.py").write_text('import pathlib\npathlib.Path(__file__).with_name("IMPORTED").write_text("x")\n')
    (repo / ".trainlint.toml").write_text('plugins = ["tools/evil.py"]\n')
    (repo / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 4}\n')
    monkeypatch.chdir(repo)  # the server's own directory is the cloned repository
    linted = Linter({"allowPlugins": True}).lint(str(repo / "ds_config.json"), '{"train_micro_batch_size_per_gpu": 4}\n')
    assert not (repo / "tools" / "IMPORTED").exists()
    assert any(d.code == "TL015" for ds in linted.by_path.values() for d in ds)


# ---------------------------------------------------------------------------------------------- G1


def test_each_file_is_checked_with_its_own_nearest_config(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "repo"
    (repo / "aaa").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / ".trainlint.toml").write_text('severity = { TL004 = "error" }\n')
    (repo / "aaa" / ".trainlint.toml").write_text('ignore = ["ALL"]\n')
    (repo / "aaa" / "x.json").write_text('{"train_micro_batch_size_per_gpu": 4, "bogus_key": 1}\n')
    (repo / "b.json").write_text('{"train_micro_batch_size_per_gpu": 4, "bogus_key": 1}\n')
    for order in ([repo / "aaa" / "x.json", repo / "b.json"], [repo / "b.json", repo / "aaa" / "x.json"], [repo]):
        code = main(["check", "--format", "json", *map(str, order)])
        files = {Path(f["path"]).name: [d["code"] for d in f["diagnostics"]] for f in json.loads(capsys.readouterr().out)["files"]}
        assert code == 1, order
        assert "TL004" in files["b.json"] and not files.get("x.json"), (order, files)
    # the command line's flags still win over each config; --config still names one for all
    code = main(["check", "--format", "json", "--ignore", "TL004", str(repo / "aaa" / "x.json"), str(repo / "b.json")])
    assert code == 0 and "TL004" not in capsys.readouterr().out
    code = main(["check", "--format", "json", "--config", str(repo / ".trainlint.toml"), str(repo / "aaa" / "x.json")])
    assert code == 1 and "TL004" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------- O2, O3


def _outside_code_spans(markdown: str) -> str:
    """The text CommonMark reads as markup: code spans (backtick runs of equal length) and
    backslash-escaped punctuation left out."""
    out, i = [], 0
    while i < len(markdown):
        ch = markdown[i]
        if ch == "\\" and i + 1 < len(markdown):
            i += 2
            continue
        if ch == "`":
            run = len(markdown[i:]) - len(markdown[i:].lstrip("`"))
            close = re.compile(r"(?<!`)" + "`" * run + r"(?!`)").search(markdown, i + run)
            if close:
                i = close.end()
                continue
            out.append("`" * run)
            i += run
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def test_a_backtick_in_a_value_cannot_open_a_link_in_markdown(tmp_path: Path, capsys) -> None:
    key = "x` [click](https://evil.example/a) ![i](https://evil.example/i.png) www.evil.example `y"
    (tmp_path / "ds_config.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 4, key: 1}) + "\n")
    main(["check", "--isolated", "--format", "markdown", str(tmp_path / "ds_config.json")])
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if "click" in line]
    message = re.split(r"(?<!\\) \| ", row[2:-2])[3]  # a GFM row split as GitHub splits it
    assert "click" in message
    markup = _outside_code_spans(message)
    assert "](" not in markup and "://" not in markup and "www.evil" not in markup, markup


def test_language_server_messages_carry_no_control_characters(tmp_path: Path) -> None:
    pytest.importorskip("lsprotocol")
    from trainlint.lsp.server import to_lsp
    from trainlint.lsp.workspace import Linter

    key = "\x1b[2J\u202egnp.exe\x07"
    text = json.dumps({"train_micro_batch_size_per_gpu": 4, key: 1}) + "\n"
    (tmp_path / ".trainlint.toml").write_text('"\\u001b[31mbad\\u0007" = 1\n')
    linted = Linter({}).lint(str(tmp_path / "ds_config.json"), text, folder=str(tmp_path))
    assert linted.config_error and not CONTROL.search(linted.config_error), repr(linted.config_error)
    shown = [to_lsp(d, text.split("\n"), "file:///x") for ds in linted.by_path.values() for d in ds]
    assert any(d.code == "TL004" for d in shown)
    for d in shown:
        assert not CONTROL.search(d.message), repr(d.message)
