"""RankRuntime: one rank's stages, HSDP states, data, optimizer step and executor, built from the run config.

The model comes from the ``train.model`` factory (every rank builds all ModelParts and keeps
its virtual stages' parts), the data from ``train.data`` (recipe.py); the stage-boundary
buffers' shape and dtype from running ``first`` on the rank's first microbatch.

Shared by the msrun worker (one rank per process) and the in-process tests (every rank of a
``FakeWorld`` in one process): given the run config, the rank's topology, its program and a
platform, it builds the rank and runs steps and evaluations. Knows nothing about processes or
files (the checkpoint component reads and writes them).
"""
from __future__ import annotations

import mindspore as ms

from ppstream.mindspore.parallel.commplan import CommPlan
from ppstream.mindspore.components.evaluate import forward_program
from ppstream.mindspore.components.loss_scale import DynamicLossScaler, scaling_enabled
from ppstream.mindspore.components.lr_schedule import LrSchedule
from ppstream.mindspore.components.opt_step import OptStep
from ppstream.mindspore.training.executor import ActivationSpec, Executor, Progress
from ppstream.mindspore.parallel.groups import Topology
from ppstream.mindspore.training.hsdp import HsdpState
from ppstream.mindspore.model.protocol import boundary_of
from ppstream.mindspore.model.stage_cell import StageCell
from ppstream.mindspore.platforms.base import Platform
from ppstream.mindspore.recipe import build_parts, open_data, open_eval_data, to_tensor
from ppstream.mindspore.runconfig import RunConfig
from ppstream.mindspore.training.stage import PipelineStage
from ppstream.mindspore.training.trace import HostTrace


def build_opt_step(cfg: RunConfig, steps: int, norm_group) -> OptStep:
    """The OPT_STEP component of a run of ``steps`` steps (the schedule's default decay length)."""
    t = cfg.train
    scaler = DynamicLossScaler.from_train(t) if scaling_enabled(t, cfg.model_dtype) else None
    return OptStep(LrSchedule.from_train(t, steps), t["clip_grad"], scaler, norm_group)


def stage_buckets(program: dict) -> dict[int, int]:
    """{stage: k} for every stage whose last backward the program splits into k gradient buckets
    (instructions ``… bucket<j>/<k>``, data_parallel.reduce_buckets); a stage not listed is whole
    (k = 1: reduce_buckets 1, or the stage ``sync_last_reduce`` keeps on compute). Raises
    RuntimeError when one stage's instructions disagree on k (a verified program never does)."""
    out: dict[int, int] = {}
    for ins in program["instrs"]:
        if "bucket" in ins:
            s, k = ins["stage"], ins["bucket"][1]
            if out.setdefault(s, k) != k:
                raise RuntimeError(f"r{program.get('rank', '?')}: {ins['text']!r}: stage s{s} also has {out[s]} buckets")
    return out


class RankRuntime:

    def __init__(self, cfg: RunConfig, topo: Topology, program: dict, mode: str, platform: Platform,
                 progress: Progress | None = None, data=None, steps: int | None = None, eval_data="config"):
        """``data``: the GlobalBatches to read (default: the config's ``train.data``); ``eval_data``:
        the held-out batches (``"config"``: ``recipe.open_eval_data``, None with evaluation off;
        None: none, ``evaluate`` then takes them as its argument); ``steps``: the run's length
        for the LR schedule (default ``train.steps``)."""
        self.cfg, self.topo, self.platform, self.program = cfg, topo, platform, program
        t = cfg.train
        self.opt = build_opt_step(cfg, int(t["steps"]) if steps is None else steps, topo.norm_group())
        platform.setup(CommPlan(topo, program, norm=self.opt.needs_stats))
        parts = build_parts(cfg)
        self.data = open_data(cfg, topo.dp) if data is None else data
        self.eval_data = open_eval_data(cfg, topo.dp) if isinstance(eval_data, str) else eval_data
        x0, _y0 = self.data.microbatch(0, topo.dp_index, 0)
        bound = boundary_of(parts, to_tensor(x0), f"train.model={cfg.train['model']!r}")
        self.stages, self.states = self._build_stages(mode, parts)
        self.trace = HostTrace(topo.rank, topo.pp_rank)
        act = ActivationSpec(bound.shape, bound.dtype)
        progress = progress or Progress(None)
        self.executor = Executor(program, cfg.num_stages, self.stages, self.states, platform, act, self.trace,
                                 progress, opt=self.opt)
        self.evaluator = Executor(forward_program(program), cfg.num_stages, self.stages, self.states, platform, act,
                                  HostTrace(topo.rank, topo.pp_rank), progress, forward_only=True)

    def _build_stages(self, mode: str, parts) -> tuple[dict[int, PipelineStage], dict[int, HsdpState]]:
        cfg, topo = self.cfg, self.topo
        shard_g, rep_g = topo.shard_group(), topo.replicate_group()
        stages, states = {}, {}
        buckets = stage_buckets(self.program)
        for s in topo.local_stages():
            cell = StageCell(parts, cfg.stage_layers[s], s == 0, s == cfg.num_stages - 1, 1.0 / cfg.micro_batch_num,
                             buckets=buckets.get(s, 1))
            stages[s] = PipelineStage(s, cell, recompute=cfg.train["recompute"])
            states[s] = HsdpState(stages[s], shard_g, rep_g, sharded=(mode != "none" and topo.shard > 1),
                                  reduced=(mode != "none"), train_cfg=cfg.train)
        return stages, states

    @property
    def holds_loss(self) -> bool:
        return (self.cfg.num_stages - 1) in self.stages

    def _batches(self, data, index: int):
        cache: dict[int, tuple[ms.Tensor, ms.Tensor]] = {}

        def batch(mb: int):
            if mb not in cache:
                x, y = data.microbatch(index, self.topo.dp_index, mb)
                cache[mb] = (to_tensor(x), to_tensor(y))
            return cache[mb]

        return batch

    def run_step(self, step: int) -> float | None:
        """One step; the sum of this rank's scaled last-stage losses (None without the last stage)."""
        return self.executor.run_step(step, self._batches(self.data, step))

    @property
    def last_step_ms(self) -> float:
        """The last run_step's time in ms, as the trace's step marker measured it (executor.py)."""
        return self.executor.last_step_ms

    def evaluate(self, data=None) -> float | None:
        """The mean over the held-out batches (``data``, a HeldOutBatches, default the config's)
        of this rank's summed scaled last-stage losses (None without the last stage);
        components/evaluate.py."""
        data = self.eval_data if data is None else data
        if data is None:
            raise RuntimeError("evaluate: train.eval_every is 0 (no held-out data)")
        n = len(data.batches)
        got = [self.evaluator.run_step(i, self._batches(data, i)) for i in range(n)]
        return None if got[0] is None else sum(got) / n

    def full_parameters(self) -> dict:
        """Every local stage's gathered parameters {name: array} (a collective in the shard group)."""
        params = {}
        for s, st in self.states.items():
            params.update(st.full_parameters(self.platform, f"FINAL s{s}"))
        return params

    def forward_runs(self) -> dict[int, int]:
        """How many times each local stage's forward ran (one per microbatch per step without recompute)."""
        return {s: st.forward_runs for s, st in self.stages.items()}
