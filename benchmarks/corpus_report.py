"""What trainlint makes of the real-config corpus (../shared/corpus).

Prints, against MANIFEST.tsv's format labels: how many files each adapter claims, every
labelled config that is not claimed by the right adapter, internal errors (TL999), the
diagnostics by code, and for Megatron scripts which core spec fields were found.

    python benchmarks/corpus_report.py [--corpus ../shared/corpus] [--details]

Exit status 2 when any file got an internal error (TL999): its figures would count an error path.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter, defaultdict
from pathlib import Path

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_paths

REPO = Path(__file__).resolve().parents[1]
LABELS = {"deepspeed-json": "deepspeed", "megatron-args": "megatron", "neox-yaml": "neox", "other": None}
CORE_FIELDS = ("model.num_layers", "model.hidden_size", "model.num_attention_heads", "model.seq_length",
               "parallel.tensor", "parallel.pipeline", "batch.micro_batch")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    parser.add_argument("--details", action="store_true", help="list the diagnostics of error severity")
    args = parser.parse_args()
    corpus = Path(args.corpus)
    with (corpus / "MANIFEST.tsv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    paths = [str(corpus / r["path"]) for r in rows]
    results = {r.path: r for r in check_paths(paths, builtin_adapters())}

    claimed = Counter()
    wrong: list[str] = []
    per_label = Counter()
    codes = Counter()
    internal = []
    field_hits: dict[str, int] = defaultdict(int)
    megatron_specs = 0
    errors = []
    for row, path in zip(rows, paths):
        result = results[path]
        expected = LABELS.get(row["format"])
        per_label[row["format"]] += 1
        claimed[result.format] += 1
        if result.format != expected:
            wrong.append(f"  {row['path']}: labelled {row['format']}, claimed by {result.format}")
        for d in result.diagnostics:
            codes[d.code] += 1
            if d.code == "TL999":
                internal.append(f"  {row['path']}: {d.message}")
            if d.severity.value == "error":
                errors.append(f"  {row['path']}:{d.line}:{d.column}: {d.code} {d.message}")
        if result.format == "megatron":
            for spec in result.specs:
                megatron_specs += 1
                for name in CORE_FIELDS:
                    entry = spec.get(name)
                    if entry is not None and entry.provenance.origin.value != "default":
                        field_hits[name] += 1

    print(f"corpus: {len(rows)} files; labels {dict(per_label)}")
    print(f"claimed: {dict(claimed)}")
    print(f"labelled configs not claimed by the right adapter ({len(wrong)}):")
    print("\n".join(wrong) or "  none")
    print(f"internal errors (TL999): {len(internal)}")
    print("\n".join(internal))
    print("diagnostics by code:", ", ".join(f"{c} x{n}" for c, n in sorted(codes.items())))
    print(f"megatron specs: {megatron_specs}; fields set by the script (not a default):")
    for name in CORE_FIELDS:
        print(f"  {name:28s} {field_hits[name]:4d} / {megatron_specs}")
    print(f"error-level diagnostics: {len(errors)}")
    if args.details:
        print("\n".join(errors))
    if internal:
        print(f"corpus_report: error: internal errors (TL999) in {len(internal)} files", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
