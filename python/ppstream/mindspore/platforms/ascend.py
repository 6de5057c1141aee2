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

    def __init__(self) -> None:
        super().__init__()
        self.streams: dict[str, object] = {}
        self.events: dict[str, object] = {}

    def _setup(self, plan: CommPlan) -> None:
        for g in plan.groups():
            create_group(g.name, list(g.ranks))
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

    def synchronize(self) -> None:
        ms.runtime.synchronize()
