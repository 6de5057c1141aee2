"""PipelineStage: forward/backward of one virtual stage's Cells, one microbatch at a time.

The stage Cell is marked ``set_grad(True)``, so MindSpore PyNative records each forward's
graph. ``backward(mb, dy)`` later calls ``GradOperation(get_all=True, get_by_list=True,
sens_param=True)`` on the *same* input tensors as ``forward(mb)``: PyNative finds the recorded
graph of that call and runs only its backward — no recompute, in any order of microbatches
(1F1B, interleaved; checked on CPU against a whole-model reference within 1e-8). It returns the
input gradient to send upstream and adds the parameter gradients into the unsharded
accumulators. hyper-parallel's PyNative stage does the same.

Memory consequence: a pending microbatch keeps its recorded graph (the activations the
backward needs) alive from its F to its B, whatever RESHARD does in between (see
docs/runtime.md, "Memory"). ``recompute=True`` (``train.recompute``) is the old trade: the
forward is not recorded, only the stage inputs are kept, and the backward reruns the forward.
"""
from __future__ import annotations

import mindspore as ms
from mindspore import ops

from ppstream.mindspore.model.stage_cell import StageCell


class PipelineStage:

    def __init__(self, stage: int, cell: StageCell, recompute: bool = False):
        self.stage, self.cell, self.recompute = stage, cell, recompute
        self.named = cell.named_params()
        self.params = [p for _n, p in self.named]
        self.grads: list | None = None  # unsharded accumulators, summed over microbatches
        self._pending: dict[int, tuple] = {}  # mb -> (inputs, output) of the recorded forward
        self._grad = ops.GradOperation(get_all=True, get_by_list=True, sens_param=True)
        cell.set_grad(not recompute)

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

    def evaluate(self, x: ms.Tensor, labels: ms.Tensor) -> ms.Tensor:
        """A forward that records nothing (evaluation): no graph is kept and ``forward_runs``
        does not count it."""
        runs = self.cell.runs.n
        self.cell.set_grad(False)
        try:
            return self.cell(x, labels)
        finally:
            self.cell.set_grad(not self.recompute)
            self.cell.runs.n = runs

    def backward(self, mb: int, grad_out: ms.Tensor | None, loss_scale: float = 1.0) -> ms.Tensor | None:
        """The recorded forward's backward. ``grad_out`` None (the last stage): it starts from
        ``loss_scale`` (1.0, or the dynamic loss scale, components/loss_scale.py)."""
        if mb not in self._pending:
            raise RuntimeError(f"B mb{mb} s{self.stage}: no recorded forward")
        (x, labels), out = self._pending.pop(mb)
        if grad_out is not None:
            sens = grad_out
        else:
            sens = ops.ones_like(out) if loss_scale == 1.0 else ops.ones_like(out) * loss_scale
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

    @property
    def forward_runs(self) -> int:
        """How many times the stage's construct ran: one per microbatch when nothing recomputes."""
        return self.cell.runs.n

    def idle(self) -> bool:
        return not self._pending
