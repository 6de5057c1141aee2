"""HsdpState: one virtual stage's parameters stored as shards (fully_shard-style flat layout).

The stage's parameters, flattened in a fixed order and zero-padded to a multiple of the shard
size, form one flat vector; shard member i owns slice i. ``unshard`` all-gathers the slices in
the shard group and writes the full parameters; ``reshard`` frees them (zero-size data);
``reduce_grad`` divides the accumulated unsharded gradients by dp first (pre-divide, as
PyTorch FSDP does when ReduceOp.AVG is not used: sums of pre-divided values stay in range), then
reduce-scatters them in the shard group and all-reduces the shard in the replicate group — the
mean over data-parallel ranks, landing in the sharded gradient; ``take_gradient`` hands it to
the optimizer step (components/opt_step.py), which calls ``apply_update`` (AdamW on the shard).
With shard 1 (plain DP, or no DP at all) the parameters are never freed and the "shard" is the
whole vector. The collectives travel in ``train.reduce_dtype`` / ``train.all_gather_dtype``
(components/precision.py; float32: no cast).
"""
from __future__ import annotations

import numpy as np
import mindspore as ms
from mindspore import ops

from ppstream.mindspore.components.precision import comm_dtype
from ppstream.mindspore.parallel.groups import Group
from ppstream.mindspore.training.optim import AdamW
from ppstream.mindspore.training.stage import PipelineStage


class HsdpState:

    def __init__(self, stage: PipelineStage, shard_group: Group, replicate_group: Group, sharded: bool,
                 reduced: bool, train_cfg: dict):
        self.stage, self.shard_group, self.replicate_group = stage, shard_group, replicate_group
        self.sharded, self.reduced = sharded, reduced
        self.dp = shard_group.size * replicate_group.size
        self.shapes = [tuple(p.shape) for p in stage.params]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.numel = sum(self.sizes)
        n = shard_group.size if sharded else 1
        self.shard_len = -(-self.numel // n)
        self.padded = self.shard_len * n
        full = self._flatten([p.value() for p in stage.params])
        idx = shard_group.index if sharded else 0
        self.shard = full[idx * self.shard_len:(idx + 1) * self.shard_len].copy()
        self.grad_shard = None
        self.optim = AdamW(self.shard_len, train_cfg["betas"], train_cfg["eps"], train_cfg["weight_decay"])
        self.reduce_dtype = comm_dtype(train_cfg, "reduce_dtype")
        self.gather_dtype = comm_dtype(train_cfg, "all_gather_dtype")
        if sharded:
            self.reshard()

    def _flatten(self, tensors) -> ms.Tensor:
        flat = ops.cat([t.reshape(-1) for t in tensors])
        if self.padded > self.numel:
            flat = ops.cat([flat, ops.zeros((self.padded - self.numel,), ms.float32)])
        return flat

    def _write_full(self, full: ms.Tensor) -> None:
        off = 0
        for p, shape, size in zip(self.stage.params, self.shapes, self.sizes):
            p.set_data(full[off:off + size].reshape(shape).copy(), slice_shape=True)
            off += size

    def unshard(self, platform, tag: str) -> None:
        full = platform.all_gather(_cast(self.shard, self.gather_dtype), self.shard_group, tag + " all_gather")
        self._write_full(_cast(full, ms.float32))

    def reshard(self) -> None:
        for p in self.stage.params:
            p.set_data(ops.zeros((0,), ms.float32), slice_shape=True)

    def reduce_grad(self, platform, tag: str) -> None:
        grads = self.stage.take_grads()
        platform.hold(tag + " grads", grads)  # read on the reduction's stream (holds.py)
        flat = self._flatten(grads) / float(self.dp)  # pre-divide: the sums below are means
        g = _cast(flat, self.reduce_dtype)
        if self.sharded:
            g = platform.reduce_scatter_sum(g, self.shard_group, tag + " reduce_scatter")
        if self.replicate_group.size > 1:
            g = platform.all_reduce_sum(g, self.replicate_group, tag + " all_reduce")
        self.grad_shard = _cast(g, ms.float32)

    def take_gradient(self) -> ms.Tensor:
        """This step's float32 gradient of the shard (flat [shard_len]); resets it."""
        if self.reduced:
            if self.grad_shard is None:
                raise RuntimeError(f"OPT_STEP: stage s{self.stage.stage} was not reduced this step")
            g = self.grad_shard
        else:  # no data parallelism: the local accumulated gradient is the gradient
            g = self._flatten(self.stage.take_grads())
        self.grad_shard = None
        return g

    def apply_update(self, g: ms.Tensor, lr: float) -> None:
        """AdamW on the shard with gradient ``g`` (flat float32 [shard_len]) and learning rate ``lr``."""
        self.shard = self.optim.step(self.shard, g, lr)
        if not self.sharded:
            self._write_full(self.shard)

    def restore(self, shard: ms.Tensor, m: ms.Tensor, v: ms.Tensor, t: int) -> None:
        """Checkpoint restore: the shard and its AdamW state, bit for bit (components/checkpoint.py)."""
        self.shard, self.optim.m, self.optim.v, self.optim.t = shard, m, v, t
        if not self.sharded:
            self._write_full(self.shard)

    def full_parameters(self, platform, tag: str) -> dict[str, np.ndarray]:
        """Gathers the shards (a collective in the shard group) → {name: array}."""
        full = platform.all_gather(self.shard, self.shard_group, tag) if self.sharded else self.shard
        arr = full.asnumpy()
        out, off = {}, 0
        for (name, _p), shape, size in zip(self.stage.named, self.shapes, self.sizes):
            out[name] = arr[off:off + size].reshape(shape).copy()
            off += size
        return out


def _cast(t: ms.Tensor, dtype) -> ms.Tensor:
    return t if t.dtype == dtype else t.astype(dtype)
