"""Time of one estimate after import (target: < 1 ms).

    .venv/bin/python benchmarks/estimate_speed.py

Builds a Megatron-style spec (Llama-2-70B shape, TP 8, PP 8 interleaved, full recompute), a
context, and times ``estimate(spec, ctx)`` end to end (model fill, input resolution, memory for
every stage, step time), best and median of many runs. Exit status 2 when the estimate fails
(missing inputs, a broken invariant): it would time an error path.
"""

from __future__ import annotations

import statistics
import sys
import time

from trainlint.estimator import InvariantError, build_context, estimate
from trainlint.adapters.engine import set_engine
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.core.spec import TrainingSpec

F = Provenance(Origin.FILE, path="bench.sh", key="--x")


def spec() -> TrainingSpec:
    s = TrainingSpec(framework="megatron", path="bench.sh")
    for name, value in {"parallel.tensor": 8, "parallel.pipeline": 8, "parallel.virtual_pipeline": 2,
                        "parallel.sequence_parallel": True, "parallel.distributed_optimizer": True,
                        "batch.micro_batch": 1, "batch.global_batch": 1024, "precision.dtype": "bf16",
                        "memory.recompute": "full", "model.seq_length": 4096}.items():
        s.set(name, Value(value, F))
    set_engine(s)
    return s


def main() -> int:
    sp = spec()
    ctx = build_context(sp, gpu="h100-sxm", nodes=64, model="llama2-70b")
    try:
        result = estimate(sp, ctx)
    except InvariantError as exc:
        print(f"estimate_speed: error: the estimate broke an invariant: {exc}", file=sys.stderr)
        return 2
    if not result.ok:
        print(f"estimate_speed: error: no estimate ({result}): nothing to time", file=sys.stderr)
        return 2
    runs = []
    for _ in range(50):
        t0 = time.perf_counter()
        for _ in range(20):
            estimate(sp, ctx)
        runs.append((time.perf_counter() - t0) / 20)
    print(f"one estimate: best {min(runs) * 1e3:.3f} ms, median {statistics.median(runs) * 1e3:.3f} ms "
          f"({len(result.stages)} pipeline stages; target < 1 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
