"""Every command the README and docs/ show is run, and the output they show is what it prints.

A command is a line of a ```sh block, or a ``$ `` line of a ```console block (a trailing ``\\``
continues it on the next line); what follows a ``$`` line up to the next one is its output,
compared with what the command prints (stdout and stderr, as a terminal shows them; timings such
as ``in 0.23 s`` compared as ``in N s``). ```bash blocks are example scripts and configs, not
commands. The line before a fence may say where its commands run:

* ``<!-- docs-test: in-checkout -->``: in this checkout (the benchmarks, which read the repository);
  ``<!-- docs-test: in-checkout needs-shared -->`` also needs ../shared (skipped, with the reason,
  in a fresh clone, as every test that reads it);
* ``<!-- docs-test: ci REASON -->``: set-up in a new virtual environment, which ``.ci/run`` runs
  itself in a fresh copy of the checkout: the test checks that each such command is a line of
  ``.ci/run``, as written.

There is no other way out: every command shown is run (:func:`test_every_command_is_run`).
``pre-commit try-repo https://github.com/trainlint/trainlint ...`` runs as written: git fetches the
canonical URL from a committed snapshot of this tree (:mod:`repo_snapshot`).

Commands run in a scratch directory holding a copy of ``examples/`` (and of it as ``configs/``, the
folder the docs name for a user's configs), made a git repository, with ``trainlint`` and
``python`` of this environment first on the PATH; each document's commands run in order in its
own directory, so a command can use a file an earlier one wrote. A ``cat FILE`` of a file the
directory lacks writes the output shown into FILE first: the document is defining that file.
sh commands must not fail as trainlint does on bad usage (exit 2) nor print a traceback; console
commands must print exactly what is shown.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import SHARED, SHARED_ABSENT
from repo_snapshot import CANONICAL_URL, as_canonical_url, snapshot

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARKER = re.compile(r"<!--\s*docs-test:\s*(\S+)\s*(.*?)\s*-->")
WHERE = ("in-checkout", "ci")
CI_SCRIPT = REPO / ".ci" / "run"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


@dataclass
class Command:
    doc: str
    line: int
    text: str
    kind: str  # "sh" or "console"
    shown: str | None = None  # console: the output shown
    where: str | None = None  # None: the document's sandbox; "in-checkout"; "ci" (.ci/run runs it)
    note: str = ""  # what the marker says besides (needs-shared; for ci, why)


@dataclass
class Inventory:
    commands: list[Command] = field(default_factory=list)

    def of(self, doc: str) -> list[Command]:
        return [c for c in self.commands if c.doc == doc]


def _joined(lines: list[str], start: int) -> tuple[str, int]:
    """The command starting at ``lines[start]``, its ``\\`` continuations joined; the index after it."""
    text = lines[start]
    i = start + 1
    while text.endswith("\\") and i < len(lines):
        text = text[:-1].rstrip() + " " + lines[i].strip()
        i += 1
    return text, i


def _sh_commands(body: str) -> list[tuple[int, str]]:
    lines = body.splitlines()
    out, i = [], 0
    while i < len(lines):
        if not lines[i].strip() or lines[i].lstrip().startswith("#"):
            i += 1
            continue
        offset = i
        text, i = _joined(lines, i)
        out.append((offset, re.sub(r"\s+#\s.*$", "", text).strip()))
    return out


def _console_commands(body: str) -> list[tuple[int, str, str]]:
    lines = body.splitlines()
    out, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        offset = i
        lines[i] = lines[i][2:]
        text, i = _joined(lines, i)
        shown = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        out.append((offset, re.sub(r"\s+#\s.*$", "", text).strip(), "\n".join(shown)))
    return out


def inventory() -> Inventory:
    found = Inventory()
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(REPO).as_posix()
        for match in FENCE.finditer(text):
            lang, body = match[1], match[2]
            if lang not in ("sh", "console"):
                continue
            line = text.count("\n", 0, match.start()) + 2
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = MARKER.search(before)
            where, note = (marker[1], marker[2]) if marker else (None, "")
            if lang == "sh":
                for offset, command in _sh_commands(body):
                    found.commands.append(Command(name, line + offset, command, "sh", where=where, note=note))
            else:
                for offset, command, shown in _console_commands(body):
                    found.commands.append(Command(name, line + offset, command, "console", shown, where, note))
    return found


INVENTORY = inventory()
TIMING = re.compile(r"\bin \d+(?:\.\d+)? s\b")


def _normal(text: str) -> str:
    return TIMING.sub("in N s", "\n".join(line.rstrip() for line in text.strip("\n").splitlines()))


@pytest.fixture(scope="module")
def sandboxes(tmp_path_factory):
    made: dict[str, Path] = {}

    def sandbox(doc: str) -> Path:
        if doc not in made:
            root = tmp_path_factory.mktemp(re.sub(r"\W", "_", doc))
            shutil.copytree(REPO / "examples", root / "examples")
            shutil.copytree(REPO / "examples", root / "configs")
            if shutil.which("git"):
                for argv in (["init", "-q"], ["add", "-A"],
                             ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "docs sandbox"]):
                    subprocess.run(["git", *argv], cwd=root, check=True, capture_output=True)
            made[doc] = root
        return made[doc]

    return sandbox


def _environment(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["GITHUB_STEP_SUMMARY"] = str(root / "step-summary.md")
    env["COLUMNS"] = "100"
    env["PYTHONUNBUFFERED"] = "1"  # stdout and stderr in the order written, as a terminal shows them
    return env


def _ids(commands: list[Command]) -> list[str]:
    return [f"{c.doc}:{c.line}" for c in commands]


RUN = [c for c in INVENTORY.commands if c.where != "ci"]
BY_CI = [c for c in INVENTORY.commands if c.where == "ci"]
LAST_EXIT: dict[str, int] = {}


@pytest.fixture(scope="session")
def canonical_repository(tmp_path_factory) -> dict[str, str]:
    """The environment under which git fetches the canonical URL from a snapshot of this tree."""
    target = tmp_path_factory.mktemp("canonical-repository")
    snapshot(target)
    return as_canonical_url(target)


@pytest.mark.slow
@pytest.mark.parametrize("command", RUN, ids=_ids(RUN))
def test_documented_command(command: Command, sandboxes, request):
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    if "needs-shared" in command.note and not SHARED.is_dir():
        pytest.skip(f"needs ../shared ({SHARED_ABSENT})")
    extra = request.getfixturevalue("canonical_repository") if CANONICAL_URL in command.text else {}
    if command.where == "in-checkout":
        _run_in(command, REPO, quiet=False, extra=extra, timeout=2400)
        return
    root = sandboxes(command.doc)
    # a document's commands build on each other (a `cat FILE` defines a file a later one checks):
    # under pytest-xdist this worker may not have run the earlier ones, so it runs them first
    earlier_commands = [c for c in RUN[:RUN.index(command)] if c.doc == command.doc and c.where is None]
    for earlier in earlier_commands:
        if (command.doc, earlier.line) not in DONE:
            _run_in(earlier, root)
    _run_in(command, root, quiet=False, extra=extra)


DONE: set[tuple[str, int]] = set()
"""(document, line) of the commands this process has run in its sandbox of that document."""


def _run_in(command: Command, root: Path, quiet: bool = True, extra: dict[str, str] | None = None,
            timeout: int = 900) -> None:
    """Run one documented command in ``root``; with ``quiet``, only to build on (an earlier command
    of the document another worker checks), without comparing its output."""
    DONE.add((command.doc, command.line))
    env = {**_environment(root), **(extra or {})}
    cat = re.fullmatch(r"cat (\S+)", command.text)
    if cat and command.shown is not None and not (root / cat[1]).exists():
        (root / cat[1]).write_text(command.shown + "\n", encoding="utf-8")
    if quiet:
        if command.text != "echo $?":
            LAST_EXIT[command.doc] = subprocess.run(
                ["bash", "-c", command.text], cwd=root, env=env, stdin=subprocess.DEVNULL,
                capture_output=True, text=True, timeout=timeout).returncode
        return
    if command.text == "echo $?":  # the status of the command before it (each runs in its own shell)
        assert LAST_EXIT.get(command.doc) is not None and _normal(str(LAST_EXIT[command.doc])) == _normal(
            command.shown or ""), f"{command.doc}:{command.line}"
        return
    done = subprocess.run(["bash", "-c", command.text], cwd=root, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    LAST_EXIT[command.doc] = done.returncode
    where = f"{command.doc}:{command.line}: {command.text}"
    assert "Traceback" not in done.stdout, where + "\n" + done.stdout
    if command.kind == "sh":
        assert done.returncode in (0, 1), f"{where}\nexit {done.returncode}\n{done.stdout}"
    else:
        assert _normal(done.stdout) == _normal(command.shown or ""), where


def _ci_lines() -> set[str]:
    return {line.strip() for line in CI_SCRIPT.read_text(encoding="utf-8").splitlines()}


@pytest.mark.parametrize("command", BY_CI, ids=_ids(BY_CI))
def test_set_up_command_is_run_by_ci(command: Command):
    """A set-up command in a new virtual environment (pip needs the package registries, and one of
    them runs this very suite) is run by .ci/run in a fresh copy of the checkout, as written."""
    assert command.text in _ci_lines(), f"{command.doc}:{command.line}: .ci/run does not run `{command.text}`"


def test_every_command_is_run():
    """Every command in the README and docs is run: here, or (set-up) by .ci/run; a marker names
    where, never "not run"."""
    commands = INVENTORY.commands
    assert len({c.doc for c in commands}) > 10
    unknown = [f"{c.doc}:{c.line}: docs-test: {c.where}" for c in commands if c.where not in (None, *WHERE)]
    assert not unknown, "markers other than in-checkout and ci:\n" + "\n".join(unknown)
    assert all(len(c.note) > 10 for c in BY_CI)  # says why CI runs it and not this test


def test_readme_first_screen():
    """The README's first screen: what trainlint does, the two set-up commands (first among its
    commands: .ci/run runs them in a fresh copy), one example per face; under 60 lines up to the
    documentation index."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first = text.split("\n## Documentation", 1)[0]
    assert len(first.splitlines()) < 60
    commands = [c.text for c in INVENTORY.of("README.md")]
    assert commands[:2] == [
        "python3 -m venv .venv && . .venv/bin/activate && pip install . && trainlint check --exit-zero examples/",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && python -m pytest -n auto"]
    for face in ("--output-format github", "pre-commit-config", "trainlint lsp", "trainlint estimate",
                 "trainlint suggest"):
        assert face in first, face


def test_every_linked_document_exists():
    """Each relative link of the README and docs names a file of the checkout."""
    missing = []
    for path in DOCUMENTS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (path.parent / target).exists():
                missing.append(f"{path.name}: {target}")
    assert not missing


def test_one_canonical_repository_url():
    """Every mention of this project's repository spells the same URL (pyproject's Homepage)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    canonical = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]["Homepage"]
    spelled = set()
    for path in [*DOCUMENTS, REPO / "linter" / "output" / "sarif.py"]:
        spelled |= set(re.findall(r"https://github\.com/[\w.-]+/trainlint\b", path.read_text(encoding="utf-8")))
    assert spelled == {canonical}


def test_install_urls_name_the_current_release():
    """An install line pinned to a release (``git+https://github.com/trainlint/trainlint@vX``) names
    the tag of the version being documented, as the pre-commit snippets do."""
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(encoding="utf-8"), re.M)[1]
    pinned = [(path.name, tag) for path in DOCUMENTS
              for tag in re.findall(re.escape(CANONICAL_URL) + r"@(v[\w.]+)", path.read_text(encoding="utf-8"))]
    assert pinned
    assert all(tag == f"v{version}" for _, tag in pinned), pinned
