"""AscendPlatform: real streams and events; every CommHandle.wait() lands on the current stream.

Streams: ``compute`` is the default stream; every other name in the program (``p2p``,
``p2p.E``, ``reduce``, ``fsdp``) gets its own ``mindspore.runtime.Stream``. The executor
issues each instruction inside ``stream(name)`` (a ``mindspore.runtime.StreamCtx``), so the
reduction's reduce-scatter / all-reduce waits land on the ``reduce`` stream, never on
``compute``; ``compute_ready`` / ``reduce_done`` are ``mindspore.runtime.Event`` s recorded and
waited where the program says.

Communication groups come from the ``CommPlan``: one per (member set, program stream) for
collectives and one per peer pair for P2P, so that under ``multi_stream:group`` (set by the
launcher) each group's communication runs on its own device stream; a BATCH with several peers
is one ``batch_isend_irecv`` per peer (all issued, then all waited on the current stream). The
``ascend-mindspore`` engine profile the programs are verified under models exactly that: a
peer's ops wait for the rank's earlier ops with that peer, whatever stream issued them. Not exercised by our tests (no Ascend here): the recording platform checks the same
call sequence on CPU, and the fake platform the plan's group names.

A stream's ``delay`` (``--straggle``) is a chain of matmuls issued on the current stream, as many
as the delay takes (one matmul timed once with device events); ``hccl_buffer_size_mb`` goes to
every ``create_group`` as ``GroupOptions.hccl_config["hccl_buffer_size"]``.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import mindspore as ms
import mindspore.mint.distributed as dist
from mindspore import ops
from mindspore.communication import create_group

from ppstream.mindspore.parallel.commplan import CommPlan
from ppstream.mindspore.parallel.groups import Group
from ppstream.mindspore.launch.msrun import COMM_STREAM_MODE, COMM_STREAM_PROFILES
from ppstream.mindspore.platforms.base import P2P, Platform


class AscendPlatform(Platform):
    profile = COMM_STREAM_PROFILES[COMM_STREAM_MODE]  # ascend-mindspore: a device stream per group

    def __init__(self, hccl_buffer_size_mb: int = 0) -> None:
        """``hccl_buffer_size_mb``: each created group's HCCL buffer (MB, per direction); 0 leaves
        HCCL's own (``HCCL_BUFFSIZE``, default 200; docs/runtime.md, "Communication memory")."""
        super().__init__()
        if hccl_buffer_size_mb < 0:
            raise ValueError(f"hccl_buffer_size {hccl_buffer_size_mb} MB: expected >= 0 (0: HCCL's default)")
        self.hccl_buffer_size_mb = hccl_buffer_size_mb
        self.streams: dict[str, object] = {}
        self.events: dict[str, object] = {}
        self._matmul_ms: float | None = None  # one delay matmul's device time, measured at the first delay

    def _setup(self, plan: CommPlan) -> None:
        options = None
        if self.hccl_buffer_size_mb:
            from mindspore._c_expression import GroupOptions  # as MindSpore's create_group documents it
            options = GroupOptions()
            options.hccl_config = {"hccl_buffer_size": self.hccl_buffer_size_mb}
        for g in plan.groups():
            create_group(g.name, list(g.ranks), options)
        self.streams["compute"] = ms.runtime.current_stream()

    def _begin_step(self) -> None:
        self.events = {}

    @contextlib.contextmanager
    def _stream(self, name: str) -> Iterator[None]:
        if name not in self.streams:
            self.streams[name] = ms.runtime.Stream()
        with ms.runtime.StreamCtx(self.streams[name]):
            yield

    def record(self, event: str) -> None:
        ev = self.events.setdefault(event, ms.runtime.Event())
        ev.record(ms.runtime.current_stream())

    def wait(self, event: str) -> None:
        ev = self.events.get(event)
        if ev is None:
            raise RuntimeError(f"{self.instr_text}: WAIT {event} before its RECORD (program not verified?)")
        ms.runtime.current_stream().wait_event(ev)

    def _all_gather(self, t, group: Group):
        out = ops.zeros((t.shape[0] * group.size,), t.dtype)
        dist.all_gather_into_tensor(out, t, group=group.name, async_op=True).wait()
        return out

    def _reduce_scatter_sum(self, t, group: Group):
        out = ops.zeros((t.shape[0] // group.size,), t.dtype)
        dist.reduce_scatter_tensor(out, t, group=group.name, async_op=True).wait()
        return out

    def _all_reduce_sum(self, t, group: Group):
        t = t.copy()
        dist.all_reduce(t, group=group.name, async_op=True).wait()
        return t

    def _p2p_batch(self, p2p_ops: list[P2P]) -> list:
        per_peer: dict[int, list] = {}  # first-appearance order of peers, op order kept per peer
        received = []
        for op in p2p_ops:
            group = self.plan.p2p(op.peer).name
            if op.is_send:
                per_peer.setdefault(op.peer, []).append(dist.P2POp(dist.isend, op.tensor, op.peer, group=group))
            else:
                buf = ops.zeros(op.shape, op.dtype)
                received.append(buf)
                per_peer.setdefault(op.peer, []).append(dist.P2POp(dist.irecv, buf, op.peer, group=group))
        handles = [h for batch in per_peer.values() for h in dist.batch_isend_irecv(batch)]
        for h in handles:
            h.wait()
        return received

    DELAY_N = 256  # the delay's matmul: DELAY_N x DELAY_N float32, zeros (no overflow; cost is the same)

    def _delay(self, ms_: float) -> None:
        """MindSpore 2.10 has no device sleep: a chain of matmuls on the current stream, as many as
        ``ms_`` ms take (the host only issues them)."""
        if ms_ <= 0:
            return
        if self._matmul_ms is None:
            self._matmul_ms = self._time_matmul()
        x = ops.zeros((self.DELAY_N, self.DELAY_N), ms.float32)
        for _ in range(max(1, round(ms_ / self._matmul_ms))):
            x = ops.matmul(x, x)
        self.hold("delay", [x])

    def _time_matmul(self, reps: int = 20) -> float:
        """Device ms of one delay matmul, on a stream of its own, the device synchronized around it."""
        s = ms.runtime.Stream()
        ms.runtime.synchronize()
        with ms.runtime.StreamCtx(s):
            x = ops.zeros((self.DELAY_N, self.DELAY_N), ms.float32)
            start, end = ms.runtime.Event(enable_timing=True), ms.runtime.Event(enable_timing=True)
            start.record(s)
            for _ in range(reps):
                x = ops.matmul(x, x)
            end.record(s)
        end.synchronize()
        return max(start.elapsed_time(end) / reps, 1e-3)

    def synchronize(self) -> None:
        ms.runtime.synchronize()
