"""Recipe launch lines: ``[torchrun ...] scripts/training/run_recipe.py --recipe NAME KEY=VALUE ...``.

Facts from Megatron-Bridge ``scripts/training/run_recipe.py`` and ``training/utils/omegaconf_utils.py``:
the trailing ``KEY=VALUE`` words are Hydra overrides of the recipe's ConfigContainer (``+key=v`` adds,
``~key`` deletes), applied after the convenience options (``-tp 2`` is ``model.tensor_model_parallel_size=2``),
which they override; then the runner copies ``dataset.seq_length`` into ``model.seq_length``.

The script is read as words with their positions; nothing is run. A word with a ``$`` expansion is
unknown (its value is not guessed). ``export NAME=VALUE`` lines before the launch are the launch's
environment (``CUDA_DEVICE_MAX_CONNECTIONS``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from trainlint.core.positions import LineIndex, Span

RUNNER = re.compile(r"(^|/)run_recipe\.py$")
_PLAIN = re.compile(r"[^ \t\r\n;|'\"\\$`]+")

CONVENIENCE = {
    "-ms": "train.train_iters", "--max_steps": "train.train_iters",
    "-gb": "train.global_batch_size", "--global_batch_size": "train.global_batch_size",
    "-mb": "train.micro_batch_size", "--micro_batch_size": "train.micro_batch_size",
    "-sl": "dataset.seq_length", "--seq_length": "dataset.seq_length",
    "-tp": "model.tensor_model_parallel_size", "--tensor_model_parallel_size": "model.tensor_model_parallel_size",
    "-pp": "model.pipeline_model_parallel_size", "--pipeline_model_parallel_size": "model.pipeline_model_parallel_size",
    "-cp": "model.context_parallel_size", "--context_parallel_size": "model.context_parallel_size",
    "-vp": "model.virtual_pipeline_model_parallel_size",
    "--virtual_pipeline_model_parallel_size": "model.virtual_pipeline_model_parallel_size",
    "-ep": "model.expert_model_parallel_size", "--expert_model_parallel_size": "model.expert_model_parallel_size",
    "-etp": "model.expert_tensor_parallel_size", "--expert_tensor_parallel_size": "model.expert_tensor_parallel_size",
    "--lr": "optimizer.lr", "--min_lr": "optimizer.min_lr", "--warmup_iters": "scheduler.lr_warmup_iters",
    "--pretrained_checkpoint": "checkpoint.pretrained_checkpoint", "--save_dir": "checkpoint.save",
    "--load_dir": "checkpoint.load", "--save_interval": "checkpoint.save_interval",
}
"""run_recipe.py's convenience options and the ConfigContainer field each sets (COMMON_OVERRIDE_FIELDS)."""

RUNNER_OPTIONS = frozenset({"--model", "--recipe", "--mode", "--step-func", "--step_func", "--dataset"})
RUNNER_SWITCHES = frozenset({"--dry-run", "--dry_run", "--deterministic", "--dump-env", "--dump_env"})


class Word(NamedTuple):
    text: str | None
    """None: the word holds a ``$`` expansion (unknown statically)."""
    start: int
    end: int
    raw: str


@dataclass
class Override:
    path: str
    value: Any
    span: Span
    key_span: Span
    op: str = ""
    """``+`` / ``++`` (add), ``~`` (delete) or empty."""
    spelled: str = ""
    word: Word | None = None
    """The shell word that writes the value (the ``KEY=VALUE`` word; a convenience option's value word):
    where the writer replaces it."""


@dataclass
class Launch:
    """One recipe launch."""

    runner: Word
    recipe: Word | None = None
    model: Word | None = None
    mode: str | None = None
    overrides: list[Override] = field(default_factory=list)
    unknown: list[Word] = field(default_factory=list)
    """Words of the launch that are not known statically (``$EXTRA``): they may override anything."""
    nproc_per_node: tuple[int, Span] | None = None
    nnodes: tuple[int, Span] | None = None
    env: dict[str, tuple[str, Span]] = field(default_factory=dict)
    anchor: Span | None = None
    args: list[Word] = field(default_factory=list)
    """The words after the runner (where the writer appends an override)."""


def words(text: str) -> list[list[Word]]:
    """The commands of a shell text, each a list of words with offsets: quotes removed, ``\\``-newline
    joined, comments dropped, ``;`` / ``&&`` / ``||`` / ``|`` / newline end a command."""
    commands: list[list[Word]] = []
    current: list[Word] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            continue
        if c in " \t\r":
            i += 1
            continue
        if c == "\n" or c == ";" or c == "|" or (c == "&" and text[i:i + 2] == "&&"):
            if current:
                commands.append(current)
                current = []
            i += 2 if text[i:i + 2] in ("&&", "||") else 1
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        start, out, unknown = i, [], False
        while i < n and text[i] not in " \t\r\n;|":
            ch = text[i]
            if ch == "\\" and i + 1 < n:
                if text[i + 1] == "\n":
                    break
                out.append(text[i + 1])
                i += 2
            elif ch in "'\"":
                close = text.find(ch, i + 1)
                if close < 0:
                    close = n
                inner = text[i + 1:close]
                if ch == '"' and "$" in inner:
                    unknown = True
                out.append(inner)
                i = close + 1
            elif ch == "$" or ch == "`":
                unknown = True
                out.append(ch)
                i += 1
            else:
                plain = _PLAIN.match(text, i)  # a run of ordinary characters at once (one step per char is slow)
                run = plain.group() if plain is not None else ch
                out.append(run)
                i += len(run)
        current.append(Word(None if unknown else "".join(out), start, i, text[start:i]))
    if current:
        commands.append(current)
    return commands


def hydra_value(text: str) -> Any:
    """A Hydra override's value as its grammar types it: null, true/false (any case), int, float
    (``1e-4`` included), a ``[a, b]`` list, else the string (quotes removed)."""
    t = text.strip()
    low = t.lower()
    if low == "null":
        return None
    if low in ("true", "false"):
        return low == "true"
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].strip()
        return [hydra_value(x) for x in inner.split(",")] if inner else []
    try:
        return int(t.replace("_", "")) if re.fullmatch(r"[+-]?\d[\d_]*", t) else float(t)
    except ValueError:
        return t


def _int(w: Word | None) -> int | None:
    try:
        return int(w.text) if w is not None and w.text is not None else None
    except ValueError:
        return None


def names_a_recipe(text: str) -> bool:
    """A command runs ``run_recipe.py`` with ``--recipe`` or ``--model``: the cheap question a sniff asks
    (words only, no positions)."""
    for cmd in words(text):
        at = next((k for k, w in enumerate(cmd) if w.text is not None and RUNNER.search(w.text)), None)
        if at is not None and any(w.text is not None and w.text.split("=", 1)[0] in ("--recipe", "--model")
                                  for w in cmd[at + 1:]):
            return True
    return False


def find_launches(text: str) -> list[Launch]:
    index = LineIndex(text)

    def span(start: int, end: int) -> Span:
        line, col = index.position(start)
        eline, ecol = index.position(end)
        return Span(line, col, eline, ecol)

    env: dict[str, tuple[str, Span]] = {}
    launches: list[Launch] = []
    for cmd in words(text):
        first = cmd[0].text or ""
        if first == "export" or (re.fullmatch(r"[A-Za-z_]\w*=.*", first) and len(cmd) == 1):
            for w in cmd[1:] if first == "export" else cmd:
                if w.text is not None and "=" in w.text:
                    name, _, value = w.text.partition("=")
                    env[name] = (value, span(w.start + w.raw.find("=") + 1, w.end))
            continue
        at = next((k for k, w in enumerate(cmd) if w.text is not None and RUNNER.search(w.text)), None)
        if at is None:
            continue
        launch = Launch(cmd[at], env=dict(env), anchor=span(cmd[0].start, cmd[at].end))
        for k, w in enumerate(cmd[:at]):
            t = w.text or ""
            name, eq, inline = t.partition("=")
            if name in ("--nproc_per_node", "--nproc-per-node", "--nnodes"):
                value_word = Word(inline, w.start + len(name) + 1, w.end, inline) if eq else \
                    (cmd[k + 1] if k + 1 < at else None)
                n = _int(value_word)
                if n is not None and value_word is not None:
                    where = (n, span(value_word.start, value_word.end))
                    if name == "--nnodes":
                        launch.nnodes = where
                    else:
                        launch.nproc_per_node = where
            elif re.fullmatch(r"[A-Za-z_]\w*=.*", t) and k == 0:
                pass
        launch.args = cmd[at + 1:]
        _arguments(launch, cmd[at + 1:], span)
        launches.append(launch)
    return launches


def _arguments(launch: Launch, rest: list[Word], span) -> None:
    k = 0
    while k < len(rest):
        w = rest[k]
        t = w.text
        if t is None:
            launch.unknown.append(w)
            k += 1
            continue
        name, eq, inline = t.partition("=")
        if t.startswith("-"):
            value_word = None
            if eq:
                value_word = Word(inline, w.start + len(name) + 1, w.end, inline)
            elif k + 1 < len(rest) and name not in RUNNER_SWITCHES:
                value_word = rest[k + 1]
                k += 1
            k += 1
            if name == "--recipe":
                launch.recipe = value_word
            elif name == "--model":
                launch.model = value_word
            elif name == "--mode" and value_word is not None:
                launch.mode = value_word.text
            elif name in CONVENIENCE and value_word is not None:
                if value_word.text is None:
                    launch.unknown.append(value_word)
                else:
                    launch.overrides.append(Override(CONVENIENCE[name], hydra_value(value_word.text),
                                                     span(value_word.start, value_word.end), span(w.start, w.start + len(name)),
                                                     spelled=name, word=value_word))
            continue
        k += 1
        op = ""
        key = name
        if key.startswith("~"):
            op, key = "~", key[1:]
        elif key.startswith("++"):
            op, key = "++", key[2:]
        elif key.startswith("+"):
            op, key = "+", key[1:]
        if not eq and op != "~":
            continue
        offset = w.raw.find("=") if eq else len(w.raw)
        vstart = w.start + offset + 1
        launch.overrides.append(Override(key, hydra_value(inline) if eq else None, span(vstart, w.end) if eq else
                                         span(w.start, w.end), span(w.start + len(op), w.start + len(op) + len(key)), op,
                                         spelled=t, word=w))
    # the convenience options apply first, the KEY=VALUE words after them (they win on the same field)
    launch.overrides.sort(key=lambda o: 0 if o.spelled.startswith("-") else 1)
