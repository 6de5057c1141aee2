"""Dynamic loss scaling for float16 compute (Megatron-LM's DynamicGradScaler semantics).

The last stage's backward starts from ``scale`` instead of 1 (the loss itself is not changed,
so the reported loss is the true one): every gradient of the step is ``scale`` times too large,
which keeps small float16 activation gradients from underflowing. ``OPT_STEP`` multiplies the
reduced float32 gradients by 1 / scale (exact: the scale is a power of two times the initial
value) and counts their non-finite elements over every rank holding distinct shards
(``opt_step``). Then, as Megatron-LM's ``DynamicGradScaler.update``
(megatron/core/optimizer/grad_scaler.py):

- found inf/nan: the update is skipped (parameters, AdamW moments and the LR schedule position
  stay), growth tracker = 0, hysteresis tracker -= 1, and when it reaches 0 or below,
  scale = max(scale * 0.5, min_scale);
- otherwise: growth tracker += 1; when it reaches ``loss_scale_window``: tracker = 0,
  hysteresis tracker = ``hysteresis``, scale *= 2.

Settings: ``train.loss_scale`` ("auto": dynamic when model.dtype is float16, off otherwise;
"dynamic"; "none"), ``train.initial_loss_scale`` (65536, torch.amp.GradScaler's default; Megatron's
2**32 overflows a float16 gradient at once), ``train.min_loss_scale`` (1), ``train.loss_scale_window``
(1000), ``train.hysteresis`` (2).
"""
from __future__ import annotations

import dataclasses

MODES = ("auto", "dynamic", "none")  # not "off": YAML 1.1 reads off as false
GROWTH, BACKOFF = 2.0, 0.5  # Megatron-LM's defaults (not settings there either)


class LossScaleError(ValueError):
    """A loss-scaling setting that breaks a rule; the message names the ``train.`` key."""


def scaling_enabled(train: dict, model_dtype: str) -> bool:
    """Whether the run scales its loss: ``train.loss_scale`` resolved against ``model.dtype``."""
    mode = train["loss_scale"]
    if mode not in MODES:
        raise LossScaleError(f"train.loss_scale={mode!r}: expected one of {', '.join(MODES)}")
    return mode == "dynamic" or (mode == "auto" and model_dtype == "float16")


@dataclasses.dataclass
class DynamicLossScaler:
    scale: float
    min_scale: float
    window: int
    hysteresis: int
    growth_tracker: int = 0
    hysteresis_tracker: int = 0

    def __post_init__(self) -> None:
        if self.hysteresis_tracker == 0:
            self.hysteresis_tracker = self.hysteresis

    @staticmethod
    def from_train(train: dict) -> "DynamicLossScaler":
        s = DynamicLossScaler(float(train["initial_loss_scale"]), float(train["min_loss_scale"]),
                              int(train["loss_scale_window"]), int(train["hysteresis"]))
        if not 0.0 < s.min_scale <= s.scale:
            raise LossScaleError(f"train.min_loss_scale={s.min_scale} / train.initial_loss_scale={s.scale}: "
                                 "expected 0 < min_loss_scale <= initial_loss_scale")
        if s.window < 1 or s.hysteresis < 1:
            raise LossScaleError(f"train.loss_scale_window={s.window} / train.hysteresis={s.hysteresis}: "
                                 "expected both >= 1")
        return s

    def update(self, found_inf: bool) -> None:
        if found_inf:
            self.growth_tracker = 0
            self.hysteresis_tracker -= 1
            if self.hysteresis_tracker <= 0:
                self.scale = max(self.scale * BACKOFF, self.min_scale)
        else:
            self.growth_tracker += 1
            if self.growth_tracker == self.window:
                self.growth_tracker = 0
                self.hysteresis_tracker = self.hysteresis
                self.scale = self.scale * GROWTH

    def state(self) -> dict:
        return dataclasses.asdict(self)

    @staticmethod
    def from_state(d: dict) -> "DynamicLossScaler":
        return DynamicLossScaler(**d)
