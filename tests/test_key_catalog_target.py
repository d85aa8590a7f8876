"""One key catalog per framework, with the checked release (issue 31): ``Framework.key_catalog(target)``
answers what the release a run is checked against defines (a located checkout read statically, a stated
release), and every consumer asks it there, never the target's catalog beside it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trainlint.adapters.megatron.framework import MegatronFramework
from trainlint.adapters.neox.framework import NeoXFramework
from trainlint.cli import main
from trainlint.core.framework import framework_of
from trainlint.frameworks.argdef import ArgDef
from trainlint.frameworks.catalog import ArgCatalog
from trainlint.frameworks.keys import ReleaseKeyCatalog, key_catalog_for
from trainlint.frameworks.target import FrameworkTarget, TargetOrigin

ROOT = Path(__file__).resolve().parents[1]


def _release(family: str, *args: ArgDef) -> ArgCatalog:
    return ArgCatalog(family, "a-fork", None, {a.name: a for a in args})


def _target(family: str, release: ArgCatalog | None) -> FrameworkTarget:
    return FrameworkTarget(family, "a-fork", None, TargetOrigin.SOURCE_BESIDE, path="/fork", catalog=release)


def test_the_framework_catalog_answers_for_the_checked_release():
    framework = framework_of("megatron")
    shipped = framework.key_catalog()
    release = _release("megatron", ArgDef("--my-fork-flag", "my_fork_flag"))
    keys = framework.key_catalog(_target("megatron", release))
    assert keys.release() is release and shipped.release() is None
    assert keys.defines("--my-fork-flag") is True and keys.defines("--num-layers") is False
    assert keys.defines_dest("my_fork_flag") is True and keys.defines_dest("num_layers") is False
    assert shipped.defines("--num-layers") is None  # no release catalog: trainlint's own table decides
    # the shipped answers stay (schema, which shipped releases define a name)
    assert keys.schema() is shipped.schema() and keys.defined_by("--num-layers") == shipped.defined_by("--num-layers")
    # one object per release read (memos keyed by it hold while the checkout is unchanged), none without one
    assert framework.key_catalog(_target("megatron", release)) is keys
    assert framework.key_catalog(_target("megatron", None)) is shipped
    other = _release("megatron", ArgDef("--my-fork-flag", "my_fork_flag"))
    assert framework.key_catalog(_target("megatron", other)) is not keys


def test_neox_release_catalog_is_the_release_schema():
    release = _release("neox", ArgDef("num_layers", "num_layers"),
                       ArgDef("fork_only_key", "fork_only_key", choices=("a", "b")))
    keys = NeoXFramework().key_catalog(_target("neox", release))
    props = keys.schema()["properties"]
    assert set(props) == {"num_layers", "fork_only_key"}  # exactly what the release defines
    assert props["fork_only_key"]["enum"] == ["a", "b"]
    assert props["num_layers"]["type"] == NeoXFramework().key_catalog().properties()["num_layers"]["type"]
    assert keys.defines("fork_only_key") and not keys.defines("hidden_size")


def test_release_catalogs_are_bounded():
    made = [key_catalog_for("megatron", "megatron", _target("megatron", _release("megatron"))) for _ in range(70)]
    assert all(isinstance(k, ReleaseKeyCatalog) for k in made)
    from trainlint.frameworks import keys

    assert len(keys._RELEASES) <= keys._RELEASES_KEPT


SCRIPT = """#!/bin/bash
python pretrain_gpt.py \\
    --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 \\
    --max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 8 --train-iters 10 \\
    --my-fork-flag 3
"""


def _unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nframework = {megatron = "core_v0.8.0"}\n')
    script = tmp_path / "train.sh"
    script.write_text(SCRIPT)
    main(["check", "--format", "json", "--exit-zero", "--config", str(tmp_path / "pyproject.toml"), str(script)])
    diags = [d for f in json.loads(capsys.readouterr().out)["files"] for d in f["diagnostics"]]
    return [d for d in diags if d["code"] == "TL004" and "my-fork-flag" in d["message"]]


def test_the_flag_reader_asks_the_framework_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A stated release that lacks a flag refuses it; when the framework's catalog answers with a release
    that defines it (as a plugin's or a fork's catalog would), the reader takes the flag: it reads the
    release from the catalog, not from the target beside it."""
    refused = _unknown(tmp_path, capsys)
    assert refused and refused[0]["severity"] == "error"
    original = MegatronFramework.key_catalog

    def widened(self, target=None):
        keys = original(self, target)
        release = keys.release()
        if release is None:
            return keys
        args = dict(release.args, **{"--my-fork-flag": ArgDef("--my-fork-flag", "my_fork_flag", type="int")})
        return ReleaseKeyCatalog(keys, ArgCatalog(release.family, release.variant, release.version, args))

    monkeypatch.setattr(MegatronFramework, "key_catalog", widened)
    assert _unknown(tmp_path, capsys) == []


_SIDE_ROUTE = re.compile(r"""(?<!self)\.catalog\b(?!\s*\()|getattr\([^)]*["']catalog["']""")


def test_no_consumer_reads_the_target_catalog_beside_the_key_catalog():
    """Only ``linter/frameworks/`` (which locates the target and makes its catalog) reads a target's
    ``catalog``; everything else asks ``Framework.key_catalog(target)``."""
    offenders = []
    for folder in ("linter", "adapters"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("linter/frameworks/"):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if _SIDE_ROUTE.search(code) and "trainlint.frameworks.catalog" not in code \
                        and "trainlint.presets.catalog" not in code:
                    offenders.append(f"{rel}:{number}: {line.strip()}")
    assert offenders == []


def test_a_plugin_catalog_without_the_target_parameter_still_answers() -> None:
    """A plugin framework written before ``key_catalog`` took the run's target overrides it as
    ``key_catalog(self)``; every consumer now passes the target, which must not be a TypeError."""
    from trainlint.core.framework import EMPTY_KEYS, Framework

    class OldPlugin(Framework):
        name = "old-plugin"

        def key_catalog(self):  # type: ignore[override]
            return EMPTY_KEYS

    assert OldPlugin().key_catalog(object()) is EMPTY_KEYS
    assert OldPlugin().key_catalog() is EMPTY_KEYS
