"""Coverage-guided fuzzing of the write-back and the language server with atheris, run by hand.

    pip install atheris
    python fuzz/atheris_lsp_writeback.py -max_total_time=300

The first byte picks the target. Write-back: the input is split into lines, their line ends and
encoding chosen from the next bytes, the new text is the rest; the file must come back with its
encoding and line ends, or unchanged when a write is made to fail. Language server: the input is a
JSON list of JSON-RPC messages (anything else is wrapped as one message's params); every request
must be answered once and no exception may escape. A crash is saved by libFuzzer as ``crash-*``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import atheris  # noqa: E402

with atheris.instrument_imports(include=["trainlint"]):
    from fuzz_harness import ENCODINGS, LSP_METHODS, exercise_lsp, exercise_write_back

ENDS = ("\n", "\r\n", "\r")
FAILS = (None, "write", "fsync", "replace", "fchmod")


def one_input(data: bytes) -> None:
    if len(data) < 4:
        return
    fdp = atheris.FuzzedDataProvider(data)
    if fdp.ConsumeBool():
        encoding = sorted(ENCODINGS)[fdp.ConsumeIntInRange(0, len(ENCODINGS) - 1)]
        fail = FAILS[fdp.ConsumeIntInRange(0, len(FAILS) - 1)]
        text = fdp.ConsumeUnicodeNoSurrogates(200).replace("\r", "")
        lines = text.split("\n")
        ends = [ENDS[fdp.ConsumeIntInRange(0, 2)] for _ in lines[:-1]] + [""]
        new = fdp.ConsumeUnicodeNoSurrogates(200).replace("\r", "")
        exercise_write_back(lines, ends, encoding, new, fail)
    else:
        raw = fdp.ConsumeUnicodeNoSurrogates(2000)
        try:
            messages = json.loads(raw)
        except ValueError:
            messages = {"text": raw}
        if not isinstance(messages, list):
            messages = [{"jsonrpc": "2.0", "id": 7, "method": LSP_METHODS[len(raw) % len(LSP_METHODS)], "params": messages}]
        messages = [m for m in messages if isinstance(m, dict)][:8]
        exercise_lsp([{"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"processId": None, "rootUri": None, "capabilities": {}}}] + messages)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
