"""replay over the installed CLI: what must hold on every run, however loaded the machine —
every config runs; every P2P receive, reduction and unshard is checked exactly (counted against
the program); each rank's streams ran the program's instructions in the program's order, one
at a time; every P2P pair the program names met (the receive ended after its send started);
the JSON has simulate --json's shape and its simulated half equals `simulate`; measured times
are finite and never below the model (replay only adds time). Timings against the simulator
are a benchmark (bench/replay_agreement.py), not a test. Then the failure paths (timeout
report, a dying rank, a killed launcher), steps in traces, calibration and hostfiles.
docs/replay.md, "Tests"."""
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict

import pytest

from replay_configs import CONFIGS, config_text

# The CLI installed beside this interpreter (the venv scripts/test.sh runs pytest from, whose bin/
# is not necessarily on PATH), else the one on PATH.
PPSTREAM = shutil.which("ppstream", path=os.path.dirname(sys.executable)) or shutil.which("ppstream")
_MISSING = ("ppstream CLI not installed" if PPSTREAM is None else
            "mpirun (openmpi-bin) not installed" if shutil.which("mpirun") is None else None)
if _MISSING and os.environ.get("CI"):
    # CI installs both (scripts/setup.sh): a skip there would hide the whole replay suite.
    raise RuntimeError(f"tests/python/replay: {_MISSING}")
pytestmark = [pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]


def run(args, timeout=120, **kw):
    return subprocess.run([PPSTREAM, "replay", *args], capture_output=True, text=True, timeout=timeout, **kw)


def write(tmp_path, text, name="cfg.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def cli(*args, timeout=60):
    res = subprocess.run([PPSTREAM, *args], capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def policy_args(kw):
    return ["--reduce-grad", "both"] if kw.get("mode", "fsdp") != "none" else []


def programs(cfg, policy):
    args = ["compile", cfg, "--expanded", "--format", "json"] + ([] if policy == "none" else ["--reduce-grad", policy])
    return json.loads(cli(*args))["programs"]


def key_shape(doc):
    """The nested key structure of a JSON document (lists by their first element)."""
    if isinstance(doc, dict):
        return {k: key_shape(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [key_shape(doc[0])] if doc else []
    return None


def numbers(doc):
    if isinstance(doc, dict):
        for v in doc.values():
            yield from numbers(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from numbers(v)
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield doc


def lane_of(instr):
    """The trace lane an instruction's slice is drawn on (sim/trace.h), or None (not drawn)."""
    op = instr["op"]
    if op in ("UNSHARD", "REDUCE_GRAD"):
        return "compute:hccl" if instr["stream"] == "compute" else instr["stream"]
    if op in ("F", "B", "I", "W", "OPT_STEP", "BATCH"):  # RESHARD costs 0 here: not drawn
        return instr["stream"]
    return None


def trace_lanes(path):
    """Work slices per lane in file order (the writer's program order), and the step markers."""
    events = json.load(open(path))["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    lanes, steps = defaultdict(list), []
    for e in events:
        if e.get("ph") != "X":
            continue
        if e["args"]["kind"] == "step":
            steps.append(e)
        elif e["args"]["kind"] != "stream_wait":
            lanes[names[(e["pid"], e["tid"])]].append(e)
    return lanes, steps


def check_streams_in_program_order(trace_dir, policy, progs, steps):
    """Each lane holds the program's instructions on that stream, step after step, in order,
    each starting after the previous one ended (an in-order stream; trace times are rounded
    to 0.001 µs)."""
    for p in progs:
        lanes, markers = trace_lanes(os.path.join(trace_dir, f"replay.{policy}.rank{p['rank']}.json"))
        assert [m["args"]["step"] for m in markers] == list(range(steps))
        want = defaultdict(list)
        for ins in p["instrs"]:
            if lane_of(ins):
                want[lane_of(ins)].append(ins["text"])
        assert set(lanes) == set(want), (p["rank"], set(lanes) ^ set(want))
        for lane, slices in lanes.items():
            assert [s["name"] for s in slices] == want[lane] * steps, (p["rank"], lane)
            for a, b in zip(slices, slices[1:]):
                assert b["ts"] >= a["ts"] + a["dur"] - 0.01, (p["rank"], lane, a["name"], b["name"])


def check_p2p_pairs(trace_dir, policy, progs):
    """The k-th send of every channel met the k-th mirror receive the program names: both were
    run, and the receive ended no earlier than the send started."""
    sends, recvs = defaultdict(list), defaultdict(list)
    for p in progs:
        lanes, _ = trace_lanes(os.path.join(trace_dir, f"replay.{policy}.rank{p['rank']}.json"))
        for slices in lanes.values():
            for s in slices:
                if "BATCH{" not in s["name"]:
                    continue
                for op in s["name"].split("{", 1)[1].rstrip("}").split("; "):
                    kind, mb, stage, peer = op.split()
                    st, fb = int(stage[1:]), kind[-1]
                    if kind.startswith("SEND"):  # key: (sender, receiver, F|B, mb, receiver's stage)
                        key = (p["rank"], int(peer[3:]), fb, mb, st + (1 if fb == "F" else -1))
                        sends[key].append(s["ts"])
                    else:
                        recvs[(int(peer[3:]), p["rank"], fb, mb, st)].append(s["ts"] + s["dur"])
    assert sends and set(sends) == set(recvs)
    for key, starts in sends.items():
        assert len(starts) == len(recvs[key]), key
        for sent, received in zip(starts, recvs[key]):
            assert received >= sent - 0.01, key  # µs, as the trace rounds them


def expected_checks(progs, steps):
    recv = sum(1 for p in progs for i in p["instrs"] if i["op"] == "BATCH" for op in i["text"].split("{", 1)[1].split("; ")
               if op.startswith("RECV"))
    count = lambda op: sum(1 for p in progs for i in p["instrs"] if i["op"] == op) * steps
    return {"p2p_receives": recv * steps, "reductions": count("REDUCE_GRAD"), "unshards": count("UNSHARD"), "failed": 0}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_config_runs_checked_in_program_order(tmp_path, name):
    kw = CONFIGS[name]
    cfg = write(tmp_path, config_text(**kw))
    steps = 2 if name == "1f1b-fsdp-straggler" else 1  # one config also runs a second step
    # ... and issues ahead of the step (--issue ahead); the others in it (the default).
    issue = "ahead" if name == "1f1b-fsdp-straggler" else "in-step"
    res = run([cfg, "--json", "--timeout", "60", "--steps", str(steps), "--trace", str(tmp_path)] + policy_args(kw) +
              (["--issue", issue] if issue != "in-step" else []))
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    assert doc["replay"]["issue"] == issue
    sim = json.loads(cli("simulate", cfg, "--cluster", "--json", *policy_args(kw)))
    # simulate --json's shape for the measured figures; the simulated half is simulate's own.
    measured = {k: v for k, v in doc.items() if k not in ("simulated", "replay")}
    assert key_shape(measured) == key_shape(sim)
    assert key_shape(doc["simulated"]) == key_shape(sim)
    for policy, s in sim["policies"].items():
        assert doc["simulated"]["policies"][policy]["step_time_ms"] == pytest.approx(s["step_time_ms"], rel=1e-12)
        m = doc["policies"][policy]
        assert all(math.isfinite(x) for x in numbers(m)), policy
        assert len(m["trials"]["step_time_ms"]) == steps
        # Replay only adds time to the model (every duration is at least the modelled one and
        # the same dependencies order them), so it can never finish below it.
        assert m["step_time_ms"] >= s["step_time_ms"] * (1 - 1e-9) - 1e-6, policy
        for mr, sr in zip(m["ranks"], s["ranks"]):
            assert mr["compute_ms"] >= sr["compute_ms"] * (1 - 1e-9) - 1e-6, (policy, mr["rank"])
        progs = programs(cfg, policy)
        assert doc["replay"]["checks"][policy] == expected_checks(progs, steps)
        # With two policies each writes its own subdirectory (docs/replay.md).
        traces = tmp_path / policy if len(sim["policies"]) > 1 else tmp_path
        check_streams_in_program_order(traces, policy, progs, steps)
        check_p2p_pairs(traces, policy, progs)


def test_steps_are_marked_and_analyzed_per_step(tmp_path):
    """--steps 3: every rank's trace holds 3 step markers; `ppstream analyze` reports 3 steps
    whose step times are replay's measured ones (the markers span each step's slowest rank)."""
    cfg = write(tmp_path, config_text(**CONFIGS["1f1b-fsdp-straggler"]))
    res = run([cfg, "--trace", str(tmp_path), "--timeout", "60", "--steps", "3", "--json"])
    assert res.returncode == 0, res.stderr[-3000:]
    measured = json.loads(res.stdout)["policies"]["async"]["trials"]["step_time_ms"]
    assert len(measured) == 3
    traces = sorted(str(tmp_path / p) for p in os.listdir(tmp_path) if p.startswith("replay.async.rank"))
    assert len(traces) == 4
    ana = json.loads(cli("analyze", *traces, "--json"))
    assert [s["step"] for s in ana["steps"]] == [0, 1, 2]
    for s, want in zip(ana["steps"], measured):
        assert s["step_time_ms"] == pytest.approx(want, abs=1e-3)
        assert len(s["ranks"]) == 4
    one = json.loads(cli("analyze", *traces, "--json", "--step", "2"))
    assert one["total"]["step_time_ms"] == pytest.approx(measured[2], abs=1e-3)


def test_trace_dir_is_created_with_one_subdirectory_per_policy(tmp_path):
    """Issue 20: `--trace DIR` with a DIR that does not exist yet was refused, and both policies'
    traces landed in one directory that `ppstream diff` cannot take apart. Now DIR is created,
    each policy writes DIR/POLICY, and `ppstream diff DIR/inline DIR/async` works as written."""
    cfg = write(tmp_path, config_text(**CONFIGS["1f1b-fsdp-straggler"]))
    out = tmp_path / "new" / "traces"  # missing, parents too
    res = run([cfg, "--reduce-grad", "both", "--trace", str(out), "--timeout", "60"])
    assert res.returncode == 0, res.stderr[-3000:]
    for policy in ("inline", "async"):
        # Each policy's traces and the config that ran them (what `ppstream whatif DIR/POLICY` compiles).
        assert sorted(os.listdir(out / policy)) == [f"replay.{policy}.config.yaml"] + [
            f"replay.{policy}.rank{r}.json" for r in range(4)]
    diff = json.loads(cli("diff", str(out / "inline"), str(out / "async"), "--json"))
    assert diff["baseline_sources"] == [str(out / "inline" / f"replay.inline.rank{r}.json") for r in range(4)]
    assert diff["optimized_sources"] == [str(out / "async" / f"replay.async.rank{r}.json") for r in range(4)]
    assert any(r["scope"] == "all" and r["metric"] == "step_time_ms" for r in diff["rows"])
    # A file in the way is refused before any process starts, naming the path.
    (tmp_path / "file").write_text("x")
    res = run([cfg, "--trace", str(tmp_path / "file"), "--timeout", "60"])
    assert res.returncode != 0 and f"cannot create directory {tmp_path / 'file'}" in res.stderr, res.stderr[-3000:]


def test_hang_names_every_unfinished_rank(tmp_path):
    cfg = write(tmp_path, config_text())
    t0 = time.time()
    res = run([cfg, "--timeout", "3", "--fault", "hang:r2"], timeout=60)
    assert res.returncode != 0
    assert time.time() - t0 < 40
    assert "replay: unfinished r2 stream" in res.stderr
    assert "not issued by the host" in res.stderr
    # r2's pipeline peer is stuck on its P2P with r2 and says so.
    assert "peer r2" in res.stderr, res.stderr[-3000:]


def test_dead_rank_is_named(tmp_path):
    cfg = write(tmp_path, config_text())
    res = run([cfg, "--timeout", "20", "--fault", "die:r1"], timeout=90)
    assert res.returncode != 0
    assert "rank 1" in res.stderr + res.stdout, (res.stderr + res.stdout)[-3000:]


def _workers_with(marker):
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd and "replay" in cmd:
            pids.append(int(pid))
    return pids


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killed_launcher_leaves_no_process(tmp_path, sig):
    cfg = write(tmp_path, config_text(), name=f"kill-{int(sig)}.yaml")
    proc = subprocess.Popen([PPSTREAM, "replay", cfg, "--timeout", "30", "--fault", "hang:r0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline and len(_workers_with(cfg)) < 5:  # launcher + mpirun + 4 workers (≥5)
        time.sleep(0.2)
    assert len(_workers_with(cfg)) >= 5
    proc.send_signal(sig)
    proc.wait(timeout=30)
    deadline = time.time() + 20
    while time.time() < deadline and _workers_with(cfg):
        time.sleep(0.2)
    assert _workers_with(cfg) == []


def test_wrong_process_count_is_refused(tmp_path):
    cfg = write(tmp_path, config_text())
    res = run([cfg, "--np", "3", "--timeout", "20"], timeout=60)
    assert res.returncode != 0
    assert "run with -np 4" in res.stderr


def test_calibrate_measures_every_group_size(tmp_path):
    """HSDP 2 x 2: reduce-scatter and all-gather on the shard group's size, all-reduce on the
    replicate group's, each fitted and named; the section loads into simulate."""
    text = config_text(**CONFIGS["1f1b-hsdp-multi"])
    cfg = write(tmp_path, text)
    out = cli("replay", cfg, "--calibrate", "--np", "4", timeout=180)
    for what in ("reduce-scatter over 2 ranks (shard group)", "all-gather over 2 ranks (shard group)",
                 "all-reduce over 2 ranks (replicate group)", "ping-pong r0 <-> r1"):
        assert f"# measured: {what}" in out or f"# measured: 8-byte {what}" in out, what
    value = {l.split(":")[0].strip(): l.split(":")[1] for l in out.splitlines() if l.startswith("  ") and not l.strip().startswith("#")}
    for key in ("p2p_latency_ms", "p2p_bandwidth_gb_per_s", "collective_alpha_ms", "shard_bandwidth_gb_per_s",
                "replicate_bandwidth_gb_per_s"):
        assert float(value[key]) > 0, key
        comment = out.splitlines()[out.splitlines().index(f"  {key}:{value[key]}") - 1]
        assert comment.strip().startswith("# measured"), (key, comment)
    assert "# assumed (kept from the config): compute and sizes" in out
    cal = write(tmp_path, text.split("cost:")[0] + "cost:" + out.split("cost:", 1)[1], name="cal.yaml")
    assert json.loads(cli("simulate", cal, "--json"))["policies"]


def test_calibrate_says_what_it_kept(tmp_path):
    """FSDP 2 on one PP rank (world 2): no replicate group, so its bandwidth is kept from the
    config and says so; on the whole world, replay's host issue rate is measured as
    host_issue_ms and its own collective time per ring step as collective_alpha_ms (the config's
    programs with the communication model zero); without P2P the latency is the ping-pong's."""
    text = config_text(pp=1, f_ms=1.0, b_ms=2.0)  # short steps: the overhead replay runs 5
    cfg = write(tmp_path, text)
    out = cli("replay", cfg, "--calibrate", "--np", "2", timeout=180)
    lines = out.splitlines()
    i = lines.index("  replicate_bandwidth_gb_per_s: 10")
    assert lines[i - 1].strip().startswith("# assumed (kept from the config): the replicate group has 1 rank")
    assert "# measured: reduce-scatter over 2 ranks (shard group)" in out
    host = next(l for l in lines if l.startswith("  host_issue_ms:"))
    assert lines[lines.index(host) - 1].strip().startswith("# measured: replay's host issue rate"), out
    assert 0 < float(host.split(":")[1]) < 100
    alpha = next(l for l in lines if l.startswith("  collective_alpha_ms:"))
    assert lines[lines.index(alpha) - 1].strip().startswith("# measured: replay's own time per ring step"), out
    latency = next(l for l in lines if l.startswith("  p2p_latency_ms:"))
    assert lines[lines.index(latency) - 1].strip().startswith("# measured: 8-byte ping-pong"), out
    cal = write(tmp_path, text.split("cost:")[0] + "cost:" + out.split("cost:", 1)[1], name="cal.yaml")
    assert json.loads(cli("simulate", cal, "--json"))["policies"]


def _without_wall(doc):
    for run_ in doc["policies"].values():
        run_.pop("engine_wall_ms", None)
    return doc


def test_calibrated_runtime_keys_are_written_and_read_back(tmp_path):
    """GPipe PP2 x FSDP 2 on its whole world (4 processes): p2p_latency_ms, collective_alpha_ms
    and host_issue_ms are replay's own figures (matched -> end, per ring step, issue rate; each
    comment says so), positive and finite, the first two the self-consistent floor of their
    times (residual 1 % of the key); written into the config, simulate reads each one
    (setting it back to 0 with --set changes the report) and replay's simulated half is that
    simulate. Timings are not compared (bench/host_issue_agreement.py does)."""
    text = config_text(schedule="gpipe", f_ms=1.0, b_ms=2.0)  # short steps: the overhead replay runs 5
    out = cli("replay", write(tmp_path, text), "--calibrate", timeout=240)
    lines = out.splitlines()
    comments = {"p2p_latency_ms": "# measured: replay's own P2P time, matched -> end",
                "collective_alpha_ms": "# measured: replay's own time per ring step",
                "host_issue_ms": "# measured: replay's host issue rate"}
    for key, comment in comments.items():
        line = next(l for l in lines if l.startswith(f"  {key}:"))
        assert lines[lines.index(line) - 1].strip().startswith(comment), (key, out)
        assert 0 < float(line.split(":")[1]) < 1000, line
        if key != "host_issue_ms":
            # The mean excess over the mean, E[(X - mean)+]: between 0 and the mean for X >= 0.
            excess = re.search(r"E\[\(X - mean\)\+\][^:]*: ([0-9.]+)", lines[lines.index(line) - 1])
            assert excess and 0 <= float(excess.group(1)) <= float(line.split(":")[1]), (key, out)
            # The key is the self-consistent floor m (docs/replay.md): its residual E[(X - m)+] is
            # exactly 1 % of m (printed to 6 decimals), which no other choice of m gives.
            residual = re.search(r"E\[\(X - m\)\+\]: ([0-9.]+)", lines[lines.index(line) - 1])
            assert residual, (key, out)
            assert float(residual.group(1)) == pytest.approx(0.01 * float(line.split(":")[1]), abs=2e-6), (key, out)
    cal = write(tmp_path, text.split("cost:")[0] + "cost:" + out.split("cost:", 1)[1], name="cal.yaml")
    read = _without_wall(json.loads(cli("simulate", cal, "--cluster", "--json")))
    for key in comments:
        zeroed = _without_wall(json.loads(cli("simulate", cal, "--cluster", "--json", "--set", f"cost.{key}=0")))
        assert zeroed["policies"] != read["policies"], f"simulate did not read {key}"
    rep = json.loads(cli("replay", cal, "--json", "--timeout", "60", timeout=180))
    assert _without_wall(rep["simulated"])["policies"] == read["policies"]


def test_host_issue_shortens_the_waits_it_issues_late(tmp_path):
    """The CLI on the hand-derived case of SimHostIssue.ComputeWaitsStartAtTheirIssue (PP2 GPipe,
    one microbatch): with host_issue_ms = 0.25 every rank's compute wait is shorter (its WAITs
    are issued later than the events they wait for move) and the step is 0.25 ms longer."""
    cfg = write(tmp_path, "pipeline_parallel_size: 2\nmicro_batch_num: 1\nnum_layers: 2\nschedule: gpipe\n"
                          "cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 2, p2p_latency_ms: 0.5}\n")
    now = json.loads(cli("simulate", cfg, "--json"))["policies"]["none"]
    late = json.loads(cli("simulate", cfg, "--json", "--set", "cost.host_issue_ms=0.25"))["policies"]["none"]
    assert late["step_time_ms"] == pytest.approx(now["step_time_ms"] + 0.25)
    assert [r["rank"] for r in now["ranks"]] == [0, 1] == [r["rank"] for r in late["ranks"]]
    for a, b in zip(now["ranks"], late["ranks"]):
        assert b["compute_wait_ms"] < a["compute_wait_ms"], (a, b)


def test_calibrate_needs_the_group_sizes(tmp_path):
    cfg = write(tmp_path, config_text(shard=4))
    res = run([cfg, "--calibrate", "--np", "2"], timeout=120)
    assert res.returncode == 2
    assert "needs at least 4 processes" in res.stderr and "--np 4" in res.stderr


def test_hostfile_is_passed_to_mpirun(tmp_path):
    """One host named in a hostfile: the run goes through mpirun --hostfile; a file whose
    slots cannot hold the ranks is refused by mpirun (replay does not oversubscribe a
    hostfile), which proves the file was read."""
    cfg = write(tmp_path, config_text())
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost slots=4\n")
    res = run([cfg, "--hostfile", str(hosts), "--timeout", "60", "--json"])
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout)["replay"]["checks"]["async"]["failed"] == 0
    hosts.write_text("localhost slots=2\n")
    res = run([cfg, "--hostfile", str(hosts), "--timeout", "30"], timeout=90)
    assert res.returncode != 0
    assert "slots" in res.stderr + res.stdout, (res.stderr + res.stdout)[-3000:]


def test_hsdp_with_one_replica_runs_as_fsdp(tmp_path):
    """hsdp shard 2 x replicate 1 compiles to exactly fsdp shard 2's programs (config docs)."""
    hsdp = write(tmp_path, config_text(mode="hsdp", shard=2, replicate=1), name="hsdp.yaml")
    fsdp = write(tmp_path, config_text(mode="fsdp", shard=2), name="fsdp.yaml")
    assert programs(hsdp, "async") == programs(fsdp, "async")


def test_gemm_compute_runs_real_multiplies(tmp_path):
    """--compute gemm: compute runs checked matrix multiplies sized from one timed multiply;
    the run says so, every compute slice has a measured (non-zero) length, and every
    transfer and reduction is still checked."""
    cfg = write(tmp_path, config_text(layers=4, f_ms=1.0, b_ms=2.0))
    res = run([cfg, "--json", "--compute", "gemm", "--gemm-n", "32", "--trace", str(tmp_path), "--timeout", "60"])
    assert res.returncode == 0, res.stderr[-3000:]
    rep = json.loads(res.stdout)["replay"]
    assert rep["compute"]["mode"] == "gemm" and rep["compute"]["gemm_n"] == 32 and rep["compute"]["gemm_ms"] > 0
    assert rep["checks"]["async"] == expected_checks(programs(cfg, "async"), 1)
    lanes, _ = trace_lanes(str(tmp_path / "replay.async.rank0.json"))
    computes = [s for s in lanes["compute"] if " F mb" in s["name"] or " B mb" in s["name"]]
    assert computes and all(s["dur"] > 0 for s in computes)

