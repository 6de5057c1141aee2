"""StageCell: the Cells of one virtual stage, cut from a model's ModelParts.

``construct(x, labels)``: on the first stage x is the data's inputs and ``first`` runs, then
the stage's layers in order; on the last stage ``last(h, labels)`` gives the microbatch's mean
loss, returned times ``loss_scale`` (1 / micro_batch_num: the step's loss is the mean over
microbatches; the baseline's is 1 / (dp * micro_batch_num)). Elsewhere it returns h and
``labels`` is unused. ``named_params`` is the fixed parameter order of the stage's HSDP state.
"""
from __future__ import annotations

from mindspore import nn

from ppstream.mindspore.model.protocol import ModelParts, named_parameters


class RunCounter:
    """A plain counter object (a Cell attribute that MindSpore leaves alone)."""

    def __init__(self) -> None:
        self.n = 0


class StageCell(nn.Cell):

    def __init__(self, parts: ModelParts, layers: tuple[int, int], first: bool, last: bool, loss_scale: float):
        """``layers``: the inclusive range of layer indices this stage holds."""
        super().__init__()
        self.first, self.last, self.loss_scale = first, last, loss_scale
        idx = range(layers[0], layers[1] + 1)
        # names before the parts become children here (MindSpore renames Parameters on attach)
        self._named = ((named_parameters("first", parts.first) if first else []) +
                       [np for i in idx for np in named_parameters(f"layers.{i}", parts.layers[i])] +
                       (named_parameters("last", parts.last) if last else []))
        self.head_in = parts.first if first else None
        self.blocks = nn.CellList([parts.layers[i] for i in idx])
        self.head_out = parts.last if last else None
        self.runs = RunCounter()  # how many times construct ran (a recompute would show here)

    def named_params(self) -> list:
        """(global name, Parameter) in a fixed order: ``first.*``, ``layers.{i}.*``, ``last.*``."""
        return list(self._named)

    def construct(self, x, labels):
        self.runs.n += 1
        if self.head_in is not None:
            x = self.head_in(x)
        for blk in self.blocks:
            x = blk(x)
        if self.head_out is not None:
            return self.head_out(x, labels) * self.loss_scale
        return x
