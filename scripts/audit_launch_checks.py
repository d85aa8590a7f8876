"""Build the launch-check audit: every check a config can trigger in the frameworks' start-up code,
at the pinned commit of each supported release, into ``linter/data/audit/launch_checks.json``; then
render ``docs/launch-checks.md`` from it.

    python scripts/audit_launch_checks.py extract --megatron DIR --deepspeed DIR --neox DIR
    python scripts/audit_launch_checks.py render
    python scripts/audit_launch_checks.py counts

``DIR`` is a git directory of the framework's repository (``git clone --bare`` or a mirror); the
source is read with ``git show <commit>:<path>`` and parsed with ``ast``, never imported or run.

A *check* is an ``assert``, a ``raise`` (with the ``if`` that guards it), or a NeoX ``validate_*``
``return False``, inside the functions that run while the framework reads its arguments or config
(:data:`SCOPE`). Checks are matched across releases by what they test and say (file, function,
condition, message), so one row holds every release that makes the check, with its line in each.

Each row is then classified, keeping what an earlier run decided for the same check:

* ``covered_by``: the trainlint rule that reports it. Found from the rules' own References, which
  cite ``path:lines@commit`` of the upstream commit read (``by: reference``), or set by a reader
  (``by: reading``).
* ``reason``: why it cannot be known from the files (:data:`trainlint.project.audit.REASONS`), from the names
  the condition reads (``by: pattern``: ``torch``, ``os.environ``, a library version, a model object),
  or set by a reader.
* neither: statically knowable and not covered yet (counted as such; the docs table lists them).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA = ROOT / "linter" / "data" / "audit" / "launch_checks.json"
READINGS = ROOT / "linter" / "data" / "audit" / "readings.yaml"
INDEX = ROOT / "linter" / "data" / "frameworks" / "index.json"

UPSTREAM = {
    "megatron": ("main", "d98e8a64ddf34856e74b24714e3bedb2f5a39553"),
    "deepspeed": ("main", "edaa7221267243c7be7fb49c5d5f5c4fb97b4641"),
    "neox": ("main", "ea7aefd8f8e183256992d9fede4d7c71a46d67a5"),
}
"""The upstream commit each framework's rules were read from (trainlint's assumed release)."""

VARIANT = {"megatron": "Megatron-LM", "deepspeed": "DeepSpeed", "neox": "GPT-NeoX"}

# (candidate paths, a function-name filter): the code that runs while the framework reads its
# arguments or config. A file's first existing candidate path is read.
SCOPE: dict[str, list[tuple[tuple[str, ...], str]]] = {
    "megatron": [
        (("megatron/training/arguments.py", "megatron/arguments.py"), r"validate|_check|^_?print_args$|load_retro"),
        (("megatron/core/transformer/transformer_config.py",), r".*"),
        (("megatron/core/model_parallel_config.py",), r".*"),
        (("megatron/core/num_microbatches_calculator.py", "megatron/training/microbatches.py",
          "megatron/microbatches.py"), r".*"),
        (("megatron/core/transformer/enums.py",), r".*"),
        # validate_args normalises and checks the CUDA-graph options through these (core_v0.18.0 on)
        (("megatron/core/transformer/cuda_graph_config.py",), r"^(normalize|validate)_"),
        (("megatron/core/transformer/moe/moe_utils.py",), r"^validate"),
        # the interleaved schedule's checks of the micro-batch count run in the first step
        (("megatron/core/pipeline_parallel/schedules.py", "megatron/schedules.py"),
         r"^forward_backward_pipelining_with_interleaving$"),
    ],
    "deepspeed": [
        (("deepspeed/runtime/config.py",), r".*"),
        (("deepspeed/runtime/config_utils.py",), r".*"),
        (("deepspeed/runtime/precision_config.py",), r".*"),
        (("deepspeed/runtime/zero/config.py",), r".*"),
        (("deepspeed/runtime/zero/offload_config.py",), r".*"),
        (("deepspeed/elasticity/config.py",), r".*"),
        (("deepspeed/elasticity/elasticity.py",), r"compute_elastic_config|_get_compatible_gpus|_compatible_ds_version"
                                                   r"|ensure_immutable"),
        (("deepspeed/runtime/engine.py",), r"^(__init__|_do_\w*check\w*|_configure\w*|_check\w*|_supported_optims"
                                            r"|_set_distributed_vars)$"),
        (("deepspeed/runtime/pipe/engine.py",), r"^__init__$"),
    ],
    "neox": [
        (("megatron/neox_arguments/arguments.py",), r"^(__post_init__|from_ymls|calculate_\w+|check_batch_parameters"
                                                     r"|validate_\w+)$"),
    ],
}


def git_show(repo: str, commit: str, path: str) -> str | None:
    done = subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"], capture_output=True)
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def releases(family: str) -> list[tuple[str, str]]:
    """(release, commit) per supported release of the framework, oldest first, then upstream."""
    index = json.loads(INDEX.read_text(encoding="utf-8"))
    out = [(c["version"], c["commit"]) for c in index["catalogs"]
           if c["family"] == family and c["variant"] == VARIANT[family] and c["version"] != "main"]
    out.append(UPSTREAM[family])
    return out


def _text(node: ast.AST | None) -> str:
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _text(node.left) + _text(node.right)
    if isinstance(node, ast.Call):
        return " ".join(t for t in (_text(a) for a in node.args) if t)
    return ""


def _clean(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Finder(ast.NodeVisitor):
    """The checks of the functions whose names match, with the ``if`` conditions around them."""

    def __init__(self, pattern: str) -> None:
        self.pattern = re.compile(pattern)
        self.stack: list[str] = []
        self.conditions: list[str] = []
        self.found: list[dict[str, Any]] = []

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stack.append(node.name)
        saved, self.conditions = self.conditions, []
        self.generic_visit(node)
        self.conditions = saved
        self.stack.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    def visit_If(self, node: ast.If) -> None:
        test = ast.unparse(node.test)
        self.conditions.append(test)
        for child in node.body:
            self.visit(child)
        self.conditions.pop()
        self.conditions.append(f"not ({test})")
        for child in node.orelse:
            self.visit(child)
        self.conditions.pop()

    def _in_scope(self) -> str | None:
        functions = [s for s in self.stack if s[:1].islower() or s.startswith("_")]
        if not functions or not self.pattern.search(functions[-1]):
            return None
        return ".".join(self.stack)

    def visit_Assert(self, node: ast.Assert) -> None:
        where = self._in_scope()
        if where:
            self._add(where, node.lineno, "assert", " and ".join([*self.conditions, f"not ({ast.unparse(node.test)})"]),
                      _text(node.msg))

    def visit_Raise(self, node: ast.Raise) -> None:
        where = self._in_scope()
        if where and self.conditions:  # a bare raise outside any if re-raises or is unreachable from a config
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            kind = ast.unparse(exc) if exc is not None else "raise"
            self._add(where, node.lineno, f"raise {kind}", " and ".join(self.conditions),
                      _text(node.exc.args[0]) if isinstance(node.exc, ast.Call) and node.exc.args else "")

    def visit_Return(self, node: ast.Return) -> None:
        where = self._in_scope()
        if where and self.conditions and isinstance(node.value, ast.Constant) and node.value.value is False \
                and where.rsplit(".", 1)[-1].startswith("validate"):
            self._add(where, node.lineno, "return False", " and ".join(self.conditions), "")

    def _add(self, where: str, line: int, kind: str, condition: str, message: str) -> None:
        self.found.append({"function": where, "line": line, "kind": kind,
                           "condition": _clean(condition, 300), "message": _clean(message, 200)})


def _identity(family: str, path: str, check: dict[str, Any]) -> str:
    """The same check in two releases: same file name, function, condition and message (the
    numbers in a message and whitespace do not count)."""
    name = Path(path).name
    message = re.sub(r"\d+", "#", check["message"])
    key = "|".join((family, name, check["function"], check["condition"], message))
    return family[:2] + "-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:10]


def extract(family: str, repo: str) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for release, commit in releases(family):
        for candidates, pattern in SCOPE[family]:
            for path in candidates:
                text = git_show(repo, commit, path)
                if text is not None:
                    break
            else:
                continue
            finder = _Finder(pattern)
            finder.visit(ast.parse(text))
            for check in finder.found:
                ident = _identity(family, path, check)
                row = rows.setdefault(ident, {"id": ident, "framework": family, "file": path,
                                              "function": check["function"], "kind": check["kind"],
                                              "condition": check["condition"], "message": check["message"],
                                              "lines": {}})
                row["file"], row["message"] = path, check["message"]  # as in the newest release
                row["lines"].setdefault(release, check["line"])
    return rows


# ------------------------------------------------------------------------------ classification

def rule_references() -> list[tuple[str, str, int, int, str]]:
    """(code, path, first line, last line, commit) for every source line a built-in rule's
    documentation cites: ``path:lines@commit`` (Megatron and NeoX rules), "``path:lines`` @ commit"
    (DeepSpeed rules), and bare "``lines``" after a path on the same line, sharing its commit."""
    from trainlint.project.plugins import create_host
    from trainlint.project.registry import build_registry

    registry = build_registry(create_host(entry_points=False))
    token = re.compile(r"`([\w/.]+\.py):(\d+)(?:-(\d+))?(?:@([0-9a-f]{7,40}))?`|`(\d+)(?:-(\d+))?`|@\s*([0-9a-f]{7,40})")
    out = []
    for code, rule in registry.rules.items():
        for line in rule.documentation().splitlines():
            path, pending = None, []
            for m in token.finditer(line):
                if m.group(1):
                    path = m.group(1)
                    first = int(m.group(2))
                    ref = (path, first, int(m.group(3) or first))
                    if m.group(4):
                        out.append((code, *ref, m.group(4)))
                    else:
                        pending.append(ref)
                elif m.group(5) and path:
                    first = int(m.group(5))
                    pending.append((path, first, int(m.group(6) or first)))
                elif m.group(7):
                    out.extend((code, *ref, m.group(7)) for ref in pending)
                    pending = []
    return out


PATTERNS: list[tuple[str, str]] = [
    # why a check cannot be decided from the files, from the names its condition reads
    ("environment", r"\btorch\.|\bcuda\b|is_te_min_version|get_te_version|te_version|HAVE_|_AVAILABLE\b|os\.environ"
                    r"|os\.getenv|get_device_capability|is_torch_min_version|_min_version\(|importlib|version\.parse"
                    r"|__version__|get_accelerator|is_available\(|flash_attn|triton|nvshmem|deep_ep"),
    ("python-object", r"\bmodel\b|\bmodule\b|\bmpu\b|\boptimizer\b(?!_)|client_optimizer|lr_scheduler\b|\bparameters\b"
                      r"|isinstance\(self\.(module|optimizer)|param_groups|named_parameters|\bgrid\b|p2p_communicator"
                      r"|pg_collection|grad_finalize_pgs|data_iterator|adjust_tensor_shapes_fn|ModelType\."),
    ("runtime", r"get_world_size|get_rank|dist\.|torch\.distributed|is_initialized|process_group|\brank\b"
                r"|WORLD_SIZE|global_rank|wait_handles|recv_\w*handle|is_vp_(first|last)_stage|is_pipeline_(first|last)_stage"),
]


def load_readings() -> dict[str, dict[str, str]]:
    import yaml

    return yaml.safe_load(READINGS.read_text(encoding="utf-8")) or {}


def classify(row: dict[str, Any], references: list[tuple[str, str, int, int, str]],
             readings: dict[str, dict[str, str]], commits: dict[str, dict[str, str]] | None = None) -> None:
    """A reader's decision first; else a rule whose References cite the row's line at the commit of a
    release that makes it (upstream's, or an older release's for a check upstream dropped)."""
    for key in ("covered_by", "reason", "note", "by"):
        row.pop(key, None)
    reading = readings.get(row["id"])
    if reading is not None:
        row.update({k: v for k, v in reading.items() if k in ("covered_by", "reason", "note")})
        row["by"] = "reading"
        return
    family = row["framework"]
    pinned = dict((commits or {}).get(family, {}))
    pinned[UPSTREAM[family][0]] = UPSTREAM[family][1]
    for release, line in reversed(list(row["lines"].items())):
        release_commit = pinned.get(release)
        if release_commit is None:
            continue
        for code, path, first, last, commit in references:
            if release_commit.startswith(commit) and Path(row["file"]).name == Path(path).name \
                    and first <= line <= last:
                row["covered_by"], row["by"] = code, "reference"
                return


def inherit(rows: list[dict[str, Any]]) -> None:
    """A row of older releases only, saying what a covered row says (same file, function and
    message; the condition was reworded): the same check, covered by the same rule."""
    covered = {(r["framework"], Path(r["file"]).name, r["function"].rsplit(".", 1)[-1], _norm(r["message"])): r
               for r in rows if r.get("covered_by") and r["message"]}
    for row in rows:
        if row.get("by") or not row["message"]:
            continue
        twin = covered.get((row["framework"], Path(row["file"]).name, row["function"].rsplit(".", 1)[-1],
                            _norm(row["message"])))
        if twin is not None:
            row["covered_by"], row["by"] = twin["covered_by"], "same-check"


def _norm(message: str) -> str:
    return re.sub(r"\{\}|\d+|\s+", "", message).lower()


def by_pattern(row: dict[str, Any]) -> None:
    if row.get("by"):
        return
    for reason, pattern in PATTERNS:
        if re.search(pattern, row["condition"]):
            row["reason"], row["by"] = reason, "pattern"
            return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("extract")
    for family in SCOPE:
        ex.add_argument(f"--{family}", required=True, metavar="GIT_DIR")
    sub.add_parser("classify")
    sub.add_parser("render")
    sub.add_parser("counts")
    args = parser.parse_args(argv)

    from trainlint.project import audit

    if args.command == "extract":
        rows = []
        for family in SCOPE:
            rows.extend(extract(family, getattr(args, family)).values())
        audit.save_rows(rows, {f: releases(f) for f in SCOPE})
        args.command = "classify"
    if args.command == "classify":
        rows = audit.load_rows()
        references, readings = rule_references(), load_readings()
        unknown = set(readings) - {r["id"] for r in rows}
        if unknown:
            print(f"readings for checks the audit no longer lists: {', '.join(sorted(unknown))}", file=sys.stderr)
        commits = {family: dict(pairs) for family, pairs in audit.load_releases().items()}
        for row in rows:
            classify(row, references, readings, commits)
        inherit(rows)
        for row in rows:
            by_pattern(row)
        audit.save_rows(rows, audit.load_releases())
        args.command = "render"
    if args.command == "render":
        audit.DOC.write_text(audit.render(), encoding="utf-8")
    print(audit.counts_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
