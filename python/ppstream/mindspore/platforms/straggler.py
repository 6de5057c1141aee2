"""StragglerPlatform: wraps another platform and delays each of this rank's gradient reductions.

``--straggle RANK:MS`` (docs/runtime.md): before every ``REDUCE_GRAD`` instruction is issued,
the host sleeps MS milliseconds, so this rank's reduction starts late and every member of its
groups waits for it. Everything else is the inner platform's.
"""
from __future__ import annotations

import time

from ppstream.mindspore.platforms.base import PlatformWrapper


class StragglerPlatform(PlatformWrapper):

    def __init__(self, inner, delay_ms: float) -> None:
        super().__init__(inner)
        if delay_ms < 0:
            raise ValueError(f"straggler delay {delay_ms} ms: expected >= 0")
        self.delay_ms = delay_ms

    def begin_instr(self, index: int, instr: dict) -> None:
        super().begin_instr(index, instr)
        if instr["op"] == "REDUCE_GRAD":
            time.sleep(self.delay_ms / 1000.0)
