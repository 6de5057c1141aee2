"""Communication memory and the run directory's layout keys, single process (docs/runtime.md,
"Communication memory", "Run directory"): the groups a rank creates and the device memory HCCL
reserves for them, train.hccl_buffer_size reaching every create_group on Ascend (create_group
replaced: no Ascend here) and refused on CPU, run.json's layer -> stage map."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ppstream
from conftest import write_config
from ppstream.mindspore.launch.cli import run_layout
from ppstream.mindspore.parallel.comm_memory import comm_memory, env_buffsize_mb
from ppstream.mindspore.parallel.commplan import CommPlan
from ppstream.mindspore.parallel.groups import Topology
from ppstream.mindspore.runconfig import load_run_config

HSDP = dict(pp=2, vpp=2, layers=4, mbs=4, mode="hsdp", shard=2, replicate=2)


@pytest.fixture()
def hsdp(tmp_path):
    cfg = write_config(str(tmp_path / "hsdp.yaml"), **HSDP, model={"hidden": 8, "heads": 2})
    return cfg, json.loads(ppstream.compile(cfg, True, "ascend-mindspore"))


def test_every_rank_reserves_two_buffers_per_group(hsdp):
    _cfg, pset = hsdp
    # per rank: shard group on compute (final gather), reduce and fsdp; replicate group on compute
    # and reduce; one P2P peer; and the world group: 7 communicators
    c = comm_memory(pset, range(8), 0, 200)
    assert c["groups"] == [7] * 8
    assert c["reserved_mb"] == [2 * 7 * 200] * 8  # 2.8 GB at HCCL's default
    c = comm_memory(pset, range(4, 8), 50, 200)
    assert c["ranks"] == [4, 7] and c["reserved_mb"] == [2 * (200 + 6 * 50)] * 4
    w = pset["world"]
    plan = CommPlan(Topology(w["pp"], w["vpp"], w["shard"], w["replicate"], 5), pset["programs"][5])
    assert c["groups"][1] == len(plan.groups()) + 1


def test_hccl_buffsize_from_the_environment():
    assert env_buffsize_mb({}) == 200 and env_buffsize_mb({"HCCL_BUFFSIZE": "64"}) == 64
    for bad in ("0", "x", "-3"):
        with pytest.raises(ValueError, match="HCCL_BUFFSIZE"):
            env_buffsize_mb({"HCCL_BUFFSIZE": bad})


def test_ascend_platform_passes_the_buffer_size_to_every_group(hsdp, monkeypatch):
    import mindspore as ms
    from ppstream.mindspore.platforms import ascend
    _cfg, pset = hsdp
    w = pset["world"]
    plan = CommPlan(Topology(w["pp"], w["vpp"], w["shard"], w["replicate"], 0), pset["programs"][0])
    calls = []
    monkeypatch.setattr(ascend, "create_group", lambda name, ranks, options=None: calls.append((name, ranks, options)))
    monkeypatch.setattr(ms.runtime, "current_stream", lambda: "default stream")
    ascend.AscendPlatform(64).setup(plan)
    assert [(n, tuple(r)) for n, r, _o in calls] == [(g.name, g.ranks) for g in plan.groups()]
    assert all(o.hccl_config == {"hccl_buffer_size": 64} for _n, _r, o in calls)
    calls.clear()
    ascend.AscendPlatform().setup(plan)  # 0: HCCL's own size, no options
    assert calls and all(o is None for _n, _r, o in calls)
    with pytest.raises(ValueError, match="hccl_buffer_size -1"):
        ascend.AscendPlatform(-1)


def test_hccl_buffer_size_is_refused_on_cpu_before_launch(tmp_path):
    cfg = write_config(str(tmp_path / "c.yaml"), pp=1, vpp=1, layers=2, mbs=2, model={"hidden": 8, "heads": 2},
                       train={"hccl_buffer_size": 64})
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "ppstream.mindspore.train", cfg, "--out", str(out), "--device", "cpu"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "train.hccl_buffer_size=64 sizes HCCL's buffers on Ascend" in proc.stderr, proc.stderr
    assert not out.exists()


def test_run_json_layout_maps_layers_to_stages_and_pp_ranks(tmp_path):
    path = tmp_path / "l.yaml"
    path.write_text("""pipeline_parallel_size: 2
pipeline_parallel_interleave_num: 2
micro_batch_num: 4
pipeline_parallel_layers_per_stage: ["0-1,4-5", "2-3,6-7"]
schedule: interleaved_1f1b
model: {hidden: 8, heads: 2}
""")
    cfg = load_run_config(str(path))
    pset = json.loads(ppstream.compile(str(path), True, "cpu-serial"))
    lay = run_layout(cfg, pset, range(0, 2))
    assert lay == {"world_size": 2, "ranks": [0, 1], "micro_batch_num": 4, "layer_stage": [0, 0, 1, 1, 2, 2, 3, 3],
                   "stage_pp_rank": [0, 1, 0, 1]}
