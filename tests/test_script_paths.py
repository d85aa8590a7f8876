"""Paths a launch script builds from its own location, read without running anything:
``$0`` (bash(1) "Special Parameters": the name the script was started by), ``${BASH_SOURCE[0]}``
("Shell Variables": the file being read, the sourced one inside ``source``), dirname(1) and
basename(1) (POSIX string operations), realpath(1) / ``readlink -f`` and ``$(cd D && pwd)`` (the
absolute directory). DeepSpeedExamples' ds_zero-offload_10B script names its JSON as
``config_json="$script_dir/ds_zero-offload_10B_config.json"`` with
``script_dir=$(dirname $(realpath $0))``: the JSON must be found and read."""

from __future__ import annotations

import os

import pytest

from trainlint.adapters import builtin_adapters
from trainlint.files.checker import check_paths

LAUNCH = ("deepspeed --num_nodes 1 --num_gpus 8 pretrain_gpt2.py --num-layers 24 --hidden-size 2048 "
          "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 --batch-size 4 "
          "--tokenizer-type GPT2BPETokenizer --fp16 --deepspeed --deepspeed_config ${config_json}\n")

JSON = '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}, "fp16": {"enabled": true}}\n'


@pytest.mark.parametrize("prelude", [
    'script_path=$(realpath $0)\nscript_dir=$(dirname $script_path)\nconfig_json="$script_dir/ds.json"\n',
    'config_json="$(dirname "$0")/ds.json"\n',
    'DIR="$( cd "$( dirname "${BASH_SOURCE[0]}" )" && pwd )"\nconfig_json=$DIR/ds.json\n',
    'DIR=$(cd $(dirname $(readlink -f $0)); pwd)\nconfig_json=${DIR}/ds.json\n',
    'config_json=$(dirname $0)/../$(basename $(dirname $0))/ds.json\n',
])
def test_the_deepspeed_json_beside_the_script_is_read(tmp_path, prelude):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "ds.json").write_text(JSON)
    script = scripts / "train.sh"
    script.write_text("#!/bin/bash\n" + prelude + LAUNCH)
    (result,) = [r for r in check_paths([str(script)], builtin_adapters()) if r.path == str(script)]
    (spec,) = result.specs
    assert spec.value("parallel.zero_stage") == 2, [d.message for d in result.diagnostics]
    assert str(scripts / "ds.json") in {os.path.normpath(p) for p in spec.sources}
    assert not [d for d in result.diagnostics if d.code in ("TL007", "TL013")]


@pytest.mark.parametrize("prelude", [
    "config_json=$(ls *.json | head -1)\n",           # runs programs: never evaluated
    'config_json="$(cd scripts && pwd)/ds.json"\n',   # relative cd: depends on the caller's directory
    "config_json=$(realpath ds.json)\n",             # relative realpath: the same
])
def test_a_substitution_trainlint_cannot_compute_stays_unknown(tmp_path, prelude):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "ds.json").write_text(JSON)
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\n" + prelude + LAUNCH)
    (result,) = [r for r in check_paths([str(script)], builtin_adapters()) if r.path == str(script)]
    (spec,) = result.specs
    assert str(scripts / "ds.json") not in spec.sources
