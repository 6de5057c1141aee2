"""Pipeline: the in-process API for users who drive the training loop themselves.

    from ppstream.mindspore import Pipeline
    pipe = Pipeline("examples/own-model/pp2-vpp2-hsdp.yaml")
    for x, y in my_batches:          # global batches: pipe.global_batch_size rows
        loss = pipe.step((x, y))     # one training step of the whole layout; the mean loss
    params = pipe.parameters()       # {name: numpy array}, gathered

Every rank of the config's layout runs in this process on the in-process fake platform
(``platforms/fake.py``, the ``cpu-serial`` semantics: one rank at a time, collectives summed
in member order), each rank executing its own verified stream program, exactly the code a
``ppstream train`` worker runs. The model is the config's ``train.model`` factory; the data is
what the caller passes to ``step`` (``train.data``, ``train.eval_data`` and ``train.eval_every``
are not read; ``evaluate(batches)`` takes held-out batches). Each rank is a ``RankRuntime``, so
the training components (clipping, LR schedule over ``train.steps``, loss scaling, collective
dtypes) run as in a worker. MindSpore is set to CPU, PyNative mode. For processes, devices and
msrun, use ``ppstream train``.
"""
from __future__ import annotations

import json

import numpy as np


class Pipeline:

    def __init__(self, config: str, overrides: dict[str, str] | None = None):
        """``config``: a config path; ``overrides``: None or ``{"train.lr": "0.01"}`` as ``--set`` takes
        them (docs/python.md's rule: a ``str`` key → a ``str``, ``int`` or ``float`` value; anything
        else is a TypeError naming it). Raises ppstream.ConfigError, RunConfigError, RecipeError,
        ModelProtocolError."""
        import ppstream
        from ppstream.mindspore.launch.worker import setup_mindspore_cpu
        from ppstream.mindspore.platforms.fake import FakePlatform
        from ppstream.mindspore.recipe import build_parts, data_cfg_of
        from ppstream.mindspore.runconfig import load_run_config

        overrides = ppstream._core._overrides_arg("Pipeline", overrides)  # the Python API's one rule (args.cpp)
        setup_mindspore_cpu()
        self.cfg = load_run_config(config, overrides)
        build_parts(self.cfg)  # the model factory's errors now, not at the first step
        core = {k: v for k, v in overrides.items() if not k.startswith(("model.", "train."))}
        self.pset = json.loads(ppstream.compile(config, True, FakePlatform.profile, core))
        w = self.pset["world"]
        self.dp = w["shard"] * w["replicate"]
        self.global_batch_size = self.dp * self.cfg.micro_batch_num * self.cfg.train["micro_batch_size"]
        self.train_cfg = data_cfg_of(self.cfg, self.dp)  # what a train.data factory would receive
        self.steps_done = 0
        self._world = self._ranks = self._feeds = None

    def _start(self) -> None:
        """Builds the ranks (on the first step: the boundary tensor is found from its batch)."""
        from ppstream.mindspore.data.batches import FedBatches
        from ppstream.mindspore.parallel.groups import Topology
        from ppstream.mindspore.platforms.fake import FakePlatform, FakeWorld
        from ppstream.mindspore.training.rank import RankRuntime

        w, n = self.pset["world"], len(self.pset["programs"])
        self._world = FakeWorld(n, timeout_s=600)
        self._feeds = [FedBatches(self.dp, self.cfg.micro_batch_num, self.cfg.train["micro_batch_size"])
                       for _ in range(n)]
        self._feeds_step(0)

        def build(r):
            topo = Topology(w["pp"], w["vpp"], w["shard"], w["replicate"], r)
            return RankRuntime(self.cfg, topo, self.pset["programs"][r], self.pset["mode"].lower(),
                               FakePlatform(self._world, r), data=self._feeds[r], eval_data=None)

        self._ranks = self._world.run_ranks(build)

    def _feeds_step(self, step: int) -> None:
        for f in self._feeds:
            f.feed(step, self._batch, "Pipeline.step(batch)")

    def step(self, batch) -> float:
        """One training step on ``batch`` = (inputs, labels), each with the global batch's rows first;
        returns the step's loss (the mean over microbatches and data-parallel ranks)."""
        self._batch = batch
        if self._ranks is None:
            self._start()
        else:
            self._feeds_step(self.steps_done)
        k = self.steps_done
        per_rank = self._world.run_ranks(lambda r: self._ranks[r].run_step(k))
        self.steps_done += 1
        held = [x for x in per_rank if x is not None]
        return float(np.mean(held))

    def opt_record(self) -> dict:
        """The last step's optimizer-step figures (components/opt_step.py: grad_norm, lr,
        loss_scale, skipped; the same on every rank)."""
        if self._ranks is None:
            raise RuntimeError("Pipeline.opt_record(): no step has run yet")
        return dict(self._ranks[0].opt.record)

    def evaluate(self, batches) -> float:
        """The mean loss over ``batches`` (a list of held-out global batches (inputs, labels)),
        through the forward projection of every rank's program; no parameter changes."""
        from ppstream.mindspore.data.batches import HeldOutBatches

        if self._ranks is None:
            raise RuntimeError("Pipeline.evaluate(): no step has run yet (the ranks are built on the first)")
        batches = list(batches)
        if not batches:
            raise ValueError("Pipeline.evaluate(batches): no batches")
        held = HeldOutBatches(batches, self.dp, self.cfg.micro_batch_num, self.cfg.train["micro_batch_size"],
                              "Pipeline.evaluate(batches)", len(batches))
        per_rank = self._world.run_ranks(lambda r: self._ranks[r].evaluate(held))
        return float(np.mean([x for x in per_rank if x is not None]))

    def parameters(self) -> dict[str, np.ndarray]:
        """The whole model's parameters after the steps so far, gathered: {name: array}."""
        if self._ranks is None:
            raise RuntimeError("Pipeline.parameters(): no step has run yet")
        out: dict[str, np.ndarray] = {}
        per_rank = self._world.run_ranks(lambda r: self._ranks[r].full_parameters())
        # trainable parameters are the same on every rank; buffers (requires_grad=False) are
        # data-parallel index 0's: applied last, they win
        for r in sorted(range(len(per_rank)), key=lambda r: self._ranks[r].topo.dp_index == 0):
            out.update(per_rank[r])
        return out

    def forward_runs(self) -> dict[int, int]:
        """{virtual stage: how many times its forward ran}, over every rank (the max; all equal)."""
        out: dict[int, int] = {}
        for rt in self._ranks or []:
            for s, n in rt.forward_runs().items():
                out[s] = max(out.get(s, 0), n)
        return out

