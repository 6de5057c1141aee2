"""GlobalBatches: the data factory's global batches, sliced the same way for every layout.

A data factory ``(train_cfg) -> iterable of (inputs, labels)`` yields one global batch per step:
two arrays (numpy, or anything ``numpy.asarray`` takes, or ``mindspore.Tensor``) whose first
dimension is the global batch size ``dp * micro_batch_num * micro_batch_size`` rows. Data-
parallel index d's microbatch j is rows ``(d * m + j) * b … + b`` of both (m = micro_batch_num,
b = micro_batch_size), so a single-process baseline, a pipelined and a sharded run see the same
rows in the same groups. Dtypes are kept (int32 / int64 tokens for ``nn.Embedding``).

Errors name the config key (``train.data=…``): not a pair of arrays, the wrong number of rows,
inputs and labels of different row counts, fewer batches than steps, or a step asked for out of
order (the iterator is read once, forward).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np


class DataError(ValueError):
    """The data factory's output breaks the protocol; the message names the key and the rule."""


def as_array(x, what: str, where: str) -> np.ndarray:
    if hasattr(x, "asnumpy"):
        x = x.asnumpy()
    try:
        arr = np.asarray(x)
    except Exception as e:  # noqa: BLE001 - any conversion failure is the data's
        raise DataError(f"{where}: {what} is not an array ({type(x).__name__}: {e})") from None
    if arr.dtype == object or arr.ndim == 0:
        raise DataError(f"{where}: {what} is {type(x).__name__} of dtype {arr.dtype}, ndim {arr.ndim}; expected one "
                        "numeric array with the batch as its first dimension (several input tensors are not supported)")
    return arr


def check_batch(batch, rows: int, where: str, step: int) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, labels) as arrays of ``rows`` rows, or DataError naming ``where`` and ``step``."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise DataError(f"{where}: batch {step} is {type(batch).__name__}; expected a pair (inputs, labels)")
    x = as_array(batch[0], f"batch {step}'s inputs", where)
    y = as_array(batch[1], f"batch {step}'s labels", where)
    for what, a in (("inputs", x), ("labels", y)):
        if a.shape[0] != rows:
            raise DataError(f"{where}: batch {step}'s {what} have {a.shape[0]} rows (shape {a.shape}); expected the "
                            f"global batch, {rows} rows (data-parallel size x train.micro_batch_num x "
                            "train.micro_batch_size)")
    return x, y


class GlobalBatches:
    """Step k's microbatch (d, j) from the k-th batch of ``source``."""

    def __init__(self, source: Iterable, dp: int, micro_batch_num: int, micro_batch_size: int, where: str):
        self.dp, self.m, self.b, self.where = dp, micro_batch_num, micro_batch_size, where
        self.rows = dp * micro_batch_num * micro_batch_size
        try:
            self._it = iter(source)
        except TypeError:
            raise DataError(f"{where}: returned {type(source).__name__}, which is not iterable; expected an iterable "
                            "of (inputs, labels) global batches") from None
        self._step = -1
        self._batch: tuple[np.ndarray, np.ndarray] | None = None

    def global_batch(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """The whole batch of ``step`` (steps are read in order; the current one may be re-read)."""
        if step < self._step:
            raise DataError(f"{self.where}: step {step} asked for after step {self._step}; the data is read forward once")
        while self._step < step:
            try:
                raw = next(self._it)
            except StopIteration:
                raise DataError(f"{self.where}: the data ended after {self._step + 1} batches; the run needs a batch "
                                f"for step {step}") from None
            self._step += 1
            self._batch = check_batch(raw, self.rows, self.where, self._step)
        assert self._batch is not None
        return self._batch

    def skip(self, batches: int) -> None:
        """Position after ``batches`` consumed global batches (a resume: checkpoint meta's
        ``data.batches``): batches 0..batches-1 are read, checked and dropped, so the next read
        is step ``batches``'s."""
        if batches > 0:
            self.global_batch(batches - 1)

    def microbatch(self, step: int, dp_index: int, mb: int) -> tuple[np.ndarray, np.ndarray]:
        """(inputs, labels) of data-parallel index ``dp_index``'s microbatch ``mb`` of ``step``."""
        x, y = self.global_batch(step)
        r0 = (dp_index * self.m + mb) * self.b
        return x[r0:r0 + self.b], y[r0:r0 + self.b]


class HeldOutBatches:
    """The evaluation set: the first ``n`` batches of ``source`` (checked like GlobalBatches), read
    once and kept, so every evaluation sees the same batches 0..n-1 (components/evaluate.py)."""

    def __init__(self, source: Iterable, dp: int, micro_batch_num: int, micro_batch_size: int, where: str, n: int):
        g = GlobalBatches(source, dp, micro_batch_num, micro_batch_size, where)
        try:
            self.batches = [g.global_batch(i) for i in range(n)]
        except DataError as e:
            raise DataError(f"{e} (train.eval_batches={n} held-out batches are read)") from None
        self.m, self.b = micro_batch_num, micro_batch_size

    def microbatch(self, index: int, dp_index: int, mb: int) -> tuple[np.ndarray, np.ndarray]:
        x, y = self.batches[index]
        r0 = (dp_index * self.m + mb) * self.b
        return x[r0:r0 + self.b], y[r0:r0 + self.b]


class FedBatches:
    """The batches of a caller that drives the loop itself (``Pipeline.step(batch)``): holds the
    batch it was fed for one step and slices it like GlobalBatches."""

    def __init__(self, dp: int, micro_batch_num: int, micro_batch_size: int):
        self.dp, self.m, self.b = dp, micro_batch_num, micro_batch_size
        self.rows = dp * micro_batch_num * micro_batch_size
        self.step, self.batch = -1, None

    def feed(self, step: int, batch, where: str) -> None:
        self.step, self.batch = step, check_batch(batch, self.rows, where, step)

    def microbatch(self, step: int, dp_index: int, mb: int) -> tuple[np.ndarray, np.ndarray]:
        if step != self.step or self.batch is None:
            raise DataError(f"step {step} asked for, but the batch fed is step {self.step}'s")
        x, y = self.batch
        r0 = (dp_index * self.m + mb) * self.b
        return x[r0:r0 + self.b], y[r0:r0 + self.b]
