"""StragglerPlatform: wraps another platform and delays each of this rank's gradient reductions
on the device stream the reduction runs on.

``--straggle RANK:MS`` (docs/runtime.md, "Stragglers on the device"): when a ``REDUCE_GRAD``
instruction's stream context is entered (so before its first collective is issued), the inner
platform is asked to ``delay(MS)`` the current stream — ``reduce`` under the async policy,
``compute`` under inline. The host is not delayed where the device has streams (Ascend); how
the delay is made is the inner platform's choice (``Platform._delay``). Everything else is the
inner platform's.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from ppstream.mindspore.platforms.base import PlatformWrapper


class StragglerPlatform(PlatformWrapper):

    def __init__(self, inner, delay_ms: float) -> None:
        super().__init__(inner)
        if delay_ms < 0:
            raise ValueError(f"straggler delay {delay_ms} ms: expected >= 0")
        self.delay_ms = delay_ms
        self._op = ""

    def begin_instr(self, index: int, instr: dict) -> None:
        super().begin_instr(index, instr)
        self._op = instr["op"]

    @contextlib.contextmanager
    def stream(self, name: str) -> Iterator[None]:
        with super().stream(name):
            if self._op == "REDUCE_GRAD":
                self._op = ""  # once per instruction
                self.delay(self.delay_ms)
            yield
