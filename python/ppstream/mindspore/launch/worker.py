"""One rank of a ``ppstream train`` run (the script ``msrun`` starts once per rank).

Usage (by the launcher): ``python worker.py RUN_DIR``. RUN_DIR/run.json holds the run config,
RUN_DIR/programs.json the verified program set. Writes RUN_DIR/progress/rank{r}.txt before
every instruction, and at the end RUN_DIR/rank{r}/result.json (losses, collective counts,
forward runs, step times, peak RSS, the optimizer step's figures, evaluation losses), trace.json
(host Chrome trace), params.npz (gathered full parameters, shard index 0 only), with ``--record``
record.json, with ``--profile`` MindSpore's profiler output under RUN_DIR/profile/
(``rank{r}_<pid>_<time>_ascend_ms``; every rank's in one directory, which ``ppstream analyze
RUN_DIR/profile`` reads); with ``--save-every N`` its part of RUN_DIR/checkpoints/step{k}/ every N
steps; with ``--resume`` it first restores the checkpoint named in run.json (components/checkpoint.py).

The process dies with its parent (``PR_SET_PDEATHSIG``): msrun starts workers in their own
sessions, so without this a killed launcher would leave them running.
"""
from __future__ import annotations

import json
import os
import resource
import sys

if __name__ == "__main__":
    if __package__ in (None, ""):
        # Run as a file by msrun: make the ppstream package importable.
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    from ppstream.mindspore.launch.msrun import die_with_parent
    die_with_parent()


def choose_platform(device: str, record: bool, straggle_ms: float, hccl_buffer_size_mb: int = 0):
    """The rank's platform: the device's, wrapped by the straggler and recording platforms."""
    if device == "ascend":
        from ppstream.mindspore.platforms.ascend import AscendPlatform
        plat = AscendPlatform(hccl_buffer_size_mb)
    else:
        from ppstream.mindspore.platforms.cpu import CpuPlatform
        plat = CpuPlatform()
    if straggle_ms > 0:
        from ppstream.mindspore.platforms.straggler import StragglerPlatform
        plat = StragglerPlatform(plat, straggle_ms)
    if record:
        from ppstream.mindspore.platforms.recording import RecordingPlatform
        plat = RecordingPlatform(plat)
    return plat


_threads_set = False  # threads_num raises RuntimeError when set twice in one process


def cpu_settings() -> None:
    """One kernel thread and blocking launches: on a loaded 2-core machine MindSpore's async
    dispatch and thread pools made each tiny op ~20x slower (measured, docs/runtime.md).
    ``device_context.cpu.op_tuning.threads_num``: ``set_context(runtime_num_threads=)`` is
    deprecated (MindSpore warns on every use)."""
    global _threads_set
    import mindspore as ms
    if not _threads_set:
        ms.device_context.cpu.op_tuning.threads_num(1)
        _threads_set = True
    ms.runtime.launch_blocking()


def setup_mindspore_cpu() -> None:
    """MindSpore on CPU in PyNative mode with ``cpu_settings`` (one process: launcher, baseline, Pipeline)."""
    import mindspore as ms
    ms.set_device("CPU")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    cpu_settings()


def init_mindspore(device: str) -> int:
    """Device, PyNative mode, communication; returns this rank."""
    import mindspore as ms
    from mindspore.communication import get_rank, init
    if device == "ascend":
        from ppstream.mindspore.launch.msrun import check_runtime_conf
        check_runtime_conf(os.environ.get("MS_DEV_RUNTIME_CONF", ""))
    ms.set_device("Ascend" if device == "ascend" else "CPU")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    if device != "ascend":
        cpu_settings()
    init()
    return get_rank()


def peak_rss_mb() -> float:
    """This process's peak resident set size (ru_maxrss, KiB on Linux) in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def train_loop(rt, run: dict, run_dir: str, profiler, rank: int, progress) -> dict:
    """The per-step loop: steps ``start..steps-1`` (``start`` from a resumed checkpoint), an
    evaluation after every ``train.eval_every`` completed steps, a checkpoint after every
    ``save_every``. Returns the per-step record: losses (ranks with the last stage), step times
    (ms), the optimizer step's figures, evaluation losses."""
    from ppstream.mindspore.components import checkpoint
    from ppstream.mindspore.components.evaluate import should_evaluate

    start, steps, every = int(run.get("start_step", 0)), int(run["steps"]), int(run.get("save_every", 0))
    out = {"first_step": start, "losses": [], "step_ms": [], "opt": [], "eval": []}
    for step in range(start, steps):
        loss = rt.run_step(step)
        out["step_ms"].append(rt.last_step_ms)
        out["opt"].append(rt.opt.record)
        profiler.step()
        if loss is not None:
            out["losses"].append(loss)
            print(f"[r{rank}] step {step} loss {loss:.6f} ({out['step_ms'][-1]:.0f} ms)", flush=True)
        if should_evaluate(rt.cfg.train, step + 1):
            progress.write(f"eval after step {step}")
            ev = rt.evaluate()
            if ev is not None:
                out["eval"].append([step + 1, ev])
                print(f"[r{rank}] eval after step {step}: loss {ev:.6f}", flush=True)
        if every and (step + 1) % every == 0:
            progress.write(f"checkpoint after step {step}")
            checkpoint.save(checkpoint.step_dir(run_dir, step + 1), step + 1, rt, run["checkpoint_meta"])
    profiler.stop()
    return out


def write_outputs(out_dir: str, rt, platform, record: bool, log: dict) -> None:
    """Result writing: params.npz (shard index 0), trace.json, record.json (``--record``), result.json."""
    import numpy as np
    params = rt.full_parameters()
    topo = rt.topo
    if topo.shard_index == 0:
        np.savez(os.path.join(out_dir, "params.npz"), **params)
    rt.trace.write(os.path.join(out_dir, "trace.json"))
    if record:  # choose_platform wrapped the platform in a RecordingPlatform
        platform.dump(os.path.join(out_dir, "record.json"))
    result = {"rank": topo.rank, "pp_rank": topo.pp_rank, "dp_index": topo.dp_index,
              "replicate_index": topo.replicate_index, "shard_index": topo.shard_index, "platform": platform.name,
              "platform_label": platform.label, "local_stages": sorted(rt.stages), **log,
              "counts": dict(platform.counts),
              "forward_runs": {str(s): n for s, n in rt.forward_runs().items()}, "peak_rss_mb": peak_rss_mb()}
    with open(os.path.join(out_dir, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)


def read_json(run_dir: str, name: str) -> dict:
    """RUN_DIR/run.json (the launcher's run config) or RUN_DIR/programs.json (the verified programs)."""
    with open(os.path.join(run_dir, name), encoding="utf-8") as f:
        return json.load(f)


def build_rank(run: dict, pset: dict, rank: int, progress):
    """Platform and world setup: this rank's topology, program and platform (which must be the
    one the programs were verified under), then its RankRuntime. Returns (runtime, platform)."""
    from ppstream.mindspore.parallel.groups import Topology
    from ppstream.mindspore.training.rank import RankRuntime
    from ppstream.mindspore.runconfig import RunConfig

    w = pset["world"]
    topo = Topology(w["pp"], w["vpp"], w["shard"], w["replicate"], rank)
    program = next(p for p in pset["programs"] if p["rank"] == rank)
    platform = choose_platform(run["device"], run.get("record", False),
                               float(run.get("straggle", {}).get(str(rank), 0.0)),
                               int(run["config"]["train"]["hccl_buffer_size"]))
    if platform.profile != run["verified_under"]:
        raise RuntimeError(f"platform {platform.label} needs programs verified under {platform.profile}, "
                           f"these were verified under {run['verified_under']}")
    print(f"[r{rank}] platform {platform.label}; world pp={topo.pp} vpp={topo.vpp} shard={topo.shard} "
          f"replicate={topo.replicate} mode={pset['mode']} policy={pset['policy']}", flush=True)
    rt = RankRuntime(RunConfig.from_json(run["config"]), topo, program, pset["mode"].lower(), platform, progress,
                     steps=run["steps"])
    if run.get("resume"):
        from ppstream.mindspore.components import checkpoint
        progress.write(f"restore {run['resume']}")
        checkpoint.load(run["resume"], rt)
    return rt, platform


def main(run_dir: str) -> int:
    """One rank, in named steps: read run.json, start MindSpore, build_rank (platform and world),
    train_loop (the steps), write_outputs (results); progress marks each for the launcher."""
    from ppstream.mindspore.training.executor import Progress
    from ppstream.mindspore.training.profiling import StepProfiler

    run = read_json(run_dir, "run.json")
    rank = init_mindspore(run["device"])
    progress = Progress(os.path.join(run_dir, "progress", f"rank{rank}.txt"))
    progress.write("init")
    out_dir = os.path.join(run_dir, f"rank{rank}")
    os.makedirs(out_dir, exist_ok=True)
    try:
        rt, platform = build_rank(run, read_json(run_dir, "programs.json"), rank, progress)
        profiler = StepProfiler(os.path.join(run_dir, "profile") if run.get("profile") else None,
                               run["steps"] - int(run.get("start_step", 0)), rank)
        log = train_loop(rt, run, run_dir, profiler, rank, progress)
        progress.write("final gather")
        write_outputs(out_dir, rt, platform, run.get("record", False), log)
    except Exception as e:
        record_failure(run_dir, rank, e)
        raise
    progress.write("done")
    return 0


def record_failure(run_dir: str, rank: int, exc: BaseException) -> None:
    """RUN_DIR/progress/rank{R}.error: the time and the error line (``DataError: …``, its first
    line) of the exception that ends this worker; the launcher prints the earliest one
    (launch/cli.py ``first_error``), whichever rank raised it."""
    import time
    line = f"{type(exc).__name__}: {exc}".splitlines()[0]
    path = os.path.join(run_dir, "progress", f"rank{rank}.error")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(f"{time.time():.6f} {line}\n")
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
