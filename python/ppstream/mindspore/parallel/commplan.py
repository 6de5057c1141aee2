"""CommPlan: which communication group each call of a rank uses, so device streams are independent.

On Ascend, MindSpore runs each communication group's operations on that group's own device
stream (``MS_DEV_RUNTIME_CONF`` ``multi_stream:group``, which the launcher sets explicitly;
docs/runtime.md, "Communication streams"). Two program streams that issue on the *same* group
would therefore share one device stream and run in host issue order — e.g. an UNSHARD on
``fsdp`` queued behind a REDUCE_GRAD on ``reduce``, or every P2P batch of a rank behind the
previous one when all use the world group. So the plan gives each program stream its own
collective groups and each peer pair its own P2P group, and the engine's ``ascend-mindspore``
profile models exactly these groups (src/engine/platform.h, ``CommQueues::PER_GROUP``):

- collectives: one group per (member set, program stream); on ``compute`` the plain group
  (``pps_shard_0_1``), elsewhere ``pps_shard_0_1_reduce``, ``pps_shard_0_1_fsdp``;
- OPT_STEP's gradient statistics (only with clipping or loss scaling): the norm group
  (``Topology.norm_group``: PP ranks × shard indices of one replicate index) on compute;
- P2P: one group per peer pair (``pps_p2p_2_6``); a BATCH with several peers becomes one
  ``batch_isend_irecv`` per peer, issued back to back. Ops with one peer then run in issue
  order on the pair's stream, the order per-peer FIFO (verified) already fixes on both sides.

``groups()`` lists every group this rank must create, sorted by (member ranks, name): every
rank creates its groups in one global order, so blocking group creation cannot deadlock.
Members derive the same names from their own programs (DP ranks of one PP rank run the same
program; expand-world, docs/semantics.md).
"""
from __future__ import annotations

from ppstream.mindspore.parallel.groups import Group, Topology


class CommPlan:

    def __init__(self, topo: Topology, program: dict, norm: bool = False):
        self.rank, self.world_size = topo.rank, topo.world_size
        self.shard, self.replicate = topo.shard_group(), topo.replicate_group()
        self._collective: dict[tuple[str, str], Group] = {}
        for g in (self.shard, self.replicate):
            self._add(g, "compute")  # outside the program (final gather) the current stream is compute
        if norm:  # OPT_STEP's gradient statistics (clipping, loss scaling) on compute
            self._add(topo.norm_group(), "compute")
        for ins in program["instrs"]:
            if ins["op"] == "UNSHARD":
                self._add(self.shard, ins["stream"])
            elif ins["op"] == "REDUCE_GRAD":
                self._add(self.shard, ins["stream"])
                self._add(self.replicate, ins["stream"])
        peers = {op["peer"] for ins in program["instrs"] for op in ins.get("p2p", [])}
        self._p2p = {p: _pair(self.rank, p) for p in sorted(peers)}

    def _add(self, g: Group, stream: str) -> None:
        if g.size > 1 and (g.name, stream) not in self._collective:
            name = g.name if stream == "compute" else f"{g.name}_{stream.replace('.', '_')}"
            self._collective[(g.name, stream)] = Group(name, g.ranks, g.index)

    def collective(self, group: Group, stream: str) -> Group:
        """The group to issue ``group``'s collective on from program stream ``stream``."""
        if group.size == 1:
            return group
        try:
            return self._collective[(group.name, stream)]
        except KeyError:
            raise RuntimeError(f"r{self.rank}: no communication group planned for {group.name} on stream "
                               f"{stream} (the program issues no collective of that group there)") from None

    def p2p(self, peer: int) -> Group:
        try:
            return self._p2p[peer]
        except KeyError:
            raise RuntimeError(f"r{self.rank}: P2P with r{peer}, which the program never names") from None

    def p2p_groups(self) -> set[Group]:
        return set(self._p2p.values())

    def groups(self) -> list[Group]:
        """Every group to create on this rank, in the one global order (member ranks, name)."""
        gs = list(self._collective.values()) + list(self._p2p.values())
        return sorted(gs, key=lambda g: (g.ranks, g.name))


def _pair(me: int, peer: int) -> Group:
    a, b = sorted((me, peer))
    return Group(f"pps_p2p_{a}_{b}", (a, b), 0 if me == a else 1)
