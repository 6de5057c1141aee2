"""PipelineStage: forward/backward of one virtual stage's Cells, one microbatch at a time.

Forward runs the Cells and keeps what backward needs (the stage's inputs, per microbatch);
backward runs ``GradOperation(get_all=True, get_by_list=True, sens_param=True)`` with the
received output gradient as ``sens`` (ones for the last stage's loss) — recomputing the
stage's forward — returns the input gradient to send upstream and adds the parameter
gradients into the unsharded accumulators. (``mindspore.vjp``, which would keep the forward's
graph instead, failed in MindSpore 2.10 PyNative once several microbatches of several stages
were pending: "Can not find top cell for backward"; see docs/runtime.md.)
"""
from __future__ import annotations

import mindspore as ms
from mindspore import ops

from ppstream.mindspore.model import StageCell


class PipelineStage:

    def __init__(self, stage: int, cell: StageCell):
        self.stage, self.cell = stage, cell
        self.named = cell.named_params()
        self.params = [p for _n, p in self.named]
        self.grads: list | None = None  # unsharded accumulators, summed over microbatches
        self._pending: dict[int, tuple] = {}  # mb -> (inputs, output)
        self._grad = ops.GradOperation(get_all=True, get_by_list=True, sens_param=True)

    @property
    def first(self) -> bool:
        return self.cell.first

    @property
    def last(self) -> bool:
        return self.cell.last

    def forward(self, mb: int, x: ms.Tensor, labels: ms.Tensor) -> ms.Tensor:
        if mb in self._pending:
            raise RuntimeError(f"F mb{mb} s{self.stage}: forward twice without a backward")
        for n, p in self.named:
            if p.size == 0:
                raise RuntimeError(f"F mb{mb} s{self.stage}: parameter {n} is resharded (no UNSHARD before F)")
        out = self.cell(x, labels)
        self._pending[mb] = ((x, labels), out)
        return out

    def backward(self, mb: int, grad_out: ms.Tensor | None) -> ms.Tensor | None:
        if mb not in self._pending:
            raise RuntimeError(f"B mb{mb} s{self.stage}: no stashed forward")
        (x, labels), out = self._pending.pop(mb)
        sens = ops.ones_like(out) if grad_out is None else grad_out
        input_grads, weight_grads = self._grad(self.cell, ms.ParameterTuple(self.params))(x, labels, sens)
        if self.grads is None:
            self.grads = list(weight_grads)
        else:
            self.grads = [a + b for a, b in zip(self.grads, weight_grads)]
        return None if self.first else input_grads[0]

    def take_grads(self) -> list:
        """The accumulated gradients (zeros if no backward ran); resets the accumulators."""
        g = self.grads if self.grads is not None else [ops.zeros(p.shape, p.dtype) for p in self.params]
        self.grads = None
        return g

    def idle(self) -> bool:
        return not self._pending
