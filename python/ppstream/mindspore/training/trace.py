"""HostTrace: a rank's runtime trace in ppstream's own trace format (docs/analyze.md, "Our trace
format"; the keys of include/ppstream/analyze/trace_format.h, mapped as src/sim/trace.cpp maps
simulated instructions), so ``ppstream analyze`` / ``diff`` read runtime and simulated runs alike.

One complete ("X") slice per instruction, named by its canonical text (a slice joins back to its
instruction): ``pid`` = rank, ``tid`` = the stream it was issued on (``thread_name`` metadata),
``args.kind`` compute (F, B, OPT_STEP, RESHARD) | p2p (BATCH) | collective (UNSHARD on group
``shard[ppP]``, REDUCE_GRAD on ``dp[ppP]``; one issued on ``compute`` is drawn on
``compute:hccl`` plus an ``EVENT_WAIT`` on compute, the CommHandle.wait); RECORD and WAIT are
not drawn (instant on the host). One ``step N`` marker per step on stream ``host``.

Times: ``ts`` in µs since the Unix epoch — the clock of MindSpore's profiler output, so these
slices line up with its op lanes — measured with ``perf_counter`` from one wall-clock origin.
The slices are *host* intervals: on CPU every call is synchronous (cpu-serial), so they are the
operations' real extents; on Ascend they are issue times only (the profiler has the device's).
"""
from __future__ import annotations

import json
import time

_KIND = {"F": "compute", "B": "compute", "OPT_STEP": "compute", "RESHARD": "compute", "BATCH": "p2p",
         "UNSHARD": "collective", "REDUCE_GRAD": "collective"}
HOST_STREAM = "host"


class HostTrace:

    def __init__(self, rank: int, pp_rank: int, global_clock: bool = True):
        self.rank, self.pp_rank, self.global_clock = rank, pp_rank, global_clock
        self.events: list[dict] = []
        self.t0 = time.perf_counter()
        self.epoch_us = time.time_ns() / 1e3  # wall clock at t0
        self._tids: dict[str, int] = {}

    def now_us(self) -> float:
        return self.epoch_us + (time.perf_counter() - self.t0) * 1e6

    def _slice(self, name: str, stream: str, start_us: float, end_us: float, args: dict) -> None:
        tid = self._tids.setdefault(stream, len(self._tids))
        self.events.append({"name": name, "ph": "X", "pid": self.rank, "tid": tid, "ts": round(start_us, 3),
                            "dur": round(end_us - start_us, 3), "args": args})

    def instr(self, index: int, instr: dict, start_us: float, end_us: float, arrival_ms: float = 0.0) -> None:
        """One instruction's host interval (µs since the epoch). ``arrival_ms``: the delay the
        platform issued inside it before its first collective (``--straggle``), written as
        ``args.arrival_delay_ms`` on a collective when > 0: the member arrives that late after its
        slice starts (on CPU the host slept; on Ascend the delay is device work)."""
        op, stream, text = instr["op"], instr["stream"], instr["text"]
        kind = _KIND.get(op)
        if kind is None:
            return
        args = {"kind": kind, "index": index, "op": op}
        if kind == "collective":
            args["group"] = f"{'shard' if op == 'UNSHARD' else 'dp'}[pp{self.pp_rank}]"
            if arrival_ms > 0:
                args["arrival_delay_ms"] = round(arrival_ms, 6)
            if stream == "compute":
                self._slice(text, "compute:hccl", start_us, end_us, args)
                self._slice("EVENT_WAIT", stream, start_us, end_us,
                            {"kind": "stream_wait", "event": "CommHandle.wait", "instr": text})
                return
        self._slice(text, stream, start_us, end_us, args)

    def step(self, step: int, start_us: float, end_us: float) -> None:
        self._slice(f"step {step}", HOST_STREAM, start_us, end_us, {"kind": "step", "step": step})

    def write(self, path: str) -> None:
        meta = [{"name": "process_name", "ph": "M", "pid": self.rank, "tid": 0, "args": {"name": f"rank {self.rank}"}}]
        meta += [{"name": "thread_name", "ph": "M", "pid": self.rank, "tid": tid, "args": {"name": s}}
                 for s, tid in self._tids.items()]
        other = {"ppstream": {"version": 1, "producer": "runtime", "clock": "global" if self.global_clock else "per_rank",
                              "ranks": {str(self.rank): {"pp_rank": self.pp_rank}}}}
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": meta + self.events, "otherData": other, "displayTimeUnit": "ms"}, f)
