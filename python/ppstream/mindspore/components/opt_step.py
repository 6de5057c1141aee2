"""OptStep: what one rank's ``OPT_STEP`` does, composed from the training components.

In order, over the rank's local stages (their reduced float32 gradient shards):

1. loss scaling on: multiply every gradient by 1 / scale (``loss_scale``);
2. clipping or loss scaling on: one all-reduce (SUM) of [Σ g², number of non-finite elements]
   over the *norm group* (every PP rank × shard index of this replicate index: the ranks
   holding distinct shards, ``clipping``), read once on the host;
3. loss scaling on and a non-finite element anywhere: skip the update on every rank (the
   count is global, so all ranks agree), update the scaler, done;
4. clipping on: multiply every gradient by coeff when coeff = clip_grad / (norm + 1e-6) < 1;
5. AdamW with lr = schedule(n) (``lr_schedule``), n = updates so far; n += 1.

``record`` holds the step's figures for result.json: ``grad_norm`` (the global L2 norm before
clipping, of the unscaled gradient; None when not computed), ``lr``, ``loss_scale`` (None
without scaling), ``skipped``.
"""
from __future__ import annotations

import math

from ppstream.mindspore.components.clipping import check_finite, clip_coefficient, sum_of_squares
from ppstream.mindspore.components.loss_scale import DynamicLossScaler
from ppstream.mindspore.components.lr_schedule import LrSchedule


class OptStep:

    def __init__(self, schedule: LrSchedule, clip_grad: float, scaler: DynamicLossScaler | None, norm_group):
        self.schedule, self.clip_grad, self.scaler, self.norm_group = schedule, float(clip_grad), scaler, norm_group
        self.updates = 0  # n: optimizer updates taken (skipped steps do not count, as in Megatron)
        self.record: dict = {}

    @property
    def needs_stats(self) -> bool:
        """Whether OPT_STEP all-reduces gradient statistics (then the norm group must exist)."""
        return self.clip_grad > 0.0 or self.scaler is not None

    @property
    def loss_scale(self) -> float:
        """What the last stage's backward starts from (1.0 without scaling)."""
        return 1.0 if self.scaler is None else self.scaler.scale

    def _stats(self, grads: list, platform) -> tuple[float, int]:
        import mindspore as ms
        from mindspore import ops
        sq = sum_of_squares(grads)
        bad = ops.zeros((), ms.float32)
        for g in grads:
            bad = bad + ops.logical_not(ops.isfinite(g)).astype(ms.float32).sum()
        stats = ops.stack([sq, bad])
        if platform is not None and self.norm_group is not None:
            stats = platform.all_reduce_sum(stats, self.norm_group, "OPT_STEP grad_stats")
        sq_total, bad_total = (float(x) for x in stats.asnumpy())
        return math.sqrt(sq_total) if math.isfinite(sq_total) else sq_total, int(bad_total)

    def run(self, states: dict, platform, step: int) -> None:
        """One OPT_STEP over ``states`` ({stage: HsdpState}); ``platform`` None: one process."""
        order = sorted(states)
        grads = [states[s].take_gradient() for s in order]
        # a stage without trainable parameters has an empty shard: nothing to scale, count or update
        order = [s for s, g in zip(order, grads) if g.shape[0]]
        grads = [g for g in grads if g.shape[0]]
        scale = self.loss_scale
        if self.scaler is not None:
            grads = [g * (1.0 / scale) for g in grads]
        norm, bad = (None, 0)
        if self.needs_stats:
            norm, bad = self._stats(grads, platform)
        self.record = {"grad_norm": norm, "loss_scale": None if self.scaler is None else scale, "skipped": False,
                       "lr": None}
        if self.scaler is not None:
            self.scaler.update(bad > 0)
            if bad > 0:
                self.record["skipped"] = True
                return
        if self.clip_grad > 0.0:
            check_finite(norm, step)
            coeff = clip_coefficient(norm, self.clip_grad)
            if coeff is not None:
                grads = [g * coeff for g in grads]
        lr = self.schedule.lr(self.updates)
        self.record["lr"] = lr
        for s, g in zip(order, grads):
            states[s].apply_update(g, lr)
        self.updates += 1

    def state(self) -> dict:
        return {"updates": self.updates, "loss_scaler": None if self.scaler is None else self.scaler.state()}

    def load_state(self, d: dict) -> None:
        self.updates = int(d["updates"])
        if (d["loss_scaler"] is None) != (self.scaler is None):
            raise ValueError("checkpoint: loss scaling was " + ("off" if d["loss_scaler"] is None else "on") +
                             " when it was written, and is " + ("off" if self.scaler is None else "on") +
                             " now (train.loss_scale / model.dtype)")
        if self.scaler is not None:
            self.scaler = DynamicLossScaler.from_state(d["loss_scaler"])
