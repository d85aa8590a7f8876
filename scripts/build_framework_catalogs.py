"""Generate the shipped argument catalogs (linter/data/frameworks/, installed in the trainlint.data package) from framework sources.

Each catalog is what :func:`trainlint.frameworks.catalog.read_checkout` would read from a checkout
of that release: the same files, the same ``ast`` readers. The sources are git clones given on the
command line; every release is read at its tag with ``git show`` (nothing is checked out, nothing
of the framework is imported or run), and the commit each tag points to is recorded.

    python scripts/build_framework_catalogs.py \\
        --megatron-lm ~/src/Megatron-LM --megatron-deepspeed ~/src/Megatron-DeepSpeed \\
        --neox ~/src/gpt-neox --deepspeed ~/src/DeepSpeed

Which releases: Megatron-LM core releases from 0.4 (tags ``core_v0.X.0``), Megatron-DeepSpeed at
its default branch (it has no releases), GPT-NeoX ``v2.0`` and its default branch, DeepSpeed minor
releases from 0.9 (``v0.X.0``). Pass ``--only FAMILY`` to rebuild one family.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "linter" / "data" / "frameworks"


def _git(repo: Path, *args: str) -> str | None:
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, errors="replace")
    return r.stdout if r.returncode == 0 else None


class GitTree:
    def __init__(self, repo: Path, rev: str) -> None:
        self.repo, self.rev = repo, rev
        listing = _git(repo, "ls-tree", "-r", "--name-only", rev) or ""
        self.paths = listing.splitlines()
        self._set = set(self.paths)

    def read(self, rel: str) -> str | None:
        if rel not in self._set:
            return None
        return _git(self.repo, "show", f"{self.rev}:{rel}")

    def listing(self, folder: str) -> list[str]:
        prefix = folder.rstrip("/") + "/"
        return [p for p in self.paths if p.startswith(prefix)]

    def commit(self) -> str:
        return (_git(self.repo, "rev-parse", f"{self.rev}^{{commit}}") or "").strip()


def _tags(repo: Path, pattern: str) -> list[str]:
    tags = (_git(repo, "tag") or "").split()
    chosen = [t for t in tags if re.fullmatch(pattern, t)]
    return sorted(chosen, key=lambda t: [int(x) for x in re.findall(r"\d+", t)])


def build(family: str, variant: str, version: str, repo: Path, rev: str, repository: str) -> dict | None:
    from trainlint.frameworks.catalog import files_of, from_scan, scan_files

    tree = GitTree(repo, rev)
    main, classes = files_of(tree.read, tree.listing, family)
    if not main:
        print(f"  {variant} {version}: no argument module at {rev}", file=sys.stderr)
        return None
    scan = scan_files(family, main, classes)
    catalog = from_scan(family, variant, version, scan, commit=tree.commit(), repository=repository)
    data = catalog.to_json()
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{family}-{variant}-{version}").lower() + ".json"
    (OUT / name).write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"  {variant} {version} @ {data['commit'][:12]}: {len(catalog.args)} names from {len(scan.files)} files"
          + (f"; partial: {scan.partial[0]}" if scan.partial else ""))
    return {"family": family, "variant": variant, "version": version, "commit": data["commit"],
            "repository": repository, "file": name}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--megatron-lm", type=Path)
    ap.add_argument("--megatron-deepspeed", type=Path)
    ap.add_argument("--neox", type=Path)
    ap.add_argument("--deepspeed", type=Path)
    ap.add_argument("--only", choices=["megatron", "neox", "deepspeed"])
    ap.add_argument("--names-only", action="store_true",
                    help="only rewrite the compact name indexes (names-FAMILY.json) from the shipped catalogs")
    args = ap.parse_args(argv)
    if args.names_only:
        write_name_indexes()
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    index_path = OUT / "index.json"
    old = json.loads(index_path.read_text()) if index_path.is_file() else {"catalogs": []}
    entries = [e for e in old["catalogs"] if args.only and e["family"] != args.only]
    if args.only in (None, "megatron"):
        if args.megatron_lm:
            for tag in _tags(args.megatron_lm, r"core_v0\.\d+\.0"):
                if int(tag.split(".")[1]) >= 4:
                    e = build("megatron", "Megatron-LM", tag, args.megatron_lm, tag, "NVIDIA/Megatron-LM")
                    entries += [e] if e else []
        if args.megatron_deepspeed:
            e = build("megatron", "Megatron-DeepSpeed", "main", args.megatron_deepspeed, "HEAD",
                      "microsoft/Megatron-DeepSpeed")
            entries += [e] if e else []
    if args.only in (None, "neox") and args.neox:
        for tag in ("v2.0", "HEAD"):
            e = build("neox", "GPT-NeoX", "main" if tag == "HEAD" else tag, args.neox, tag, "EleutherAI/gpt-neox")
            entries += [e] if e else []
    if args.only in (None, "deepspeed") and args.deepspeed:
        for tag in _tags(args.deepspeed, r"v0\.\d+\.0"):
            if int(tag.split(".")[1]) >= 9:
                e = build("deepspeed", "DeepSpeed", tag.lstrip("v"), args.deepspeed, tag, "deepspeedai/DeepSpeed")
                entries += [e] if e else []
    index = {"generated_by": "scripts/build_framework_catalogs.py", "catalogs": entries}
    index_path.write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    write_name_indexes()
    return 0


def write_name_indexes() -> None:
    """names-FAMILY.json: which shipped releases define each name, read at check time instead of
    every catalog (see :func:`trainlint.frameworks.catalog.shipped_names`)."""
    from trainlint.frameworks import catalog

    catalog.shipped_index.cache_clear()
    entries = catalog.shipped_index()
    for family in sorted({e.family for e in entries}):
        data = catalog.name_index_data(family, entries, lambda file: catalog.ArgCatalog.from_json(
            json.loads((OUT / file).read_text(encoding="utf-8"))))
        (OUT / catalog.NAMES_FILE.format(family=family).split("/")[-1]).write_text(
            json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
