"""HostTrace: a host-side Chrome trace (one per rank), one complete ("X") slice per instruction.

Slices are named with the instruction's canonical text so a slice joins back to its
instruction; ``pid`` is the rank, ``tid`` the stream the instruction was issued on, ``ts`` in µs
since the Unix epoch (the clock of MindSpore's profiler output, so host slices line up with its
op lanes; intervals measured with ``perf_counter``). Opens in Perfetto / chrome://tracing.
"""
from __future__ import annotations

import json
import time


class HostTrace:

    def __init__(self, rank: int):
        self.rank = rank
        self.events: list[dict] = []
        self.t0 = time.perf_counter()
        self.epoch_us = time.time_ns() / 1e3  # wall clock at t0
        self._tids: dict[str, int] = {}

    def now_us(self) -> float:
        return self.epoch_us + (time.perf_counter() - self.t0) * 1e6

    def slice(self, name: str, stream: str, start_us: float, end_us: float, args: dict) -> None:
        tid = self._tids.setdefault(stream, len(self._tids))
        self.events.append({"name": name, "ph": "X", "pid": self.rank, "tid": tid, "ts": round(start_us, 3),
                            "dur": round(end_us - start_us, 3), "cat": args.get("op", ""), "args": args})

    def write(self, path: str) -> None:
        meta = [{"name": "process_name", "ph": "M", "pid": self.rank, "args": {"name": f"r{self.rank}"}}]
        meta += [{"name": "thread_name", "ph": "M", "pid": self.rank, "tid": tid, "args": {"name": s}}
                 for s, tid in self._tids.items()]
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": meta + self.events, "displayTimeUnit": "ms"}, f)
