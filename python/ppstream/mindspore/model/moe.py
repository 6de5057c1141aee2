"""The built-in model: a small MoE decoder as ModelParts (``build``, the default ``train.model``).

Embedding (integer tokens as a one-hot matmul), N pre-norm blocks (causal multi-head attention, then a top-k routed expert
FFN), and a head (final norm, LM projection, next-byte cross-entropy). Every parameter is
initialised from ``numpy.random.default_rng([seed, part])`` with part 0 = embedding,
1 + l = layer l, 1 + N = head, so a layer gets the same values on whichever rank holds it.
"""
from __future__ import annotations

import numpy as np
import mindspore as ms
from mindspore import nn, ops

from ppstream.mindspore.model.protocol import ModelParts


def _normal(rng, shape, std=0.02):
    return rng.normal(0.0, std, size=shape).astype(np.float32)


def _param(value: np.ndarray, name: str) -> ms.Parameter:
    return ms.Parameter(ms.Tensor(value), name=name, requires_grad=True)


DTYPES = {"float32": ms.float32, "float16": ms.float16, "bfloat16": ms.bfloat16}


def compute_dtype(cfg: dict):
    """The model's compute and activation dtype (model.dtype); parameters stay float32 (master
    weights: the HSDP shards, gradients and AdamW are float32) and are cast where used."""
    return DTYPES[cfg.get("dtype", "float32")]


def _layer_norm(x, g, b):
    mean = x.mean(axis=-1, keep_dims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keep_dims=True)
    return (x - mean) / ops.sqrt(var + 1e-5) * g + b


class Embedding(nn.Cell):
    """Byte embedding: integer tokens (b, T) as one-hot (b, T, V) @ table (V, H)."""

    def __init__(self, cfg: dict, seed: int):
        super().__init__()
        rng = np.random.default_rng([seed, 0])
        self.table = _param(_normal(rng, (cfg["vocab"], cfg["hidden"])), "embed.table")
        self.dt = compute_dtype(cfg)
        self.on, self.off = ms.Tensor(1.0, ms.float32), ms.Tensor(0.0, ms.float32)

    def construct(self, tokens):
        onehot = ops.one_hot(tokens, self.table.shape[0], self.on, self.off)
        return ops.matmul(onehot.astype(self.dt), self.table.astype(self.dt))


class Block(nn.Cell):
    """Pre-norm causal self-attention + top-k routed expert FFN, both residual."""

    def __init__(self, cfg: dict, seed: int, layer: int):
        super().__init__()
        rng = np.random.default_rng([seed, 1 + layer])
        h, f, e = cfg["hidden"], cfg["ffn"], cfg["experts"]
        self.layer, self.heads, self.top_k, self.experts = layer, cfg["heads"], cfg["top_k"], e
        p = f"layer{layer}."
        self.ln1_g = _param(np.ones(h, np.float32), p + "ln1_g")
        self.ln1_b = _param(np.zeros(h, np.float32), p + "ln1_b")
        self.wqkv = _param(_normal(rng, (h, 3 * h)), p + "wqkv")
        self.wo = _param(_normal(rng, (h, h)), p + "wo")
        self.ln2_g = _param(np.ones(h, np.float32), p + "ln2_g")
        self.ln2_b = _param(np.zeros(h, np.float32), p + "ln2_b")
        self.router = _param(_normal(rng, (h, e)), p + "router")
        self.w1 = _param(_normal(rng, (e, h, f)), p + "w1")
        self.w2 = _param(_normal(rng, (e, f, h)), p + "w2")
        t = cfg["seq_len"]
        self.dt = compute_dtype(cfg)
        # -1e4, not -1e9: still exp() == 0 after softmax, and representable in float16
        self.mask = ms.Tensor(np.triu(np.full((t, t), -1e4, np.float32), k=1)).astype(self.dt)

    def _c(self, p):
        """Parameter ``p`` in the compute dtype."""
        return p if self.dt == ms.float32 else p.astype(self.dt)

    def _attention(self, x):
        b, t, h = x.shape
        d = h // self.heads
        qkv = ops.matmul(x, self._c(self.wqkv)).reshape(b, t, 3, self.heads, d).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # (b, heads, t, d)
        scores = ops.matmul(q, k.transpose(0, 1, 3, 2)) / float(np.sqrt(d)) + self.mask
        out = ops.matmul(ops.softmax(scores, axis=-1), v)
        return ops.matmul(out.transpose(0, 2, 1, 3).reshape(b, t, h), self._c(self.wo))

    def _moe(self, x):
        probs = ops.softmax(ops.matmul(x, self._c(self.router)), axis=-1)  # (b, t, E)
        _vals, idx = ops.topk(probs, self.top_k)
        chosen = ops.one_hot(idx, self.experts, ms.Tensor(1.0, self.dt), ms.Tensor(0.0, self.dt)).sum(axis=-2)
        gates = probs * chosen
        gates = gates / gates.sum(axis=-1, keepdims=True)
        out = 0
        for e in range(self.experts):  # dense over the (few) experts, weighted by the routed gates
            hid = ops.relu(ops.matmul(x, self._c(self.w1[e])))
            out = out + gates[..., e:e + 1] * ops.matmul(hid, self._c(self.w2[e]))
        return out

    def construct(self, x):
        x = x + self._attention(_layer_norm(x, self._c(self.ln1_g), self._c(self.ln1_b)))
        return x + self._moe(_layer_norm(x, self._c(self.ln2_g), self._c(self.ln2_b)))


class Head(nn.Cell):
    """Final norm + LM projection + mean next-byte cross-entropy (integer labels (b, T))."""

    def __init__(self, cfg: dict, seed: int, num_layers: int):
        super().__init__()
        rng = np.random.default_rng([seed, 1 + num_layers])
        h = cfg["hidden"]
        self.ln_g = _param(np.ones(h, np.float32), "head.ln_g")
        self.ln_b = _param(np.zeros(h, np.float32), "head.ln_b")
        self.w = _param(_normal(rng, (h, cfg["vocab"])), "head.w")
        self.on, self.off = ms.Tensor(1.0, ms.float32), ms.Tensor(0.0, ms.float32)

    def construct(self, x, labels):
        onehot_labels = ops.one_hot(labels, self.w.shape[1], self.on, self.off)
        x = x.astype(ms.float32)  # the loss in float32
        logits = ops.matmul(_layer_norm(x, self.ln_g, self.ln_b), self.w)
        logp = ops.log_softmax(logits, axis=-1)
        return -(logp * onehot_labels).sum(axis=-1).mean()


def build(model_cfg: dict) -> ModelParts:
    """The default ``train.model`` factory: the decoder as ModelParts (embedding, ``num_layers``
    blocks, head). ``model_cfg`` is the ``model:`` section with its defaults (runconfig.MODEL_DEFAULTS)
    plus ``num_layers``; ``seed`` seeds the initial values."""
    seed, n = model_cfg["seed"], model_cfg["num_layers"]
    return ModelParts(Embedding(model_cfg, seed), [Block(model_cfg, seed, l) for l in range(n)],
                      Head(model_cfg, seed, n))
