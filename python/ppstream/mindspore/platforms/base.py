"""Platform: what issuing a communication or an event means on one device kind.

The executor issues every instruction inside ``platform.stream(name)`` and calls only the
public methods below. The base tracks the current program stream and maps each collective's
group to the communication group planned for that stream (``commplan.CommPlan``), so a
platform's transport receives the group to issue on. Each concrete platform names, in ``profile``, the C++ platform profile
its programs must be verified under (``ppstream._core.compile(..., platform=profile)``), and
its ``name`` *is* that profile name. The base counts every call by ``tag``
("REDUCE_GRAD s3 reduce_scatter", "BATCH SEND_F") in ``counts`` and skips size-1 groups, so a
platform implements only the ``_``-prefixed transport.

Implementations: ``platforms.cpu`` (MCCL, synchronous: ``cpu-serial``), ``platforms.ascend``
(streams, events, async collectives: ``ascend-mindspore``), ``platforms.fake`` (in-process
ranks for tests: ``cpu-serial``); wrappers (``PlatformWrapper``): ``platforms.recording`` (logs
the stream of every call) and ``platforms.straggler`` (delays a rank's reductions on their stream).
Every tensor a communication issued on a side stream uses is held (``holds.BufferHolds``) until
the program's events order it before the next user (docs/runtime.md, "Buffer lifetime").
"""
from __future__ import annotations

import abc
import collections
import contextlib
from typing import Iterator, Optional

from ppstream import _core
from ppstream.mindspore.parallel.commplan import CommPlan
from ppstream.mindspore.parallel.groups import Group
from ppstream.mindspore.launch.msrun import COMM_STREAM_MODE, COMM_STREAM_PROFILES
from ppstream.mindspore.platforms.holds import BufferHolds

# The engine's profile names (src/engine/platform.cpp), so the two lists cannot drift.
KNOWN_PROFILES = tuple(_core.platform_profiles())
# The profile a device's platform is verified under (the launcher compiles with it before
# importing MindSpore; test_executor.py checks it equals each platform class's ``profile``). On
# Ascend: the profile of the communication-stream mode the launcher sets.
DEVICE_PROFILES = {"cpu": "cpu-serial", "ascend": COMM_STREAM_PROFILES[COMM_STREAM_MODE]}


class P2P:
    """One op of a BATCH: kind SEND_F|RECV_F|SEND_B|RECV_B, peer (global rank), the tensor
    (send) or the shape and dtype of the buffer (receive)."""

    __slots__ = ("kind", "tensor", "shape", "dtype", "peer")

    def __init__(self, kind: str, peer: int, tensor=None, shape: Optional[tuple[int, ...]] = None, dtype=None):
        self.kind, self.peer, self.tensor, self.shape, self.dtype = kind, peer, tensor, shape, dtype

    @property
    def is_send(self) -> bool:
        return self.kind.startswith("SEND")


class Platform(abc.ABC):
    """Streams, events, collectives and P2P batches of one rank."""

    profile: str = ""  # the C++ verification profile (one of KNOWN_PROFILES); set by each platform

    def __init__(self) -> None:
        if self.profile not in KNOWN_PROFILES:
            raise TypeError(f"{type(self).__name__}.profile={self.profile!r}: expected one of {KNOWN_PROFILES}")
        self.counts: collections.Counter[str] = collections.Counter()
        # ms of delay() issued per instruction index, until the executor takes it for the host
        # trace (a collective member's arrival delay: args.arrival_delay_ms)
        self.delays_ms: dict[int, float] = {}
        self.step = 0
        self.instr_index = -1
        self.instr_text = ""  # the instruction being executed (for logs and errors)
        self.plan: CommPlan | None = None
        self._streams = ["compute"]  # program streams entered; outside any, the compute stream
        # every tensor a communication on a side stream uses, until the program orders it (holds.py);
        # the executor tells it each RECORD, WAIT and synchronize
        self.holds = BufferHolds()

    @property
    def name(self) -> str:
        return self.profile

    @property
    def label(self) -> str:
        """Name plus wrappers, for logs ("cpu-serial+recording")."""
        return self.name

    @property
    def current_stream(self) -> str:
        return self._streams[-1]

    # -- lifecycle (the executor calls these) ------------------------------------------------
    def setup(self, plan: CommPlan) -> None:
        """Creates the communication groups (called once, before the first step)."""
        self.plan = plan
        self._setup(plan)

    @contextlib.contextmanager
    def stream(self, name: str) -> Iterator[None]:
        """Context in which the instructions of program stream ``name`` are issued."""
        self._streams.append(name)
        try:
            with self._stream(name):
                yield
        finally:
            self._streams.pop()

    def begin_step(self, step: int) -> None:
        self.step = step
        self._begin_step()

    def begin_instr(self, index: int, instr: dict) -> None:
        """Called before instruction ``index`` of the program is issued."""
        self.instr_index, self.instr_text = index, instr["text"]

    # -- communication, counted and held ----------------------------------------------------
    def all_gather(self, t, group: Group, tag: str):
        """Concatenation of every member's ``t`` (1-D), in group order."""
        self.counts[tag] += 1
        return t if group.size == 1 else self._held(tag, t, self._all_gather(t, self._comm(group)))

    def reduce_scatter_sum(self, t, group: Group, tag: str):
        """Sum over members of ``t`` (1-D, length size * L), then this member's L-slice."""
        self.counts[tag] += 1
        return t if group.size == 1 else self._held(tag, t, self._reduce_scatter_sum(t, self._comm(group)))

    def all_reduce_sum(self, t, group: Group, tag: str):
        self.counts[tag] += 1
        return t if group.size == 1 else self._held(tag, t, self._all_reduce_sum(t, self._comm(group)))

    def p2p_batch(self, ops: list[P2P], tag: str) -> list:
        """Runs one BATCH; returns the received tensors in the order of the RECV ops."""
        for op in ops:
            self.counts[tag + " " + op.kind] += 1
        received = self._p2p_batch(ops)
        self.hold(tag, [op.tensor for op in ops if op.is_send] + list(received))
        return received

    def hold(self, tag: str, tensors) -> None:
        """Keeps ``tensors`` (used by work issued now on the current stream) alive until the
        program orders that work before another stream (holds.py)."""
        self.holds.hold(self.current_stream, tag, tensors)

    def _held(self, tag: str, t, out):
        self.hold(tag, (t, out))
        return out

    def delay(self, ms: float) -> None:
        """Enqueues ``ms`` milliseconds of work on the current stream (a straggling
        collective, ``--straggle``) without blocking the host where the device has streams;
        how is the platform's choice (docs/runtime.md, "Stragglers on the device")."""
        if ms < 0:
            raise ValueError(f"delay {ms} ms: expected >= 0")
        self.counts[f"delay {self.current_stream}"] += 1
        self.delays_ms[self.instr_index] = self.delays_ms.get(self.instr_index, 0.0) + ms
        self._delay(ms)

    def take_delay_ms(self, index: int) -> float:
        """The delay issued inside instruction ``index`` (ms, 0 without one), forgotten after."""
        return self.delays_ms.pop(index, 0.0)

    def _comm(self, group: Group) -> Group:
        return group if self.plan is None else self.plan.collective(group, self.current_stream)

    # -- what a platform implements ----------------------------------------------------------
    @abc.abstractmethod
    def _setup(self, plan: CommPlan) -> None:
        """Creates the groups of ``plan.groups()`` this platform uses, in that order."""

    def _begin_step(self) -> None:
        """Fresh events for a step (every event is recorded at most once per step)."""

    @abc.abstractmethod
    def _stream(self, name: str) -> contextlib.AbstractContextManager:
        """The device context of program stream ``name``."""

    @abc.abstractmethod
    def record(self, event: str) -> None: ...

    @abc.abstractmethod
    def wait(self, event: str) -> None: ...

    @abc.abstractmethod
    def _all_gather(self, t, group: Group): ...

    @abc.abstractmethod
    def _reduce_scatter_sum(self, t, group: Group): ...

    @abc.abstractmethod
    def _all_reduce_sum(self, t, group: Group): ...

    @abc.abstractmethod
    def _p2p_batch(self, ops: list[P2P]) -> list: ...

    @abc.abstractmethod
    def _delay(self, ms: float) -> None:
        """``ms`` ms of device time on the current stream."""

    @abc.abstractmethod
    def synchronize(self) -> None:
        """Blocks the host until every stream is idle."""


class PlatformWrapper(Platform):
    """A platform that adds behaviour around another; shares its counts, profile and transport.

    Subclasses override what they add and call ``super()``; everything else is delegated to
    ``inner``'s transport (not its counting methods, so every call is counted once).
    """

    def __init__(self, inner: Platform) -> None:
        self.profile = inner.profile
        super().__init__()
        self.inner = inner
        self.counts, self.holds, self.delays_ms = inner.counts, inner.holds, inner.delays_ms

    @property
    def label(self) -> str:
        return self.inner.label + "+" + type(self).__name__.removesuffix("Platform").lower()

    def begin_instr(self, index: int, instr: dict) -> None:
        super().begin_instr(index, instr)
        self.inner.begin_instr(index, instr)

    def _setup(self, plan: CommPlan) -> None:
        self.inner.setup(plan)

    def _begin_step(self) -> None:
        self.inner.begin_step(self.step)

    def _stream(self, name: str):
        return self.inner.stream(name)

    def record(self, event: str) -> None:
        self.inner.record(event)

    def wait(self, event: str) -> None:
        self.inner.wait(event)

    def _all_gather(self, t, group: Group):
        return self.inner._all_gather(t, group)

    def _reduce_scatter_sum(self, t, group: Group):
        return self.inner._reduce_scatter_sum(t, group)

    def _all_reduce_sum(self, t, group: Group):
        return self.inner._all_reduce_sum(t, group)

    def _p2p_batch(self, ops: list[P2P]) -> list:
        return self.inner._p2p_batch(ops)

    def _delay(self, ms: float) -> None:
        self.inner._delay(ms)

    def synchronize(self) -> None:
        self.inner.synchronize()
