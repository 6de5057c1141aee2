"""Topology: which global ranks form a rank's shard group, replicate group and PP peers.

Expanded program sets number ranks ``pp_rank * dp + replicate_index * shard + shard_index``
(docs/semantics.md); the groups are derived from that, never configured.
"""
from __future__ import annotations

import dataclasses


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
        base = self.pp_rank * self.dp + self.replicate_index * self.shard
        ranks = tuple(base + i for i in range(self.shard))
        return Group(_name("shard", ranks), ranks, self.shard_index)

    def replicate_group(self) -> Group:
        base = self.pp_rank * self.dp + self.shard_index
        ranks = tuple(base + j * self.shard for j in range(self.replicate))
        return Group(_name("replicate", ranks), ranks, self.replicate_index)

    def local_stages(self) -> list[int]:
        """Global virtual stages of this rank, chunk order (s = chunk * pp + pp_rank)."""
        return [c * self.pp + self.pp_rank for c in range(self.vpp)]


def _name(kind: str, ranks: tuple[int, ...]) -> str:
    return f"pps_{kind}_" + "_".join(map(str, ranks))
