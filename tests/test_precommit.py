"""trainlint as a pre-commit hook, through real pre-commit (issue 5.1).

The hook repository is a snapshot of this working tree committed into a temporary git repository
(:func:`hook_repo`): ``pre-commit try-repo`` clones only tracked files, so pointing it at the
checkout itself would test the last commit (or nothing, before ``.pre-commit-hooks.yaml`` is
committed). The snapshot works the same on a developer's tree and on a clean CI checkout.

pre-commit builds the hook's virtualenv by pip-installing that snapshot (PyPI or the local wheel
index must be reachable). ``try-repo`` always builds it in a fresh temporary store, so only the
two acceptance cases use it; the per-format hooks and the ``args:`` cases run ``pre-commit run``
with a config naming the snapshot by path and commit, in a PRE_COMMIT_HOME shared by the session,
where the environment is built once.

The ``files`` patterns of the per-format hooks are also measured against the real-config corpus
(../shared/corpus/MANIFEST.tsv): each must keep its own format's files and leave the others out.

Marked ``slow`` (deselect with ``-m "not slow"``); it runs in the default test command.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from repo_snapshot import as_canonical_url, commit_all, git, snapshot

REPO = Path(__file__).resolve().parents[1]
HOOKS_FILE = REPO / ".pre-commit-hooks.yaml"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

# ------------------------------------------------------------------------------ fixture configs

CLEAN = {
    "deepspeed_configs/ds_config.json": """\
{
  "train_batch_size": 64,
  "train_micro_batch_size_per_gpu": 4,
  "gradient_accumulation_steps": 2,
  "zero_optimization": {"stage": 1},
  "bf16": {"enabled": true}
}
""",
    "configs/small.yml": """\
# GPT-NeoX model
{
  "pipe_parallel_size": 1,
  "model_parallel_size": 1,
  "num_layers": 12,
  "hidden_size": 768,
  "num_attention_heads": 12,
  "seq_length": 2048,
  "max_position_embeddings": 2048,
  "train_micro_batch_size_per_gpu": 4,
  "zero_optimization": {"stage": 1},
}
""",
    "scripts/train_small.sh": """\
#!/bin/bash
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --num-layers 24 \\
    --hidden-size 1024 \\
    --num-attention-heads 16 \\
    --tensor-model-parallel-size 2 \\
    --seq-length 2048 \\
    --max-position-embeddings 2048 \\
    --micro-batch-size 2 \\
    --global-batch-size 64
""",
    "notes.txt": "not a config\n",
}

BAD = {
    # 100 is not a multiple of the micro batch 8 (GAS defaults to 1): DeepSpeed's batch assertion.
    "ds_zero2_config.json": """\
{
  "train_batch_size": 100,
  "train_micro_batch_size_per_gpu": 8,
  "zero_optimization": {"stage": 2}
}
""",
    # ZeRO-2 under DeepSpeed's pipeline engine (pipe_parallel_size 2).
    "configs/pipe.yml": CLEAN["configs/small.yml"].replace('"pipe_parallel_size": 1', '"pipe_parallel_size": 2')
                                                 .replace('{"stage": 1}', '{"stage": 2}'),
    # 12 attention heads over tensor parallel size 8.
    "scripts/pretrain_gpt.sh": CLEAN["scripts/train_small.sh"].replace("--hidden-size 1024", "--hidden-size 1536")
                                                              .replace("--num-attention-heads 16", "--num-attention-heads 12")
                                                              .replace("--tensor-model-parallel-size 2",
                                                                       "--tensor-model-parallel-size 8"),
}

# What trainlint reports on BAD, exactly where.
BAD_DS = "ds_zero2_config.json:2:23: error TL100"
BAD_NEOX = "configs/pipe.yml:11:34: error TL110"
BAD_MEGATRON = "scripts/pretrain_gpt.sh:6:34: error TL104"

# --------------------------------------------------------------------------------- helpers


def _fixture_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    commit_all(path)
    return path


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory) -> tuple[Path, str]:
    """This working tree (the files pip needs to install trainlint, and the hooks file) as a
    committed git repository: (path, commit)."""
    pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install -e '.[test]')")
    target = tmp_path_factory.mktemp("hook-repo")
    return target, snapshot(target)


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory) -> Path:
    """One pre-commit store for the session: the hook environment is built once."""
    return tmp_path_factory.mktemp("pre-commit-home")


def _pre_commit(args: list[str], cwd: Path, home: Path, **more_env: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", NO_COLOR="1", **more_env)
    env.pop("PRE_COMMIT_ALLOW_NO_CONFIG", None)
    result = subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=900)
    return result


def _config(path: Path, repo: tuple[Path, str], hooks: list[dict]) -> Path:
    path.write_text(yaml.safe_dump({"repos": [{"repo": str(repo[0]), "rev": repo[1], "hooks": hooks}]}),
                    encoding="utf-8")
    return path


def _hook_output(output: str, hook_id: str) -> str:
    """The part of pre-commit's output that one hook printed (pre-commit shows it on failure)."""
    marker = f"- hook id: {hook_id}\n"
    if marker not in output:
        return ""
    block = output.split(marker, 1)[1]
    return re.split(r"\n[^\n]*\.{3,}(?:Passed|Failed|Skipped)", block, maxsplit=1)[0]


# ------------------------------------------------------------------------ pre-commit try-repo


@pytest.mark.slow
def test_try_repo_passes_on_clean_configs(hook_repo, tmp_path, pre_commit_home):
    repo = _fixture_repo(tmp_path / "project", CLEAN)
    result = _pre_commit(["try-repo", str(hook_repo[0]), "trainlint", "--all-files", "--color", "never"],
                         repo, pre_commit_home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^trainlint\.+Passed$", result.stdout, re.M), result.stdout


@pytest.mark.slow
def test_try_repo_fails_with_the_diagnostics(hook_repo, tmp_path, pre_commit_home):
    repo = _fixture_repo(tmp_path / "project", {**CLEAN, **BAD})
    result = _pre_commit(["try-repo", str(hook_repo[0]), "trainlint", "--all-files", "--color", "never"],
                         repo, pre_commit_home)
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"^trainlint\.+Failed$", result.stdout, re.M), result.stdout
    out = _hook_output(result.stdout, "trainlint")
    assert "- exit code: 1" in out
    for expected in (BAD_DS, BAD_NEOX, BAD_MEGATRON):
        assert expected in out, out
    # The clean files are read too, and only the three bad ones have errors.
    assert "3 errors" in out, out
    assert "notes.txt" not in out


# ------------------------------------------------------------- per-format hooks and hook args


@pytest.mark.slow
def test_per_format_hooks_check_their_own_files(hook_repo, tmp_path, pre_commit_home):
    repo = _fixture_repo(tmp_path / "project", {**CLEAN, **BAD})
    config = _config(tmp_path / "pre-commit-config.yaml", hook_repo,
                     [{"id": "trainlint-deepspeed"}, {"id": "trainlint-megatron"}, {"id": "trainlint-neox"}])
    result = _pre_commit(["run", "--all-files", "--color", "never", "--config", str(config)], repo, pre_commit_home)
    assert result.returncode == 1, result.stdout + result.stderr
    deepspeed = _hook_output(result.stdout, "trainlint-deepspeed")
    megatron = _hook_output(result.stdout, "trainlint-megatron")
    neox = _hook_output(result.stdout, "trainlint-neox")
    assert BAD_DS in deepspeed and BAD_NEOX not in deepspeed and BAD_MEGATRON not in deepspeed, deepspeed
    assert BAD_MEGATRON in megatron and BAD_DS not in megatron and BAD_NEOX not in megatron, megatron
    assert BAD_NEOX in neox and BAD_DS not in neox and BAD_MEGATRON not in neox, neox
    assert "deepspeed_configs/ds_config.json" not in neox  # a DeepSpeed JSON under configs/ is not NeoX's


@pytest.mark.slow
def test_hook_args_reach_trainlint(hook_repo, tmp_path, pre_commit_home):
    repo = _fixture_repo(tmp_path / "project", CLEAN)
    good = _config(tmp_path / "good.yaml", hook_repo, [{"id": "trainlint", "args": ["--gpu", "a100-80gb"]}])
    result = _pre_commit(["run", "--all-files", "--color", "never", "--config", str(good)], repo, pre_commit_home)
    assert result.returncode == 0, result.stdout + result.stderr
    # The same hook with a GPU trainlint does not know: the argument is passed, trainlint refuses it.
    bad = _config(tmp_path / "bad.yaml", hook_repo, [{"id": "trainlint", "args": ["--gpu", "no-such-gpu"]}])
    result = _pre_commit(["run", "--all-files", "--color", "never", "--config", str(bad)], repo, pre_commit_home)
    out = _hook_output(result.stdout, "trainlint")
    assert result.returncode == 1 and "- exit code: 2" in out, result.stdout + result.stderr
    assert "unknown GPU 'no-such-gpu'" in out


# --------------------------------------------------------------------- the hooks file itself


def _hooks() -> dict[str, dict]:
    return {hook["id"]: hook for hook in yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))}


def test_hooks_file_is_a_valid_pre_commit_manifest():
    clientlib = pytest.importorskip("pre_commit.clientlib", reason="pre-commit is not installed")
    manifest = clientlib.load_manifest(str(HOOKS_FILE))
    assert [h["id"] for h in manifest] == ["trainlint", "trainlint-deepspeed", "trainlint-megatron", "trainlint-neox"]
    for hook in manifest:
        assert hook["language"] == "python" and hook["entry"] == "trainlint check"
        assert hook["pass_filenames"] and hook["require_serial"]


# Paths as real repositories name these configs (pre-commit matches `files` with re.search).
SAMPLES = {
    "trainlint": {
        "match": ["ds_config.json", "a/b.yaml", "configs/125M.yml", "train.sh", "run.bash", "job.slurm", "x.sbatch"],
        "miss": ["README.md", "setup.py", "runtime.conf"],
    },
    "trainlint-deepspeed": {
        "match": ["ds_config.json", "configs/ds_config_zero3.json", "zero_stage2_offload_config.json",
                  "sp-alst.ds-config.json", "deepspeed_bsz24_config.json", "gan_deepspeed_config.json",
                  "deepspeed_configs/anything.json", "dsconfigs/ds_config_z1.json", "tests/deepspeed/zero2.json"],
        "miss": ["package.json", "tsconfig.json", "configs/125M.yml", "bert_base.json", "ds_config.yaml",
                 "models/zeroshot.json", "words.json"],
    },
    "trainlint-megatron": {
        "match": ["pretrain_gpt.sh", "examples/gpt3/train_gpt3_175b_distributed.sh", "scripts/pretrain_bert.sh",
                  "examples/post_training/modelopt/conf/Qwen/Qwen3-8B.sh", "finetune_race.sh", "sft_llama.slurm",
                  "tests/functional_tests/test_cases/gpt/x/model_config.yaml",
                  "examples/moe-modelzoo/model_configs/benchmarking/Qwen3-30B-A3B.yaml"],
        "miss": ["install.sh", "tools/setup_env.sh", "configs/125M.yml", "ds_config.json", "docker/build.sh"],
    },
    "trainlint-neox": {
        "match": ["configs/125M.yml", "configs/llama/7B.yml", "configs/autotuning_configs/tune.json",
                  "post-training/configs/llama3-8b-dpo.yml", "tests/test_configs/test_small_0.yml",
                  "tests/config/test_setup.yml"],
        "miss": ["configs/deepspeed_configs/ds_config.json", "configs/ds_zero2.json", ".github/workflows/ci.yml",
                 "examples/gpt3/gpt_config.yaml", "mkdocs.yml"],
    },
}


@pytest.mark.parametrize("hook_id", sorted(SAMPLES))
def test_files_patterns_on_sample_paths(hook_id):
    pattern = re.compile(_hooks()[hook_id]["files"])
    samples = SAMPLES[hook_id]
    assert [p for p in samples["match"] if not pattern.search(p)] == []
    assert [p for p in samples["miss"] if pattern.search(p)] == []


LABEL = {"trainlint-deepspeed": "deepspeed-json", "trainlint-megatron": "megatron-args", "trainlint-neox": "neox-yaml"}
# (least share of its own format's corpus files matched, most files of each other format matched)
EXPECTED = {
    "trainlint-deepspeed": (0.95, {"megatron-args": 0, "neox-yaml": 0, "other": 0}),
    "trainlint-megatron": (1.0, {"deepspeed-json": 0, "neox-yaml": 0, "other": 36}),
    "trainlint-neox": (1.0, {"deepspeed-json": 0, "megatron-args": 0, "other": 0}),
}


def match_table(manifest: list[dict[str, str]]) -> dict[str, collections.Counter]:
    """For each hook: how many corpus files of each format its `files` pattern matches."""
    hooks = _hooks()
    table = {}
    for hook_id, hook in hooks.items():
        pattern = re.compile(hook["files"])
        table[hook_id] = collections.Counter(row["format"] for row in manifest if pattern.search(row["source_path"]))
    return table


def test_files_patterns_on_the_corpus(manifest):
    totals = collections.Counter(row["format"] for row in manifest)
    table = match_table(manifest)
    for hook_id, (least, most_wrong) in EXPECTED.items():
        own = LABEL[hook_id]
        assert table[hook_id][own] >= least * totals[own], (hook_id, table[hook_id], totals)
        for label, most in most_wrong.items():
            assert table[hook_id][label] <= most, (hook_id, label, table[hook_id])
    for label in ("deepspeed-json", "megatron-args", "neox-yaml"):
        assert table["trainlint"][label] == totals[label]  # the generic hook takes every config file


# ------------------------------------------------------------ the documented snippet, as written


def _documented_snippet_texts() -> list[tuple[str, str]]:
    """The `.pre-commit-config.yaml` blocks of the README and docs/pre-commit.md, as written."""
    found = []
    for doc in (REPO / "README.md", REPO / "docs" / "pre-commit.md"):
        for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            data = yaml.safe_load(block)
            if isinstance(data, dict) and "repos" in data:
                found.append((doc.name, block))
    return found


def _documented_snippets() -> list[tuple[str, dict]]:
    return [(name, yaml.safe_load(block)) for name, block in _documented_snippet_texts()]


def test_documented_rev_is_the_release_tag_of_the_version():
    """The snippets name `rev: v<version>`: the tag each release gets (a tag that does not exist
    fails with "pathspec 'v0.1.0' did not match")."""
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(encoding="utf-8"), re.M)[1]
    snippets = _documented_snippets()
    assert {name for name, _ in snippets} == {"README.md", "pre-commit.md"}
    for name, data in snippets:
        assert data["repos"][0]["rev"] == f"v{version}", name


SNIPPETS = _documented_snippet_texts()


@pytest.mark.slow
@pytest.mark.parametrize("snippet", [block for _, block in SNIPPETS],
                         ids=[f"{name}-{i}" for i, (name, _) in enumerate(SNIPPETS)])
def test_documented_snippet_works_as_written(snippet, hook_repo, tmp_path, pre_commit_home):
    """Each documented `.pre-commit-config.yaml`, byte for byte: git fetches its repository URL from
    a snapshot of this tree (``insteadOf``), which gets the release tag the snippet names, as the
    real repository does at each release."""
    for entry in yaml.safe_load(snippet)["repos"]:
        git("tag", "-f", entry["rev"], cwd=hook_repo[0])
    repo = _fixture_repo(tmp_path / "project", CLEAN)
    (repo / ".pre-commit-config.yaml").write_text(snippet, encoding="utf-8")
    result = _pre_commit(["run", "--all-files", "--color", "never"], repo, pre_commit_home,
                         **as_canonical_url(hook_repo[0]))
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^trainlint[\w-]*\.+Passed$", result.stdout, re.M), result.stdout


@pytest.mark.slow
def test_baseline_in_the_project_config_gates_only_new_findings(hook_repo, tmp_path, pre_commit_home, monkeypatch):
    """A repository adopting trainlint: its existing findings recorded in a committed baseline,
    named in .trainlint.toml; the hook passes, and fails on a new finding only."""
    from trainlint.cli import main

    repo = _fixture_repo(tmp_path / "project", {**CLEAN, **BAD, ".trainlint.toml": 'baseline = "trainlint-baseline.json"\n'})
    monkeypatch.chdir(repo)
    assert main(["check", "--write-baseline", "trainlint-baseline.json", "."]) == 0
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "baseline", cwd=repo)
    config = _config(tmp_path / "pre-commit-config.yaml", hook_repo, [{"id": "trainlint"}])
    result = _pre_commit(["run", "--all-files", "--color", "never", "--config", str(config)], repo, pre_commit_home)
    assert result.returncode == 0, result.stdout + result.stderr
    # a new bad config: only it is reported, and the hook fails
    (repo / "more").mkdir()
    (repo / "more" / "ds_zero2_config.json").write_text(BAD["ds_zero2_config.json"], encoding="utf-8")
    git("add", "-A", cwd=repo)
    result = _pre_commit(["run", "--all-files", "--color", "never", "--config", str(config)], repo, pre_commit_home)
    out = _hook_output(result.stdout, "trainlint")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "more/ds_zero2_config.json:2:23: error TL100" in out and BAD_NEOX not in out and BAD_MEGATRON not in out, out
