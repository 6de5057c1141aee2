"""AdamW on flat tensors (the sharded parameters), elementwise so sharding cannot change a value.

Decoupled weight decay (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", 2019):
p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p). The learning rate comes with each step (the
schedule's, components/lr_schedule.py); ``m``, ``v`` and ``t`` are the state a checkpoint keeps.
"""
from __future__ import annotations

import mindspore as ms
from mindspore import ops


class AdamW:
    """Holds m and v for one flat parameter tensor; ``step(p, g, lr)`` returns the updated p."""

    def __init__(self, size: int, betas, eps: float, weight_decay: float):
        self.b1, self.b2, self.eps, self.wd = float(betas[0]), float(betas[1]), eps, weight_decay
        self.m = ops.zeros((size,), ms.float32)
        self.v = ops.zeros((size,), ms.float32)
        self.t = 0

    def step(self, p: ms.Tensor, g: ms.Tensor, lr: float) -> ms.Tensor:
        self.t += 1
        self.m = self.m * self.b1 + g * (1.0 - self.b1)
        self.v = self.v * self.b2 + (g * g) * (1.0 - self.b2)
        m_hat = self.m / (1.0 - self.b1 ** self.t)
        v_hat = self.v / (1.0 - self.b2 ** self.t)
        return p - (m_hat / (ops.sqrt(v_hat) + self.eps) + p * self.wd) * lr
