"""Hostile inputs, generated (no stored blobs): shared by tests/test_hostile_input.py and
benchmarks/hostile_input.py, which runs each one in a fresh process and measures its time and
peak RSS.

Each case writes its files into a directory and gives the ``trainlint`` arguments to run there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

LAUNCH = ("python pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 24 --hidden-size 2048 "
          "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 4 "
          "--global-batch-size 64\n")


def function_bomb() -> str:
    """Ten functions, each calling the one before ten times: 10^9 calls of f0 if followed (439 bytes
    with the launch line after them)."""
    lines = ["f0() { X=1; }"]
    for i in range(1, 10):
        lines.append(f"f{i}() {{ " + " ".join([f"f{i - 1};"] * 10) + " }")
    lines.append("f9")
    return "\n".join(lines) + "\n" + LAUNCH


def source_fan_out(directory: Path) -> str:
    """Each of four files sources the next forty times: 64,000 evaluations of the last."""
    for level in range(1, 5):
        body = "".join(f"source ./s{level + 1}.sh\n" for _ in range(40)) if level < 4 else "X=1\nY=2\n"
        (directory / f"s{level}.sh").write_text(body)
    return "source ./s1.sh\n" + LAUNCH


def many_assignments(size: int = 8 * 1024 * 1024 - 4096) -> str:
    return "X=1\n" * (size // 4) + LAUNCH


def deep_nesting(levels: int = 1000) -> str:
    return "{ " * levels + LAUNCH.strip() + "; }" * levels + "\n"


def deep_subshells(levels: int = 1000) -> str:
    return "( " * levels + LAUNCH.strip() + " )" * levels + "\n"  # "((" would start arithmetic


def deep_expansion(levels: int = 1000) -> str:
    return "TP=" + "${A:-" * levels + "2" + "}" * levels + "\n" + LAUNCH.replace("size 2 ", "size $TP ")


def big_integer(digits: int = 4301) -> str:
    return "9" * digits


@dataclass
class Case:
    name: str
    build: Callable[[Path], list[str]]
    """Writes the files; returns the trainlint arguments (with ``runner="lsp"``: the arguments of
    tests/lsp_driver.py)."""
    expect_exit: tuple[int, ...] = (1,)
    expect_codes: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    klass: str = "20"
    """Issue 29's classes: H resource exhaustion, S reads and code outside the checkout, G gate
    bypasses, O output, C crashes; "20" the cases of issue 20."""
    held: Callable[[Path, str], str | None] | None = None
    """Beyond the common criteria: given the case's directory and its whole output, why the case is
    not held (a file the case's hostile input should not have made, a secret in the output), or None."""
    runner: str = "trainlint"


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def _sparse(directory: Path, name: str, size: int) -> Path:
    path = directory / name
    with open(path, "wb") as handle:
        handle.write(b"# trainlint: noqa\n")
        handle.truncate(size)
    return path


def _check(*paths: Path | str, extra: tuple[str, ...] = ()) -> list[str]:
    return ["check", "--isolated", "--format", "json", *extra, *map(str, paths)]


CASES: list[Case] = [
    Case("shell: 10^10 nested function calls (439-byte bomb)",
         lambda d: _check(_write(d, "bomb.sh", function_bomb())), (1,), ("TL012",)),
    Case("shell: source fan-out 40^3",
         lambda d: _check(_write(d, "fan.sh", source_fan_out(d))), (1,), ("TL012",)),
    Case("shell: 8 MB of X=1",
         lambda d: _check(_write(d, "assign.sh", many_assignments())), (1,), ("TL012",)),
    Case("shell: 1,000 nested { } groups",
         lambda d: _check(_write(d, "nest.sh", deep_nesting())), (1,), ("TL002",)),
    Case("shell: 1,000 nested subshells",
         lambda d: _check(_write(d, "sub.sh", deep_subshells())), (1,), ("TL002",)),
    Case("shell: 1,000 nested ${A:-...}",
         lambda d: _check(_write(d, "exp.sh", deep_expansion())), (1,), ("TL002",)),
    Case("DeepSpeed: a 4,301-digit integer",
         lambda d: _check(_write(d, "ds_config.json", '{"train_micro_batch_size_per_gpu": 4,\n "train_batch_size": '
                                 + big_integer() + "}\n")), (1,), ("TL100",)),
    Case("NeoX: a 4,000-digit num_layers",
         lambda d: _check(_write(d, "neox.yml", "num_layers: " + big_integer(4000) + "\nhidden_size: 2048\n"
                                 "num_attention_heads: 16\nseq_length: 2048\nmodel_parallel_size: 1\n"
                                 "pipe_parallel_size: 1\ntrain_micro_batch_size_per_gpu: 4\n")), (1,), ("TL185",)),
    Case("Megatron: a 4,301-digit --num-layers",  # a value (clamped), not a bad flag: the estimate names it
         lambda d: _check(_write(d, "run.sh", LAUNCH.replace("--num-layers 24", "--num-layers " + big_integer()))),
         (1,), ("TL900",)),
    Case("DeepSpeed: micro x accumulation of two 4,400-digit values (an 8,600-digit product in TL100)",
         lambda d: _check(_write(d, "ds_config.json", '{"train_batch_size": 7, "train_micro_batch_size_per_gpu": '
                                 + big_integer(4400) + ', "gradient_accumulation_steps": ' + big_integer(4400) + "}\n")),
         (1,), ("TL100",)),
    Case("shell: a 4,301-digit integer in $((...))",
         lambda d: _check(_write(d, "arith.sh", "N=$((" + big_integer() + " * 2))\n"
                                 + LAUNCH.replace("--num-layers 24", "--num-layers $N"))), (0, 1), ()),
    Case("Megatron: launch line after 256 KB of comments",
         lambda d: _check(_write(d, "late.sh", "# padding comment line .........................\n" * 5400 + LAUNCH)),
         (1,), ("TL101",)),
    Case("a 2 GB sparse file",
         lambda d: _check(_sparse(d, "train.sh", 2 * 1024 ** 3)), (1,), ("TL001",)),
    Case("a 12 MB tokenizer.json in a walk",
         lambda d: [*_check(d), ] if _write(d, "tokenizer.json", '{"model": {"vocab": {' + ",".join(
             f'"t{i}": {i}' for i in range(1_000_000)) + "}}}\n") and _write(
             d, "ds_config.json", '{"train_micro_batch_size_per_gpu": 4}\n') else [], (0,), ()),
]




# ============================================================================ issue 29

SECRET = "SECRET_TOKEN_29"
"""Written in files outside the case's checkout: it must never appear in any output."""
MARKER = "PWNED"
"""A file hostile code would create in the case's directory: it must never exist."""


def _no_secret(directory: Path, output: str) -> str | None:
    return f"{SECRET} (from outside the checkout) in the output" if SECRET in output else None


def _no_marker(directory: Path, output: str) -> str | None:
    return "code from the checked tree ran (marker file written)" if (directory / MARKER).exists() else None


def _both(directory: Path, output: str) -> str | None:
    return _no_marker(directory, output) or _no_secret(directory, output)


def _payload(directory: Path) -> str:
    """Python that writes the marker when imported or run."""
    return f"open({str(directory / MARKER)!r}, 'w').write('ran')\n"


def _repo(directory: Path, name: str = "repo") -> Path:
    repo = directory / name
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    return repo


def _outside(directory: Path) -> Path:
    """A directory beside the checkout holding secrets."""
    out = directory / "outside"
    out.mkdir(exist_ok=True)
    (out / "secret.sh").write_text(f"TP={SECRET}\n")
    (out / "ds.json").write_text(f'{{"{SECRET}": 1, "train_micro_batch_size_per_gpu": 4}}\n')
    (out / "neox.yml").write_text(f"{SECRET}: 1\nnum_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\n")
    (out / "model.json").write_text(f'{{"num_layers": {SECRET}, "hidden_size": 64}}\n')
    return out


FAILING_DS = '"train_batch_size": 7, "train_micro_batch_size_per_gpu": 4'
"""7 is not a multiple of 4: DeepSpeed's batch assertion fails at launch (TL100)."""
FAILING_NEOX = ("num_layers: 24\nhidden_size: 2048\nnum_attention_heads: 15\nseq_length: 2048\n"
                "max_position_embeddings: 2048\nmodel_parallel_size: 1\npipe_parallel_size: 1\n"
                "train_micro_batch_size_per_gpu: 4\n")
"""2048 hidden over 15 heads: NeoX stops at start-up (TL104)."""
FAILING_LAUNCH = LAUNCH.replace("python pretrain_gpt.py", "torchrun --nproc_per_node 1 pretrain_gpt.py")
"""TP 2 on one GPU (TL101)."""


def doubling(times: int) -> str:
    return "X=ab\n" + "X=$X$X\n" * times + LAUNCH


def array_doubling(times: int) -> str:
    return "A=(a b)\n" + 'A=("${A[@]}" "${A[@]}")\n' * times + LAUNCH


def chained(levels: int = 12, copies: int = 8) -> str:
    return "V0=" + "x" * 1000 + "\n" + "".join(f"V{i + 1}=" + f"$V{i}" * copies + "\n" for i in range(levels)) + LAUNCH


def pattern_on(value_lines: str) -> str:
    return value_lines + "Y=${X##*a*b}\nZ=${X%%b*a}\n" + LAUNCH


def comment_lines_json(size: int = 8_000_000) -> str:
    line = "# a comment line of an hjson DeepSpeed config ...........\n"
    return line * (size // len(line)) + "{" + FAILING_DS + "}\n"


def comment_lines_script(size: int = 4_800_000) -> str:
    line = "# a comment line of a launch script ......................\n"
    return line * (size // len(line)) + LAUNCH


def duplicate_keys(count: int = 200_000) -> str:
    return "{" + FAILING_DS + ",\n" + ",\n".join('"gradient_clipping": 1.0' for _ in range(count)) + "}\n"


def padded_deepspeed(size: int = 600_000) -> str:
    return '{"comment": "' + "x" * size + '",\n' + FAILING_DS + ', "zero_optimization": {"stage": 1}}\n'


def extra_keys_deepspeed(extra: int = 10) -> str:
    own = ", ".join(f'"my_setting_{i}": {i}' for i in range(extra))
    return "{" + own + ", " + FAILING_DS + ', "gradient_accumulation_steps": 1, "zero_optimization": {"stage": 2}}\n'


def commented_neox(size: int = 700_000) -> str:
    line = "# notes about this run .......................................\n"
    return line * (size // len(line)) + FAILING_NEOX


def custom_keys_neox(extra: int = 50) -> str:
    return "".join(f"my_key_{i}: {i}\n" for i in range(extra)) + FAILING_NEOX


def nul_script() -> str:
    return "#!/bin/bash\n# launch\n\x00\n" + FAILING_LAUNCH


def heredoc_disable() -> str:
    return "#!/bin/bash\ncat > notes.md <<'EOF'\n# trainlint: disable-file\nEOF\n" + FAILING_LAUNCH


def block_scalar_disable() -> str:
    return "notes: |\n  # trainlint: disable-file\n" + FAILING_NEOX


def function_launch() -> str:
    return 'run() { "$@"; }\nrun ' + FAILING_LAUNCH


def shifted_function_launch() -> str:
    return 'launch() {\n  echo "starting $1"\n  $1 "${@:2}"\n}\nlaunch ' + FAILING_LAUNCH


def echo_launch() -> str:
    return "$(echo torchrun) " + FAILING_LAUNCH.split(" ", 1)[1]


# -- S: reading or running what is outside the checkout

def _s1(d: Path) -> list[str]:
    (d / "yaml.py").write_text(_payload(d))
    dist = d / "evil-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[trainlint]\nevil = evil_plugin\n")
    (d / "evil_plugin.py").write_text(_payload(d))
    _write(d, "ds_config.json", "{" + FAILING_DS + "}\n")
    return ["check", "--format", "json", "ds_config.json"]


def _s2_baseline(d: Path) -> list[str]:
    repo = _repo(d)
    config_home = d / "config"
    (config_home / "trainlint").mkdir(parents=True)
    (repo / ".trainlint.toml").write_text(f'baseline = "{config_home / "trainlint" / "trusted-projects"}"\n')
    _write(repo, "ds_config.json", "{" + FAILING_DS + "}\n")
    return [str(repo / "ds_config.json"), "--root", str(repo), "--actions"]


def _s2_held(directory: Path, output: str) -> str | None:
    inside = str(directory / "repo") + os.sep
    for line in output.splitlines():
        if line.startswith("target: ") and not line[len("target: "):].startswith(inside):
            return f"a code action edits {line[len('target: '):]}"
    return None


def _s2_trust_list(d: Path) -> list[str]:
    repo = _repo(d)
    config_home = d / "config"
    (config_home / "trainlint").mkdir(parents=True)
    # what a baseline written over the trust list looks like, and relative entries
    (config_home / "trainlint" / "trusted-projects").write_text('{\n  "version": 1,\n..\n.\n}\n')
    (repo / "plugin.py").write_text(_payload(d))
    (repo / ".trainlint.toml").write_text('plugins = ["plugin.py"]\n')
    _write(repo, "ds_config.json", "{" + FAILING_DS + "}\n")
    return ["check", "--format", "json", str(repo / "ds_config.json")]


def _s3(d: Path) -> list[str]:
    repo = _repo(d)
    out = _outside(d)
    (repo / ".trainlint.toml").write_text('source-roots = ["/"]\n')
    (repo / "train.sh").write_text(f"source {out / 'secret.sh'}\n"
                                   + FAILING_LAUNCH.strip() + f" --deepspeed --deepspeed_config {out / 'ds.json'}\n"
                                   + f"accelerate launch --config_file {out / 'neox.yml'} train.py\n")
    return ["check", "--format", "json", str(repo / "train.sh")]


def _s4(target: str, key: str) -> Callable[[Path], list[str]]:
    def build(d: Path) -> list[str]:
        repo = _repo(d)
        link = repo / "model.json"
        if target == "fifo":
            os.mkfifo(repo / "pipe")
            link.symlink_to(repo / "pipe")
        else:
            link.symlink_to(target)
        _write(repo, "ds_config.json", "{" + FAILING_DS + "}\n")
        if key == "--model":
            return ["check", "--format", "json", "--model", str(link), str(repo / "ds_config.json")]
        (repo / ".trainlint.toml").write_text(f'{key} = "model.json"\n')
        return ["check", "--format", "json", str(repo / "ds_config.json")]
    return build


def _s5(d: Path) -> list[str]:
    repo = _repo(d)
    out = _outside(d)
    (repo / "configs").symlink_to(out)
    _write(repo, "ds_config.json", "{" + FAILING_DS + "}\n")
    return ["check", "--format", "json", str(repo)]


def _s6(d: Path) -> list[str]:
    repo = _repo(d)
    out = _outside(d)
    (repo / ".trainlint.toml").write_text(f'runs = [["{out / "neox.yml"}"]]\n')
    _write(repo, "ds_config.json", "{" + FAILING_DS + "}\n")
    return ["check", "--format", "json", str(repo / "ds_config.json")]


def _s9(d: Path) -> list[str]:
    repo = _repo(d)
    out = _outside(d)
    (repo / ".trainlint.toml").write_text(f'model = "{out / "model.json"}"\n')
    _write(repo, "ds_config.json", "{" + FAILING_DS + "}\n")
    return ["check", "--format", "json", str(repo / "ds_config.json")]


def _s7(d: Path) -> list[str]:
    repo = _repo(d)
    out = _outside(d)
    (repo / "plugin.py").write_text(_payload(d))
    (repo / ".trainlint.toml").write_text('plugins = ["plugin.py"]\nsource-roots = ["/"]\n')
    (repo / "train.sh").write_text(f"source {out / 'secret.sh'}\n" + FAILING_LAUNCH)
    return [str(repo / "train.sh")]


# -- G1: one project config silencing other paths

def _g1(d: Path) -> list[str]:
    (d / "aaa").mkdir()
    (d / "aaa" / ".trainlint.toml").write_text('ignore = ["ALL"]\n')
    _write(d / "aaa", "ds_config.json", '{"train_micro_batch_size_per_gpu": 4}\n')
    (d / "bbb").mkdir()
    _write(d / "bbb", "ds_config.json", "{" + FAILING_DS + "}\n")
    return ["check", "--format", "json", "aaa/ds_config.json", "bbb/ds_config.json"]


# -- O: output a file can forge

_CONTROL = "\x1b[2J\x1b]0;owned\x07"


def _o1(d: Path) -> list[str]:
    repo = _repo(d)
    (repo / ".trainlint.toml").write_text('select = ["TL1\\u001b[2J\\n::error file=forged.py::forged"]\n'
                                          '"\\u001b]0;x\\u0007" = 1\n')
    _write(repo, "ds_config.json", "{" + FAILING_DS + "}\n")
    return ["check", "--format", "github", str(repo / "ds_config.json")]


def _o1_held(directory: Path, output: str) -> str | None:
    if any(line.startswith("::error file=forged.py") for line in output.splitlines()):
        return "a forged ::error workflow command"
    return None


_MARKDOWN_PAYLOAD = "INJECTED_29"
"""Text a value carries: it must stay inside the code span the value is shown in."""


def _o2(d: Path) -> list[str]:
    _write(d, "ds_config.json", '{"train_micro_batch_size_per_gpu": 4, "train_batch_size": 7, '
                                f'"x` {_MARKDOWN_PAYLOAD} `": 1}}\n')
    return ["check", "--isolated", "--format", "markdown", "ds_config.json"]


def outside_code_spans(line: str) -> str:
    """A markdown line without its code spans (CommonMark: a run of N backticks ends at the next
    run of exactly N; an unmatched run is literal)."""
    out, i, n = [], 0, len(line)
    while i < n:
        if line[i] != "`":
            out.append(line[i])
            i += 1
            continue
        j = i
        while j < n and line[j] == "`":
            j += 1
        width, k, close = j - i, j, -1
        while k < n:
            if line[k] != "`":
                k += 1
                continue
            m = k
            while m < n and line[m] == "`":
                m += 1
            if m - k == width:
                close = k
                break
            k = m
        if close < 0:
            out.append(line[i:j])
            i = j
        else:
            i = close + width
    return "".join(out)


def _o2_held(directory: Path, output: str) -> str | None:
    if any(_MARKDOWN_PAYLOAD in outside_code_spans(line) for line in output.splitlines()):
        return "a value broke out of its markdown code span"
    return None


def _o3(d: Path) -> list[str]:
    escaped = _CONTROL.encode("unicode_escape").decode().replace("\\x", "\\u00")
    _write(d, "ds_config.json", '{"train_micro_batch_size_per_gpu": 4, "train_batch_size": 7, '
                                f'"k{escaped}": 1}}\n')
    return [str(d / "ds_config.json"), "--root", str(d)]


# -- C: crashes

def _c2(command: str, memory: str) -> Callable[[Path], list[str]]:
    def build(d: Path) -> list[str]:
        repo = _repo(d)
        (repo / ".trainlint.toml").write_text(f"[gpus.bad]\nmemory_gb = {memory}\nbf16_tflops = 900\n"
                                              "hbm_bandwidth_tbps = 3.35\n")
        _write(repo, "ds_config.json", '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 1}}\n')
        extra = ["--format", "json"] if command == "check" else []
        return [command, *extra, "--gpu", "bad", "--nodes", "1", "--model", "llama2-7b", str(repo / "ds_config.json")]
    return build


def _c3(d: Path) -> list[str]:
    (d / "pyproject.toml").write_text("tool = 1\n")
    (d / "sub").mkdir()
    _write(d / "sub", "ds_config.json", "{" + FAILING_DS + "}\n")
    return ["check", "--format", "json", "sub/ds_config.json"]


def _in(d: Path, name: str, text: str) -> list[str]:
    return _check(_write(d, name, text))


CASES += [
    # H: resource exhaustion (limits 10 s, 1 GB)
    Case("H1 X=$X$X doubled 28 times (a 200-byte script)", lambda d: _in(d, "double.sh", doubling(28)), klass="H"),
    Case("H1 an array doubled 28 times", lambda d: _in(d, "array.sh", array_doubling(28)), klass="H"),
    Case("H1 chained variables, 8 copies a level, 12 levels", lambda d: _in(d, "chain.sh", chained()), klass="H"),
    Case("H2 ${X##*a*b} on a 300 KB value", lambda d: _in(d, "match.sh", pattern_on("X=" + "a" * 300_000 + "\n")),
         klass="H"),
    Case("H2 ${X##*a*b} on a doubled value", lambda d: _in(d, "match2.sh", pattern_on("X=aaaa\n" + "X=$X$X\n" * 17)),
         klass="H"),
    Case("H3 8 MB DeepSpeed JSON of comment lines", lambda d: _in(d, "ds_config.json", comment_lines_json()),
         (1,), ("TL100",), klass="H"),
    Case("H3 4.8 MB launch script of comment lines", lambda d: _in(d, "train.sh", comment_lines_script()),
         (1,), ("TL012",), klass="H"),
    Case("H4 200,000 duplicate keys (4.4 MB DeepSpeed JSON)", lambda d: _in(d, "ds_config.json", duplicate_keys()),
         (1,), ("TL003",), klass="H"),
    # G: gate bypasses (exit 0 on a config that fails at launch)
    Case("G1 aaa/.trainlint.toml ignore=[ALL] and another explicit path", _g1, (1,), ("TL100",), klass="G"),
    Case("G3 DeepSpeed JSON over 512 KB, keys after the first 64 KB",
         lambda d: _in(d, "train_config.json", padded_deepspeed()), (1,), ("TL100",), klass="G"),
    Case("G3 DeepSpeed JSON not named ds_* with 10 extra keys",
         lambda d: _in(d, "train_config.json", extra_keys_deepspeed()), (1,), ("TL100",), klass="G"),
    Case("G3 NeoX YAML after 700 KB of comments", lambda d: _in(d, "run.yml", commented_neox()), (1,), ("TL104",),
         klass="G"),
    Case("G3 NeoX YAML with 50 custom keys first", lambda d: _in(d, "run.yml", custom_keys_neox()), (1,), ("TL104",),
         klass="G"),
    Case("G3 launch script with a NUL byte early on", lambda d: _in(d, "train.sh", nul_script()), (1,), ("TL101",),
         klass="G"),
    Case("G3 launch script with a NUL byte, in a directory walk",
         lambda d: _check(_write(d, "train.sh", nul_script()).parent), (1,), ("TL101",), klass="G"),
    Case("G3 a named file no adapter claims", lambda d: _in(d, "settings.json", '{"learning_rate": 1}\n'), (1,),
         ("TL016",), klass="G"),
    Case("G4 disable-file inside a here-document", lambda d: _in(d, "train.sh", heredoc_disable()), (1,), ("TL101",),
         klass="G"),
    Case("G4 disable-file inside a YAML block scalar", lambda d: _in(d, "run.yml", block_scalar_disable()), (1,),
         ("TL104",), klass="G"),
    Case('G5 launch through run() { "$@"; }', lambda d: _in(d, "train.sh", function_launch()), (1,), ("TL101",),
         klass="G"),
    Case('G5 launch through $1 "${@:2}"', lambda d: _in(d, "train.sh", shifted_function_launch()), (1,), ("TL101",),
         klass="G"),
    Case("G5 launch through $(echo torchrun)", lambda d: _in(d, "train.sh", echo_launch()), (1,), ("TL101",),
         klass="G"),
    # S: nothing from the checked tree runs, nothing outside the checkout is read
    Case("S1 python -m trainlint beside a yaml.py and an x.dist-info entry point", _s1, (1,), ("TL100",), klass="S",
         held=_no_marker),
    Case("S2 LSP 'Add to the baseline' where baseline = points outside", _s2_baseline, (1,), (), klass="S",
         runner="lsp", held=_s2_held),
    Case("S2 trust list with lines that are not absolute paths", _s2_trust_list, (1,), ("TL100",), klass="S",
         held=_no_marker, env={"XDG_CONFIG_HOME": "{dir}/config"}),
    Case('S3 source-roots = ["/"]: source, --deepspeed_config, --config_file outside', _s3, (1,), (), klass="S",
         held=_no_secret),
    Case("S4 model = a symlink to /dev/zero", _s4("/dev/zero", "model"), (1, 2), (), klass="S"),
    Case("S4 baseline = a symlink to a named pipe", _s4("fifo", "baseline"), (1, 2), (), klass="S"),
    Case("S4 --model a symlink to /dev/zero", _s4("/dev/zero", "--model"), (1, 2), (), klass="S"),
    Case("S5 walk into a symlink out of the checkout", _s5, (1,), ("TL100",), klass="S", held=_no_secret),
    Case("S6 runs = a file outside the checkout", _s6, (1, 2), (), klass="S", held=_no_secret),
    Case('S9 model = "/abs.json" outside the checkout', _s9, (1, 2), (), klass="S", held=_no_secret),
    Case("S7 LSP with no workspace folder", _s7, (0, 1), (), klass="S", runner="lsp", held=_both),
    # O: output a config can forge
    Case("O1 project-config errors with raw escapes and a forged ::error", _o1, (2,), (), klass="O", held=_o1_held),
    Case("O2 a backtick in a value in markdown output", _o2, (1,), (), klass="O", held=_o2_held),
    Case("O3 LSP message with raw control characters", _o3, (1,), (), klass="O", runner="lsp"),
    # C: crashes (TL999, a traceback)
    Case("C1 torchrun --nproc_per_node -8", lambda d: _in(d, "train.sh", FAILING_LAUNCH.replace(
        "--nproc_per_node 1", "--nproc_per_node -8")), (1,), (), klass="C"),
    Case("C2 a GPU with 0 GB (check)", _c2("check", "0"), (0, 1, 2), (), klass="C"),
    Case("C2 a GPU with -80 GB (estimate)", _c2("estimate", "-80"), (0, 1, 2), (), klass="C"),
    Case("C2 a GPU with NaN GB (suggest)", _c2("suggest", "nan"), (0, 1, 2), (), klass="C"),
    Case("C3 a parent pyproject.toml with tool = 1", _c3, (1, 2), (), klass="C"),
    Case("C4 --run ,", lambda d: ["check", "--isolated", "--format", "json", "--run", ","], (2,), (), klass="C"),
]


def run_case_inline(case: Case, directory: Path) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    return case.build(directory)


if __name__ == "__main__":  # pragma: no cover - a quick look by hand
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(CASES):
            print(i, case.name, run_case_inline(case, Path(tmp) / str(i)), file=sys.stderr)
    _ = os
