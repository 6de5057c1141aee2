"""LR schedule: linear warm-up, then constant, linear or cosine decay (Megatron-LM semantics).

The formula is Megatron-LM's ``OptimizerParamScheduler.get_lr`` (megatron/core/
optimizer_param_scheduler.py), with n = the number of optimizer updates taken so far (a step
whose update is skipped by the loss scaler does not advance n, as in Megatron):

    warm-up  (W > 0 and n <= W):   lr = init + (max - init) * n / W
    constant:                       lr = max
    n > D:                          lr = min
    otherwise, r = (n - W) / (D - W):
        linear:                     lr = min + (max - min) * (1 - r)
        cosine:                     lr = min + (max - min) * 0.5 * (cos(pi * r) + 1)

with max = ``train.lr``, min = ``train.min_lr``, init = ``train.lr_warmup_init``,
W = ``train.lr_warmup_steps``, D = ``train.lr_decay_steps`` (0: the run's ``steps``). The
first update uses n = 0, so with a warm-up it runs at ``init`` (Megatron's default 0.0).
"""
from __future__ import annotations

import dataclasses
import math

DECAY_STYLES = ("constant", "linear", "cosine")


class ScheduleError(ValueError):
    """A schedule setting that breaks a rule; the message names the ``train.`` key."""


@dataclasses.dataclass(frozen=True)
class LrSchedule:
    max_lr: float
    min_lr: float
    init_lr: float
    warmup_steps: int
    decay_steps: int
    style: str

    @staticmethod
    def from_train(train: dict, steps: int) -> "LrSchedule":
        """From the ``train:`` section; ``steps`` is the run's total (the default decay length).
        Raises ScheduleError naming the key (Megatron's asserts, as messages)."""
        decay = int(train["lr_decay_steps"]) or steps
        s = LrSchedule(float(train["lr"]), float(train["min_lr"]), float(train["lr_warmup_init"]),
                       int(train["lr_warmup_steps"]), decay, str(train["lr_decay_style"]))
        if s.style not in DECAY_STYLES:
            raise ScheduleError(f"train.lr_decay_style={s.style!r}: expected one of {', '.join(DECAY_STYLES)}")
        if not 0.0 <= s.min_lr <= s.max_lr:
            raise ScheduleError(f"train.min_lr={s.min_lr}: expected 0 <= min_lr <= train.lr={s.max_lr}")
        if not 0.0 <= s.init_lr <= s.max_lr:
            raise ScheduleError(f"train.lr_warmup_init={s.init_lr}: expected 0 <= lr_warmup_init <= train.lr={s.max_lr}")
        if s.warmup_steps < 0 or decay < 1:
            raise ScheduleError(f"train.lr_warmup_steps={s.warmup_steps} / train.lr_decay_steps={decay}: "
                                "expected warm-up >= 0 and decay >= 1")
        if s.style != "constant" and s.warmup_steps >= decay:
            raise ScheduleError(f"train.lr_warmup_steps={s.warmup_steps} must be less than train.lr_decay_steps="
                                f"{decay} (0 means the run's steps) for lr_decay_style={s.style}")
        if s.style == "constant":  # the decay length is unused: a resume with more steps keeps the schedule
            s = dataclasses.replace(s, decay_steps=0)
        return s

    def lr(self, n: int) -> float:
        """The learning rate of the update after ``n`` updates (n >= 0)."""
        if self.warmup_steps > 0 and n <= self.warmup_steps:
            return self.init_lr + (self.max_lr - self.init_lr) * float(n) / float(self.warmup_steps)
        if self.style == "constant":
            return self.max_lr
        if n > self.decay_steps:
            return self.min_lr
        r = float(n - self.warmup_steps) / float(self.decay_steps - self.warmup_steps)
        coeff = 1.0 - r if self.style == "linear" else 0.5 * (math.cos(math.pi * r) + 1.0)
        return self.min_lr + coeff * (self.max_lr - self.min_lr)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)
