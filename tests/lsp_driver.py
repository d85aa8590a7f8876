"""A minimal language-server client for the hostile-input cases (benchmarks/hostile_input.py):
starts ``python -m trainlint lsp``, opens one document, waits for its diagnostics, optionally asks
for the code actions of each, and prints what came back as plain lines (so that a raw control
character in a message reaches this process's output, where the benchmark looks for it):

    message: <each diagnostic's message, as sent>
    target: <each file a code action would edit>

    python tests/lsp_driver.py DOCUMENT [--root DIR] [--actions] [--timeout S]

Exit 1 when an error-level diagnostic was published (as ``check`` would), else 0; 3 when the
server sent nothing in time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty, Queue
from urllib.parse import unquote, urlparse


def _uri(path: Path) -> str:
    return path.resolve().as_uri()


def _path(uri: str) -> str:
    return unquote(urlparse(uri).path)


class Client:
    def __init__(self, cwd: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "trainlint", "lsp"], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=sys.stderr)
        self.inbox: Queue[dict] = Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if length is None:
                continue
            self.inbox.put(json.loads(out.read(length)))

    def send(self, method: str, params: dict, request: bool = True) -> int | None:
        message: dict = {"jsonrpc": "2.0", "method": method, "params": params}
        ident = None
        if request:
            self.next_id += 1
            ident = message["id"] = self.next_id
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return ident

    def wait(self, match, deadline: float) -> dict | None:
        while time.monotonic() < deadline:
            try:
                message = self.inbox.get(timeout=max(0.01, deadline - time.monotonic()))
            except Empty:
                return None
            if message.get("method") == "workspace/configuration" and "id" in message:
                self._answer(message["id"], [None] * len(message["params"].get("items", [])))
                continue
            if "id" in message and "method" in message:  # another request from the server
                self._answer(message["id"], None)
                continue
            if match(message):
                return message
        return None

    def _answer(self, ident: int, result) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("document")
    parser.add_argument("--root", help="the workspace folder (none: no rootUri, no workspaceFolders)")
    parser.add_argument("--actions", action="store_true")
    parser.add_argument("--timeout", type=float, default=25.0)
    args = parser.parse_args()
    document = Path(args.document).resolve()
    client = Client(os.getcwd())
    deadline = time.monotonic() + args.timeout
    params: dict = {"processId": os.getpid(), "capabilities": {"workspace": {"workspaceEdit": {"documentChanges": True}}}}
    if args.root:
        params["rootUri"] = _uri(Path(args.root))
        params["workspaceFolders"] = [{"uri": _uri(Path(args.root)), "name": "root"}]
    else:
        params["rootUri"] = None
    ident = client.send("initialize", params)
    if client.wait(lambda m: m.get("id") == ident, deadline) is None:
        return 3
    client.send("initialized", {}, request=False)
    uri = _uri(document)
    client.send("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "plaintext", "version": 1,
        "text": document.read_text(encoding="utf-8", errors="surrogateescape")}}, request=False)
    published = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri, deadline)
    if published is None:
        return 3
    diagnostics = published["params"]["diagnostics"]
    for d in diagnostics:
        sys.stdout.write(f"message: {d.get('code')} {d['message']}\n")
    if args.actions:
        for d in diagnostics:
            ident = client.send("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": d["range"],
                                                             "context": {"diagnostics": [d]}})
            answer = client.wait(lambda m, i=ident: m.get("id") == i, deadline)
            for action in (answer or {}).get("result") or []:
                edit = action.get("edit") or {}
                for target in edit.get("changes", {}):
                    sys.stdout.write(f"target: {_path(target)}\n")
                for change in edit.get("documentChanges", []):
                    target = (change.get("textDocument") or {}).get("uri") or change.get("uri")
                    if target:
                        sys.stdout.write(f"target: {_path(target)}\n")
    sys.stdout.flush()
    client.send("shutdown", {})
    client.send("exit", {}, request=False)
    try:
        client.proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        client.proc.kill()
    return 1 if any(d.get("severity") == 1 for d in diagnostics) else 0


if __name__ == "__main__":
    sys.exit(main())
