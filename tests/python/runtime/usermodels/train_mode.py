"""A small regressor with the parts a user's own model often has and ppstream must train right
(tests/python/runtime/test_own_model_training.py): Dropout, BatchNorm (moving statistics are
``requires_grad=False`` Parameters), a frozen Parameter, and optionally a tail without any
Parameter (activation-only layers and a parameter-free loss: the last virtual stage holds none).

train.model: train_mode:build   (model: {inputs, width, outputs, dropout (p), bn (bool), bare_tail (bool)})
train.data:  train_mode:batches (float32 inputs (N, inputs), float32 targets (N, outputs))
"""
import numpy as np
import mindspore as ms
from mindspore import nn, ops

from ppstream.mindspore import ModelParts


class Embed(nn.Cell):
    def __init__(self, inputs, width):
        super().__init__()
        self.dense = nn.Dense(inputs, width)
        self.scale = ms.Parameter(ms.Tensor(np.full((width,), 0.5, np.float32)), name="scale", requires_grad=False)

    def construct(self, x):
        return ops.tanh(self.dense(x)) * self.scale


class Block(nn.Cell):
    def __init__(self, width, p, bn):
        super().__init__()
        self.dense = nn.Dense(width, width)
        self.drop = nn.Dropout(p=p) if p > 0 else None
        self.bn = nn.BatchNorm1d(width) if bn else None

    def construct(self, h):
        y = self.dense(h)
        if self.bn is not None:
            y = self.bn(y)
        if self.drop is not None:
            y = self.drop(y)
        return h + 0.5 * y


class Tanh(nn.Cell):
    def construct(self, h):
        return ops.tanh(h)


class Head(nn.Cell):
    def __init__(self, width, outputs):
        super().__init__()
        self.out = nn.Dense(width, outputs)

    def construct(self, h, labels):
        return ((self.out(h) - labels) ** 2).mean()


class BareHead(nn.Cell):
    """A loss without parameters: MSE of the first ``outputs`` columns of h."""

    def __init__(self, outputs):
        super().__init__()
        self.outputs = outputs

    def construct(self, h, labels):
        return ((h[:, :self.outputs] - labels) ** 2).mean()


def build(cfg):
    w, n = cfg["width"], cfg["num_layers"]
    p, bn = float(cfg.get("dropout", 0.0)), bool(cfg.get("bn", False))
    if cfg.get("bare_tail", False):  # the second half of the layers and the loss hold no Parameter
        layers = [Block(w, p, bn) if i < n // 2 else Tanh() for i in range(n)]
        return ModelParts(Embed(cfg["inputs"], w), layers, BareHead(cfg["outputs"]))
    return ModelParts(Embed(cfg["inputs"], w), [Block(w, p, bn) for _ in range(n)], Head(w, cfg["outputs"]))


def batches(train, seed=None):
    """Endless global batches: uniform inputs, targets sin(x @ a fixed projection)."""
    m = train["model"]
    proj = np.random.default_rng(0).normal(size=(m["inputs"], m["outputs"]))
    rng = np.random.default_rng(train["seed"] if seed is None else seed)
    while True:
        x = rng.uniform(-1, 1, size=(train["global_batch_size"], m["inputs"])).astype(np.float32)
        yield x, np.sin(x @ proj).astype(np.float32)


def eval_batches(train):
    return batches(train, seed=999)
