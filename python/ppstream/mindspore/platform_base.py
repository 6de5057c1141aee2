"""Platform: what issuing a communication or event means on one device kind.

The executor issues every instruction inside ``platform.stream(name)`` and calls only these
methods; ``platform_cpu`` (MCCL, synchronous), ``platform_ascend`` (streams, events, async
collectives whose ``CommHandle.wait()`` lands on the current stream) and
``platform_recording`` (wraps another and logs the stream of every call) implement it.
Every collective carries a ``tag`` ("REDUCE_GRAD s3 reduce_scatter") counted in ``counts``.
"""
from __future__ import annotations

import collections
import contextlib
from typing import Iterator, Optional

from ppstream.mindspore.groups import Group


class P2P:
    """One op of a BATCH: kind SEND_F|RECV_F|SEND_B|RECV_B, the tensor (send) or shape (recv), peer."""

    __slots__ = ("kind", "tensor", "shape", "peer")

    def __init__(self, kind: str, peer: int, tensor=None, shape: Optional[tuple[int, ...]] = None):
        self.kind, self.peer, self.tensor, self.shape = kind, peer, tensor, shape

    @property
    def is_send(self) -> bool:
        return self.kind.startswith("SEND")


class Platform:
    name = "abstract"

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.instr_text = ""  # the instruction being executed (for logs and errors)

    def setup(self, world_size: int, groups: list[Group]) -> None:
        """Creates the communication groups (called once, before the first step)."""

    def begin_step(self) -> None:
        """Fresh events for a step (every event is recorded at most once per step)."""

    @contextlib.contextmanager
    def stream(self, name: str) -> Iterator[None]:
        yield

    def record(self, event: str) -> None:
        raise NotImplementedError

    def wait(self, event: str) -> None:
        raise NotImplementedError

    def all_gather(self, t, group: Group, tag: str):
        """Concatenation of every member's ``t`` (1-D), in group order."""
        raise NotImplementedError

    def reduce_scatter_sum(self, t, group: Group, tag: str):
        """Sum over members of ``t`` (1-D, length size * L), then this member's L-slice."""
        raise NotImplementedError

    def all_reduce_sum(self, t, group: Group, tag: str):
        raise NotImplementedError

    def p2p_batch(self, ops: list[P2P], tag: str) -> list:
        """Runs one BATCH; returns the received tensors in the order of the RECV ops."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Blocks the host until every stream is idle."""
