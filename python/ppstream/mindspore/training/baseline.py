"""The single-process, non-pipelined reference: the whole model as one stage, same init and data.

It runs every (dp index, microbatch) of a step in turn with loss scale 1 / (dp * m), sums the
gradients and takes the same AdamW step, so a pipelined / sharded run must reproduce its
losses and parameters up to floating-point summation order.
"""
from __future__ import annotations

import json
import os
import time


def train_baseline(cfg, dp: int, steps: int, corpus=None) -> tuple[list[float], list[float], dict]:
    """(loss per step, step ms, final parameters {name: array}); MindSpore must be set up."""
    import mindspore as ms

    from ppstream.mindspore.data.text import TextData, load_corpus
    from ppstream.mindspore.parallel.groups import Group
    from ppstream.mindspore.training.hsdp import HsdpState
    from ppstream.mindspore.model.moe import StageCell, one_hot
    from ppstream.mindspore.training.stage import PipelineStage

    m, t = cfg.model, cfg.train
    n_mb = cfg.micro_batch_num
    cell = StageCell(m, t["seed"], (0, cfg.num_layers - 1), cfg.num_layers, True, True, 1.0 / (n_mb * dp))
    stage = PipelineStage(0, cell)
    solo = Group("solo", (0,), 0)
    state = HsdpState(stage, solo, solo, sharded=False, reduced=False, train_cfg=t)
    data = TextData(load_corpus(t["data"]) if corpus is None else corpus, m["seq_len"], t["micro_batch_size"], n_mb,
                    dp, t["seed"])
    losses, step_ms = [], []
    for step in range(steps):
        t0 = time.perf_counter()
        total: ms.Tensor | None = None
        for d in range(dp):
            for j in range(n_mb):
                tok, lab = data.microbatch(step, d, j)
                loss = stage.forward(j, one_hot(tok, m["vocab"]), one_hot(lab, m["vocab"]))
                total = loss if total is None else total + loss
                stage.backward(j, None)
        state.opt_step()
        losses.append(float(total.asnumpy()))
        step_ms.append((time.perf_counter() - t0) * 1e3)
    return losses, step_ms, state.full_parameters(None, "final")


def run_baseline(cfg, dp: int, steps: int, out_dir: str) -> dict:
    import numpy as np
    import mindspore as ms

    ms.set_device("CPU")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    from ppstream.mindspore.launch.worker import cpu_settings
    cpu_settings()
    losses, step_ms, params = train_baseline(cfg, dp, steps)
    for step, (loss, ms_) in enumerate(zip(losses, step_ms)):
        print(f"[baseline] step {step} loss {loss:.6f} ({ms_:.0f} ms)", flush=True)
    os.makedirs(out_dir, exist_ok=True)
    np.savez(os.path.join(out_dir, "params.npz"), **params)
    result = {"losses": losses, "step_ms": step_ms, "dp": dp}
    with open(os.path.join(out_dir, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return result
