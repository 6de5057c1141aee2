"""The launcher: msrun command lines (one node, several nodes), refusing a world larger than its
workers before writing any program file, and owning its process tree (SIGKILL of the launcher
leaves no worker behind)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import have_fortunes, write_config
from ppstream.mindspore.launch.msrun import Cluster, WorldTooLarge, check_world, msrun_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_msrun_command_single_node_starts_the_whole_world_here():
    cmd = msrun_command("msrun", Cluster(8, 8, master_port=4000), 4, "w.py", "/run")
    assert cmd == ["msrun", "--worker_num=4", "--local_worker_num=4", "--master_addr=127.0.0.1",
                   "--master_port=4000", "--node_rank=0", "--join=True", "--log_dir=/run/msrun_log",
                   "--tail_worker_log=4", "w.py", "/run"]


def test_msrun_command_two_nodes():
    c = Cluster(16, 8, master_addr="10.0.0.1", master_port=8118, node_rank=1, log_dir="/logs")
    check_world(16, "pp=2 x shard=8", c)
    assert c.local_ranks(16) == range(8, 16)  # msrun's numbering: node_rank * local + i
    assert Cluster(8, 8).local_ranks(4) == range(4)
    cmd = msrun_command("/v/bin/msrun", c, 16, "w.py", "/run")
    assert cmd[1:9] == ["--worker_num=16", "--local_worker_num=8", "--master_addr=10.0.0.1", "--master_port=8118",
                        "--node_rank=1", "--join=True", "--log_dir=/logs", "--tail_worker_log=16"]


def test_world_checks_name_the_numbers():
    with pytest.raises(WorldTooLarge, match="world of 16384 ranks .* 8 workers"):
        check_world(16384, "pp=4 x shard=64 x replicate=64", Cluster(8, 8))
    with pytest.raises(WorldTooLarge, match="must be equal"):
        check_world(8, "pp=2 x shard=4", Cluster(16, 8, node_rank=0))
    with pytest.raises(WorldTooLarge, match="--node-rank 2"):
        check_world(16, "pp=2 x shard=8", Cluster(16, 8, node_rank=2))
    check_world(4, "pp=2 x shard=2", Cluster(8, 8))  # a smaller world on one node is fine


def test_train_refuses_the_seed_world_before_writing_programs(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "ppstream.mindspore.train", os.path.join(ROOT, "examples",
                           "seed-pp4-vpp2-hsdp.yaml"), "--out", str(out), "--device", "cpu",
                           "--local-worker-num", "8"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ranks" in proc.stderr and "8 workers" in proc.stderr, proc.stderr
    assert not out.exists() or not any(out.iterdir()), "wrote files before refusing"


def _procs_mentioning(text: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state != "Z":
            found.append(f"{pid}: {cmd[:200]}")
    return found


@pytest.mark.multiprocess
@pytest.mark.skipif(not have_fortunes(), reason="needs /usr/share/games/fortunes (scripts/setup.sh)")
def test_sigkill_of_the_launcher_leaves_no_worker(tmp_path):
    # FSDP over 2 ranks; rank 1's reductions are delayed 60 s, so the job is mid-step when killed.
    cfg = write_config(str(tmp_path / "orphan.yaml"), pp=1, vpp=1, layers=2, mbs=2, mode="fsdp", shard=2)
    run_dir = str(tmp_path / "run")
    launcher = subprocess.Popen([sys.executable, "-m", "ppstream.mindspore.train", cfg, "--out", run_dir,
                                 "--steps", "1", "--straggle", "1:60000", "--timeout", "300"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    beats = [os.path.join(run_dir, "progress", f"rank{r}.txt") for r in range(2)]
    deadline = time.monotonic() + 200
    while time.monotonic() < deadline:  # both ranks inside step 0
        if all(os.path.exists(b) and open(b).read().startswith("step 0") for b in beats):
            break
        assert launcher.poll() is None, "launcher ended before the workers started"
        time.sleep(0.5)
    else:
        launcher.kill()
        pytest.fail("workers never reached step 0")
    assert len(_procs_mentioning(run_dir)) >= 3  # msrun, scheduler, two workers
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    deadline = time.monotonic() + 10
    left = _procs_mentioning(run_dir)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _procs_mentioning(run_dir)
    for line in left:  # clean up before failing
        os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert not left, "processes left 10 s after the launcher was killed:\n" + "\n".join(left)


def test_ascend_comm_stream_mode_is_set_explicitly():
    from ppstream.mindspore.launch.msrun import runtime_conf
    assert runtime_conf("") == "multi_stream:group"
    assert runtime_conf("multi_stream:true,inline:false") == "inline:false,multi_stream:group"


def test_ascend_programs_are_verified_under_the_profile_of_the_mode_the_launcher_sets(tmp_path, monkeypatch):
    import json
    import ppstream
    from ppstream.mindspore.launch.msrun import (COMM_STREAM_MODE, COMM_STREAM_PROFILES, check_runtime_conf,
                                           comm_stream_mode, runtime_conf)
    from ppstream.mindspore.platforms.ascend import AscendPlatform
    from ppstream.mindspore.platforms.base import DEVICE_PROFILES, KNOWN_PROFILES
    conf = runtime_conf("multi_stream:true,inline:false")
    assert comm_stream_mode(conf) == COMM_STREAM_MODE == "group"
    # the launcher compiles Ascend programs under DEVICE_PROFILES["ascend"]; the platform names it too
    assert DEVICE_PROFILES["ascend"] == AscendPlatform.profile == COMM_STREAM_PROFILES["group"] == "ascend-mindspore"
    assert COMM_STREAM_PROFILES["true"] == "ascend-mindspore-one-comm-stream"
    check_runtime_conf(conf)  # what the launcher sets passes the worker's check ...
    for bad in ("", "inline:false", "multi_stream:true", "multi_stream:false", "multi_stream:group,multi_stream:true"):
        with pytest.raises(RuntimeError, match="expected 'group'.*verified under ascend-mindspore"):
            check_runtime_conf(bad)  # ... and nothing else does
    from ppstream.mindspore.launch.worker import init_mindspore
    monkeypatch.setenv("MS_DEV_RUNTIME_CONF", "multi_stream:true")
    with pytest.raises(RuntimeError, match="multi_stream is 'true', expected 'group'"):
        init_mindspore("ascend")  # the worker checks before touching the device
    # every mode's profile is one the engine knows: programs compile and verify under it
    cfg = write_config(str(tmp_path / "modes.yaml"), pp=2, vpp=2, layers=4, mbs=4, mode="hsdp", shard=2, replicate=2)
    for prof in COMM_STREAM_PROFILES.values():
        assert prof in KNOWN_PROFILES
        assert len(json.loads(ppstream.compile(cfg, True, prof))["programs"]) == 8


def test_bfloat16_is_refused_on_cpu_before_launch(tmp_path):
    cfg = write_config(str(tmp_path / "bf16.yaml"), pp=1, vpp=1, layers=2, mbs=2,
                       model={"hidden": 8, "heads": 2, "dtype": "bfloat16"})
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "ppstream.mindspore.train", cfg, "--out", str(out), "--device", "cpu"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "model.dtype=bfloat16 is not supported on CPU" in proc.stderr, proc.stderr
    assert not out.exists()


def test_config_yaml_is_the_config_that_ran(tmp_path):
    """RUN_DIR/config.yaml (what `ppstream whatif RUN_DIR` compiles): the pipeline after --set and
    --reduce-grad, the model:/train: sections as the run used them; read back it gives the same
    programs and the same RunConfig."""
    import types

    import ppstream
    from ppstream.mindspore.launch.cli import config_that_ran
    from ppstream.mindspore.runconfig import load_run_config
    src = os.path.join(ROOT, "examples", "small-pp2-vpp2-hsdp-train.yaml")
    overrides = {"data_parallel.reduce_grad": "inline", "data_parallel.replicate_size": "1", "model.hidden": "16",
                 "train.eps": "1.0e-6"}
    core = {k: v for k, v in overrides.items() if not k.startswith(("model.", "train."))}
    cfg = load_run_config(src, overrides)
    path = tmp_path / "config.yaml"
    path.write_text(config_that_ran(types.SimpleNamespace(config=src), cfg, core))
    assert ppstream.compile(str(path), True, "cpu-serial") == ppstream.compile(src, True, "cpu-serial", core)
    assert "reduce_grad: inline" in path.read_text()
    back = load_run_config(str(path))
    assert (back.model, back.train) == (cfg.model, cfg.train)
    assert back.model["hidden"] == 16 and back.train["eps"] == 1.0e-6
