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

Gradient buckets (a ``StageCell`` of k > 1 ``LayerGroup`` s, model/layer_groups.py): the forward
calls the groups one after the other at the top level (bucket k-1, holding the first layers,
first), so PyNative records one graph per group and microbatch, and keeps each group's input.
The backward is then a chain of per-group VJPs in backward order: ``backward_bucket(mb, j, k,
…)`` runs bucket j's VJP with the gradient w.r.t. its output (the received one for j = 0, else
the one bucket j-1 gave) and adds its parameters' gradients into their accumulators; the last
piece (j = k-1) returns the stage's input gradient. A whole ``backward`` runs the k pieces in a
row. The VJP of a group is the same computation as that part of the stage's VJP, so the
gradients equal the unbucketed stage's bit for bit on CPU (test_buckets.py).

Training mode: the stage's Cells are put in training mode (``Cell.set_train(True)``) when the
stage is built, so Dropout drops and BatchNorm normalises with the microbatch's statistics and
updates its moving ones; ``evaluate`` runs them in inference mode (``set_train(False)``) and
puts them back. Only the trainable parameters (``requires_grad=True``, ``StageCell.named_params``)
get gradients; ``buffers`` (frozen parameters, moving statistics) are left to the Cells.
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
        self.buffers = cell.named_buffers()  # requires_grad=False: no gradient, no update
        self.grads: list | None = None  # unsharded accumulators, summed over microbatches
        # mb -> (inputs, output) of the recorded forward; with buckets, per group j:
        # mb -> [((group input, labels), group output) for j in 0..k-1]
        self._pending: dict[int, tuple] = {}
        self._chain: dict[int, tuple[int, ms.Tensor | None]] = {}  # mb -> (next piece, its output grad)
        self._grad = ops.GradOperation(get_all=True, get_by_list=True, sens_param=True)
        self.buckets = cell.buckets
        self._cells = [cell] if cell.buckets == 1 else list(cell.groups)
        self._group_params = [ms.ParameterTuple([self.params[i] for i in cell.bucket_params(j)])
                              for j in range(self.buckets)]
        self._set_grad(not recompute)
        self.cell.set_train(True)

    def _set_grad(self, flag: bool) -> None:
        for c in self._cells:
            c.set_grad(flag)

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
        if self.buckets == 1:
            out = self.cell(x, labels)
            self._pending[mb] = ((x, labels), out)
            return out
        recorded = [None] * self.buckets
        for j in reversed(range(self.buckets)):  # forward order: bucket k-1 holds the first layers
            out = self.cell.groups[j](x, labels)
            recorded[j] = ((x, labels), out)
            x = out
        self._pending[mb] = recorded
        return out

    def evaluate(self, x: ms.Tensor, labels: ms.Tensor) -> ms.Tensor:
        """A forward that records nothing (evaluation), in inference mode (Dropout off, BatchNorm
        on its moving statistics): no graph is kept and ``forward_runs`` does not count it."""
        runs = [c.runs.n for c in self._cells]
        self._set_grad(False)
        self.cell.set_train(False)
        try:
            return self.cell(x, labels)
        finally:
            self.cell.set_train(True)
            self._set_grad(not self.recompute)
            for c, n in zip(self._cells, runs):
                c.runs.n = n

    def backward(self, mb: int, grad_out: ms.Tensor | None, loss_scale: float = 1.0) -> ms.Tensor | None:
        """The recorded forward's backward. ``grad_out`` None (the last stage): it starts from
        ``loss_scale`` (1.0, or the dynamic loss scale, components/loss_scale.py)."""
        if mb not in self._pending:
            raise RuntimeError(f"B mb{mb} s{self.stage}: no recorded forward")
        if self.buckets > 1:
            dx = None
            for j in range(self.buckets):
                dx = self.backward_bucket(mb, j, self.buckets, grad_out if j == 0 else None, loss_scale)
            return dx
        (x, labels), out = self._pending.pop(mb)
        input_grads, weight_grads = self._grad(self.cell, ms.ParameterTuple(self.params))(
            x, labels, _sens(grad_out, out, loss_scale))
        self._accumulate(range(len(self.params)), weight_grads)
        return None if self.first else input_grads[0]

    def backward_bucket(self, mb: int, j: int, k: int, grad_out: ms.Tensor | None,
                        loss_scale: float = 1.0) -> ms.Tensor | None:
        """``B mb s bucket<j>/<k>``: the VJP of bucket j's layers on microbatch mb's recorded
        forward. ``grad_out``: for j = 0 the gradient w.r.t. the stage's output (None on the last
        stage: it starts from ``loss_scale``); for j > 0 it must be None (the gradient bucket j-1
        gave is used). Returns the stage's input gradient after the last piece (j = k-1; None on
        the first stage), else None. Raises RuntimeError for a k other than the stage's, a piece
        out of order, a ``grad_out`` given to j > 0, or a missing forward."""
        what = f"B mb{mb} s{self.stage} bucket{j}/{k}"
        if k != self.buckets:
            raise RuntimeError(f"{what}: the stage is split into {self.buckets} bucket(s), not {k}")
        if mb not in self._pending:
            raise RuntimeError(f"{what}: no recorded forward")
        nxt, dy = self._chain.get(mb, (0, None))  # left in place when refused below
        if j != nxt:
            raise RuntimeError(f"{what}: the next piece of mb{mb} is bucket{nxt}/{k} (pieces run 0, 1, …, k-1)")
        if j == 0:
            dy = grad_out
        elif grad_out is not None:
            raise RuntimeError(f"{what}: only bucket 0 takes the stage's output gradient (bucket {j} takes bucket "
                               f"{j - 1}'s input gradient)")
        (x, labels), out = self._pending[mb][j]
        input_grads, weight_grads = self._grad(self.cell.groups[j], self._group_params[j])(
            x, labels, _sens(dy, out, loss_scale))
        self._accumulate(self.cell.bucket_params(j), weight_grads)
        self._chain.pop(mb, None)
        if j + 1 < k:
            self._chain[mb] = (j + 1, input_grads[0])
            return None
        del self._pending[mb]
        return None if self.first else input_grads[0]

    def _accumulate(self, positions: range, weight_grads) -> None:
        if self.grads is None:
            self.grads = [None] * len(self.params)
        for i, g in zip(positions, weight_grads):
            self.grads[i] = g if self.grads[i] is None else self.grads[i] + g

    def take_grads(self, positions: range | None = None) -> list:
        """The accumulated gradients of the parameters at ``positions`` of ``named`` (default: all;
        zeros where no backward ran); resets those accumulators."""
        positions = range(len(self.params)) if positions is None else positions
        acc = self.grads if self.grads is not None else [None] * len(self.params)
        out = [acc[i] if acc[i] is not None else ops.zeros(self.params[i].shape, self.params[i].dtype)
               for i in positions]
        for i in positions:
            acc[i] = None
        self.grads = None if all(g is None for g in acc) else acc
        return out

    @property
    def forward_runs(self) -> int:
        """How many times the stage's construct ran: one per microbatch when nothing recomputes."""
        return self.cell.runs.n if self.buckets == 1 else max(g.runs.n for g in self.cell.groups)

    def idle(self) -> bool:
        return not self._pending


def _sens(grad_out: ms.Tensor | None, out: ms.Tensor, loss_scale: float) -> ms.Tensor:
    """The backward's starting gradient: the received one, or on the last stage ``loss_scale``."""
    if grad_out is not None:
        return grad_out
    return ops.ones_like(out) if loss_scale == 1.0 else ops.ones_like(out) * loss_scale
