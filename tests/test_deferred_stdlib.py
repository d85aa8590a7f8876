"""``ipaddress`` (imported by ``urllib.parse``, which ``pathlib`` imports) is deferred as ``inspect`` is
(``trainlint.core.deferred_stdlib``, issue 33): not loaded by a check, the whole module once used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DS_JSON = REPO / "examples" / "deepspeed_zero3_offload.json"

# The dev venv's editable install imports pathlib (and so ipaddress) while the interpreter starts: the
# child forgets them first, as a regular install starts without them.
_FRESH = ("import sys\nfor name in [m for m in sys.modules if m in ('ipaddress', 'pathlib') or m.startswith('urllib')]:\n"
          "    del sys.modules[name]\n")


def _run(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _FRESH + code], capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(done.stdout.splitlines()[-1])


def test_a_check_does_not_load_ipaddress():
    found = _run("import io, json, contextlib\nfrom trainlint.cli import main\n"
                 "from trainlint.core.deferred_stdlib import is_loaded\n"
                 "with contextlib.redirect_stdout(io.StringIO()):\n"
                 f"    status = main(['check', '--isolated', '--exit-zero', {str(DS_JSON)!r}])\n"
                 "print(json.dumps({'status': status, 'ipaddress': is_loaded('ipaddress'), "
                 "'imported': 'ipaddress' in sys.modules, 'pathlib': 'pathlib' in sys.modules}))")
    assert found == {"status": 0, "ipaddress": False, "imported": True, "pathlib": True}


def test_the_deferred_ipaddress_is_ipaddress_once_used():
    found = _run("import json, trainlint\nfrom trainlint.core.deferred_stdlib import is_loaded\n"
                 "import ipaddress, urllib.parse\nbefore = is_loaded('ipaddress')\n"
                 "host = urllib.parse.urlsplit('http://[::1]:8080/x').hostname\n"
                 "bad = None\ntry:\n    urllib.parse.urlsplit('http://[not-an-ip]/')\nexcept ValueError as exc:\n"
                 "    bad = type(exc).__name__\n"
                 "from ipaddress import ip_network\n"
                 "print(json.dumps({'before': before, 'after': is_loaded('ipaddress'), "
                 "'same': sys.modules['ipaddress'] is ipaddress, 'host': host, 'bad': bad, "
                 "'net': str(ip_network('10.0.0.0/8')), 'type': type(ipaddress).__name__, "
                 "'file': ipaddress.__file__}))")
    assert found["before"] is False and found["after"] is True and found["same"] is True
    assert found["host"] == "::1" and found["bad"] == "ValueError" and found["net"] == "10.0.0.0/8"
    assert found["type"] == "module" and found["file"].endswith("ipaddress.py")
