"""StageCell: the Cells of one virtual stage, cut from a model's ModelParts.

``construct(x, labels)``: on the first stage x is the data's inputs and ``first`` runs, then
the stage's layers in order; on the last stage ``last(h, labels)`` gives the microbatch's mean
loss, returned times ``loss_scale`` (1 / micro_batch_num: the step's loss is the mean over
microbatches; the baseline's is 1 / (dp * micro_batch_num)). Elsewhere it returns h and
``labels`` is unused. ``named_params`` is the fixed parameter order of the stage's HSDP state:
the trainable Parameters (``requires_grad=True``) only. ``named_buffers`` are the others (a
frozen Parameter, BatchNorm's moving statistics): every rank keeps them whole in the Cells; no
gradient, reduction, sharding or optimizer update touches them (docs/runtime.md, "Your own model").

The parts are held as ``buckets`` = k ``LayerGroup`` Cells (model/layer_groups.py), one per
gradient bucket (k > 1 when the stage's program splits its last backward into k pieces,
``data_parallel.reduce_buckets``; k = 1: one group of the whole stage): ``groups[j]`` is bucket
j's and ``bucket_params(j)`` its range of ``named_params``, whose order is the same for every k.
"""
from __future__ import annotations

from mindspore import nn

from ppstream.mindspore.model.layer_groups import LayerGroup, RunCounter, bucket_layers
from ppstream.mindspore.model.protocol import ModelParts, named_parameters


class StageCell(nn.Cell):

    def __init__(self, parts: ModelParts, layers: tuple[int, int], first: bool, last: bool, loss_scale: float,
                 buckets: int = 1):
        """``layers``: the inclusive range of layer indices this stage holds; ``buckets``: k, the
        number of its gradient buckets (ValueError when k is outside [1, its layer count])."""
        super().__init__()
        self.first, self.last, self.loss_scale = first, last, loss_scale
        idx = list(range(layers[0], layers[1] + 1))
        every = ([("first", parts.first)] if first else []) + [(f"layers.{i}", parts.layers[i]) for i in idx] + \
            ([("last", parts.last)] if last else [])
        # names before the parts become children here (MindSpore renames Parameters on attach)
        named = [named_parameters(n, c) for n, c in every]
        self._buffers = [pair for ps in named for pair in ps if not pair[1].requires_grad]
        named = [[pair for pair in ps if pair[1].requires_grad] for ps in named]
        head = named.pop(0) if first else []
        tail = named.pop() if last else []
        per_layer = named
        self._named = head + [pair for ps in per_layer for pair in ps] + tail
        self.runs = RunCounter()  # how many times construct ran (a recompute would show here)
        self.buckets = int(buckets)
        groups, ranges = [], []
        for j in range(self.buckets):
            local = bucket_layers(j, self.buckets, len(idx))
            has_first, has_last = local.start == 0, local.stop == len(idx)
            start = 0 if has_first else len(head) + sum(len(ps) for ps in per_layer[:local.start])
            n = (len(head) if has_first else 0) + sum(len(per_layer[i]) for i in local) + (len(tail) if has_last else 0)
            ranges.append(range(start, start + n))
            groups.append(LayerGroup(parts.first if first and has_first else None,
                                     [parts.layers[idx[i]] for i in local],
                                     parts.last if last and has_last else None, loss_scale))
        self._ranges = ranges
        self.groups = nn.CellList(groups)  # groups[j]: bucket j's parts; one group for the whole stage

    def named_params(self) -> list:
        """(global name, Parameter) of the trainable parameters in a fixed order: ``first.*``,
        ``layers.{i}.*``, ``last.*``."""
        return list(self._named)

    def named_buffers(self) -> list:
        """(global name, Parameter) of the parameters with ``requires_grad=False``, in the same order."""
        return list(self._buffers)

    def bucket_params(self, j: int) -> range:
        """The positions in ``named_params`` of bucket j's parameters (contiguous: a bucket holds
        consecutive layers); with one bucket, all of them."""
        return self._ranges[j]

    def construct(self, x, labels):
        self.runs.n += 1
        for j in range(self.buckets - 1, -1, -1):  # forward order: bucket k-1 holds the first layers
            x = self.groups[j](x, labels)
        return x
