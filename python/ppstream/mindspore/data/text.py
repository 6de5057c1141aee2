"""TextData: real English text as byte-level tokens, sampled identically by every layout.

The corpus is every plain-text file of a directory (Debian's ``fortunes``: the files without
an extension; ``.dat`` indexes and ``.u8`` links are skipped), read in sorted order. Step k's
global batch is ``dp * micro_batch_num * micro_batch_size`` windows of ``seq_len + 1`` bytes
at offsets drawn from ``numpy.random.default_rng([seed, k])``; DP index d's microbatch j holds
rows ``(d * m + j) * b … + b``. So a single-process baseline sees the same rows in the same
groups as any pipelined / data-parallel layout.
"""
from __future__ import annotations

import os

import numpy as np


def load_corpus(path: str) -> np.ndarray:
    """All plain-text files under ``path`` (or the one file) as uint8 bytes."""
    if os.path.isfile(path):
        files = [path]
    elif os.path.isdir(path):
        files = []
        for root, _dirs, names in os.walk(path):
            for n in sorted(names):
                full = os.path.join(root, n)
                if "." in n or os.path.islink(full):
                    continue
                files.append(full)
        files.sort()
    else:
        raise FileNotFoundError(f"train.data: {path} does not exist; install Debian's fortunes (scripts/setup.sh)")
    chunks = []
    for f in files:
        with open(f, "rb") as fh:
            chunks.append(fh.read())
    data = np.frombuffer(b"".join(chunks), dtype=np.uint8)
    if data.size < 4096:
        raise ValueError(f"train.data: {path} holds only {data.size} bytes of text; expected at least 4096")
    return data


def split_holdout(corpus: np.ndarray, holdout: float) -> tuple[np.ndarray, np.ndarray]:
    """(training part, held-out part): the last ``holdout`` fraction of the bytes is held out
    for evaluation (components/evaluate.py) and never sampled for training."""
    n = int(corpus.size * holdout)
    return corpus[:corpus.size - n], corpus[corpus.size - n:]


class TextData:
    """Deterministic batches: tokens and next-byte labels per (step, dp index, microbatch)."""

    def __init__(self, corpus: np.ndarray, seq_len: int, micro_batch_size: int, micro_batch_num: int,
                 dp: int, seed: int):
        self.corpus, self.seq_len, self.b, self.m, self.dp, self.seed = corpus, seq_len, micro_batch_size, micro_batch_num, dp, seed

    def _offsets(self, step: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, step])
        return rng.integers(0, self.corpus.size - self.seq_len - 1, size=self.dp * self.m * self.b)

    def microbatch(self, step: int, dp_index: int, mb: int) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, labels), each int32 (b, seq_len)."""
        offs = self._offsets(step)
        row0 = (dp_index * self.m + mb) * self.b
        win = np.stack([self.corpus[o:o + self.seq_len + 1] for o in offs[row0:row0 + self.b]]).astype(np.int32)
        return win[:, :-1], win[:, 1:]
