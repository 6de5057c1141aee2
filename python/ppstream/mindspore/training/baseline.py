"""The single-process, non-pipelined reference: the whole model as one stage, same init and data.

It runs every (dp index, microbatch) of a step in turn with loss scale 1 / (dp * m), sums the
gradients and takes the same optimizer step (the same ``OptStep`` component: loss-scale check,
clipping, LR schedule, AdamW — over the whole gradient, no collective), and evaluates on the same
held-out batches, so a pipelined / sharded run must reproduce its losses, gradient norms,
evaluation losses and parameters up to floating-point summation order.
"""
from __future__ import annotations

import json
import os
import time


def train_baseline(cfg, dp: int, steps: int, data=None, log: dict | None = None,
                   eval_data=None) -> tuple[list[float], list[float], dict]:
    """(loss per step, step ms, final parameters {name: array}); MindSpore must be set up.
    ``data``: the GlobalBatches to read (default: the config's ``train.data`` for ``dp`` ranks);
    ``eval_data``: the held-out batches (default: ``recipe.open_eval_data``). ``log``, when given,
    receives ``opt`` (OptStep's record per step: grad_norm, lr, loss_scale, skipped) and ``eval``
    ([steps done, eval loss] per evaluation)."""
    import mindspore as ms

    from ppstream.mindspore.components.evaluate import should_evaluate
    from ppstream.mindspore.model.stage_cell import StageCell
    from ppstream.mindspore.parallel.groups import Group
    from ppstream.mindspore.recipe import build_parts, open_data, open_eval_data, to_tensor
    from ppstream.mindspore.training.hsdp import HsdpState
    from ppstream.mindspore.training.rank import build_opt_step
    from ppstream.mindspore.training.stage import PipelineStage

    n_mb = cfg.micro_batch_num
    parts = build_parts(cfg)
    cell = StageCell(parts, (0, cfg.num_layers - 1), True, True, 1.0 / (n_mb * dp))
    stage = PipelineStage(0, cell)
    solo = Group("solo", (0,), 0)
    state = HsdpState(stage, solo, solo, sharded=False, reduced=False, train_cfg=cfg.train)
    data = open_data(cfg, dp) if data is None else data
    eval_data = open_eval_data(cfg, dp) if eval_data is None else eval_data
    opt = build_opt_step(cfg, steps, None)
    log = {} if log is None else log
    log.update(opt=[], eval=[])
    losses, step_ms = [], []
    for step in range(steps):
        t0 = time.perf_counter()
        total: ms.Tensor | None = None
        for d in range(dp):
            for j in range(n_mb):
                x, y = data.microbatch(step, d, j)
                loss = stage.forward(j, to_tensor(x), to_tensor(y))
                total = loss if total is None else total + loss
                stage.backward(j, None, opt.loss_scale)
        opt.run({0: state}, None, step)
        log["opt"].append(opt.record)
        losses.append(float(total.asnumpy()))
        step_ms.append((time.perf_counter() - t0) * 1e3)
        if should_evaluate(cfg.train, step + 1):
            log["eval"].append([step + 1, _evaluate(stage, eval_data, dp, n_mb, int(cfg.train["eval_batches"]))])
    return losses, step_ms, state.full_parameters(None, "final")


def _evaluate(stage, data, dp: int, n_mb: int, batches: int) -> float:
    """Mean over held-out batches 0..batches-1 of the global batch's mean loss (no graph recorded)."""
    from ppstream.mindspore.recipe import to_tensor
    total = 0.0
    for i in range(batches):
        for d in range(dp):
            for j in range(n_mb):
                x, y = data.microbatch(i, d, j)
                total += float(stage.evaluate(to_tensor(x), to_tensor(y)).asnumpy())
    return total / batches


def run_baseline(cfg, dp: int, steps: int, out_dir: str) -> dict:
    import numpy as np

    from ppstream.mindspore.launch.worker import setup_mindspore_cpu
    setup_mindspore_cpu()
    log: dict = {}
    losses, step_ms, params = train_baseline(cfg, dp, steps, log=log)
    for step, (loss, ms_) in enumerate(zip(losses, step_ms)):
        print(f"[baseline] step {step} loss {loss:.6f} ({ms_:.0f} ms)", flush=True)
    for done, ev in log["eval"]:
        print(f"[baseline] eval after {done} steps: loss {ev:.6f}", flush=True)
    os.makedirs(out_dir, exist_ok=True)
    np.savez(os.path.join(out_dir, "params.npz"), **params)
    result = {"losses": losses, "step_ms": step_ms, "dp": dp, **log}
    with open(os.path.join(out_dir, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return result
