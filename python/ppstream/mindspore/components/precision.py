"""The dtype of the HSDP collectives (FSDP2's ``MixedPrecisionPolicy`` reduce / param dtypes).

``train.reduce_dtype``: the dtype gradients travel in. ``REDUCE_GRAD`` pre-divides the float32
gradient by dp, casts it, reduce-scatters (shard group) and all-reduces (replicate group) in that
dtype — so the sums are rounded to it at every addition, as FSDP2 with ``reduce_dtype=bfloat16``
does — and casts the shard back to float32 for the optimizer.
``train.all_gather_dtype``: the dtype parameters travel in. ``UNSHARD`` casts the float32 shard,
all-gathers and casts back to float32: the unsharded parameters hold the dtype-rounded values
(FSDP2's ``param_dtype``; the storage stays float32 and ``model.dtype`` still casts where used).
The master shards, AdamW moments and the final gather stay float32.

Default float32 for both: no cast at all (bitwise the same as before). Supported: float32,
bfloat16, float16 on every platform — MindSpore 2.10 on CPU (MCCL) runs ``all_reduce`` and
``all_gather`` in all three (checked with 2 processes, docs/runtime.md, "Findings"); HCCL on
Ascend supports them for all-reduce, reduce-scatter and all-gather.
"""
from __future__ import annotations

COMM_DTYPES = ("float32", "bfloat16", "float16")


class PrecisionError(ValueError):
    """A collective dtype outside COMM_DTYPES; the message names the ``train.`` key."""


def comm_dtype(train: dict, key: str):
    """``train[key]`` ("reduce_dtype" or "all_gather_dtype") as a MindSpore dtype; a ``train``
    dict without the key (built by hand, not by the config loader) means float32."""
    import mindspore as ms
    name = train.get(key, "float32")
    if name not in COMM_DTYPES:
        raise PrecisionError(f"train.{key}={name!r}: expected one of {', '.join(COMM_DTYPES)}")
    return {"float32": ms.float32, "bfloat16": ms.bfloat16, "float16": ms.float16}[name]


def check(train: dict) -> None:
    """Raises PrecisionError for a bad ``train.reduce_dtype`` / ``train.all_gather_dtype``."""
    for key in ("reduce_dtype", "all_gather_dtype"):
        if train[key] not in COMM_DTYPES:
            raise PrecisionError(f"train.{key}={train[key]!r}: expected one of {', '.join(COMM_DTYPES)}")
