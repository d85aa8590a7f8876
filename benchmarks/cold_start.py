"""Cold start of ``trainlint check`` on one DeepSpeed JSON, against ``python -c "import yaml"``
and ``check-jsonschema`` on the same file, fresh processes, median of several runs.

The cold-start half of :mod:`check_speed` (which also measures files per second); same
options, see its docstring.

    python benchmarks/cold_start.py [--repeat 11] [--file examples/deepspeed_zero3_offload.json]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_speed import main

if __name__ == "__main__":
    sys.exit(main(throughput_too=False))
