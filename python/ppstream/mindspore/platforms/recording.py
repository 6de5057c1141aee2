"""RecordingPlatform: wraps another platform and logs, per instruction, the stream of every call.

The only check of the Ascend stream discipline we can run without Ascend: the executor's
calls are the ones it would make on Ascend (stream contexts, RECORD/WAIT, collectives whose
``CommHandle.wait()`` lands on the current stream), so the log says on which stream each
collective and each wait would be issued. Entries: ``{"step", "i": instr index, "text": instr
text, "call": "collective"|"comm_wait"|"p2p"|"record"|"wait"|"delay", "stream": current stream, "what": …}``.
"""
from __future__ import annotations

import json

from ppstream.mindspore.parallel.groups import Group
from ppstream.mindspore.platforms.base import P2P, PlatformWrapper


class RecordingPlatform(PlatformWrapper):

    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.log: list[dict] = []

    def _log(self, call: str, what: str) -> None:
        self.log.append({"step": self.step, "i": self.instr_index, "text": self.instr_text, "call": call,
                         "stream": self.current_stream, "what": what})

    def record(self, event: str) -> None:
        self._log("record", event)
        self.inner.record(event)

    def wait(self, event: str) -> None:
        self._log("wait", event)
        self.inner.wait(event)

    def _collective(self, fn, kind: str, t, group: Group):
        self._log("collective", f"{kind} {group.name}")
        out = fn(t, group)
        self._log("comm_wait", f"{kind} {group.name}")  # CommHandle.wait() on the current stream
        return out

    def _all_gather(self, t, group: Group):
        return self._collective(self.inner._all_gather, "all_gather", t, group)

    def _reduce_scatter_sum(self, t, group: Group):
        return self._collective(self.inner._reduce_scatter_sum, "reduce_scatter", t, group)

    def _all_reduce_sum(self, t, group: Group):
        return self._collective(self.inner._all_reduce_sum, "all_reduce", t, group)

    def _p2p_batch(self, p2p_ops: list[P2P]) -> list:
        self._log("p2p", "; ".join(f"{o.kind} ->{o.peer}" if o.is_send else f"{o.kind} <-{o.peer}" for o in p2p_ops))
        return self.inner._p2p_batch(p2p_ops)

    def _delay(self, ms: float) -> None:
        self._log("delay", f"{ms:g} ms")
        self.inner._delay(ms)

    def dump(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.log, f)
