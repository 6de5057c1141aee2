"""FakePlatform: every rank of a world in one process, for tests without msrun (profile cpu-serial).

``FakeWorld`` holds the shared state: per ordered rank pair a FIFO mailbox (a send is buffered
and returns at once, like MCCL's), per (group, sequence number) a rendezvous where each member
deposits its tensor and every member leaves with the result. ``run_ranks`` runs one function
per rank, each on its own thread, but under one lock: exactly one rank runs at a time (MindSpore
is never called concurrently) and a rank gives the lock up only while it waits for a peer — a
deterministic cooperative schedule, the runtime equivalent of a fake file system. A wait that
outlasts ``timeout_s`` raises, naming the rank, its instruction and what it waited for.

Semantics are ``cpu-serial``'s: every call completes before it returns, streams are no-ops;
events are checked (a WAIT whose event was not RECORDed earlier in the step is an error, as
it would be a silent no-op on Ascend). Collectives sum in member order, so results are
deterministic. A stream's ``delay`` (``--straggle``) is logged in ``delays`` with its stream,
never slept. The tests live in tests/python/runtime/test_executor.py.
"""
from __future__ import annotations

import collections
import contextlib
import threading
from typing import Callable, Iterator

from mindspore import ops

from ppstream.mindspore.parallel.commplan import CommPlan
from ppstream.mindspore.parallel.groups import Group
from ppstream.mindspore.platforms.base import P2P, Platform


class FakeWorld:
    """The shared mailboxes and rendezvous of one in-process world."""

    def __init__(self, world_size: int, timeout_s: float = 60.0):
        self.world_size, self.timeout_s = world_size, timeout_s
        self.cond = threading.Condition()
        self.mailbox: dict[tuple[int, int], collections.deque] = collections.defaultdict(collections.deque)
        self.meet: dict[tuple[str, int], dict[int, object]] = {}
        self.left: dict[tuple[str, int], int] = {}
        self.failed: list[int] = []  # ranks that raised, in the order they did

    def wait_for(self, pred: Callable[[], bool], who: str) -> None:
        if not self.cond.wait_for(lambda: pred() or bool(self.failed), timeout=self.timeout_s):
            raise TimeoutError(f"fake world: {who} waited {self.timeout_s:.0f} s (deadlock?)")
        if not pred():
            raise RuntimeError(f"fake world: {who}: abandoned, r{self.failed[0]} failed")

    def run_ranks(self, fn: Callable[[int], object]) -> list:
        """Runs ``fn(rank)`` for every rank (one at a time, see the module doc); returns the
        results in rank order. When a rank raises, the ranks waiting on it give up, and the first
        exception is re-raised naming its rank (the root cause, not a peer left waiting)."""
        results: list = [None] * self.world_size
        errors: dict[int, BaseException] = {}
        self.failed = []

        def body(r: int) -> None:
            with self.cond:
                try:
                    results[r] = fn(r)
                except BaseException as e:  # noqa: BLE001 — reported below with the rank
                    errors[r] = e
                    self.failed.append(r)
                finally:
                    self.cond.notify_all()

        threads = [threading.Thread(target=body, args=(r,), name=f"fake-r{r}") for r in range(self.world_size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            r = self.failed[0]
            raise RuntimeError(f"fake world: rank {r} failed: {errors[r]!r}") from errors[r]
        return results


class FakePlatform(Platform):
    profile = "cpu-serial"

    def __init__(self, world: FakeWorld, rank: int):
        super().__init__()
        self.world, self.rank = world, rank
        self.seq: collections.Counter[str] = collections.Counter()
        self.recorded: set[str] = set()
        self.delays: list[tuple[int, str, str, float]] = []  # (step, stream, instruction, ms) of each delay()

    def _who(self, what: str) -> str:
        return f"r{self.rank} step {self.step} #{self.instr_index} {self.instr_text!r}: {what}"

    def _setup(self, plan: CommPlan) -> None:
        pass  # rendezvous are keyed by the planned group names: members that disagree deadlock (and say so)

    def _begin_step(self) -> None:
        self.recorded = set()

    @contextlib.contextmanager
    def _stream(self, name: str) -> Iterator[None]:
        yield

    def record(self, event: str) -> None:
        self.recorded.add(event)

    def wait(self, event: str) -> None:
        if event not in self.recorded:
            raise RuntimeError(self._who(f"WAIT {event} before its RECORD"))

    def _rendezvous(self, t, group: Group) -> list:
        """Every member's tensor, in group order (blocks until all members arrived)."""
        w = self.world
        key = (group.name, self.seq[group.name])
        self.seq[group.name] += 1
        w.meet.setdefault(key, {})[self.rank] = t
        w.cond.notify_all()
        w.wait_for(lambda: len(w.meet[key]) == group.size, self._who(f"collective #{key[1]} in {group.name}"))
        parts = [w.meet[key][r] for r in group.ranks]
        w.left[key] = w.left.get(key, 0) + 1
        if w.left[key] == group.size:
            del w.meet[key], w.left[key]
        return parts

    @staticmethod
    def _sum(parts: list):
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        return total

    def _all_gather(self, t, group: Group):
        return ops.cat(self._rendezvous(t, group))

    def _reduce_scatter_sum(self, t, group: Group):
        n = t.shape[0] // group.size
        return self._sum(self._rendezvous(t, group))[group.index * n:(group.index + 1) * n].copy()

    def _all_reduce_sum(self, t, group: Group):
        return self._sum(self._rendezvous(t, group))

    def _p2p_batch(self, p2p_ops: list[P2P]) -> list:
        w, received = self.world, []
        for op in p2p_ops:  # cpu-serial: one by one in the listed order
            if op.is_send:
                w.mailbox[(self.rank, op.peer)].append(op.tensor)
                w.cond.notify_all()
                continue
            box = w.mailbox[(op.peer, self.rank)]
            w.wait_for(lambda: bool(box), self._who(f"{op.kind} <-r{op.peer}"))
            t = box.popleft()
            if tuple(t.shape) != tuple(op.shape) or t.dtype != op.dtype:
                raise RuntimeError(self._who(f"{op.kind} <-r{op.peer}: got {tuple(t.shape)} {t.dtype}, "
                                             f"the receive buffer is {tuple(op.shape)} {op.dtype}"))
            received.append(t)
        return received

    def _delay(self, ms: float) -> None:
        self.delays.append((self.step, self.current_stream, self.instr_text, ms))  # logged, never slept

    def synchronize(self) -> None:
        pass
