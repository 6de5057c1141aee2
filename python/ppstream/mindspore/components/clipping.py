"""Global gradient-norm clipping over every pipeline stage and every shard.

The norm is the L2 norm of the whole model's gradient, as if it were one vector — computed
the way Megatron-LM (``get_grad_norm_fp32`` + ``clip_grad_by_total_norm_fp32``,
megatron/core/optimizer/clip_grads.py) and FSDP2 with torchtitan (``clip_grad_norm_`` on
DTensor shards, then a SUM over the PP mesh) compute it:

1. every rank sums the squares of its reduced float32 gradient shards (all its local stages;
   the zero padding of the flat layout adds 0);
2. the partial sums are all-reduced (SUM) over the *norm group*: the ranks that hold distinct
   shards — every PP rank × every shard index, for one replicate index. Replicas (the same
   shard on another replicate index) are in another norm group, so nothing is counted twice;
3. total = sqrt(sum); coeff = ``train.clip_grad`` / (total + 1e-6); when coeff < 1 every
   gradient shard is multiplied by coeff (Megatron; torch clamps coeff to 1 and always
   multiplies, which gives the same values).

A non-finite total without loss scaling raises (the update would write NaN into the
parameters); with loss scaling the step is skipped first (``loss_scale``).
"""
from __future__ import annotations

import math

EPS = 1.0e-6  # Megatron-LM's and torch's clip_grad_norm_ epsilon


def sum_of_squares(grads: list):
    """Σ g² over the flat float32 gradient tensors ``grads`` (a 0-d float32 tensor)."""
    from mindspore import ops
    import mindspore as ms
    total = ops.zeros((), ms.float32)
    for g in grads:
        total = total + (g * g).sum()
    return total


def clip_coefficient(total_norm: float, max_norm: float) -> float | None:
    """The factor the gradients are multiplied by, or None when they are left alone
    (clipping off, or the norm already at most ``max_norm``)."""
    if max_norm <= 0.0:
        return None
    coeff = max_norm / (total_norm + EPS)
    return coeff if coeff < 1.0 else None


def check_finite(total_norm: float, step: int) -> None:
    if not math.isfinite(total_norm):
        raise FloatingPointError(f"step {step}: the global gradient norm is {total_norm} (a gradient is inf or NaN) "
                                 "and no loss scaling is on to skip the update; lower train.lr, or set "
                                 "train.loss_scale: dynamic")
