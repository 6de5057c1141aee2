"""The built-in data (``batches``, the default ``train.data``): English text as byte-level tokens.

The corpus (``train.text``) is one file, or every regular file under a directory except
``.dat`` files and symbolic links (Debian's ``fortunes`` keeps ``strfile`` indexes as ``.dat``
and ``.u8`` links beside its text files), read in sorted path order. Step k's
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
                if n.endswith(".dat") or os.path.islink(full) or not os.path.isfile(full):
                    continue
                files.append(full)
        files.sort()
    else:
        raise FileNotFoundError(f"train.text: {path} does not exist; install Debian's fortunes (scripts/setup.sh) "
                                "or point train.text at a text file or directory")
    chunks = []
    for f in files:
        with open(f, "rb") as fh:
            chunks.append(fh.read())
    data = np.frombuffer(b"".join(chunks), dtype=np.uint8)
    if data.size < 4096:
        raise ValueError(f"train.text: {path} holds only {data.size} bytes of text in {len(files)} files; "
                         "expected at least 4096")
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


def _parts(train_cfg: dict) -> tuple[np.ndarray, np.ndarray | None]:
    """(training part, held-out part or None): the corpus split only with ``train.eval_every > 0``."""
    corpus = load_corpus(train_cfg["text"])
    if int(train_cfg.get("eval_every", 0)) > 0:
        return split_holdout(corpus, float(train_cfg["eval_holdout"]))
    return corpus, None


def batches(train_cfg: dict):
    """The default ``train.data`` factory: step k's global batch (tokens, next-byte labels), each
    int32 (global_batch_size, seq_len), the windows of ``TextData`` in row order. With evaluation
    on, drawn from the corpus less its held-out part (``split_holdout``)."""
    return text_batches(_parts(train_cfg)[0], train_cfg["model"]["seq_len"],
                        train_cfg["global_batch_size"], train_cfg["seed"])


def held_out_batches(train_cfg: dict):
    """The default ``train.eval_data`` factory with the built-in text: batch i drawn like step i's
    from the held-out last ``train.eval_holdout`` of the corpus."""
    held = _parts(train_cfg)[1]
    if held is None:
        raise ValueError("train.eval_every is 0: the built-in text data holds nothing out")
    return text_batches(held, train_cfg["model"]["seq_len"], train_cfg["global_batch_size"], train_cfg["seed"])


def text_batches(corpus: np.ndarray, seq_len: int, rows: int, seed: int):
    """Global batches of ``rows`` windows of ``corpus`` per step (``batches`` on a loaded corpus)."""
    data = TextData(corpus, seq_len, rows, 1, 1, seed)
    step = 0
    while True:
        yield data.microbatch(step, 0, 0)
        step += 1
