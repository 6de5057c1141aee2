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

Gradient buckets (the stage's ``StageCell`` has k > 1 buckets, model/layer_groups.py): the flat
vector is k segments, one per bucket, in forward order (bucket k-1, holding the stage's first
layers, first; so the parameters keep the order of ``named``), each zero-padded to a multiple of
the shard size on its own; shard member i owns slice i of every segment, and its shard is those
slices concatenated. ``reduce_grad(…, bucket=j)`` (``REDUCE_GRAD s bucket<j>/<k>``) takes only
bucket j's accumulated gradients and reduce-scatters / all-reduces only its segment, landing in
its slice of the sharded gradient; ``take_gradient`` needs every bucket reduced. ``unshard`` and
``full_parameters`` still make one all-gather and put each member's slices back in place. With
k = 1 it is the single segment above, byte for byte. Every element keeps its own arithmetic
(pre-divide, the member-order sum, AdamW), so the trained parameters equal k = 1's; only sums
over a shard (clipping's norm) add in another order.

Only the trainable parameters (``PipelineStage.params``, ``requires_grad=True``) are in the flat
vector; the stage's buffers (frozen parameters, BatchNorm's moving statistics) stay whole in the
Cells on every rank, never gathered, freed, reduced or updated. A stage (or a bucket) without
trainable parameters has an empty vector: its ``unshard``, ``reshard``, ``reduce_grad`` and
update do nothing and start no collective (every member of its groups holds the same stage, so
all of them skip it).
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
        self.n = shard_group.size if sharded else 1
        self.buckets = stage.buckets
        # forward order: (bucket or None for the whole stage, its positions in stage.params)
        order = [None] if self.buckets == 1 else list(reversed(range(self.buckets)))
        self.segments = [_Segment(j, range(len(stage.params)) if j is None else stage.cell.bucket_params(j),
                                  self.sizes, self.n) for j in order]
        off = 0
        for seg in self.segments:
            seg.shard_off, off = off, off + seg.shard_len
        self.shard_len = off
        self.padded = sum(seg.padded for seg in self.segments)  # shard_len × shard size
        idx = shard_group.index if sharded else 0
        self.shard = _cat([self._flatten([stage.params[i].value() for i in seg.positions], seg)
                           [idx * seg.shard_len:(idx + 1) * seg.shard_len] for seg in self.segments]).copy()
        self.grad_parts: dict = {}  # bucket (None: the whole stage) -> its reduced slice
        self.optim = AdamW(self.shard_len, train_cfg["betas"], train_cfg["eps"], train_cfg["weight_decay"])
        self.reduce_dtype = comm_dtype(train_cfg, "reduce_dtype")
        self.gather_dtype = comm_dtype(train_cfg, "all_gather_dtype")
        if sharded:
            self.reshard()

    def _flatten(self, tensors, seg: "_Segment") -> ms.Tensor:
        if not tensors:  # a bucket (or stage) without trainable parameters
            return ops.zeros((0,), ms.float32)
        flat = ops.cat([t.reshape(-1) for t in tensors])
        if seg.padded > seg.numel:
            flat = ops.cat([flat, ops.zeros((seg.padded - seg.numel,), ms.float32)])
        return flat

    def _in_place(self, gathered: ms.Tensor) -> ms.Tensor:
        """The all-gather of the shards (member-major) → the parameters' flat vector in order."""
        if len(self.segments) == 1:
            return gathered
        parts = []
        for seg in self.segments:
            starts = [m * self.shard_len + seg.shard_off for m in range(self.n)]
            parts.append(ops.cat([gathered[a:a + seg.shard_len] for a in starts])[:seg.numel])  # padding last
        return ops.cat(parts)

    def _segment(self, bucket, tag: str) -> "_Segment":
        for seg in self.segments:
            if seg.bucket == bucket:
                return seg
        have = "the whole stage" if self.buckets == 1 else f"buckets 0..{self.buckets - 1} of {self.buckets}"
        raise RuntimeError(f"{tag}: stage s{self.stage.stage} has no {'whole' if bucket is None else f'bucket {bucket}'}"
                           f" reduction: its gradients are reduced as {have}")

    def _write_full(self, full: ms.Tensor) -> None:
        off = 0
        for p, shape, size in zip(self.stage.params, self.shapes, self.sizes):
            p.set_data(full[off:off + size].reshape(shape).copy(), slice_shape=True)
            off += size

    def unshard(self, platform, tag: str) -> None:
        if self.numel == 0:
            return
        full = platform.all_gather(_cast(self.shard, self.gather_dtype), self.shard_group, tag + " all_gather")
        self._write_full(self._in_place(_cast(full, ms.float32)))

    def reshard(self) -> None:
        for p in self.stage.params:
            p.set_data(ops.zeros((0,), ms.float32), slice_shape=True)

    def reduce_grad(self, platform, tag: str, bucket: int | None = None) -> None:
        """``REDUCE_GRAD s`` (``bucket`` None) or ``REDUCE_GRAD s bucket<j>/<k>`` (``bucket`` j):
        the mean over data-parallel ranks of the stage's (or bucket j's) accumulated gradients,
        into its slice of the sharded gradient. Raises RuntimeError when the stage's layout has
        no such reduction (a whole reduction of a bucketed stage, or the reverse)."""
        seg = self._segment(bucket, tag)
        grads = self.stage.take_grads(seg.positions)
        if seg.numel == 0:  # nothing to reduce: no collective (the whole group skips it)
            self.grad_parts[bucket] = ops.zeros((0,), ms.float32)
            return
        platform.hold(tag + " grads", grads)  # read on the reduction's stream (holds.py)
        flat = self._flatten(grads, seg) / float(self.dp)  # pre-divide: the sums below are means
        g = _cast(flat, self.reduce_dtype)
        if self.sharded:
            g = platform.reduce_scatter_sum(g, self.shard_group, tag + " reduce_scatter")
        if self.replicate_group.size > 1:
            g = platform.all_reduce_sum(g, self.replicate_group, tag + " all_reduce")
        self.grad_parts[bucket] = _cast(g, ms.float32)

    @property
    def grad_shard(self) -> ms.Tensor | None:
        """This step's reduced gradient of the shard so far (flat [shard_len]), None until every
        bucket is reduced."""
        if any(seg.bucket not in self.grad_parts for seg in self.segments):
            return None
        return _cat([self.grad_parts[seg.bucket] for seg in self.segments])

    def take_gradient(self) -> ms.Tensor:
        """This step's float32 gradient of the shard (flat [shard_len]); resets it. Raises
        RuntimeError naming a bucket (or the stage) that was not reduced this step."""
        if self.reduced:
            missing = [seg.bucket for seg in self.segments if seg.bucket not in self.grad_parts]
            if missing:
                what = "" if missing == [None] else f" (bucket {', '.join(str(b) for b in sorted(missing))} of {self.buckets})"
                raise RuntimeError(f"OPT_STEP: stage s{self.stage.stage} was not reduced this step{what}")
            g = self.grad_shard
        else:  # no data parallelism: the local accumulated gradient is the gradient
            g = _cat([self._flatten(self.stage.take_grads(seg.positions), seg) for seg in self.segments])
        self.grad_parts = {}
        return g

    def apply_update(self, g: ms.Tensor, lr: float) -> None:
        """AdamW on the shard with gradient ``g`` (flat float32 [shard_len]) and learning rate ``lr``
        (nothing for an empty shard)."""
        if self.shard_len == 0:
            return
        self.shard = self.optim.step(self.shard, g, lr)
        if not self.sharded:
            self._write_full(self.shard)

    def restore(self, shard: ms.Tensor, m: ms.Tensor, v: ms.Tensor, t: int) -> None:
        """Checkpoint restore: the shard and its AdamW state, bit for bit (components/checkpoint.py)."""
        self.shard, self.optim.m, self.optim.v, self.optim.t = shard, m, v, t
        if not self.sharded:
            self._write_full(self.shard)

    def full_parameters(self, platform, tag: str) -> dict[str, np.ndarray]:
        """Gathers the shards (a collective in the shard group; none for a stage without trainable
        parameters) → {name: array}, the stage's buffers (this rank's values) included."""
        out, off = {}, 0
        if self.numel:
            full = self._in_place(platform.all_gather(self.shard, self.shard_group, tag)) if self.sharded else self.shard
            arr = full.asnumpy()
            for (name, _p), shape, size in zip(self.stage.named, self.shapes, self.sizes):
                out[name] = arr[off:off + size].reshape(shape).copy()
                off += size
        for name, p in self.stage.buffers:
            out[name] = p.asnumpy().copy()
        return out


class _Segment:
    """One bucket's part of the flat vector: its parameters (positions in ``stage.params``),
    ``numel`` elements, zero-padded to ``padded`` = ``shard_len`` × shard size; each member's
    slice starts at ``shard_off`` of its shard."""

    def __init__(self, bucket: int | None, positions: range, sizes: list[int], n: int):
        self.bucket, self.positions = bucket, positions
        self.numel = sum(sizes[i] for i in positions)
        self.shard_len = -(-self.numel // n)
        self.padded = self.shard_len * n
        self.shard_off = 0


def _cat(parts: list) -> ms.Tensor:
    return parts[0] if len(parts) == 1 else ops.cat(parts)


def _cast(t: ms.Tensor, dtype) -> ms.Tensor:
    return t if t.dtype == dtype else t.astype(dtype)
