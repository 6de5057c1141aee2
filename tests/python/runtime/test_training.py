"""Training components end to end on the in-process FakePlatform, against the single-process baseline.

- clipping + warm-up/cosine schedule + evaluation over PP2/VPP2 × HSDP 2×2 (8 ranks: stages on
  two PP ranks, shards, replicas): per step the global gradient norm, the learning rate, the
  losses, the evaluation losses and the final parameters equal the baseline's, which computes
  the same formulas on the whole model in one process; clipping was active every step;
- sharded checkpoint + resume over PP2 × FSDP 2 in float16 with dynamic loss scaling:
  stopped after step 3 of 6 and resumed in a fresh world, steps 4-6 give the uninterrupted
  run's losses and parameters bitwise (the scaler's growth tracker is restored too);
- a user's model and data (usermodels/mlp_classifier.py, with its own ``train.eval_data``) over
  PP2 × FSDP 2: clipping, schedule and evaluation equal the baseline's; a resume after step 2 of
  4 repeats the uninterrupted run bitwise (its generator is re-read and the consumed batches skipped);
  the same through ``Pipeline`` (the user's loop): losses, gradient norms, learning rates and
  ``Pipeline.evaluate`` equal the baseline's;
- the loss scaler's skip: one rank's inf skips the update on every rank;
- bfloat16 gradient reduction: the reduced shard equals the bfloat16 sum computed by hand.
"""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

import ppstream
from conftest import write_config
from test_executor import corpus, mindspore_cpu  # noqa: F401 (fixtures: CPU PyNative, the package's text)
from ppstream.mindspore.parallel.groups import Topology
from ppstream.mindspore.runconfig import load_run_config

TINY = {"hidden": 8, "heads": 2, "experts": 2, "top_k": 2, "ffn": 16, "seq_len": 8}
FEATURES = {"clip_grad": 0.05, "lr": 1.0e-2, "min_lr": 1.0e-3, "lr_warmup_init": 1.0e-3, "lr_warmup_steps": 1,
            "lr_decay_steps": 3, "lr_decay_style": "cosine", "eval_every": 1, "eval_batches": 1}


@pytest.fixture(scope="module")
def text_file(corpus, tmp_path_factory) -> str:  # noqa: F811 (the corpus fixture)
    """The corpus as a file, read through train.text by the built-in data factories."""
    path = tmp_path_factory.mktemp("text") / "corpus.txt"
    path.write_bytes(corpus.tobytes())
    return str(path)


def build_world(config: str, steps: int):
    from ppstream.mindspore.platforms.fake import FakePlatform, FakeWorld
    from ppstream.mindspore.training.rank import RankRuntime
    cfg = load_run_config(config)
    pset = json.loads(ppstream.compile(config, True, FakePlatform.profile))
    w = pset["world"]
    world = FakeWorld(len(pset["programs"]), timeout_s=120)

    def build(r):
        topo = Topology(w["pp"], w["vpp"], w["shard"], w["replicate"], r)
        return RankRuntime(cfg, topo, pset["programs"][r], pset["mode"].lower(), FakePlatform(world, r),
                           steps=steps)

    return world.run_ranks(build), world


def run_steps(rts, world, steps, evaluate: bool = False):
    """Losses (mean over holders), OPT_STEP records (rank 0) and eval losses per step."""
    losses, recs, evals = [], [], []
    for step in steps:
        per = world.run_ranks(lambda r: rts[r].run_step(step))
        held = [x for x in per if x is not None]
        losses.append(sum(held) / len(held))
        recs.append(rts[0].opt.record)
        if evaluate:
            ev = [x for x in world.run_ranks(lambda r: rts[r].evaluate()) if x is not None]
            evals.append(sum(ev) / len(ev))
    return losses, recs, evals


def gathered(rts, world) -> dict:
    params = world.run_ranks(lambda r: rts[r].full_parameters())
    out = {}
    for rt, p in zip(rts, params):
        if rt.topo.shard_index == 0:
            out.update(p)
    return out


def matches_baseline(cfg: str, dp: int, steps: int, clip: float):
    """Runs ``cfg`` in a fake world with an evaluation after every step and the baseline; asserts
    losses, gradient norms (clipping active every update), learning rates, evaluation losses and
    final parameters agree. Returns (the world's OPT_STEP records, its ranks, the baseline's log)."""
    from ppstream.mindspore.training.baseline import train_baseline
    rts, world = build_world(cfg, steps)
    losses, recs, evals = run_steps(rts, world, range(steps), evaluate=True)
    params = gathered(rts, world)
    log: dict = {}
    ref_losses, _ms, ref_params = train_baseline(load_run_config(cfg), dp, steps, log=log)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    ref_norms = [r["grad_norm"] for r in log["opt"]]
    np.testing.assert_allclose([r["grad_norm"] for r in recs], ref_norms, rtol=1e-5)
    assert min(ref_norms) > clip  # clipping changed every update
    assert [r["lr"] for r in log["opt"]] == [r["lr"] for r in recs]
    np.testing.assert_allclose(evals, [e[1] for e in log["eval"]], rtol=1e-5)
    for k, v in ref_params.items():
        np.testing.assert_allclose(params[k], v, rtol=1e-4, atol=1e-7, err_msg=k)
    return recs, rts, log


def test_clipping_schedule_and_evaluation_match_the_single_process_reference(tmp_path, text_file):
    steps = 3
    cfg = write_config(str(tmp_path / "f.yaml"), pp=2, vpp=2, layers=4, mbs=2, mode="hsdp", shard=2, replicate=2,
                       model=TINY, train={**FEATURES, "text": text_file})
    recs, rts, log = matches_baseline(cfg, 4, steps, FEATURES["clip_grad"])
    # warm-up 1 step from 1e-3 to 1e-2, cosine to 1e-3 at update 3: hand values
    want_lr = [1.0e-3, 1.0e-2, 1.0e-3 + 9.0e-3 * 0.5 * (np.cos(np.pi * 0.5) + 1.0)]
    np.testing.assert_allclose([r["lr"] for r in recs], want_lr, rtol=1e-12)
    assert [e[0] for e in log["eval"]] == [1, 2, 3]
    # every rank of a replicate index saw the same norm; replicas too (no double counting)
    assert len({rt.opt.record["grad_norm"] for rt in rts}) == 1
    # the evaluation ran no training forward and left no gradient behind
    for rt in rts:
        assert rt.forward_runs() == {s: steps * 2 for s in rt.stages}


def stop_and_resume(tmp_path, cfg: str, steps: int, stop: int, restored=lambda rts: None):
    """World 0 runs every step; world 1 runs steps 0..stop-1, writes its checkpoint and is
    dropped; a fresh world 2 restores it (then ``restored(ranks)``) and runs the rest. Asserts world 2's losses and final
    parameters equal world 0's bitwise; returns (world 0's records, world 2's records, its ranks)."""
    from ppstream.mindspore.components import checkpoint
    meta = {"world": {"pp": 2, "vpp": 1, "shard": 2, "replicate": 1}, "stage_layers": [], "model": {}, "schedule": {}}
    ckpt = checkpoint.step_dir(str(tmp_path / "run"), stop)
    full, world = build_world(cfg, steps)
    want_losses, want_recs, _ = run_steps(full, world, range(steps))
    want = gathered(full, world)
    stopped, world1 = build_world(cfg, steps)
    run_steps(stopped, world1, range(stop))
    world1.run_ranks(lambda r: checkpoint.save(ckpt, stop, stopped[r], meta))
    del stopped, world1

    resumed, world2 = build_world(cfg, steps)
    world2.run_ranks(lambda r: checkpoint.load(ckpt, resumed[r]))
    restored(resumed)
    losses, recs, _ = run_steps(resumed, world2, range(stop, steps))
    got = gathered(resumed, world2)
    assert losses == want_losses[stop:]
    assert set(got) == set(want)
    for k in want:
        assert np.array_equal(got[k], want[k]), k
    return want_recs, recs, resumed


def test_resume_after_step_3_of_6_is_bitwise_the_uninterrupted_run(tmp_path, text_file):
    train = {"clip_grad": 0.05, "lr_warmup_steps": 2, "lr_decay_style": "linear", "lr_warmup_init": 1.0e-4,
             "loss_scale": "dynamic", "loss_scale_window": 2, "initial_loss_scale": 1024.0, "text": text_file}
    cfg = write_config(str(tmp_path / "r.yaml"), pp=2, vpp=1, layers=2, mbs=2, mode="fsdp", shard=2,
                       model={**TINY, "dtype": "float16"}, train=train)
    want_recs, recs, _rts = stop_and_resume(tmp_path, cfg, 6, 3)
    assert [r["loss_scale"] for r in recs] == [r["loss_scale"] for r in want_recs[3:]]
    assert len({r["loss_scale"] for r in want_recs}) > 1  # the scale grew: the scaler's state mattered


USER_MODEL = {"features": 12, "hidden": 16, "classes": 5}


def _user_config(tmp_path) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.copy(os.path.join(here, "usermodels", "mlp_classifier.py"), tmp_path)
    return write_config(str(tmp_path / "u.yaml"), pp=2, vpp=1, layers=2, mbs=2, mode="fsdp", shard=2,
                        model=USER_MODEL, train={**FEATURES, "clip_grad": 0.5, "model": "mlp_classifier:build",
                                                 "data": "mlp_classifier:batches",
                                                 "eval_data": "mlp_classifier:eval_batches"})


def test_user_model_runs_clipping_schedule_and_evaluation_like_the_baseline(tmp_path):
    from ppstream.mindspore.training.baseline import train_baseline
    cfg = _user_config(tmp_path)
    _recs, _rts, log = matches_baseline(cfg, 2, 3, 0.5)
    other: dict = {}  # evaluating on the training stream instead gives other losses: train.eval_data is read
    train_baseline(load_run_config(cfg, {"train.eval_data": "mlp_classifier:batches"}), 2, 3, log=other)
    assert [e[1] for e in other["eval"]] != [e[1] for e in log["eval"]]


def test_user_model_resume_skips_the_consumed_batches(tmp_path):
    def restored(rts):  # batches 0, 1 read and dropped (GlobalBatches.skip): step 2's is the next read
        assert all(rt.data._step == 1 for rt in rts)

    stop_and_resume(tmp_path, _user_config(tmp_path), 4, 2, restored)


def test_pipeline_runs_the_components_like_the_baseline(tmp_path):
    from ppstream.mindspore import Pipeline
    from ppstream.mindspore.recipe import open_data, open_eval_data
    from ppstream.mindspore.training.baseline import train_baseline
    steps = 3
    cfg = _user_config(tmp_path)
    pipe = Pipeline(cfg)
    data = open_data(pipe.cfg, pipe.dp)
    losses, recs = [], []
    for k in range(steps):
        losses.append(pipe.step(data.global_batch(k)))
        recs.append(pipe.opt_record())
    ev = pipe.evaluate(open_eval_data(pipe.cfg, pipe.dp).batches)
    log: dict = {}
    ref_losses, _ms, ref_params = train_baseline(load_run_config(cfg), pipe.dp, steps, log=log)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    np.testing.assert_allclose([r["grad_norm"] for r in recs], [r["grad_norm"] for r in log["opt"]], rtol=1e-5)
    assert min(r["grad_norm"] for r in recs) > 0.5  # clipped every update
    assert [r["lr"] for r in recs] == [r["lr"] for r in log["opt"]]
    assert ev == pytest.approx(log["eval"][-1][1], rel=1e-5)
    params = pipe.parameters()
    for k, v in ref_params.items():
        np.testing.assert_allclose(params[k], v, rtol=1e-4, atol=1e-7, err_msg=k)


class _Shard:
    """A stand-in HsdpState: a fixed gradient, records the update it is given."""

    def __init__(self, g):
        import mindspore as ms
        self.g, self.updated = ms.Tensor(np.asarray(g, np.float32)), None

    def take_gradient(self):
        return self.g

    def apply_update(self, g, lr):
        self.updated = (g.asnumpy(), lr)


def _opt(clip: float, scaler=None, group=None):
    from ppstream.mindspore.components.lr_schedule import LrSchedule
    from ppstream.mindspore.components.opt_step import OptStep
    sched = LrSchedule(1.0, 0.0, 0.0, 0, 0, "constant")
    return OptStep(sched, clip, scaler, group)


def test_clip_norm_over_two_ranks_equals_numpy():
    from ppstream.mindspore.parallel.groups import Group
    from ppstream.mindspore.platforms.fake import FakePlatform, FakeWorld
    world = FakeWorld(2, timeout_s=10)
    grads = [[3.0, 0.0, 1.0], [0.0, 4.0, 2.0]]  # two shards of one vector
    states = [{0: _Shard(g)} for g in grads]
    opts = [_opt(2.0, group=Group("norm", (0, 1), r)) for r in range(2)]
    plats = [FakePlatform(world, r) for r in range(2)]
    world.run_ranks(lambda r: opts[r].run(states[r], plats[r], 0))
    norm = float(np.linalg.norm(np.concatenate(grads)))
    for r in range(2):
        assert opts[r].record["grad_norm"] == pytest.approx(norm, rel=1e-6)
        g, lr = states[r][0].updated
        np.testing.assert_allclose(g, np.asarray(grads[r]) * 2.0 / (norm + 1e-6), rtol=1e-6)
        assert plats[r].counts["OPT_STEP grad_stats"] == 1


def test_an_inf_on_one_rank_skips_the_update_on_every_rank():
    from ppstream.mindspore.components.loss_scale import DynamicLossScaler
    from ppstream.mindspore.parallel.groups import Group
    from ppstream.mindspore.platforms.fake import FakePlatform, FakeWorld
    world = FakeWorld(2, timeout_s=10)
    states = [{0: _Shard([1.0, 2.0])}, {0: _Shard([np.inf, 0.0])}]
    opts = [_opt(0.0, DynamicLossScaler(8.0, 1.0, 100, 1), Group("norm", (0, 1), r)) for r in range(2)]
    plats = [FakePlatform(world, r) for r in range(2)]
    world.run_ranks(lambda r: opts[r].run(states[r], plats[r], 0))
    for r in range(2):
        assert opts[r].record["skipped"] and states[r][0].updated is None
        assert opts[r].scaler.scale == 4.0 and opts[r].updates == 0  # backed off; schedule position kept
    states = [{0: _Shard([1.0, 2.0])}, {0: _Shard([0.5, 0.0])}]
    world.run_ranks(lambda r: opts[r].run(states[r], plats[r], 1))
    for r in range(2):  # unscaled by 1/4 before the update
        np.testing.assert_array_equal(states[r][0].updated[0], states[r][0].g.asnumpy() / 4.0)
        assert opts[r].updates == 1


def test_bfloat16_reduce_scatter_is_the_bfloat16_sum(tmp_path, corpus):
    import mindspore as ms
    from ppstream.mindspore.parallel.groups import Group
    from ppstream.mindspore.training.hsdp import HsdpState
    from ppstream.mindspore.platforms.fake import FakePlatform, FakeWorld

    class Stage:  # two ranks' stage with one 4-element parameter and a fixed accumulated gradient
        buckets = 1  # one gradient bucket: the whole stage

        def __init__(self, r):
            self.stage, self.named = 0, [("w", ms.Parameter(ms.Tensor(np.zeros(4, np.float32)), name="w"))]
            self.params = [p for _n, p in self.named]
            self.g = np.array([1.0 + 2 ** -9, 3.0, -1.0, 0.1], np.float32) * (r + 1)

        def take_grads(self, positions=None):
            return [ms.Tensor(self.g)]

    world = FakeWorld(2, timeout_s=10)
    train = {"betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0, "reduce_dtype": "bfloat16",
             "all_gather_dtype": "float32"}
    shard = Group("pps_shard_0_1", (0, 1), 0)
    states = world.run_ranks(lambda r: HsdpState(Stage(r), Group(shard.name, shard.ranks, r),
                                                 Group(f"rep{r}", (r,), 0), True, True, train))
    plats = [FakePlatform(world, r) for r in range(2)]
    world.run_ranks(lambda r: states[r].reduce_grad(plats[r], "REDUCE_GRAD s0"))
    bf = lambda a: ms.Tensor(np.asarray(a, np.float32)).astype(ms.bfloat16)  # noqa: E731
    want = (bf(states[0].stage.g / 2) + bf(states[1].stage.g / 2)).astype(ms.float32).asnumpy()
    got = np.concatenate([states[r].grad_shard.asnumpy() for r in range(2)])
    np.testing.assert_array_equal(got, want)
    exact = (states[0].stage.g + states[1].stage.g) / 2
    assert not np.array_equal(got, exact)  # the bfloat16 rounding is visible (1 + 2^-9 is not a bfloat16)
