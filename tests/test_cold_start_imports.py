"""What a cold one-file check does not import or build (issue 33: a cold check within 1.5x ``python -c
"import yaml"`` + 40 ms): the baseline module and hashlib without a baseline, the model presets (their
module and ``models.json``) when no model is named. Each guard also checks that the deferred part is
still there when it is used. The rules a check imports are guarded in tests/test_lazy_rules.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from trainlint import hookimpl
from trainlint.presets.models import load_model_presets
from trainlint.project.plugins import create_host
from trainlint.project.registry import ModelPresets, build_registry

REPO = Path(__file__).resolve().parents[1]
DS_JSON = REPO / "examples" / "deepspeed_zero3_offload.json"


def _after_check(*argv: str, cwd: Path = REPO) -> dict:
    """The modules a fresh process holds after ``trainlint check --isolated --exit-zero ARGV``, and its output."""
    code = ("import io, json, sys, contextlib\nfrom trainlint.cli import main\nout = io.StringIO()\n"
            f"with contextlib.redirect_stdout(out):\n    status = main(['check', '--isolated', '--exit-zero', *{list(argv)!r}])\n"
            "print(json.dumps({'status': status, 'modules': sorted(sys.modules), 'out': out.getvalue()}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=cwd)
    return json.loads(done.stdout.splitlines()[-1])


def test_a_check_without_a_baseline_imports_neither_the_baseline_module_nor_hashlib():
    found = _after_check(str(DS_JSON))
    assert found["status"] == 0
    modules = set(found["modules"])
    assert "trainlint.project.baseline" not in modules and "hashlib" not in modules


def test_a_check_with_a_baseline_still_applies_it(tmp_path):
    config = tmp_path / "ds_config.json"
    config.write_text(DS_JSON.read_text())
    baseline = tmp_path / "baseline.json"
    subprocess.run([sys.executable, "-m", "trainlint", "check", "--isolated", "--exit-zero", "--write-baseline",
                    str(baseline), str(config)], capture_output=True, text=True, check=True, cwd=tmp_path)
    found = _after_check("--baseline", str(baseline), str(config), cwd=tmp_path)
    assert "trainlint.project.baseline" in found["modules"]
    assert "TL900" not in found["out"]  # the finding recorded in the baseline is left out


def test_a_check_that_names_no_model_never_reads_the_model_presets():
    found = _after_check(str(DS_JSON))
    assert "trainlint.presets.models" not in found["modules"]
    assert "TL900" in found["out"]  # the estimate was still attempted (and says what is missing)
    named = _after_check("--model", "llama2-7b", str(DS_JSON))
    assert "trainlint.presets.models" in named["modules"]
    assert "number of transformer layers" not in named["out"]  # the preset filled the model


def _registry_with(presets_hook):
    class Plugin:
        @hookimpl
        def trainlint_model_presets(self):
            return presets_hook()

    host = create_host(entry_points=False)
    host.manager.register(Plugin(), name="zz-presets")
    return build_registry(host)


def test_the_shipped_presets_are_read_on_first_use_and_a_plugins_entries_when_registered():
    shipped = load_model_presets()
    some_id = next(iter(shipped))
    calls = []

    def hook():
        calls.append(1)
        return [{"id": some_id, "name": "replaced", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 2,
                 "vocab_size": 100, "seq_length": 128, "ffn_hidden_size": 256},
                {"id": "zz-broken"}]

    registry = _registry_with(hook)
    presets = registry.model_presets
    assert isinstance(presets, ModelPresets) and presets._entries is None  # nothing of models.json read yet
    # the plugin's hook ran and its malformed entry is a TL998 before any preset is looked up
    assert calls == [1]
    assert [f.plugin for f in registry.failures if "zz-broken" in f.reason] == ["zz-presets"]
    # on first use: the shipped ones, then the plugin's (an equal id replaces the shipped preset)
    assert set(presets) == set(shipped) and len(presets) == len(shipped)
    assert presets[some_id].name == "replaced"
    assert {k: v for k, v in presets.items() if k != some_id} == {k: v for k, v in shipped.items() if k != some_id}
    assert calls == [1]


def test_a_strict_json_check_compiles_none_of_the_full_json_readers_patterns(tmp_path):
    """A strict DeepSpeed JSON is read by the strict-JSON path: the full (hjson) reader's token patterns
    are not compiled; a JSON with a comment compiles them and is still read (its TL010 reported)."""
    code = ("import io, sys, contextlib\nfrom trainlint.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n    main(['check', '--isolated', '--exit-zero', sys.argv[1]])\n"
            "from trainlint.adapters.text import json_tree\nprint(json_tree._full_reader_compiled, 'TL010' in out.getvalue())")
    commented = tmp_path / "ds_config.json"
    commented.write_text("// a comment\n" + DS_JSON.read_text())
    outputs = [subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True,
                              cwd=REPO).stdout.split()[-2:] for path in (DS_JSON, commented)]
    assert outputs == [["False", "False"], ["True", "True"]]
