"""The single-process, non-pipelined reference: the whole model as one stage, same init and data.

It runs every (dp index, microbatch) of a step in turn with loss scale 1 / (dp * m), sums the
gradients and takes the same AdamW step, so a pipelined / sharded run must reproduce its
losses and parameters up to floating-point summation order.
"""
from __future__ import annotations

import json
import os
import time


def train_baseline(cfg, dp: int, steps: int, data=None) -> tuple[list[float], list[float], dict]:
    """(loss per step, step ms, final parameters {name: array}); MindSpore must be set up.
    ``data``: the GlobalBatches to read (default: the config's ``train.data`` for ``dp`` ranks)."""
    import mindspore as ms

    from ppstream.mindspore.model.stage_cell import StageCell
    from ppstream.mindspore.parallel.groups import Group
    from ppstream.mindspore.recipe import build_parts, open_data, to_tensor
    from ppstream.mindspore.training.hsdp import HsdpState
    from ppstream.mindspore.training.stage import PipelineStage

    n_mb = cfg.micro_batch_num
    parts = build_parts(cfg)
    cell = StageCell(parts, (0, cfg.num_layers - 1), True, True, 1.0 / (n_mb * dp))
    stage = PipelineStage(0, cell)
    solo = Group("solo", (0,), 0)
    state = HsdpState(stage, solo, solo, sharded=False, reduced=False, train_cfg=cfg.train)
    data = open_data(cfg, dp) if data is None else data
    losses, step_ms = [], []
    for step in range(steps):
        t0 = time.perf_counter()
        total: ms.Tensor | None = None
        for d in range(dp):
            for j in range(n_mb):
                x, y = data.microbatch(step, d, j)
                loss = stage.forward(j, to_tensor(x), to_tensor(y))
                total = loss if total is None else total + loss
                stage.backward(j, None)
        state.opt_step()
        losses.append(float(total.asnumpy()))
        step_ms.append((time.perf_counter() - t0) * 1e3)
    return losses, step_ms, state.full_parameters(None, "final")


def run_baseline(cfg, dp: int, steps: int, out_dir: str) -> dict:
    import numpy as np

    from ppstream.mindspore.launch.worker import setup_mindspore_cpu
    setup_mindspore_cpu()
    losses, step_ms, params = train_baseline(cfg, dp, steps)
    for step, (loss, ms_) in enumerate(zip(losses, step_ms)):
        print(f"[baseline] step {step} loss {loss:.6f} ({ms_:.0f} ms)", flush=True)
    os.makedirs(out_dir, exist_ok=True)
    np.savez(os.path.join(out_dir, "params.npz"), **params)
    result = {"losses": losses, "step_ms": step_ms, "dp": dp}
    with open(os.path.join(out_dir, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return result
