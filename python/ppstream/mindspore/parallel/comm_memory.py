"""The device memory a rank's communication groups reserve (docs/runtime.md, "Communication memory").

HCCL gives every communicator a send and a receive buffer of its buffer size, exclusively, from
its creation on (CANN, ``HCCL_BUFFSIZE``: "each communicator occupies 2 × HCCL_BUFFSIZE"). A rank
creates the world group (``init()``, sized by ``HCCL_BUFFSIZE``) and the groups of its
``CommPlan``, each sized by ``train.hccl_buffer_size`` when set (MindSpore's ``create_group``
``GroupOptions.hccl_config["hccl_buffer_size"]``) and by ``HCCL_BUFFSIZE`` otherwise.
"""
from __future__ import annotations

from ppstream.mindspore.parallel.commplan import CommPlan
from ppstream.mindspore.parallel.groups import Topology

HCCL_DEFAULT_BUFFSIZE_MB = 200  # HCCL_BUFFSIZE's default (CANN environment variable reference)


def env_buffsize_mb(environ) -> int:
    """``HCCL_BUFFSIZE`` (MB) from ``environ``, else HCCL's default; raises ValueError when unusable."""
    text = environ.get("HCCL_BUFFSIZE", "")
    if text == "":
        return HCCL_DEFAULT_BUFFSIZE_MB
    try:
        mb = int(text)
    except ValueError:
        mb = 0
    if mb < 1:
        raise ValueError(f"HCCL_BUFFSIZE={text!r}: expected an integer >= 1 (MB)")
    return mb


def comm_memory(pset: dict, ranks: range, hccl_buffer_size_mb: int, world_buffer_mb: int) -> dict:
    """For the ranks of ``ranks`` in the program set ``pset``: ``groups`` (communicators each
    creates, the world group included) and ``reserved_mb`` (2 × the sum of their buffer sizes),
    with the settings that gave them (``hccl_buffer_size_mb``: 0 = HCCL's own, ``world_buffer_mb``)."""
    w = pset["world"]
    per_group = hccl_buffer_size_mb or world_buffer_mb
    groups, reserved = [], []
    for r in ranks:
        program = next(p for p in pset["programs"] if p["rank"] == r)
        n = len(CommPlan(Topology(w["pp"], w["vpp"], w["shard"], w["replicate"], r), program).groups())
        groups.append(n + 1)
        reserved.append(2 * (world_buffer_mb + n * per_group))
    return {"hccl_buffer_size_mb": hccl_buffer_size_mb, "world_buffer_mb": world_buffer_mb, "ranks": [ranks.start, ranks.stop - 1],
            "groups": groups, "reserved_mb": reserved}
