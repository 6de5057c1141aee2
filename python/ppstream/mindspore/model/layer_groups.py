"""Gradient buckets in the runtime: which of a stage's layers each bucket holds, and its Cell.

``data_parallel.reduce_buckets: k`` splits a stage's last backward into k pieces over its layers
in backward order (docs/semantics.md, "Gradient buckets"). ``bucket_layers`` is the engine's rule
(include/ppstream/program/ir.h ``bucket_layers``, mirrored here and pinned against it by
test_buckets.py): bucket j of a stage of L layers holds the backward-order positions
[floor(j·L/k), floor((j+1)·L/k)) (position 0 = the stage's last layer), so bucket 0 holds the
last layers and bucket k-1 the first ones. The model's ``first`` part goes with the bucket that
holds the stage's first layer (k-1), ``last`` with the one that holds its last layer (0): a
bucket's parameters are the parameters of the parts it runs.

``LayerGroup`` is one bucket's Cells as one Cell, called at the top level so MindSpore PyNative
records its forward as a graph of its own; its VJP then takes the gradient w.r.t. its output and
gives the gradient w.r.t. its input and its parameters' gradients (training/stage.py chains them).
"""
from __future__ import annotations

from mindspore import nn


def bucket_layers(index: int, count: int, layers: int) -> range:
    """The stage-local layer indices (forward order, 0 = the stage's first layer) bucket ``index``
    of ``count`` holds in a stage of ``layers`` layers. Raises ValueError unless
    0 <= index < count <= layers (the config checks reduce_buckets <= the fewest layers)."""
    if not 0 <= index < count <= layers:
        raise ValueError(f"bucket {index}/{count} of a stage of {layers} layers: expected 0 <= index < count <= layers")
    first, end = index * layers // count, (index + 1) * layers // count  # backward-order positions
    return range(layers - end, layers - first)


class RunCounter:
    """A plain counter object (a Cell attribute that MindSpore leaves alone)."""

    def __init__(self) -> None:
        self.n = 0


class LayerGroup(nn.Cell):
    """``head_in`` (the model's ``first``, or None), ``blocks``, ``head_out`` (``last``, or None):
    ``construct(x, labels)`` as ``StageCell``'s, over these parts only (``last``'s loss times
    ``loss_scale``)."""

    def __init__(self, head_in, blocks: list, head_out, loss_scale: float):
        super().__init__()
        self.head_in, self.head_out, self.loss_scale = head_in, head_out, loss_scale
        self.blocks = nn.CellList(blocks)
        self.runs = RunCounter()

    def construct(self, x, labels):
        self.runs.n += 1
        if self.head_in is not None:
            x = self.head_in(x)
        for blk in self.blocks:
            x = blk(x)
        if self.head_out is not None:
            return self.head_out(x, labels) * self.loss_scale
        return x
