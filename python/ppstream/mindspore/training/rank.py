"""RankRuntime: one rank's stages, HSDP states, data, optimizer step and executor, built from the run config.

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
from ppstream.mindspore.data.text import TextData, load_corpus, split_holdout
from ppstream.mindspore.training.executor import ActivationSpec, Executor, Progress
from ppstream.mindspore.parallel.groups import Topology
from ppstream.mindspore.training.hsdp import HsdpState
from ppstream.mindspore.model.moe import StageCell, activation_spec, one_hot
from ppstream.mindspore.platforms.base import Platform
from ppstream.mindspore.runconfig import RunConfig
from ppstream.mindspore.training.stage import PipelineStage
from ppstream.mindspore.training.trace import HostTrace


def build_opt_step(cfg: RunConfig, steps: int, norm_group) -> OptStep:
    """The OPT_STEP component of a run of ``steps`` steps (the schedule's default decay length)."""
    t = cfg.train
    scaler = DynamicLossScaler.from_train(t) if scaling_enabled(t, cfg.model["dtype"]) else None
    return OptStep(LrSchedule.from_train(t, steps), t["clip_grad"], scaler, norm_group)


def text_data(cfg: RunConfig, dp: int, corpus=None) -> tuple[TextData, TextData | None]:
    """(training data, held-out evaluation data or None when evaluation is off)."""
    m, t = cfg.model, cfg.train
    corpus = load_corpus(t["data"]) if corpus is None else corpus
    held = None
    if t["eval_every"] > 0:
        corpus, held = split_holdout(corpus, t["eval_holdout"])
    mk = lambda c: TextData(c, m["seq_len"], t["micro_batch_size"], cfg.micro_batch_num, dp, t["seed"])  # noqa: E731
    return mk(corpus), (mk(held) if held is not None else None)


class RankRuntime:

    def __init__(self, cfg: RunConfig, topo: Topology, program: dict, mode: str, platform: Platform,
                 progress: Progress | None = None, corpus=None, steps: int | None = None):
        self.cfg, self.topo, self.platform = cfg, topo, platform
        m, t = cfg.model, cfg.train
        self.opt = build_opt_step(cfg, int(t["steps"]) if steps is None else steps, topo.norm_group())
        platform.setup(CommPlan(topo, program, norm=self.opt.needs_stats))
        self.stages, self.states = self._build_stages(mode)
        self.data, self.eval_data = text_data(cfg, topo.dp, corpus)
        self.trace = HostTrace(topo.rank, topo.pp_rank)
        shape, dtype = activation_spec(m, t["micro_batch_size"])
        act = ActivationSpec(shape, dtype)
        progress = progress or Progress(None)
        self.executor = Executor(program, cfg.num_stages, self.stages, self.states, platform, act, self.trace,
                                 progress, opt=self.opt)
        self.evaluator = Executor(forward_program(program), cfg.num_stages, self.stages, self.states, platform, act,
                                  HostTrace(topo.rank, topo.pp_rank), progress, forward_only=True)

    def _build_stages(self, mode: str) -> tuple[dict[int, PipelineStage], dict[int, HsdpState]]:
        cfg, topo = self.cfg, self.topo
        shard_g, rep_g = topo.shard_group(), topo.replicate_group()
        stages, states = {}, {}
        for s in topo.local_stages():
            cell = StageCell(cfg.model, cfg.train["seed"], cfg.stage_layers[s], cfg.num_layers, s == 0,
                             s == cfg.num_stages - 1, 1.0 / cfg.micro_batch_num)
            stages[s] = PipelineStage(s, cell, recompute=cfg.train["recompute"])
            states[s] = HsdpState(stages[s], shard_g, rep_g, sharded=(mode != "none" and topo.shard > 1),
                                  reduced=(mode != "none"), train_cfg=cfg.train)
        return stages, states

    @property
    def holds_loss(self) -> bool:
        return (self.cfg.num_stages - 1) in self.stages

    def _batches(self, data: TextData, index: int):
        vocab = self.cfg.model["vocab"]
        cache: dict[int, tuple[ms.Tensor, ms.Tensor]] = {}

        def batch(mb: int):
            if mb not in cache:
                tok, lab = data.microbatch(index, self.topo.dp_index, mb)
                cache[mb] = (one_hot(tok, vocab), one_hot(lab, vocab))
            return cache[mb]

        return batch

    def run_step(self, step: int) -> float | None:
        """One step; the sum of this rank's scaled last-stage losses (None without the last stage)."""
        return self.executor.run_step(step, self._batches(self.data, step))

    def evaluate(self) -> float | None:
        """The mean over ``train.eval_batches`` held-out batches of this rank's summed scaled
        last-stage losses (None without the last stage); components/evaluate.py."""
        if self.eval_data is None:
            raise RuntimeError("evaluate: train.eval_every is 0 (no held-out data)")
        n = int(self.cfg.train["eval_batches"])
        got = [self.evaluator.run_step(i, self._batches(self.eval_data, i)) for i in range(n)]
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
