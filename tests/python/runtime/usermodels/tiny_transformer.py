"""A small causal transformer language model on integer tokens through ``nn.Embedding``, written
from MindSpore's public API only: the user-model protocol's second test model
(tests/python/runtime/test_user_models.py).

train.model: tiny_transformer:build   (model: {vocab, hidden, heads, seq_len})
train.data:  tiny_transformer:batches (int32 tokens (N, seq_len), int32 next tokens (N, seq_len))
"""
import numpy as np
import mindspore as ms
from mindspore import nn, ops

from ppstream.mindspore import ModelParts


class Embed(nn.Cell):
    def __init__(self, vocab, hidden, seq_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq_len, hidden)
        self.positions = ms.Tensor(np.arange(seq_len, dtype=np.int32))

    def construct(self, tokens):
        return self.tok(tokens) + self.pos(self.positions)


class Block(nn.Cell):
    def __init__(self, hidden, heads, seq_len):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm((hidden,))
        self.qkv = nn.Dense(hidden, 3 * hidden, has_bias=False)  # a key bias has no gradient (softmax shift)
        self.proj = nn.Dense(hidden, hidden)
        self.norm2 = nn.LayerNorm((hidden,))
        self.fc1 = nn.Dense(hidden, 4 * hidden)
        self.fc2 = nn.Dense(4 * hidden, hidden)
        self.mask = ms.Tensor(np.triu(np.full((seq_len, seq_len), -1e4, np.float32), k=1))

    def construct(self, h):
        b, t, d = h.shape
        k = d // self.heads
        qkv = self.qkv(self.norm1(h)).reshape(b, t, 3, self.heads, k).transpose(2, 0, 3, 1, 4)
        att = ops.softmax(ops.matmul(qkv[0], qkv[1].transpose(0, 1, 3, 2)) / float(np.sqrt(k)) + self.mask, axis=-1)
        h = h + self.proj(ops.matmul(att, qkv[2]).transpose(0, 2, 1, 3).reshape(b, t, d))
        return h + self.fc2(ops.gelu(self.fc1(self.norm2(h))))


class LMHead(nn.Cell):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.norm = nn.LayerNorm((hidden,))
        self.out = nn.Dense(hidden, vocab)

    def construct(self, h, labels):
        logits = self.out(self.norm(h))
        return ops.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def build(cfg):
    v, d, t = cfg["vocab"], cfg["hidden"], cfg["seq_len"]
    return ModelParts(Embed(v, d, t), [Block(d, cfg["heads"], t) for _ in range(cfg["num_layers"])], LMHead(d, v))


def batches(train):
    """Endless global batches of a noisy counting sequence (next token = token + 1 mod vocab, mostly)."""
    v, t = train["model"]["vocab"], train["model"]["seq_len"]
    rng = np.random.default_rng(train["seed"])
    while True:
        start = rng.integers(0, v, size=(train["global_batch_size"], 1))
        seq = (start + np.arange(t + 1)) % v
        seq = np.where(rng.random(seq.shape) < 0.1, rng.integers(0, v, size=seq.shape), seq).astype(np.int32)
        yield seq[:, :-1], seq[:, 1:]
