"""The Megatron argument reader's and spec builder's short cuts give what the long way gives (issue 33).

* ``ArgReader._plain`` (the usual flag: one definition, nothing to check, given once, a switch or
  one value its type accepts) against ``ArgReader._known``;
* the usual setting's Value made in ``SpecBuilder._settings`` against ``SpecBuilder.value_of``;
* the entry point's file looked for on path strings (``entry_args._reach_text``, ``_find_text``)
  against the pathlib walk (``_reach``, ``_find``).

Both are switched off with their class's ``fast_path`` and every result of the load compared:
the parsed settings, the specs (every Value with its Provenance), the documents and the findings,
on generated command lines and (where ../shared is present) on every Megatron file of the corpus.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import CORPUS, SHARED_ABSENT
from trainlint.adapters.base import LoadContext, LoadResult
from trainlint.adapters.megatron.adapter import ParsedRun, load_argv, load_runs
from trainlint.adapters.megatron.flag_table import flag_table
from trainlint.adapters.megatron.flags import ArgReader
from trainlint.adapters.megatron.spec_build import SpecBuilder
from trainlint.files.sources import read_source
from trainlint.frameworks.entry_args import _find, _find_text, _reach, _reach_text
from trainlint.frameworks.locate import real_path


def _both(monkeypatch: pytest.MonkeyPatch, load):  # type: ignore[no-untyped-def]
    load()  # a checkout found beside a config is read, and said with its reading time (TL014), once
    fast = load()
    monkeypatch.setattr(ArgReader, "fast_path", False)
    monkeypatch.setattr(SpecBuilder, "fast_path", False)
    try:
        slow = load()
    finally:
        monkeypatch.undo()
    return fast, slow


def _same(fast: LoadResult, slow: LoadResult, where: str) -> None:
    assert fast.diagnostics == slow.diagnostics, where
    assert len(fast.specs) == len(slow.specs), where
    for a, b in zip(fast.specs, slow.specs):
        assert a.settings == b.settings, where  # each Value with its Provenance (path, span, note, ...)
        assert a == b, where
    assert fast.documents == slow.documents, where


def _same_runs(fast: list[ParsedRun], slow: list[ParsedRun], where: str) -> None:
    assert len(fast) == len(slow), where
    for a, b in zip(fast, slow):
        assert list(a.parsed.settings.items()) == list(b.parsed.settings.items()), where
        assert a.parsed.order == b.parsed.order, where


def _megatron_files(root: Path) -> list[Path]:
    out = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        script = path.suffix in (".sh", ".bash", ".slurm", ".sbatch")
        if script or (path.suffix in (".yaml", ".yml") and "megatron" in str(path.relative_to(root)).lower()):
            out.append(path)
    return out


@pytest.mark.skipif(not (CORPUS / "MANIFEST.tsv").is_file(), reason=f"corpus not found ({SHARED_ABSENT})")
def test_corpus_fast_paths_read_as_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    files = _megatron_files(CORPUS)
    assert len(files) > 300
    settings = 0
    for path in files:
        source = read_source(str(path))
        (fast, fast_runs), (slow, slow_runs) = _both(monkeypatch, lambda s=source: load_runs(s, LoadContext()))
        _same(fast, slow, str(path))
        _same_runs(fast_runs, slow_runs, str(path))
        settings += sum(len(spec.settings) for spec in fast.specs)
    assert settings > 5_000  # the corpus's scripts were read, not skipped


_VALUES = ["8", "-1", "0", "1e-4", "0.01", "x", "true", "None", "bf16", "$UNSET", "--", "-", "3 4", ""]


def test_generated_command_lines_read_as_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Random argument lists over the whole flag table: switches and flags with values (valid, out of
    range, of the wrong type, missing, unknown at launch), ``--flag=value``, repeated flags, misspellings."""
    table = flag_table()
    flags = sorted(table.all_flags)
    rng = random.Random(33)
    settings = 0
    for _ in range(300):
        argv = ["torchrun", "--nproc_per_node", "8", rng.choice(["pretrain_gpt.py", "tools/x.py", "pretrain_bert.py"])]
        for _ in range(rng.randint(1, 30)):
            flag = rng.choice(flags)
            roll = rng.random()
            if roll < 0.1:
                flag = flag.replace("-", "_", 2)
            if roll > 0.9:
                argv.append(f"{flag}={rng.choice(_VALUES)}")
                continue
            argv.append(flag)
            for _ in range(rng.choice([0, 1, 1, 1, 2])):
                argv.append(rng.choice(_VALUES))
            if rng.random() < 0.1:
                argv.extend(argv[-2:])  # given twice
        fast, slow = _both(monkeypatch, lambda a=tuple(argv): load_argv(list(a), "x.sh"))
        _same(fast, slow, " ".join(argv))
        settings += sum(len(spec.settings) for spec in fast.specs)
    assert settings > 1_000


_ENTRIES = ["pretrain_gpt.py", "./pretrain_gpt.py", "../pretrain_gpt.py", "tools/run.py", "a//b/../c.py",
            "megatron/training/arguments.py", "../megatron/training/arguments.py", "x.py"]


def _entry_routes(folder: str, entry: str, root: str | None) -> tuple[Path | None, Path | None]:
    text = _find_text(entry, *reversed(_reach_text(folder, root)))
    paths = _find(entry, *reversed(_reach(Path(folder), root)))
    return text, paths


def test_entry_file_walk_on_strings_is_the_path_walk(tmp_path: Path) -> None:
    """entry_args._reach_text/_find_text (strings) against _reach/_find (pathlib): the same folders
    tried and the same file found, in a project with files at several levels, a link and a checkout."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "examples" / "gpt" / "deep").mkdir(parents=True)
    (project / "tools").mkdir()
    (project / "megatron" / "training").mkdir(parents=True)
    (project / "pretrain_gpt.py").write_text("")
    (project / "tools" / "run.py").write_text("")
    (project / "c.py").write_text("")
    (project / "megatron" / "training" / "arguments.py").write_text("")
    (project / "examples" / "gpt" / "x.py").write_text("")
    (tmp_path / "outside.py").write_text("")
    (project / "examples" / "link").symlink_to(project / "tools")
    folders = [project / "examples" / "gpt" / "deep", project / "examples" / "gpt", project, project / "examples" / "link",
               project / "megatron" / "training"]
    entries = [*_ENTRIES, str(tmp_path / "outside.py"), str(project / "c.py"), "../../../outside.py"]
    found = 0
    for folder in folders:
        real = real_path(str(folder))
        for root in (None, str(project), str(project / "megatron")):
            for entry in entries:
                text, paths = _entry_routes(real, entry, root)
                assert text == paths, (folder, entry, root)
                found += text is not None
    assert found > 20


@pytest.mark.skipif(not (CORPUS / "MANIFEST.tsv").is_file(), reason=f"corpus not found ({SHARED_ABSENT})")
def test_entry_file_walk_on_strings_is_the_path_walk_on_the_corpus() -> None:
    roots = [None, str(CORPUS / "forks" / "ROCm__Megatron-LM")]
    for path in _megatron_files(CORPUS)[::3]:
        folder = real_path(str(path.parent))
        for root in roots:
            for entry in _ENTRIES:
                text, paths = _entry_routes(folder, entry, root)
                assert text == paths, (path, entry, root)
