"""One rank of a ``ppstream train`` run (the script ``msrun`` starts once per rank).

Usage (by the launcher): ``python worker.py RUN_DIR``. RUN_DIR/run.json holds the run config,
RUN_DIR/programs.json the verified program set. Writes RUN_DIR/progress/rank{r}.txt before
every instruction, and at the end RUN_DIR/rank{r}/result.json (losses, collective counts,
step times), trace.json (host Chrome trace), params.npz (gathered full parameters, shard
index 0 only) and, with recording, record.json.
"""
from __future__ import annotations

import json
import os
import sys
import time

if __name__ == "__main__" and __package__ in (None, ""):
    # Run as a file by msrun: make the ppstream package importable.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def choose_platform(device: str, record: bool):
    if device == "ascend":
        from ppstream.mindspore.platform_ascend import AscendPlatform
        plat = AscendPlatform()
    else:
        from ppstream.mindspore.platform_cpu import CpuPlatform
        plat = CpuPlatform()
    if record:
        from ppstream.mindspore.platform_recording import RecordingPlatform
        plat = RecordingPlatform(plat)
    return plat


def cpu_settings() -> None:
    """One kernel thread and blocking launches: on a loaded 2-core machine MindSpore's async
    dispatch and thread pools made each tiny op ~20x slower (measured, docs/runtime.md)."""
    import mindspore as ms
    ms.set_context(runtime_num_threads=1)
    ms.runtime.launch_blocking()


def main(run_dir: str) -> int:
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        run = json.load(f)
    import numpy as np
    import mindspore as ms
    from mindspore.communication import get_rank, init

    from ppstream.mindspore.data import TextData, load_corpus
    from ppstream.mindspore.executor import Executor, Progress
    from ppstream.mindspore.groups import Topology
    from ppstream.mindspore.hsdp import HsdpState
    from ppstream.mindspore.model import StageCell, one_hot
    from ppstream.mindspore.runconfig import RunConfig
    from ppstream.mindspore.stage import PipelineStage
    from ppstream.mindspore.trace import HostTrace

    device = run["device"]
    ms.set_device("Ascend" if device == "ascend" else "CPU")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    if device != "ascend":
        cpu_settings()
    init()
    rank = get_rank()
    os.makedirs(os.path.join(run_dir, "progress"), exist_ok=True)
    progress = Progress(os.path.join(run_dir, "progress", f"rank{rank}.txt"))
    progress.write("init")
    out_dir = os.path.join(run_dir, f"rank{rank}")
    os.makedirs(out_dir, exist_ok=True)

    with open(os.path.join(run_dir, "programs.json"), encoding="utf-8") as f:
        pset = json.load(f)
    w = pset["world"]
    cfg = RunConfig.from_json(run["config"])
    topo = Topology(w["pp"], w["vpp"], w["shard"], w["replicate"], rank)
    program = next(p for p in pset["programs"] if p["rank"] == rank)
    mode = pset["mode"].lower()
    platform = choose_platform(device, run.get("record", False))
    print(f"[r{rank}] platform {platform.name}; world pp={topo.pp} vpp={topo.vpp} shard={topo.shard} "
          f"replicate={topo.replicate} mode={mode} policy={pset['policy']}", flush=True)
    shard_g, rep_g = topo.shard_group(), topo.replicate_group()
    platform.setup(topo.world_size, [shard_g, rep_g])

    m, t = cfg.model, cfg.train
    stages, states = {}, {}
    for s in topo.local_stages():
        cell = StageCell(m, t["seed"], cfg.stage_layers[s], cfg.num_layers, s == 0, s == cfg.num_stages - 1,
                         1.0 / cfg.micro_batch_num)
        stages[s] = PipelineStage(s, cell)
        states[s] = HsdpState(stages[s], shard_g, rep_g, sharded=(mode != "none" and topo.shard > 1),
                              reduced=(mode != "none"), train_cfg=t)
    data = TextData(load_corpus(t["data"]), m["seq_len"], t["micro_batch_size"], cfg.micro_batch_num, topo.dp,
                    t["seed"])
    straggle = float(run.get("straggle", {}).get(str(rank), 0.0))
    trace = HostTrace(rank)
    ex = Executor(program, cfg.num_stages, topo.pp, stages, states, platform,
                  (t["micro_batch_size"], m["seq_len"], m["hidden"]), trace, progress, straggle)

    losses, step_ms = [], []
    holds_loss = (cfg.num_stages - 1) in stages
    for step in range(run["steps"]):
        cache: dict[int, tuple] = {}

        def batch(mb: int, step=step, cache=cache):
            if mb not in cache:
                tok, lab = data.microbatch(step, topo.dp_index, mb)
                cache[mb] = (one_hot(tok, m["vocab"]), one_hot(lab, m["vocab"]))
            return cache[mb]

        t0 = time.perf_counter()
        loss = ex.run_step(step, batch)
        step_ms.append((time.perf_counter() - t0) * 1e3)
        if holds_loss:
            losses.append(loss)
            print(f"[r{rank}] step {step} loss {loss:.6f} ({step_ms[-1]:.0f} ms)", flush=True)
    progress.write("final gather")
    params = {}
    for s, st in states.items():
        params.update(st.full_parameters(platform, f"FINAL s{s}"))
    if topo.shard_index == 0:
        np.savez(os.path.join(out_dir, "params.npz"), **params)
    trace.write(os.path.join(out_dir, "trace.json"))
    if hasattr(platform, "dump"):
        platform.dump(os.path.join(out_dir, "record.json"))
    result = {"rank": rank, "pp_rank": topo.pp_rank, "dp_index": topo.dp_index, "replicate_index": topo.replicate_index,
              "shard_index": topo.shard_index, "platform": platform.name, "local_stages": sorted(stages),
              "losses": losses, "step_ms": step_ms, "counts": dict(platform.counts)}
    with open(os.path.join(out_dir, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    progress.write("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
