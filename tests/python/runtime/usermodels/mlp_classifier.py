"""A residual MLP classifier on array data, written from MindSpore's public API only (not ppstream's
model): the user-model protocol's first test model (tests/python/runtime/test_user_models.py).

train.model: mlp_classifier:build   (model: {features, hidden, classes})
train.data:  mlp_classifier:batches (float32 features (N, features), int32 class labels (N,))
train.eval_data: mlp_classifier:eval_batches (the same teacher, features from another seed)
"""
import numpy as np
from mindspore import nn, ops

from ppstream.mindspore import ModelParts


class Stem(nn.Cell):
    def __init__(self, features, hidden):
        super().__init__()
        self.proj = nn.Dense(features, hidden)

    def construct(self, x):
        return self.proj(x)


class Block(nn.Cell):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm((hidden,))
        self.fc1 = nn.Dense(hidden, 2 * hidden)
        self.fc2 = nn.Dense(2 * hidden, hidden)

    def construct(self, h):
        return h + self.fc2(ops.relu(self.fc1(self.norm(h))))


class Classifier(nn.Cell):
    def __init__(self, hidden, classes):
        super().__init__()
        self.norm = nn.LayerNorm((hidden,))
        self.out = nn.Dense(hidden, classes)

    def construct(self, h, labels):
        return ops.cross_entropy(self.out(self.norm(h)), labels)


def build(cfg):
    return ModelParts(Stem(cfg["features"], cfg["hidden"]), [Block(cfg["hidden"]) for _ in range(cfg["num_layers"])],
                      Classifier(cfg["hidden"], cfg["classes"]))


def batches(train, seed=None):
    """Endless global batches: Gaussian features, labels from a fixed random linear teacher."""
    f, c = train["model"]["features"], train["model"]["classes"]
    teacher = np.random.default_rng(0).normal(size=(f, c))
    rng = np.random.default_rng(train["seed"] if seed is None else seed)
    while True:
        x = rng.normal(size=(train["global_batch_size"], f)).astype(np.float32)
        yield x, np.argmax(x @ teacher, axis=1).astype(np.int32)


def eval_batches(train):
    """Held-out global batches: the same teacher on features the training stream never draws."""
    return batches(train, seed=train["seed"] + 10_000)
