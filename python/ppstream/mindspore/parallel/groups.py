"""Topology: which global ranks form a rank's shard group, replicate group and PP peers.

Expanded program sets number ranks ``pp_rank * dp + replicate_index * shard + shard_index``
(docs/semantics.md); the groups' members come from the engine (``_core.dp_group``), never configured.
"""
from __future__ import annotations

import dataclasses

from ppstream import _core


@dataclasses.dataclass(frozen=True)
class Group:
    """A communication group: its name (as created in MindSpore), member global ranks, my index."""
    name: str
    ranks: tuple[int, ...]
    index: int

    @property
    def size(self) -> int:
        return len(self.ranks)


@dataclasses.dataclass(frozen=True)
class Topology:
    pp: int
    vpp: int
    shard: int
    replicate: int
    rank: int

    @property
    def dp(self) -> int:
        return self.shard * self.replicate

    @property
    def world_size(self) -> int:
        return self.pp * self.dp

    @property
    def pp_rank(self) -> int:
        return self.rank // self.dp

    @property
    def dp_index(self) -> int:
        return self.rank % self.dp

    @property
    def shard_index(self) -> int:
        return self.dp_index % self.shard

    @property
    def replicate_index(self) -> int:
        return self.dp_index // self.shard

    def shard_group(self) -> Group:
        return self._group("shard")

    def replicate_group(self) -> Group:
        return self._group("replicate")

    def _group(self, kind: str) -> Group:
        # The engine's formula (World::group_members), so runtime and verifier agree on members.
        ranks = tuple(_core.dp_group(kind, self.rank, self.pp, self.shard, self.replicate))
        return Group(_name(kind, ranks), ranks, ranks.index(self.rank))

    def norm_group(self) -> Group:
        """The ranks holding distinct shards with this rank's replicate index: every PP rank ×
        every shard index (ranks pp_rank * dp + replicate_index * shard + i). Gradient
        statistics (norm, non-finite count, components/opt_step.py) are summed over it, so a
        replica's identical shard is never counted twice."""
        ranks = tuple(p * self.dp + self.replicate_index * self.shard + i
                      for p in range(self.pp) for i in range(self.shard))
        return Group(_name("norm", ranks), ranks, ranks.index(self.rank))

    def local_stages(self) -> list[int]:
        """Global virtual stages of this rank, chunk order (s = chunk * pp + pp_rank)."""
        return [c * self.pp + self.pp_rank for c in range(self.vpp)]


def _name(kind: str, ranks: tuple[int, ...]) -> str:
    return f"pps_{kind}_" + "_".join(map(str, ranks))
