"""RankRuntime: one rank's stages, HSDP states, data and executor, built from the run config.

The model comes from the ``train.model`` factory (every rank builds all ModelParts and keeps
its virtual stages' parts), the data from ``train.data`` (recipe.py); the stage-boundary
buffers' shape and dtype from running ``first`` on the rank's first microbatch.

Shared by the msrun worker (one rank per process) and the in-process tests (every rank of a
``FakeWorld`` in one process): given the run config, the rank's topology, its program and a
platform, it builds the rank and runs steps. Knows nothing about processes or files.
"""
from __future__ import annotations

import mindspore as ms

from ppstream.mindspore.parallel.commplan import CommPlan
from ppstream.mindspore.training.executor import ActivationSpec, Executor, Progress
from ppstream.mindspore.parallel.groups import Topology
from ppstream.mindspore.training.hsdp import HsdpState
from ppstream.mindspore.model.protocol import boundary_of
from ppstream.mindspore.model.stage_cell import StageCell
from ppstream.mindspore.platforms.base import Platform
from ppstream.mindspore.recipe import build_parts, open_data, to_tensor
from ppstream.mindspore.runconfig import RunConfig
from ppstream.mindspore.training.stage import PipelineStage
from ppstream.mindspore.training.trace import HostTrace


class RankRuntime:

    def __init__(self, cfg: RunConfig, topo: Topology, program: dict, mode: str, platform: Platform,
                 progress: Progress | None = None, data=None):
        """``data``: the GlobalBatches to read (default: the config's ``train.data``)."""
        self.cfg, self.topo, self.platform = cfg, topo, platform
        platform.setup(CommPlan(topo, program))
        parts = build_parts(cfg)
        self.data = open_data(cfg, topo.dp) if data is None else data
        x0, _y0 = self.data.microbatch(0, topo.dp_index, 0)
        bound = boundary_of(parts, to_tensor(x0), f"train.model={cfg.train['model']!r}")
        self.stages, self.states = self._build_stages(mode, parts)
        self.trace = HostTrace(topo.rank, topo.pp_rank)
        self.executor = Executor(program, cfg.num_stages, self.stages, self.states, platform,
                                 ActivationSpec(bound.shape, bound.dtype), self.trace, progress or Progress(None))

    def _build_stages(self, mode: str, parts) -> tuple[dict[int, PipelineStage], dict[int, HsdpState]]:
        cfg, topo = self.cfg, self.topo
        shard_g, rep_g = topo.shard_group(), topo.replicate_group()
        stages, states = {}, {}
        for s in topo.local_stages():
            cell = StageCell(parts, cfg.stage_layers[s], s == 0, s == cfg.num_stages - 1, 1.0 / cfg.micro_batch_num)
            stages[s] = PipelineStage(s, cell, recompute=cfg.train["recompute"])
            states[s] = HsdpState(stages[s], shard_g, rep_g, sharded=(mode != "none" and topo.shard > 1),
                                  reduced=(mode != "none"), train_cfg=cfg.train)
        return stages, states

    @property
    def holds_loss(self) -> bool:
        return (self.cfg.num_stages - 1) in self.stages

    def run_step(self, step: int) -> float | None:
        """One step; the sum of this rank's scaled last-stage losses (None without the last stage)."""
        cache: dict[int, tuple[ms.Tensor, ms.Tensor]] = {}

        def batch(mb: int):
            if mb not in cache:
                x, y = self.data.microbatch(step, self.topo.dp_index, mb)
                cache[mb] = (to_tensor(x), to_tensor(y))
            return cache[mb]

        return self.executor.run_step(step, batch)

    def full_parameters(self) -> dict:
        """Every local stage's gathered parameters {name: array} (a collective in the shard group)."""
        params = {}
        for s, st in self.states.items():
            params.update(st.full_parameters(self.platform, f"FINAL s{s}"))
        return params

    def forward_runs(self) -> dict[int, int]:
        """How many times each local stage's forward ran (one per microbatch per step without recompute)."""
        return {s: st.forward_runs for s, st in self.stages.items()}
