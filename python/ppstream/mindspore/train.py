"""``ppstream train CONFIG``: compile the programs, launch one worker per rank with msrun, report.

    python -m ppstream.mindspore.train CONFIG [--steps N] [--out DIR] [--reduce-grad inline|async]
        [--set key=value ...] [--straggle RANK:MS ...] [--record] [--device auto|cpu|ascend]
        [--timeout S] [--baseline]

The programs come from ``ppstream._core.compile`` (expanded: one per rank), verified under
``cpu-serial`` on CPU and ``ascend-mindspore`` on Ascend. Every worker writes a heartbeat
(RUN_DIR/progress/rank{r}.txt); when the job exceeds ``--timeout`` the launcher kills it and
names every rank that did not finish with its last instruction. Exit codes: 0 ok, 1 a worker
failed, 2 bad input, 124 timeout.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from ppstream.mindspore.runconfig import RunConfig, RunConfigError, load_run_config

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="ppstream train", description=__doc__.split("\n\n")[0])
    ap.add_argument("config")
    ap.add_argument("--steps", type=int, help="training steps (default: train.steps)")
    ap.add_argument("--out", default="out/train", help="run directory (default out/train)")
    ap.add_argument("--reduce-grad", choices=["inline", "async"], help="override data_parallel.reduce_grad")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    ap.add_argument("--straggle", action="append", default=[], metavar="RANK:MS",
                    help="delay RANK's every gradient reduction by MS milliseconds")
    ap.add_argument("--record", action="store_true", help="log the stream of every call (record.json per rank)")
    ap.add_argument("--device", choices=["auto", "cpu", "ascend"], default="auto")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds before the job is killed (default 600)")
    ap.add_argument("--baseline", action="store_true", help="run the single-process non-pipelined reference")
    return ap.parse_args(argv)


def _overrides(pairs: list[str]) -> dict[str, str]:
    out = {}
    for kv in pairs:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            raise RunConfigError(f"--set {kv!r}: expected KEY=VALUE")
        out[key] = value
    return out


def _straggle(items: list[str]) -> dict[str, float]:
    out = {}
    for it in items:
        r, sep, ms_ = it.partition(":")
        try:
            out[str(int(r))] = float(ms_)
        except ValueError:
            raise RunConfigError(f"--straggle {it!r}: expected RANK:MS, e.g. 3:200") from None
        if not sep or float(ms_) < 0:
            raise RunConfigError(f"--straggle {it!r}: expected RANK:MS with MS >= 0")
    return out


def _device(choice: str) -> str:
    if choice != "auto":
        return choice
    return "ascend" if os.path.exists("/dev/davinci0") else "cpu"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hung_ranks(run_dir: str, world: int) -> list[str]:
    """'r3: step 1 #17 r3 reduce REDUCE_GRAD s3' for every rank whose heartbeat is not 'done'."""
    out = []
    for r in range(world):
        path = os.path.join(run_dir, "progress", f"rank{r}.txt")
        try:
            with open(path, encoding="utf-8") as f:
                last = f.read().strip()
        except FileNotFoundError:
            last = "(never started: no heartbeat)"
        if last != "done":
            out.append(f"r{r}: {last}")
    return out


def summarize(run_dir: str, world: int) -> dict:
    results = []
    for r in range(world):
        with open(os.path.join(run_dir, f"rank{r}", "result.json"), encoding="utf-8") as f:
            results.append(json.load(f))
    holders = [x for x in results if x["losses"]]
    steps = len(holders[0]["losses"])
    losses = [sum(h["losses"][k] for h in holders) / len(holders) for k in range(steps)]
    step_ms = [max(x["step_ms"][k] for x in results) for k in range(steps)]
    return {"losses": losses, "step_ms": step_ms, "world": world, "platform": results[0]["platform"]}


def launch(args, cfg: RunConfig, core_overrides: dict[str, str]) -> int:
    import ppstream

    device = _device(args.device)
    platform = "cpu-serial" if device == "cpu" else "ascend-mindspore"
    programs = ppstream.compile(args.config, True, platform, core_overrides)
    pset = json.loads(programs)
    world = len(pset["programs"])
    run_dir = os.path.abspath(args.out)
    os.makedirs(os.path.join(run_dir, "progress"), exist_ok=True)
    for r in range(world):  # stale heartbeats from an earlier run would hide a hang
        p = os.path.join(run_dir, "progress", f"rank{r}.txt")
        if os.path.exists(p):
            os.remove(p)
    with open(os.path.join(run_dir, "programs.json"), "w", encoding="utf-8") as f:
        f.write(programs)
    steps = args.steps if args.steps is not None else int(cfg.train["steps"])
    run = {"config": cfg.to_json(), "steps": steps, "device": device, "record": args.record,
           "straggle": _straggle(args.straggle)}
    with open(os.path.join(run_dir, "run.json"), "w", encoding="utf-8") as f:
        json.dump(run, f, indent=1)
    w = pset["world"]
    print(f"ppstream train: {world} ranks (pp={w['pp']} vpp={w['vpp']} shard={w['shard']} replicate={w['replicate']}, "
          f"{pset['mode']} {pset['policy']}), device {device}, programs verified under {platform}, run dir {run_dir}",
          flush=True)
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")  # msrun starts `python`
    env["PYTHONPATH"] = PACKAGE_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("GLOG_v", "3")  # MindSpore: errors only
    loss_rank = (w["pp"] - 1) * w["shard"] * w["replicate"]
    msrun = os.path.join(os.path.dirname(sys.executable), "msrun")
    if not os.path.exists(msrun):
        msrun = shutil.which("msrun", path=env["PATH"])
    if msrun is None:
        raise FileNotFoundError("msrun not found beside the interpreter or on PATH; "
                                "pip install -r requirements-mindspore.txt")
    cmd = [msrun, f"--worker_num={world}", f"--local_worker_num={world}",
           f"--master_port={_free_port()}", "--join=True", f"--log_dir={os.path.join(run_dir, 'msrun_log')}",
           f"--tail_worker_log={loss_rank}", WORKER, run_dir]
    t0 = time.monotonic()
    with open(os.path.join(run_dir, "msrun.out"), "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        deadline = t0 + args.timeout
        os.set_blocking(proc.stdout.fileno(), False)
        while proc.poll() is None and time.monotonic() < deadline:
            _pump(proc.stdout, log)
            time.sleep(0.2)
        _pump(proc.stdout, log)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            print(f"ppstream train: TIMEOUT after {args.timeout:.0f} s; ranks that did not finish:", flush=True)
            for line in hung_ranks(run_dir, world) or ["(every rank finished; the launcher hung)"]:
                print("  " + line, flush=True)
            return 124
    wall = time.monotonic() - t0
    hung = hung_ranks(run_dir, world)
    if proc.returncode != 0 or hung:
        print(f"ppstream train: job failed (msrun exit {proc.returncode}); ranks that did not finish:", flush=True)
        for line in hung:
            print("  " + line, flush=True)
        print(f"  worker logs: {os.path.join(run_dir, 'msrun_log')}", flush=True)
        return 1
    summary = summarize(run_dir, world)
    summary["wall_s"] = wall
    with open(os.path.join(run_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    for k, (loss, ms_) in enumerate(zip(summary["losses"], summary["step_ms"])):
        print(f"step {k}: loss {loss:.6f}  step {ms_:.0f} ms (slowest rank)", flush=True)
    print(f"ppstream train: done in {wall:.1f} s (launch included)", flush=True)
    return 0


def _pump(stream, log) -> None:
    try:
        chunk = stream.read()
    except (BlockingIOError, TypeError):
        return
    if chunk:
        log.write(chunk)
        log.flush()
        for line in chunk.splitlines():
            if "loss" in line or "platform" in line or "Error" in line:
                print(line, flush=True)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        overrides = _overrides(args.set)
        if args.reduce_grad:
            overrides["data_parallel.reduce_grad"] = args.reduce_grad
        cfg = load_run_config(args.config, overrides)
        core = {k: v for k, v in overrides.items() if not k.startswith(("model.", "train."))}
        if args.baseline:
            import ppstream
            w = json.loads(ppstream.compile(args.config, False, "strict", core))["world"]
            from ppstream.mindspore.baseline import run_baseline
            steps = args.steps if args.steps is not None else int(cfg.train["steps"])
            run_baseline(cfg, w["shard"] * w["replicate"], steps, os.path.abspath(args.out))
            return 0
        return launch(args, cfg, core)
    except (RunConfigError, ValueError, FileNotFoundError) as e:
        print(f"ppstream train: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
