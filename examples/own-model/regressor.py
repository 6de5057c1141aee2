"""Your own model in ppstream: a residual MLP regressor and its data, in MindSpore only.

    ppstream train examples/own-model/pp2-vpp2-hsdp.yaml             # 8 ranks: PP2/VPP2 x HSDP 2x2
    ppstream train examples/own-model/pp2-vpp2-hsdp.yaml --baseline  # the same, in one process
    python examples/own-model/drive_loop.py                          # your loop, ppstream.mindspore.Pipeline

The config names the two factories below (train.model: regressor:build, train.data:
regressor:batches); ppstream imports this file from the config's directory. See docs/runtime.md,
"Your own model".
"""
import numpy as np
from mindspore import nn, ops

from ppstream.mindspore import ModelParts


class Lift(nn.Cell):
    """first(inputs) -> h: (b, inputs) float32 -> (b, width)."""

    def __init__(self, inputs: int, width: int):
        super().__init__()
        self.dense = nn.Dense(inputs, width)

    def construct(self, x):
        return ops.tanh(self.dense(x))


class Residual(nn.Cell):
    """layers[i](h) -> h: one pre-norm residual MLP block; keeps h's shape and dtype."""

    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm((width,))
        self.up = nn.Dense(width, 4 * width, activation="relu")
        self.down = nn.Dense(4 * width, width)

    def construct(self, h):
        return h + self.down(self.up(self.norm(h)))


class MseHead(nn.Cell):
    """last(h, labels) -> loss: the mean squared error over the microbatch (a scalar)."""

    def __init__(self, width: int, outputs: int):
        super().__init__()
        self.out = nn.Dense(width, outputs)

    def construct(self, h, labels):
        return ((self.out(h) - labels) ** 2).mean()


def build(model_cfg: dict) -> ModelParts:
    """train.model: model_cfg is the config's model: section plus num_layers (and seed)."""
    w = model_cfg["width"]
    return ModelParts(first=Lift(model_cfg["inputs"], w),
                      layers=[Residual(w) for _ in range(model_cfg["num_layers"])],
                      last=MseHead(w, model_cfg["outputs"]))


def batches(train_cfg: dict):
    """train.data: endless global batches (x, y) of train_cfg["global_batch_size"] rows:
    y = sin of a fixed random projection of x, plus a little noise."""
    m = train_cfg["model"]
    proj = np.random.default_rng(0).normal(size=(m["inputs"], m["outputs"]))
    rng = np.random.default_rng(train_cfg["seed"])
    while True:
        x = rng.uniform(-1.0, 1.0, size=(train_cfg["global_batch_size"], m["inputs"])).astype(np.float32)
        y = np.sin(x @ proj) + 0.01 * rng.normal(size=(x.shape[0], m["outputs"]))
        yield x, y.astype(np.float32)
