"""Does the language server's memory stay flat over a long editing session? (issue 20)

Starts ``python -m trainlint lsp`` over stdio, opens one config, sends ``--changes`` full-text
``didChange`` notifications (each a new version), then waits for the diagnostics of the last
one, and reads the server's resident set size (VmRSS, /proc) after every ``--every`` changes.
Reported: RSS at the start and end and the growth per change. pygls 2.1.1 keeps a future per
notification handled by a coroutine or thread handler (``_request_futures`` is popped only for
requests); trainlint's handlers are plain functions, and the server drops any such entries
(see TrainlintServer), so the growth stays at the allocator's noise.

    python benchmarks/lsp_memory.py [--changes 30000] [--every 5000]

Exits 2, with no figure, when the measurement does not stand: the server could not start (the
``lsp`` extra is not installed), died or exited with an error, never diagnosed the last version, or
reported an internal error (TL999) on any version.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

DOC = '{\n  "train_micro_batch_size_per_gpu": %d,\n  "gradient_accumulation_steps": 4,\n  "zero_optimization": {"stage": 2}\n}\n'


def frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=30000)
    parser.add_argument("--every", type=int, default=5000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    path = tmp / "ds_config.json"
    path.write_text(DOC % 1)
    uri = path.as_uri()
    proc = subprocess.Popen([sys.executable, "-m", "trainlint", "lsp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp)
    published: list[int | None] = []
    internal_errors: list[str] = []

    def reader() -> None:
        out = proc.stdout
        while True:
            line = out.readline()
            if not line:
                return
            if line.lower().startswith(b"content-length"):
                n = int(line.split(b":")[1])
                while out.readline().strip():
                    pass
                msg = json.loads(out.read(n))
                if msg.get("method") == "textDocument/publishDiagnostics":
                    published.append(msg["params"].get("version"))
                    internal_errors.extend(d.get("message", "") for d in msg["params"].get("diagnostics", [])
                                           if d.get("code") == "TL999")

    threading.Thread(target=reader, daemon=True).start()

    def send(obj: dict) -> None:
        try:
            proc.stdin.write(frame(obj))
        except (BrokenPipeError, ValueError):  # the server is gone: said below, with its exit code
            pass

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"processId": None, "rootUri": tmp.as_uri(), "capabilities": {}}})
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    send({"jsonrpc": "2.0", "method": "textDocument/didOpen",
          "params": {"textDocument": {"uri": uri, "languageId": "json", "version": 1, "text": DOC % 1}}})
    flush(proc)
    time.sleep(2.0)
    rows = [(0, rss_kb(proc.pid))]
    start = time.perf_counter()
    for i in range(1, args.changes + 1):
        send({"jsonrpc": "2.0", "method": "textDocument/didChange",
              "params": {"textDocument": {"uri": uri, "version": i + 1}, "contentChanges": [{"text": DOC % (i % 64 + 1)}]}})
        if i % args.every == 0:
            flush(proc)
            time.sleep(1.0)  # let the server drain its input before reading its RSS
            rows.append((i, rss_kb(proc.pid)))
    flush(proc)
    deadline = time.time() + 60
    while args.changes + 1 not in published and time.time() < deadline:
        time.sleep(0.1)
    elapsed = time.perf_counter() - start
    rows.append((args.changes, rss_kb(proc.pid)))
    send({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None})
    send({"jsonrpc": "2.0", "method": "exit", "params": None})
    flush(proc)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = None
    failure = failed(code, args.changes + 1 in published, internal_errors, rows)
    if failure:
        print(f"lsp_memory: error: {failure}; no figure is reported", file=sys.stderr)
        return 2
    for n, kb in rows:
        print(f"after {n:6d} changes: RSS {kb / 1024:7.1f} MB")
    growth = (rows[-1][1] - rows[1][1]) * 1024 / max(1, args.changes - args.every)
    print(f"{args.changes} changes in {elapsed:.1f} s; last version diagnosed: {args.changes + 1 in published}; "
          f"growth after the first {args.every}: {growth:.0f} bytes per change; exit code {code}")
    return 0


def flush(proc: subprocess.Popen) -> None:
    try:
        proc.stdin.flush()
    except (BrokenPipeError, ValueError):
        pass


def failed(code: int | None, last_diagnosed: bool, internal_errors: list[str], rows: list[tuple[int, int]]) -> str | None:
    """Why the run's figures do not stand (None when they do)."""
    if code is None:
        return "the server did not exit after shutdown"
    if code != 0:
        return f"the server exited with {code} (is the lsp extra installed? pip install -e '.[lsp]')"
    if internal_errors:
        return f"internal error (TL999) on {len(internal_errors)} versions, e.g. {internal_errors[0]}"
    if not last_diagnosed:
        return "the last version was never diagnosed"
    if any(kb == 0 for _, kb in rows):
        return "the server's memory could not be read (it was gone)"
    return None


if __name__ == "__main__":
    sys.exit(main())
