"""``ppstream train CONFIG``: compile the programs, launch one worker per rank with msrun, report.

    python -m ppstream.mindspore.train CONFIG [--steps N] [--out DIR] [--reduce-grad inline|async]
        [--set key=value ...] [--straggle RANK:MS ...] [--record] [--profile]
        [--device auto|cpu|ascend] [--timeout S] [--baseline] [--save-every N] [--resume DIR]
        [--worker-num N] [--local-worker-num N] [--master-addr H] [--master-port P] [--node-rank K] [--log-dir D]

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
import socket
import sys
import time

from ppstream.mindspore.launch.msrun import (Cluster, LogFollower, WorldTooLarge, check_world, default_local_workers,
                                       msrun_command, run_msrun, runtime_conf)
from ppstream.mindspore.parallel.comm_memory import comm_memory, env_buffsize_mb
from ppstream.mindspore.platforms.base import DEVICE_PROFILES
from ppstream.mindspore.recipe import check
from ppstream.mindspore.runconfig import CPU_DTYPES, RunConfig, RunConfigError, load_run_config

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


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
    ap.add_argument("--profile", action="store_true",
                    help="MindSpore's profiler on every rank (RUN_DIR/profile/), first step skipped")
    ap.add_argument("--device", choices=["auto", "cpu", "ascend"], default="auto")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds before the job is killed (default 600)")
    ap.add_argument("--baseline", action="store_true", help="run the single-process non-pipelined reference")
    ap.add_argument("--save-every", type=int, default=0, metavar="N",
                    help="write a sharded checkpoint to RUN_DIR/checkpoints/step{k}/ every N steps (default: never)")
    ap.add_argument("--resume", metavar="DIR",
                    help="continue from a checkpoint directory, or a run directory's newest complete checkpoint; "
                         "--steps is the total, as in the first run")
    g = ap.add_argument_group("cluster (msrun's settings; default: one node)")
    g.add_argument("--worker-num", type=int, help="workers in the whole job (default: --local-worker-num)")
    g.add_argument("--local-worker-num", type=int,
                   help="workers on this node (default: its NPUs on Ascend, max(8, cores) on CPU)")
    g.add_argument("--master-addr", default="127.0.0.1", help="host of msrun's scheduler (node 0)")
    g.add_argument("--master-port", type=int, help="port of msrun's scheduler (default: a free port, one node only)")
    g.add_argument("--node-rank", type=int, default=0, help="this node's index, 0..nodes-1")
    g.add_argument("--log-dir", default="", help="msrun's log directory (default RUN_DIR/msrun_log)")
    return ap.parse_args(argv)


def cluster_from_args(args, device: str) -> Cluster:
    local = args.local_worker_num or default_local_workers(device)
    total = args.worker_num or local
    if local < 1 or total < local:
        raise RunConfigError(f"--worker-num {total} / --local-worker-num {local}: expected 1 <= local <= total")
    if total > local and args.master_port is None:
        raise RunConfigError("a multi-node run needs --master-port (the same on every node)")
    port = args.master_port if args.master_port is not None else _free_port()
    return Cluster(total, local, args.master_addr, port, args.node_rank, args.log_dir)


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


def hung_ranks(run_dir: str, ranks: range) -> list[str]:
    """'r3: step 1 #17 r3 reduce REDUCE_GRAD s3' for every rank of ``ranks`` whose heartbeat is not 'done'."""
    out = []
    for r in ranks:
        path = os.path.join(run_dir, "progress", f"rank{r}.txt")
        try:
            with open(path, encoding="utf-8") as f:
                last = f.read().strip()
        except FileNotFoundError:
            last = "(never started: no heartbeat)"
        if last != "done":
            out.append(f"r{r}: {last}")
    return out


def first_error(run_dir: str, ranks: range) -> str | None:
    """'r0: DataError: …': the earliest error a worker of ``ranks`` recorded before it ended
    (launch/worker.py ``record_failure``; the first to fail, whichever rank: the others' errors
    usually follow from it), or None when none did."""
    found = []
    for r in ranks:
        try:
            with open(os.path.join(run_dir, "progress", f"rank{r}.error"), encoding="utf-8") as f:
                when, _, line = f.read().strip().partition(" ")
            found.append((float(when), r, line))
        except (FileNotFoundError, ValueError):
            continue
    if not found:
        return None
    _when, r, line = min(found)
    return f"r{r}: {line}"


def summarize(run_dir: str, ranks: range, world: int) -> dict:
    """Losses (mean over the loss-holding ranks of ``ranks``; empty when none is on this node),
    slowest-rank step times and peak RSS of this node's ranks."""
    results = []
    for r in ranks:
        with open(os.path.join(run_dir, f"rank{r}", "result.json"), encoding="utf-8") as f:
            results.append(json.load(f))
    holders = [x for x in results if x["losses"]]
    steps = len(results[0]["step_ms"])
    losses = [sum(h["losses"][k] for h in holders) / len(holders) for k in range(steps)] if holders else []
    step_ms = [max(x["step_ms"][k] for x in results) for k in range(steps)]
    evals = [[h0[0], sum(h["eval"][i][1] for h in holders) / len(holders)]
             for i, h0 in enumerate(holders[0]["eval"])] if holders else []
    return {"first_step": results[0].get("first_step", 0), "losses": losses, "step_ms": step_ms,
            "opt": results[0].get("opt", []), "eval": evals, "world": world, "ranks": [ranks.start, ranks.stop - 1],
            "platform": results[0]["platform"], "peak_rss_mb": [x["peak_rss_mb"] for x in results]}


def _compile_checked(args, cluster: Cluster, profile: str, core_overrides: dict[str, str]) -> str:
    """The expanded, verified program set — after checking on the compact form that the world fits."""
    import ppstream

    w = json.loads(ppstream.compile(args.config, False, "strict", core_overrides))["world"]
    world = w["pp"] * w["shard"] * w["replicate"]
    check_world(world, f"pp={w['pp']} x shard={w['shard']} x replicate={w['replicate']}", cluster)
    return ppstream.compile(args.config, True, profile, core_overrides)


def run_layout(cfg: RunConfig, pset: dict, ranks: range) -> dict:
    """The run's layout for run.json (docs/runtime.md "Run directory"): ``world_size``, this node's
    ``ranks`` [first, last], ``micro_batch_num``, ``layer_stage[l]`` (the global virtual stage of
    layer l) and ``stage_pp_rank[s]`` (the PP rank whose programs run stage s)."""
    of_layer = {layer: s for s, (a, b) in enumerate(cfg.stage_layers) for layer in range(a, b + 1)}
    layer_stage = [of_layer[layer] for layer in range(cfg.num_layers)]
    stage_pp_rank: dict[int, int] = {}
    for p in pset["programs"]:
        for ins in p["instrs"]:
            if ins["op"] == "F":
                stage_pp_rank.setdefault(ins["stage"], p["pp_rank"])
    if sorted(stage_pp_rank) != list(range(cfg.num_stages)):
        raise RunConfigError(f"programs.json: stages {sorted(stage_pp_rank)} have a forward; expected 0..{cfg.num_stages - 1}")
    return {"world_size": len(pset["programs"]), "ranks": [ranks.start, ranks.stop - 1],
            "micro_batch_num": cfg.micro_batch_num, "layer_stage": layer_stage,
            "stage_pp_rank": [stage_pp_rank[s] for s in range(cfg.num_stages)]}


def config_that_ran(args, cfg: RunConfig, core_overrides: dict[str, str]) -> str:
    """RUN_DIR/config.yaml (docs/runtime.md "Run directory"): the pipeline keys of ``args.config``
    after ``--set`` / ``--reduce-grad`` (``_core.config_yaml``, the C++ loader's keys: what
    ``ppstream whatif RUN_DIR`` compiles again) and the ``model:`` / ``train:`` sections as the run
    used them (defaults filled in, ``--set model.*`` / ``train.*`` applied)."""
    import yaml
    from ppstream import _core
    sections = {"model": yaml.safe_dump(cfg.model, sort_keys=False), "train": yaml.safe_dump(cfg.train, sort_keys=False)}
    return _core.config_yaml(args.config, core_overrides, sections)


def _prepare_run_dir(run_dir: str, world: int, programs: str, run: dict, config_yaml: str) -> None:
    os.makedirs(os.path.join(run_dir, "progress"), exist_ok=True)
    for r in range(world):  # stale heartbeats from an earlier run would hide a hang
        p = os.path.join(run_dir, "progress", f"rank{r}.txt")
        if os.path.exists(p):
            os.remove(p)
    # an earlier profiled run's output would be read as a second trace of each rank
    shutil.rmtree(os.path.join(run_dir, "profile"), ignore_errors=True)
    with open(os.path.join(run_dir, "programs.json"), "w", encoding="utf-8") as f:
        f.write(programs)
    with open(os.path.join(run_dir, "run.json"), "w", encoding="utf-8") as f:
        json.dump(run, f, indent=1)
    with open(os.path.join(run_dir, "config.yaml"), "w", encoding="utf-8") as f:
        f.write(config_yaml)


def _msrun_env(device: str) -> dict:
    env = dict(os.environ)
    if device == "ascend":
        env["MS_DEV_RUNTIME_CONF"] = runtime_conf(env.get("MS_DEV_RUNTIME_CONF", ""))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")  # msrun starts `python`
    env["PYTHONPATH"] = PACKAGE_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("GLOG_v", "3")  # MindSpore: errors only
    return env


def _find_msrun(env: dict) -> str:
    msrun = os.path.join(os.path.dirname(sys.executable), "msrun")
    if not os.path.exists(msrun):
        msrun = shutil.which("msrun", path=env["PATH"])
    if msrun is None:
        raise FileNotFoundError("msrun not found beside the interpreter or on PATH; "
                                "pip install -r requirements-mindspore.txt")
    return msrun


def _report(args, run_dir: str, world: int, ranks: range, code: int | None, wall: float) -> int:
    err = first_error(run_dir, ranks)
    if err and (code is None or code != 0 or hung_ranks(run_dir, ranks)):
        print(f"ppstream train: first worker error: {err}", flush=True)
    if code is None:
        print(f"ppstream train: TIMEOUT after {args.timeout:.0f} s; ranks that did not finish:", flush=True)
        for line in hung_ranks(run_dir, ranks) or ["(every rank finished; the launcher hung)"]:
            print("  " + line, flush=True)
        return 124
    hung = hung_ranks(run_dir, ranks)
    if code != 0 or hung:
        print(f"ppstream train: job failed (msrun exit {code}); ranks that did not finish:", flush=True)
        for line in hung:
            print("  " + line, flush=True)
        print(f"  worker logs: {os.path.join(run_dir, 'msrun_log')}", flush=True)
        return 1
    summary = summarize(run_dir, ranks, world)
    summary["wall_s"] = wall
    with open(os.path.join(run_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    if not summary["losses"]:
        print(f"ppstream train: ranks {ranks.start}..{ranks.stop - 1} of this node hold no loss (another node's do)")
    first = summary["first_step"]
    for k, ms_ in enumerate(summary["step_ms"]):
        loss = f"loss {summary['losses'][k]:.6f}  " if summary["losses"] else ""
        rec = summary["opt"][k] if k < len(summary["opt"]) else {}
        extra = "".join([f"  grad_norm {rec['grad_norm']:.4g}" if rec.get("grad_norm") is not None else "",
                         f"  lr {rec['lr']:.4g}" if rec.get("lr") is not None else "",
                         f"  loss_scale {rec['loss_scale']:g}" if rec.get("loss_scale") is not None else "",
                         "  (update skipped: inf/nan gradient)" if rec.get("skipped") else ""])
        print(f"step {first + k}: {loss}step {ms_:.0f} ms (slowest rank){extra}", flush=True)
    for done, ev in summary["eval"]:
        print(f"eval after {done} steps: loss {ev:.6f}", flush=True)
    print(f"ppstream train: done in {wall:.1f} s (launch included); peak RSS per rank "
          f"{min(summary['peak_rss_mb']):.0f}..{max(summary['peak_rss_mb']):.0f} MiB", flush=True)
    return 0


def _checkpointing(args, cfg: RunConfig, world: dict, steps: int) -> dict:
    """run.json's checkpoint fields: ``save_every``, ``checkpoint_meta`` (what a checkpoint of this
    run records about it), and with ``--resume`` the checkpoint directory and its step — checked
    here, before any worker starts (components/checkpoint.py)."""
    from ppstream.mindspore.components import checkpoint
    from ppstream.mindspore.components.loss_scale import scaling_enabled
    from ppstream.mindspore.components.lr_schedule import LrSchedule
    if args.save_every < 0:
        raise RunConfigError(f"--save-every {args.save_every}: expected N >= 1 (or 0: never)")
    meta = {"world": {k: world[k] for k in ("pp", "vpp", "shard", "replicate")},
            "stage_layers": [list(x) for x in cfg.stage_layers], "model": cfg.model,
            "recipe": {"model": cfg.train["model"], "data": cfg.train["data"]},
            "schedule": LrSchedule.from_train(cfg.train, steps).to_json(),
            "loss_scaling": scaling_enabled(cfg.train, cfg.model_dtype)}
    out = {"save_every": args.save_every, "checkpoint_meta": meta}
    if args.resume:
        ckpt = checkpoint.resolve(args.resume)
        got = checkpoint.check_resumable(ckpt, meta, steps)
        out.update(resume=ckpt, start_step=got["step"])
        print(f"ppstream train: resuming from {ckpt} (after step {got['step'] - 1}; steps {got['step']}..{steps - 1})",
              flush=True)
    return out


def fail_fast(cfg: RunConfig, dp: int, device: str) -> None:
    """Before any worker starts: import the model and data factories, build the model, read the
    first batch and, on CPU, run one forward (recipe.check). A bad key raises with its name."""
    from ppstream.mindspore.launch.worker import setup_mindspore_cpu
    setup_mindspore_cpu()
    check(cfg, dp, forward=(device == "cpu"))


def launch(args, cfg: RunConfig, core_overrides: dict[str, str]) -> int:
    device = _device(args.device)
    if device == "cpu" and cfg.builtin_model and cfg.model["dtype"] not in CPU_DTYPES:
        raise RunConfigError(f"{args.config}: model.dtype={cfg.model['dtype']} is not supported on CPU (MindSpore 2.10's "
                             f"CPU MatMul has no bfloat16 kernel); use {' or '.join(CPU_DTYPES)}, or --device ascend")
    if device == "cpu" and cfg.train["hccl_buffer_size"]:
        raise RunConfigError(f"{args.config}: train.hccl_buffer_size={cfg.train['hccl_buffer_size']} sizes HCCL's "
                             "buffers on Ascend; MCCL on CPU has none (leave it 0, or --device ascend)")
    profile = DEVICE_PROFILES[device]
    cluster = cluster_from_args(args, device)
    programs = _compile_checked(args, cluster, profile, core_overrides)
    pset = json.loads(programs)
    fail_fast(cfg, pset["world"]["shard"] * pset["world"]["replicate"], device)
    world = len(pset["programs"])
    run_dir = os.path.abspath(args.out)
    steps = args.steps if args.steps is not None else int(cfg.train["steps"])
    ranks = cluster.local_ranks(world)
    run = {"config": cfg.to_json(), "steps": steps, "device": device, "record": args.record,
           "profile": args.profile, "straggle": _straggle(args.straggle), "verified_under": profile,
           **_checkpointing(args, cfg, pset["world"], steps), **run_layout(cfg, pset, ranks),
           "comm": comm_memory(pset, ranks, cfg.train["hccl_buffer_size"], env_buffsize_mb(os.environ))}
    _prepare_run_dir(run_dir, world, programs, run, config_that_ran(args, cfg, core_overrides))
    w = pset["world"]
    print(f"ppstream train: {world} ranks (pp={w['pp']} vpp={w['vpp']} shard={w['shard']} replicate={w['replicate']}, "
          f"{pset['mode']} {pset['policy']}), device {device}, programs verified under {profile}, run dir {run_dir}",
          flush=True)
    if device == "ascend":
        c = run["comm"]
        print(f"ppstream train: HCCL: up to {max(c['groups'])} communication groups per rank (world included), "
              f"reserving up to {max(c['reserved_mb'])} MB of device memory per rank (2 x buffer each; "
              f"train.hccl_buffer_size={c['hccl_buffer_size_mb']}, HCCL_BUFFSIZE={c['world_buffer_mb']})", flush=True)
    env = _msrun_env(device)
    cmd = msrun_command(_find_msrun(env), cluster, world, WORKER, run_dir)
    log_dir = cluster.log_dir or os.path.join(run_dir, "msrun_log")
    loss_rank = (w["pp"] - 1) * w["shard"] * w["replicate"]
    t0 = time.monotonic()
    code = run_msrun(cmd, env, os.path.join(run_dir, "msrun.out"), args.timeout,
                     LogFollower(os.path.join(log_dir, f"worker_{loss_rank}.log")) if loss_rank in ranks else None)
    return _report(args, run_dir, world, ranks, code, time.monotonic() - t0)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        overrides = _overrides(args.set)
        if args.reduce_grad:
            overrides["data_parallel.reduce_grad"] = args.reduce_grad
        cfg = load_run_config(args.config, overrides)
        core = {k: v for k, v in overrides.items() if not k.startswith(("model.", "train."))}
        if args.baseline and (args.save_every or args.resume):
            raise RunConfigError("--baseline runs the single-process reference from scratch; it takes no "
                                 "--save-every / --resume")
        if args.baseline:
            import ppstream
            w = json.loads(ppstream.compile(args.config, False, "strict", core))["world"]
            from ppstream.mindspore.training.baseline import run_baseline
            steps = args.steps if args.steps is not None else int(cfg.train["steps"])
            run_baseline(cfg, w["shard"] * w["replicate"], steps, os.path.abspath(args.out))
            return 0
        return launch(args, cfg, core)
    except (RunConfigError, WorldTooLarge, ValueError, FileNotFoundError) as e:  # CheckpointError is a ValueError
        print(f"ppstream train: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
