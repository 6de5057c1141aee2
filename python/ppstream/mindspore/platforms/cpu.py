"""CpuPlatform: MindSpore on CPU with MCCL — synchronous collectives, no streams or events.

MindSpore 2.10's CPU backend registers all_reduce, all_gather (list form), send and recv but
not reduce_scatter_tensor, all_gather_into_tensor or batch_isend_irecv, and has no device
streams or events. The documented fallbacks: reduce-scatter = all-reduce then take this
member's slice; all-gather = list all-gather then concatenate; a BATCH = its ops one by one in
the listed order (programs verified under the ``cpu-serial`` profile are deadlock-free so).
Collectives use the communication groups of the ``CommPlan`` (one per program stream), so the
plan is exercised for real; P2P uses the world group.
``mindspore.runtime`` stream APIs are never called here; RECORD/WAIT are no-ops; a stream's
delay (``--straggle``) is a host sleep, since the host runs every stream.
"""
from __future__ import annotations

import contextlib
import time
from typing import Iterator

import mindspore.mint.distributed as dist
from mindspore import ops
from mindspore.communication import GlobalComm, create_group

from ppstream.mindspore.parallel.commplan import CommPlan
from ppstream.mindspore.parallel.groups import Group
from ppstream.mindspore.platforms.base import P2P, Platform


class CpuPlatform(Platform):
    profile = "cpu-serial"

    def _setup(self, plan: CommPlan) -> None:
        self.world = GlobalComm.WORLD_COMM_GROUP
        # mint.distributed.send/recv look up the rank of "hccl_world_group" (a default argument
        # bound when MindSpore is imported, before init() picks MCCL); on CPU that group does not
        # exist, so we create it as an alias of the world. Observed on MindSpore 2.10.0.
        if self.world != "hccl_world_group":
            create_group("hccl_world_group", list(range(plan.world_size)))
        for g in plan.groups():  # P2P stays on the world group: CPU runs it synchronously anyway
            if g not in plan.p2p_groups():
                create_group(g.name, list(g.ranks))

    @contextlib.contextmanager
    def _stream(self, name: str) -> Iterator[None]:
        yield  # no device streams on CPU: every call below is synchronous

    def record(self, event: str) -> None:
        pass

    def wait(self, event: str) -> None:
        pass

    def _all_gather(self, t, group: Group):
        parts = [ops.zeros(t.shape, t.dtype) for _ in range(group.size)]
        dist.all_gather(parts, t, group=group.name)
        return ops.cat(parts)

    def _reduce_scatter_sum(self, t, group: Group):
        n = t.shape[0] // group.size
        t = t.copy()
        dist.all_reduce(t, group=group.name)
        return t[group.index * n:(group.index + 1) * n].copy()

    def _all_reduce_sum(self, t, group: Group):
        t = t.copy()
        dist.all_reduce(t, group=group.name)
        return t

    def _p2p_batch(self, p2p_ops: list[P2P]) -> list:
        received = []
        for op in p2p_ops:
            if op.is_send:
                dist.send(op.tensor, dst=op.peer, group=self.world)
            else:
                buf = ops.zeros(op.shape, op.dtype)
                dist.recv(buf, src=op.peer, group=self.world)
                received.append(buf)
        return received

    def _delay(self, ms: float) -> None:
        time.sleep(ms / 1000.0)  # cpu-serial: the host runs every stream, so a stream's delay is the host's

    def synchronize(self) -> None:
        pass
