"""BufferHolds: the runtime keeps every buffer a side-stream operation uses until the program
has ordered that operation before the stream that goes on.

A collective or P2P batch issued on a program stream other than ``compute`` (``reduce``,
``fsdp``, ``p2p.E``) runs on the device after the host has moved on; its input and output
tensors must not be freed — and their memory handed to another tensor — before the device has
finished with them. The program says when that is: an operation on stream X is over for every
other stream once an event recorded on X *after* it (``RECORD reduce_done[s]`` on ``reduce``)
has been waited on another stream (``WAIT reduce_done[s]`` on ``compute``, before
``OPT_STEP``), or when the host synchronizes the device. So:

- ``hold(stream, tag, tensors)``: the platform calls it for every communication issued on a
  non-compute stream (inputs and outputs), and ``HsdpState.reduce_grad`` for the gradients it
  takes; on ``compute`` nothing is held: the compute stream runs its work in issue order, so a
  tensor freed by the host after an op on it can only be reused by later compute work;
- ``recorded(event, stream)``: every hold of ``stream`` not yet covered by an event is now
  covered by ``event``;
- ``waited(event, stream)``: a WAIT of ``event`` on a stream other than the one it was recorded
  on releases the holds it covers;
- ``synchronized()``: the device is idle; everything is released.

MindSpore's own rule (docs/runtime.md, "Buffer lifetime") also extends the life of device
memory used across streams; these holds make the lifetime the program states explicit instead
of relying on it, and let the fake platform test it.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Optional


@dataclasses.dataclass
class Hold:
    """Tensors one operation issued on ``stream`` uses; ``event`` is the event recorded on that
    stream after the operation (None until one is)."""
    stream: str
    tag: str
    tensors: list
    event: Optional[str] = None


class BufferHolds:

    def __init__(self) -> None:
        self.pending: list[Hold] = []

    def hold(self, stream: str, tag: str, tensors: Iterable) -> None:
        if stream == "compute":
            return
        self.pending.append(Hold(stream, tag, [t for t in tensors if t is not None]))

    def recorded(self, event: str, stream: str) -> None:
        for h in self.pending:
            if h.stream == stream and h.event is None:
                h.event = event

    def waited(self, event: str, stream: str) -> None:
        self.pending = [h for h in self.pending if not (h.event == event and h.stream != stream)]

    def synchronized(self) -> None:
        self.pending = []

    def tags(self) -> list[str]:
        """The tags of the pending holds, in issue order (for tests and error messages)."""
        return [h.tag for h in self.pending]
