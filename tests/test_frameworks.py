"""Framework targets: argument definitions read statically from source, the target's provenance,
and fork-aware unknown / removed findings (issue 17)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron.detect import MegatronAdapter
from trainlint.adapters.neox.detect import NeoXAdapter
from trainlint.core.diagnostics import Applicability, Severity
from trainlint.frameworks import locate
from trainlint.frameworks.argscan import scan_megatron, scan_neox
from trainlint.frameworks.catalog import load_shipped, read_checkout, shipped_index
from trainlint.frameworks.target import TargetOrigin
from trainlint.files.sources import SourceText

MEGATRON = MegatronAdapter()
NEOX = NeoXAdapter()

BASE_FLAGS = ("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
              "--max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 8")


@pytest.fixture(autouse=True)
def _fresh_locator():
    locate.clear_caches()
    yield
    locate.clear_caches()


def megatron_script(path: Path, extra: str, frameworks: locate.FrameworkSettings | None = None) -> list:
    text = f"torchrun pretrain_gpt.py {BASE_FLAGS} {extra}\n"
    path.write_text(text)
    return MEGATRON.load(SourceText(str(path), text), LoadContext(frameworks=frameworks)).diagnostics


def found(diags, *codes) -> list[tuple[str, str, int, int]]:
    return [(d.code, d.severity.value, d.line, d.column) for d in diags if d.code in codes]


# ------------------------------------------------------------------------------ reading source


FORK_ARGUMENTS = '''
import argparse

def _add_network_size_args(parser):
    group = parser.add_argument_group(title='network size')
    group.add_argument('--num-layers', type=int, default=None)
    group.add_argument('--hidden-size', type=int, default=None)
    group.add_argument('--num-attention-heads', type=int, default=None)
    group.add_argument('--seq-length', type=int, default=None)
    group.add_argument('--max-position-embeddings', type=int, default=None)
    group.add_argument('--micro-batch-size', type=int, default=None)
    group.add_argument('--global-batch-size', type=int, default=None)
    group.add_argument('--position-embedding-type', type=str, default='learned_absolute',
                       choices=['learned_absolute', 'rope', 'alibi'])
    group.add_argument('--embed-layernorm', action='store_true')
    group.add_argument('--tokenizer-name-or-path', type=str, default=None)
    group.add_argument('--use-fancy-kernel', action=argparse.BooleanOptionalAction, default=True)
    return parser
'''


def write_fork(root: Path, arguments: str = FORK_ARGUMENTS) -> Path:
    """A fork's checkout: its own git work tree (the project its configs are judged in)."""
    (root / "megatron" / "training").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "megatron" / "training" / "arguments.py").write_text(arguments)
    (root / "examples").mkdir()
    return root


def test_add_argument_calls_are_read_with_their_types_and_choices():
    scan = scan_megatron({"megatron/training/arguments.py": FORK_ARGUMENTS})
    assert scan.partial == []
    pet = scan.args["--position-embedding-type"]
    assert (pet.dest, pet.type, pet.choices) == ("position_embedding_type", "str", ("learned_absolute", "rope", "alibi"))
    assert scan.args["--embed-layernorm"].action == "store_true"
    assert scan.args["--num-layers"].type == "int"
    # BooleanOptionalAction adds both spellings
    assert scan.args["--use-fancy-kernel"].action == "store_true"
    assert scan.args["--no-use-fancy-kernel"].action == "store_false"


def test_an_option_string_built_at_run_time_makes_the_catalog_partial():
    scan = scan_megatron({"a.py": "def f(p, name):\n    p.add_argument('--' + name, type=int)\n"})
    assert scan.args == {}
    assert scan.partial and "a.py:2" in scan.partial[0]


def test_argument_group_factory_flags_come_from_the_dataclass_fields():
    arguments = textwrap.dedent('''
        from megatron.training.config import TrainingConfig
        def add(parser):
            exclude = ["skipped"]
            ArgumentGroupFactory(TrainingConfig, exclude=exclude).build_group(parser, "training")
    ''')
    config = textwrap.dedent('''
        from dataclasses import dataclass, field
        from typing import Literal, Optional
        @dataclass
        class Base:
            seed: int = 1234
        @dataclass
        class TrainingConfig(Base):
            train_iters: Optional[int] = None
            use_flash: bool = True
            verbose: bool = False
            skipped: int = 0
            mode: Literal["a", "b"] = "a"
            internal: int = field(default=0, init=False)
            renamed: int = field(default=0, metadata={"argparse_meta": {"arg_names": ["--other-name"]}})
    ''')
    scan = scan_megatron({"megatron/training/arguments.py": arguments}, {"megatron/training/config.py": config})
    assert scan.partial == []
    assert set(scan.args) == {"--seed", "--train-iters", "--no-use-flash", "--disable-use-flash", "--verbose",
                              "--mode", "--other-name"}
    assert scan.args["--no-use-flash"].action == "store_false"
    assert scan.args["--mode"].choices == ("a", "b")
    assert scan.args["--train-iters"].type == "int"


def test_neox_argument_dataclasses_are_read():
    scan = scan_neox({"megatron/neox_arguments/neox_args.py": textwrap.dedent('''
        from dataclasses import dataclass
        from typing import Literal
        @dataclass
        class NeoXArgsModel(NeoXArgsTemplate):
            num_layers: int = None
            mlp_type: str = "regular"
            lr_decay_style: Literal["constant", "linear", "hybrid_cosine_inv_sqrt_2"] = "linear"
        class Helper:
            not_an_arg: int = 3
    ''')})
    assert set(scan.args) == {"num_layers", "mlp_type", "lr_decay_style"}
    assert scan.args["lr_decay_style"].choices == ("constant", "linear", "hybrid_cosine_inv_sqrt_2")


def test_deepspeed_config_models_and_constants_are_read():
    from trainlint.frameworks.argscan import scan_deepspeed

    scan = scan_deepspeed({
        "deepspeed/runtime/constants.py": "TRAIN_BATCH_SIZE = 'train_batch_size'\nTRAIN_BATCH_SIZE_DEFAULT = None\n",
        "deepspeed/runtime/zero/config.py": textwrap.dedent('''
            from typing import Literal
            class DeepSpeedZeroConfig(DeepSpeedConfigModel):
                stage: int = 0
                reduce_bucket_size: int = Field(500000000, alias="reduce_bucket_size")
                offload_param_device: Literal["none", "cpu", "nvme"] = "none"
                _private: int = 0
        '''),
    })
    assert {"train_batch_size", "stage", "reduce_bucket_size", "offload_param_device"} <= set(scan.args)
    assert "_private" not in scan.args and "TRAIN_BATCH_SIZE_DEFAULT" not in scan.args
    assert scan.args["offload_param_device"].choices == ("none", "cpu", "nvme")


def test_invalid_escapes_in_a_fork_module_neither_warn_nor_stop_the_reading():
    import warnings

    text = FORK_ARGUMENTS + "    parser.add_argument('--path-glob', help='a\\ b')\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a compile warning would surface as an error here
        scan = scan_megatron({"megatron/training/arguments.py": text})
    assert "--path-glob" in scan.args and "--embed-layernorm" in scan.args


def test_reading_stops_after_the_time_bound_and_the_catalog_is_partial(tmp_path, monkeypatch):
    """catalog.MAX_READ_SECONDS bounds the reading: past it the rest is not read, the catalog is
    partial, and unknown names are warnings (the fork may define them in what was not read)."""
    from trainlint.frameworks import catalog

    monkeypatch.setattr(catalog, "MAX_READ_SECONDS", -1.0)
    scan = scan_megatron({"megatron/training/arguments.py": FORK_ARGUMENTS})
    assert scan.args == {} and scan.partial and "stopped after" in scan.partial[0]
    root = write_fork(tmp_path / "slow", FORK_ARGUMENTS + f"# {tmp_path}\n")
    diags = megatron_script(root / "examples" / "train.sh", "--not-in-the-fork 1")
    unknown = [d for d in diags if d.code == "TL004"]
    assert unknown and all(d.severity is Severity.WARNING for d in unknown)
    assert any("--not-in-the-fork" in d.message for d in unknown)
    assert all(d.severity is not Severity.ERROR for d in diags if d.code in ("TL004", "TL006", "TL008"))


def test_an_argument_module_over_the_size_bound_is_not_read(tmp_path):
    from trainlint.frameworks.catalog import MAX_SOURCE_BYTES

    root = write_fork(tmp_path / "huge", FORK_ARGUMENTS + "#" * (MAX_SOURCE_BYTES + 1) + "\n")
    assert read_checkout(root, "megatron", use_cache=False) is None
    target = locate.resolve("megatron", str(root / "examples" / "train.sh"))
    assert target.origin is TargetOrigin.ASSUMED


def test_a_checkout_is_read_once_then_taken_from_the_cache(tmp_path):
    root = write_fork(tmp_path / "fork")
    first = read_checkout(root, "megatron")
    assert first is not None and first.read_seconds is not None and "--embed-layernorm" in first
    again = read_checkout(root, "megatron")
    assert again is not None and again.read_seconds is None and set(again.args) == set(first.args)
    # a changed source is read again (the cache is keyed by content)
    (root / "megatron/training/arguments.py").write_text(FORK_ARGUMENTS + "    parser.add_argument('--new-flag')\n")
    changed = read_checkout(root, "megatron")
    assert changed.read_seconds is not None and "--new-flag" in changed


# ------------------------------------------------------------------------------ a fork beside the config


def test_fork_flags_are_known_when_checked_in_the_fork(tmp_path):
    # content of its own, so the cache of another test's identical source does not answer
    root = write_fork(tmp_path / "bigscience-Megatron-DeepSpeed", FORK_ARGUMENTS + f"# {tmp_path}\n")
    diags = megatron_script(root / "examples" / "train.sh",
                            "--position-embedding-type alibi --embed-layernorm --tokenizer-name-or-path gpt2")
    assert found(diags, "TL004", "TL006", "TL008") == []
    note = [d for d in diags if d.code == "TL014"]
    assert len(note) == 1 and note[0].severity is Severity.INFO
    assert "bigscience-Megatron-DeepSpeed" in note[0].message and " s " in note[0].message


def test_the_read_note_appears_once_per_run_under_jobs(tmp_path):
    """Under -j 2 each worker process reads the fork's source; the run still says it once."""
    import subprocess
    import sys

    root = write_fork(tmp_path / "fork", FORK_ARGUMENTS + f"# {tmp_path}\n")
    for i in range(60):  # enough files for two workers (parallel.MIN_FILES_PER_WORKER)
        (root / "examples" / f"train_{i:02d}.sh").write_text(f"torchrun pretrain_gpt.py {BASE_FLAGS}\n")
    blocked = tmp_path / "no-cache"
    blocked.write_text("")  # a file where the cache folder would be: every worker reads the source itself
    env = {**__import__("os").environ, "TRAINLINT_CACHE_DIR": str(blocked / "sub")}
    done = subprocess.run([sys.executable, "-m", "trainlint", "check", "--isolated", "--exit-zero", "--format", "json",
                           "-j", "2", str(root / "examples")], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stdout)["files"]
    notes = [(f["path"], d["line"]) for f in files for d in f["diagnostics"] if d["code"] == "TL014"]
    assert len(files) == 60 and notes == [(files[0]["path"], 1)]


def test_once_per_run_keeps_the_first_note_of_each_source():
    from trainlint.core.results import FileResult
    from trainlint.core.diagnostics import Related
    from trainlint.core.input_codes import input_diagnostic
    from trainlint.core.positions import FILE_START

    def note(source: str, seconds: str):
        return input_diagnostic("TL014", f"read 3 argument definitions in {seconds} s", FILE_START,
                                related=(Related("the argument definitions read", FILE_START, source),))

    other = input_diagnostic("TL004", "unknown flag", FILE_START)
    results = [FileResult("a.sh", "megatron", [note("/f/args.py", "0.10"), other]),
               FileResult("b.sh", "megatron", [note("/f/args.py", "0.12")]),
               FileResult("c.yml", "neox", [note("/g/neox_args.py", "0.30")])]
    kept = locate.once_per_run(results)
    assert [[d.code for d in r.diagnostics] for r in kept] == [["TL014", "TL004"], [], ["TL014"]]


def test_a_fork_is_read_once_for_configs_in_many_folders(tmp_path, monkeypatch):
    """The checkout (or its disk-cache entry, which hashes every file) is read once per process,
    whatever the number of config folders; an edited argument module is read again."""
    from trainlint.frameworks import catalog

    root = write_fork(tmp_path / "fork", FORK_ARGUMENTS + f"# {tmp_path}\n")
    reads = []
    real = catalog.source_files
    monkeypatch.setattr(catalog, "source_files", lambda r, f: reads.append(r) or real(r, f))
    for name in ("a", "b/c", "b/d/e"):
        (root / "examples" / name).mkdir(parents=True)
        diags = megatron_script(root / "examples" / name / "train.sh", "--embed-layernorm")
        assert found(diags, "TL004") == []
    assert len(reads) == 1
    (root / "megatron/training/arguments.py").write_text(FORK_ARGUMENTS + "    parser.add_argument('--new-flag')\n")
    locate._memo.clear()  # a new folder target, as a language server re-linting after the edit would ask
    assert found(megatron_script(root / "examples" / "a" / "train2.sh", "--new-flag"), "TL004") == []
    assert len(reads) == 2


def test_the_fork_decides_what_is_unknown(tmp_path):
    root = write_fork(tmp_path / "fork")
    line = f"torchrun pretrain_gpt.py {BASE_FLAGS} "
    diags = megatron_script(root / "examples" / "train.sh", "--swiglu --position-embedding-type xpos")
    assert found(diags, "TL004", "TL006") == [("TL004", "error", 1, len(line) + 1),
                                              ("TL006", "error", 1, len(line) + len("--swiglu --position-embedding-type ") + 1)]
    unknown = next(d for d in diags if d.code == "TL004")
    assert "not an argument of fork" in unknown.message
    assert "Megatron-LM core_v0.4.0" in unknown.message  # where trainlint knows it from


def test_the_same_script_checked_against_upstream_names_what_upstream_lacks(tmp_path):
    script = tmp_path / "elsewhere" / "train.sh"
    script.parent.mkdir()
    diags = megatron_script(script, "--position-embedding-type alibi --embed-layernorm")
    got = found(diags, "TL004", "TL006", "TL008")
    assert [(c, s) for c, s, _l, _c in got] == [("TL006", "warning"), ("TL004", "warning")]
    for d in diags:
        if d.code in ("TL004", "TL006"):
            assert "assumed" in d.message
    # the one finding that lists the unknown names says how to state the fork (the file's statement does too)
    assert "--framework-source" in next(d for d in diags if d.code == "TL004").message


def test_rename_fix_only_to_a_name_the_target_defines(tmp_path):
    root = write_fork(tmp_path / "fork")
    diags = megatron_script(root / "examples" / "train.sh", "--embed_layernorm")
    d = next(d for d in diags if d.code == "TL004")
    assert d.severity is Severity.ERROR and d.fix == "--embed-layernorm"
    assert d.applicability is Applicability.SAFE and d.edits and d.edits[0].content == "--embed-layernorm"
    # assumed upstream: the same spelling fix is offered, but as unsafe (a fork may spell it so)
    other = tmp_path / "other.sh"
    d2 = next(d for d in megatron_script(other, "--num_layers 2") if d.code == "TL004")
    assert d2.severity is Severity.WARNING and d2.applicability is Applicability.UNSAFE


def test_a_submodule_checkout_is_found(tmp_path):
    project = tmp_path / "project"
    write_fork(project / "third_party" / "Megatron-LM")
    (project / ".git").mkdir()
    (project / ".gitmodules").write_text('[submodule "mlm"]\n\tpath = third_party/Megatron-LM\n')
    (project / "scripts").mkdir()
    target = locate.resolve("megatron", str(project / "scripts" / "train.sh"))
    assert target.origin is TargetOrigin.SOURCE_BESIDE and target.path == str(project / "third_party" / "Megatron-LM")


def test_project_config_names_a_checkout_or_a_release(tmp_path):
    root = write_fork(tmp_path / "fork")
    target = locate.resolve("megatron", str(tmp_path / "x.sh"), locate.configure({"megatron": str(root)}))
    assert target.origin is TargetOrigin.PROJECT_CONFIG and "--embed-layernorm" in target.catalog
    target = locate.resolve("megatron", str(tmp_path / "x.sh"), locate.configure({"megatron": "core_v0.8.0"}))
    assert (target.variant, target.version, target.origin) == ("Megatron-LM", "core_v0.8.0", TargetOrigin.PROJECT_CONFIG)
    assert target.commit and len(target.commit) == 40
    with pytest.raises(locate.FrameworkSettingError):
        locate.configure({"megatron": "core_v0.99.0"})
    with pytest.raises(locate.FrameworkSettingError):
        locate.configure({"megatron": str(tmp_path / "nothing-here")})


def test_project_config_in_pyproject(tmp_path):
    from trainlint.project.config import discover
    from trainlint.files.config_files import ConfigError

    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nframework = {megatron = "core_v0.4.0"}\n')
    project = discover(tmp_path)
    assert project.framework == {"megatron": "core_v0.4.0"}
    assert locate.resolve("megatron", str(tmp_path / "a.sh"), project.framework_settings).version == "core_v0.4.0"
    # the setting is this project's, not the process's: without it the same file resolves otherwise
    assert locate.resolve("megatron", str(tmp_path / "a.sh")).version != "core_v0.4.0"
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nframework = {megatron = 3}\n')
    with pytest.raises(ConfigError):
        discover(tmp_path)


def test_the_spec_records_the_target(tmp_path):
    root = write_fork(tmp_path / "fork")
    text = f"torchrun pretrain_gpt.py {BASE_FLAGS}\n"
    result = MEGATRON.load(SourceText(str(root / "examples" / "t.sh"), text), LoadContext())
    data = result.specs[0].to_dict()["target"]
    assert data["origin"] == "source-beside" and data["family"] == "megatron" and data["path"] == str(root)
    elsewhere = MEGATRON.load(SourceText(str(tmp_path / "t.sh"), text), LoadContext()).specs[0].to_dict()["target"]
    assert elsewhere["origin"] == "assumed" and elsewhere["commit"]


# ------------------------------------------------------------------------------ shipped catalogs


def _entries(family: str):
    return [e for e in shipped_index() if e.family == family]


def _pair(entry, family: str, usable):
    """A name ``entry`` defines that another shipped release of the family lacks, and that release."""
    mine = load_shipped(entry.file)
    for other in _entries(family):
        if other == entry:
            continue
        theirs = load_shipped(other.file)
        for name, arg in sorted(mine.args.items()):
            if name not in theirs and usable(arg):
                return name, arg, other
    return None


def test_shipped_catalogs_cover_the_releases_configs_target():
    versions = {(e.variant, e.version) for e in shipped_index()}
    for minor in range(4, 20):
        assert ("Megatron-LM", f"core_v0.{minor}.0") in versions
    assert ("Megatron-DeepSpeed", "main") in versions
    assert {("GPT-NeoX", "v2.0"), ("GPT-NeoX", "main")} <= versions
    for minor in range(9, 20):
        assert ("DeepSpeed", f"0.{minor}.0") in versions
    for e in shipped_index():
        assert len(e.commit) == 40 and e.repository


@pytest.mark.parametrize("entry", _entries("megatron"), ids=lambda e: f"{e.variant}-{e.version}")
def test_golden_megatron_catalog(entry, tmp_path):
    """The same script is clean against the release that defines its flag, and gets the right
    finding against a release that does not (TL008 when an earlier release of the line had it)."""
    pair = _pair(entry, "megatron", lambda a: a.action == "store_true" and a.name.startswith("--")
                 and a.name not in ("--deepspeed",))
    assert pair is not None
    flag, _arg, other = pair
    script = tmp_path / "t.sh"
    pinned = locate.configure({"megatron": entry.version if entry.variant == "Megatron-LM" else entry.variant})
    assert found(megatron_script(script, flag, pinned), "TL004", "TL008") == []
    pinned = locate.configure({"megatron": other.version if other.variant == "Megatron-LM" else other.variant})
    got = found(megatron_script(script, flag, pinned), "TL004", "TL008")
    column = len(f"torchrun pretrain_gpt.py {BASE_FLAGS} ") + 1
    expected = "TL008" if other.variant == entry.variant and other.order > entry.order else "TL004"
    assert got == [(expected, "error", 1, column)]


NEOX_BASE = "num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nseq_length: 128\nmax_position_embeddings: 128\n"


@pytest.mark.parametrize("entry", _entries("neox"), ids=lambda e: e.version)
def test_golden_neox_catalog(entry, tmp_path):
    pair = _pair(entry, "neox", lambda a: a.type in ("int", "bool") and not a.choices)
    assert pair is not None
    key, arg, other = pair
    value = "true" if arg.type == "bool" else "1"
    text = NEOX_BASE + f"{key}: {value}\n"
    path = tmp_path / "run.yml"
    path.write_text(text)
    pinned = LoadContext(frameworks=locate.configure({"neox": entry.version}))
    clean = NEOX.load(SourceText(str(path), text), pinned).diagnostics
    assert found(clean, "TL004", "TL008") == []
    pinned = LoadContext(frameworks=locate.configure({"neox": other.version}))
    got = found(NEOX.load(SourceText(str(path), text), pinned).diagnostics, "TL004", "TL008")
    assert [(c, s, l) for c, s, l, _ in got] == [(got[0][0], "error", 6)] and got[0][0] in ("TL004", "TL008")


def test_neox_fork_keys_are_known_in_the_fork(tmp_path):
    root = tmp_path / "a" / "fork-checkout"
    (root / "megatron" / "neox_arguments").mkdir(parents=True)
    (root / ".git").mkdir()  # the fork's own checkout
    (root / "megatron" / "neox_arguments" / "neox_args.py").write_text(textwrap.dedent('''
        from dataclasses import dataclass
        from typing import Literal
        @dataclass
        class NeoXArgsModel:
            num_layers: int = None
            hidden_size: int = None
            num_attention_heads: int = None
            seq_length: int = None
            max_position_embeddings: int = None
            mlp_type: str = "regular"
            lr_decay_style: Literal["linear", "hybrid_cosine_inv_sqrt_2"] = "linear"
    '''))
    (root / "configs").mkdir()
    text = NEOX_BASE + "mlp_type: llama\nlr_decay_style: hybrid_cosine_inv_sqrt_2\n"
    inside = NEOX.load(SourceText(str(root / "configs" / "run.yml"), text), LoadContext()).diagnostics
    assert found(inside, "TL004", "TL006", "TL008") == []
    (tmp_path / "b").mkdir()
    outside = NEOX.load(SourceText(str(tmp_path / "b" / "run.yml"), text), LoadContext()).diagnostics
    got = found(outside, "TL004", "TL006")
    assert [(c, s, l) for c, s, l, _ in got] == [("TL004", "warning", 6), ("TL006", "warning", 7)]


def test_a_fork_checked_against_a_configured_upstream_names_the_fork(tmp_path):
    """The project config names an upstream release while the config sits in a fork's checkout: a
    flag only the fork defines is a warning naming the fork (no rename offered); a flag neither
    defines stays an error against the release."""
    root = write_fork(tmp_path / "some-fork", FORK_ARGUMENTS + f"# {tmp_path}\n")
    release = _entries("megatron")[-1].version
    diags = megatron_script(root / "examples" / "train.sh", "--embed-layernorm --zzz-nobody-defines-this",
                            locate.configure({"megatron": release}))
    assert found(diags, "TL004") == [("TL004", "warning", 1, 172), ("TL004", "error", 1, 190)]
    fork_flag = next(d for d in diags if d.code == "TL004" and "--embed-layernorm" in d.message)
    assert "some-fork" in fork_flag.message and "beside the config" in fork_flag.message and not fork_flag.edits
    assert release in fork_flag.message


def test_a_neox_fork_checked_against_a_configured_upstream_names_the_fork(tmp_path):
    root = tmp_path / "neox-fork"
    (root / "megatron" / "neox_arguments").mkdir(parents=True)
    (root / ".git").mkdir()  # the fork's own checkout
    (root / "megatron" / "neox_arguments" / "neox_args.py").write_text(textwrap.dedent(f'''
        # {tmp_path}
        from dataclasses import dataclass
        @dataclass
        class NeoXArgsModel:
            num_layers: int = None
            hidden_size: int = None
            num_attention_heads: int = None
            seq_length: int = None
            max_position_embeddings: int = None
            mlp_type: str = "regular"
    '''))
    (root / "configs").mkdir()
    pinned = LoadContext(frameworks=locate.configure({"neox": _entries("neox")[-1].version}))
    text = NEOX_BASE + "mlp_type: llama\nzzz_nobody_defines_this: 1\n"
    diags = NEOX.load(SourceText(str(root / "configs" / "run.yml"), text), pinned).diagnostics
    assert found(diags, "TL004") == [("TL004", "warning", 6, 1), ("TL004", "error", 7, 1)]
    assert "neox-fork" in next(d for d in diags if d.code == "TL004" and "mlp_type" in d.message).message


def test_save_interval_is_an_error_only_for_a_neox_known_to_lack_it(tmp_path):
    """TL187 (save without checkpoint_factor) on a config that gives the old name save_interval: an
    error against a NeoX whose source lacks save_interval, a warning when the version is assumed
    (before gpt-neox #737 save_interval did the job)."""
    from trainlint.project.engine import LintSettings, lint
    from trainlint.core.results import FileResult
    from trainlint.project.registry import build_registry
    from trainlint.project.plugins import create_host

    registry = build_registry(create_host(entry_points=False))
    text = NEOX_BASE + "train_micro_batch_size_per_gpu: 1\nsave-interval: 100\nsave: checkpoints\n"

    def tl187(path: Path):
        loaded = NEOX.load(SourceText(str(path), text), LoadContext())
        result = FileResult(str(path), "neox", list(loaded.diagnostics), loaded.specs, loaded.documents)
        [linted] = lint([result], registry, LintSettings())
        return found(linted.diagnostics, "TL187", "TL008")

    root = tmp_path / "fork"
    (root / "megatron" / "neox_arguments").mkdir(parents=True)
    (root / ".git").mkdir()  # the fork's own checkout
    (root / "megatron" / "neox_arguments" / "neox_args.py").write_text(textwrap.dedent('''
        from dataclasses import dataclass
        @dataclass
        class NeoXArgsModel:
            num_layers: int = None
            hidden_size: int = None
            num_attention_heads: int = None
            seq_length: int = None
            max_position_embeddings: int = None
            train_micro_batch_size_per_gpu: int = None
            save: str = None
            checkpoint_factor: int = None
            extra_save_iters: list = None
    '''))
    (root / "configs").mkdir()
    assert sorted(tl187(root / "configs" / "run.yml")) == [("TL008", "error", 7, 1), ("TL187", "error", 8, 7)]
    (tmp_path / "elsewhere").mkdir()
    assert sorted(tl187(tmp_path / "elsewhere" / "run.yml")) == [("TL008", "warning", 7, 1), ("TL187", "warning", 8, 7)]


DS_BASE = '{\n  "train_batch_size": 8,\n  "train_micro_batch_size_per_gpu": 1,\n  "zero_optimization": {\n    "stage": 1,\n    "%s": 1\n  }\n}\n'


@pytest.mark.parametrize("entry", _entries("deepspeed"), ids=lambda e: e.version)
def test_golden_deepspeed_catalog(entry, tmp_path):
    """A key one release reads and another does not, where upstream's table refuses it: a warning
    against the release that reads it, an error against the one that does not."""
    from trainlint.adapters.deepspeed.adapter import DeepSpeedAdapter
    from trainlint.schemas import load_schema

    table = json.dumps(load_schema("deepspeed"))
    pair = _pair(entry, "deepspeed", lambda a: f'"{a.name}"' not in table)
    assert pair is not None
    key, _arg, other = pair
    text = DS_BASE % key
    path = tmp_path / "ds_config.json"
    path.write_text(text)
    adapter = DeepSpeedAdapter()
    pinned = LoadContext(frameworks=locate.configure({"deepspeed": entry.version}))
    assert found(adapter.load(SourceText(str(path), text), pinned).diagnostics, "TL004") == [
        ("TL004", "warning", 6, 5)]
    pinned = LoadContext(frameworks=locate.configure({"deepspeed": other.version}))
    got = adapter.load(SourceText(str(path), text), pinned).diagnostics
    assert found(got, "TL004") == [("TL004", "error", 6, 5)]
    assert f"not a key of DeepSpeed {other.version}" in next(d for d in got if d.code == "TL004").message


def test_deepspeed_against_an_assumed_upstream(tmp_path):
    """A key only some shipped release reads is a warning naming it; a key no release reads stays an error."""
    from trainlint.adapters.deepspeed.adapter import DeepSpeedAdapter
    from trainlint.schemas import load_schema

    table = json.dumps(load_schema("deepspeed"))
    releases = _entries("deepspeed")
    key = next(k for k in sorted(load_shipped(releases[0].file).args) if f'"{k}"' not in table)
    adapter = DeepSpeedAdapter()
    path = tmp_path / "ds_config.json"
    for name, severity in ((key, "warning"), ("zzz_no_release_reads_this", "error")):
        text = DS_BASE % name
        diags = adapter.load(SourceText(str(path), text), LoadContext()).diagnostics
        assert found(diags, "TL004") == [("TL004", severity, 6, 5)], name
    warned = next(d for d in adapter.load(SourceText(str(path), DS_BASE % key), LoadContext()).diagnostics if d.code == "TL004")
    assert "DeepSpeed 0.9.0" in warned.message and "assumed" in warned.message


def test_a_key_old_deepspeed_releases_read_is_judged_by_the_target_version(tmp_path):
    """`cpu_offload_params` (read by DeepSpeed 0.3.12 to 0.6.7, refused from 0.7.0): with no version
    known a TL008 warning naming those releases and no rename edit; against a release that refuses
    it (a shipped catalog) an error that says it was removed; the typo of a key no release reads
    stays an error either way."""
    from trainlint.adapters.deepspeed.adapter import DeepSpeedAdapter

    adapter = DeepSpeedAdapter()
    path = tmp_path / "ds_config.json"
    text = DS_BASE % "cpu_offload_params"
    path.write_text(text)
    diags = adapter.load(SourceText(str(path), text), LoadContext()).diagnostics
    assert found(diags, "TL004", "TL008") == [("TL008", "warning", 6, 5)]
    removed = next(d for d in diags if d.code == "TL008")
    assert "removed in DeepSpeed 0.7.0" in removed.message and "0.3.12 to 0.6.7" in removed.message
    assert not removed.edits
    pinned = LoadContext(frameworks=locate.configure({"deepspeed": _entries("deepspeed")[0].version}))
    diags = adapter.load(SourceText(str(path), text), pinned).diagnostics
    assert found(diags, "TL004", "TL008") == [("TL004", "error", 6, 5)]
    assert "DeepSpeed 0.7.0 removed it" in next(d for d in diags if d.code == "TL004").message
    typo = DS_BASE % "stage3_param_persitence_threshold"
    diags = adapter.load(SourceText(str(path), typo), LoadContext()).diagnostics
    assert found(diags, "TL004", "TL008") == [("TL004", "error", 6, 5)]


def test_the_installed_package_is_read_when_nothing_is_beside_the_config(tmp_path, monkeypatch):
    site = tmp_path / "site"
    write_fork(site)
    (site / "megatron" / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    monkeypatch.syspath_prepend(str(site))
    (tmp_path / "cfg").mkdir()
    target = locate.resolve("megatron", str(tmp_path / "cfg" / "t.sh"))
    assert target.origin is TargetOrigin.INSTALLED and target.path == str(site)
    assert "--embed-layernorm" in target.catalog


# ------------------------------------------------------------------------------ the compact name index


@pytest.mark.parametrize("family", ["megatron", "neox", "deepspeed"])
def test_the_shipped_name_index_is_what_the_shipped_catalogs_define(family):
    """names-FAMILY.json (read at check time instead of every catalog) says the same as the catalogs;
    regenerate it with scripts/build_framework_catalogs.py --names-only."""
    from trainlint.frameworks import catalog

    shipped = json.loads((Path(catalog.__file__).resolve().parent.parent / "data" /
                          catalog.NAMES_FILE.format(family=family)).read_text())
    assert shipped == catalog.name_index_data(family, shipped_index(), load_shipped)
    assert len(shipped["names"]) > 100


def test_a_stale_name_index_is_not_trusted(monkeypatch):
    from trainlint.frameworks import catalog

    real = catalog._data_text

    def stale(name: str) -> str:
        if name.startswith("frameworks/names-"):
            return json.dumps({"family": "megatron", "releases": ["Megatron-LM core_v0.1.0"], "names": {"--x": 1}})
        return real(name)

    catalog.shipped_names.cache_clear()
    monkeypatch.setattr(catalog, "_data_text", stale)
    try:
        labels, names = catalog.shipped_names("megatron")
        assert "--x" not in names and "--num-layers" in names and labels[0] == "Megatron-LM core_v0.4.0"
        assert catalog.defined_by("megatron", "--DDP-impl") == "Megatron-DeepSpeed main defines it"
    finally:
        catalog.shipped_names.cache_clear()


def test_a_refused_flag_is_an_error_only_against_a_known_release(tmp_path):
    """`--batch-size` / `--warmup` / `--checkpoint-activations` are kept by upstream only to refuse
    them: an error against a release that is known (here stated in the project config), a warning
    against the assumed upstream naming the assumption (older releases read them), with the value's
    type finding; the script's other flags change nothing (issue 29 G2)."""
    stated = locate.configure({"megatron": "core_v0.8.0"})
    assert found(megatron_script(tmp_path / "a.sh", "--batch-size 4", stated), "TL008") == [("TL008", "error", 1, 172)]
    current = megatron_script(tmp_path / "b.sh", "--batch-size 4")
    assert found(current, "TL008") == [("TL008", "warning", 1, 172)]
    assert "assumed" in current[0].message
    old = megatron_script(tmp_path / "c.sh", "--batch-size 4 --warmup .01 --use-tfrecords --presplit-sentences")
    assert found(old, "TL008", "TL005")[:3] == [("TL008", "warning", 1, 172), ("TL008", "warning", 1, 187),
                                                ("TL005", "warning", 1, 196)]
    ckpt = megatron_script(tmp_path / "d.sh", "--checkpoint-activations")
    assert "2022" in next(d for d in ckpt if d.code == "TL008").message


def test_neox_type_findings_in_a_config_written_for_another_release_are_warnings(tmp_path):
    path = tmp_path / "run.yml"
    current = NEOX_BASE + "min_lr: 2e-05\n"
    assert found(NEOX.load(SourceText(str(path), current), LoadContext()).diagnostics, "TL009") == [
        ("TL009", "error", 6, 9)]
    old = NEOX_BASE + "min_lr: 2e-05\nsave_interval: 100\nsparsity: none\n"
    diags = NEOX.load(SourceText(str(path), old), LoadContext()).diagnostics
    assert found(diags, "TL009") == [("TL009", "warning", 6, 9)]
    assert "8350c1d" in next(d for d in diags if d.code == "TL009").message
