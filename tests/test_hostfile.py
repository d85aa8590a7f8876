"""Golden tests: ``deepspeed --hostfile FILE`` in the project gives the world size.

DeepSpeed's launcher (runner.py, fetch_hostfile): one ``hostname slots=N`` per line, ``#`` comments and
blank lines skipped; --num_nodes N keeps the first N hosts; --num_gpus G uses G GPUs per host. The file is
read, never run, and only inside the project."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainlint.adapters.base import LoadContext
from trainlint.adapters.megatron import MegatronAdapter
from trainlint.adapters.launch.hostfile import parse_hostfile
from trainlint.core.provenance import Origin
from trainlint.files.sources import SourceText

MODEL = ("pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
         "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 48 --deepspeed\n")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cluster(repo: Path, launcher: str, hostfile: str | None):
    if hostfile is not None:
        (repo / "hostfile").write_text(hostfile)
    script = repo / "train.sh"
    script.write_text(f"#!/bin/bash\n{launcher} {MODEL}")
    (spec,) = MegatronAdapter().load(SourceText(str(script), script.read_text()), LoadContext()).specs
    return spec.cluster


def test_parse_skips_comments_and_blank_lines():
    hosts = parse_hostfile("# cluster\nworker-1 slots=8\n\nworker-2 slots=4  # half\n")
    assert [(h.name, h.slots, h.line) for h in hosts] == [("worker-1", 8, 2), ("worker-2", 4, 4)]
    assert parse_hostfile("worker-1 gpus=8\n") is None
    assert parse_hostfile("# nothing\n") is None


def test_world_size_is_hosts_times_slots(repo):
    c = cluster(repo, "deepspeed --hostfile hostfile", "a slots=8\nb slots=8\nc slots=8\n")
    assert (c.nodes.value, c.gpus_per_node.value, c.world_size.value) == (3, 8, 24)
    prov = c.nodes.provenance
    assert prov.origin is Origin.FILE and prov.path.endswith("hostfile") and prov.span.line == 1


def test_uneven_slots_sum(repo):
    c = cluster(repo, "deepspeed --hostfile=hostfile", "a slots=8\nb slots=4\n")
    assert c.world_size.value == 12 and c.gpus_per_node is None and c.nodes.value == 2
    assert "sum of the slots" in c.world_size.provenance.note


def test_num_nodes_keeps_the_first_hosts_and_num_gpus_sets_per_host(repo):
    c = cluster(repo, "deepspeed --hostfile hostfile --num_nodes 2", "a slots=8\nb slots=8\nc slots=8\n")
    assert c.world_size.value == 16
    c = cluster(repo, "deepspeed --hostfile hostfile --num_gpus 2", "a slots=8\nb slots=8\nc slots=8\n")
    assert c.world_size.value == 6


def test_missing_or_malformed_hostfile_leaves_the_world_unknown(repo):
    assert cluster(repo, "deepspeed --hostfile nowhere", None).world_size is None
    assert cluster(repo, "deepspeed --hostfile hostfile", "a gpus=8\n").world_size is None


def test_a_hostfile_outside_the_project_is_not_read(repo, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "hostfile"
    outside.write_text("a slots=8\n")
    assert cluster(repo, f"deepspeed --hostfile {outside}", None).world_size is None


def test_include_and_exclude_select_hosts_and_slots(repo):
    hostfile = "a slots=8\nb slots=8\nc slots=8\n"
    c = cluster(repo, "deepspeed --hostfile hostfile --include a:0,1,2,3@b:0,1,2,3", hostfile)
    assert (c.nodes.value, c.gpus_per_node.value, c.world_size.value) == (2, 4, 8)
    c = cluster(repo, "deepspeed --hostfile hostfile --include c", hostfile)
    assert (c.nodes.value, c.world_size.value) == (1, 8)
    c = cluster(repo, "deepspeed --hostfile hostfile --exclude b", hostfile)
    assert (c.nodes.value, c.world_size.value) == (2, 16)
    c = cluster(repo, "deepspeed --hostfile hostfile --exclude a:0,1", hostfile)
    assert c.world_size.value == 22 and c.gpus_per_node is None
