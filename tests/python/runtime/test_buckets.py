"""Gradient buckets (``data_parallel.reduce_buckets: k``) in the MindSpore runtime, on the fake platform.

A user's model (usermodels/mlp_classifier.py: stem, 6 residual blocks, head) over PP2 × HSDP 2×2
(8 in-process ranks, 3 layers per stage, 2 microbatches, 2 steps): each stage's last backward runs
as k per-layer-group VJPs chained through the boundary gradient, each bucket reducing only its
own slice of the HSDP flat gradient.

- the parameters trained with k = 2 (inline) and k = 3 (async) equal k = 1's bit for bit (every
  element keeps its own arithmetic: the group VJPs are the stage VJP's parts, the reduce-scatter
  sums in member order, AdamW is elementwise; clipping is off, since its norm sums over a shard
  whose layout k changes);
- the instructions that issue the bucket collectives are the program's bucket reductions, in its
  order, on the policy's stream; when ``REDUCE_GRAD s bucket<j>/<k>`` runs, pieces 0..j of the
  last microbatch's backward have run and j+1.. have not; the segments cover the stage once;
- a checkpoint keeps its bucket layout (a resume with another k is refused);
- one stage (5 layers, 3 buckets, with and without recompute): a whole backward and one in
  pieces accumulate the unsplit stage's gradients bit for bit; pieces out of order are refused;
- ``bucket_layers`` on hand values of the engine's rule (include/ppstream/program/ir.h).
"""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from conftest import write_config
from test_executor import mindspore_cpu  # noqa: F401 (fixture: CPU PyNative)
from test_training import build_world, gathered

USER_MODEL = {"features": 12, "hidden": 16, "classes": 5}
STEPS = 2
MBS = 2


def _config(tmp_path, name: str, reduce_grad: str, buckets: int, layers: int = 6) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.copy(os.path.join(here, "usermodels", "mlp_classifier.py"), tmp_path)
    path = write_config(str(tmp_path / f"{name}.yaml"), pp=2, vpp=1, layers=layers, mbs=MBS, mode="hsdp", shard=2,
                        replicate=2, reduce_grad=reduce_grad, model=USER_MODEL,
                        train={"model": "mlp_classifier:build", "data": "mlp_classifier:batches", "lr": 1.0e-2,
                               "steps": STEPS})
    text = open(path, encoding="utf-8").read()
    text = text.replace("  sync_last_reduce: true\n",
                        f"  sync_last_reduce: false\n  reduce_buckets: {buckets}\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def _train(config: str, spy=None, steps: int = STEPS):
    """Runs ``steps`` steps in a fake world; returns (gathered parameters after them, before them,
    the programs, the ranks). ``spy(ranks)`` runs before the first step."""
    rts, world = build_world(config, STEPS)

    init = gathered(rts, world)
    if spy is not None:
        spy(rts)
    for step in range(steps):
        world.run_ranks(lambda r: rts[r].run_step(step))
    return gathered(rts, world), init, [rt.program for rt in rts], rts


@pytest.fixture(scope="module")
def one_bucket(tmp_path_factory, mindspore_cpu):  # noqa: F811
    """The parameters k = 1 trains (inline; async computes the same values on every element)."""
    ref, init, progs, rts = _train(_config(tmp_path_factory.mktemp("k1"), "k1", "inline", 1))
    assert not any("bucket" in i for p in progs for i in p["instrs"])
    assert any(not np.array_equal(init[n], ref[n]) for n in ref)  # the steps moved the parameters
    return ref, rts


class _Spy:
    """Wraps every rank's platform in a RecordingPlatform (the stream and instruction of every
    collective) and records, at each ``HsdpState.reduce_grad``, which piece of each microbatch's
    split backward runs next (``PipelineStage._chain``)."""

    def __init__(self):
        self.logs: dict[int, object] = {}
        self.reductions: list[tuple] = []  # (rank, tag, {mb: next piece})

    def __call__(self, rts):
        from ppstream.mindspore.platforms.recording import RecordingPlatform
        for rt in rts:
            self.logs[rt.topo.rank] = rt.executor.platform = RecordingPlatform(rt.platform)
            for st in rt.states.values():
                st.reduce_grad = self._wrap(rt.topo.rank, st, st.reduce_grad)

    def _wrap(self, rank, st, reduce_grad):
        def spying(platform, tag, bucket=None):
            self.reductions.append((rank, tag, {mb: c[0] for mb, c in st.stage._chain.items()}))
            return reduce_grad(platform, tag, bucket)
        return spying


@pytest.mark.parametrize("reduce_grad,k", [("inline", 2), ("async", 3)])
def test_buckets_train_the_parameters_of_one_bucket_in_program_order(tmp_path, one_bucket, reduce_grad, k):
    ref, one = one_bucket
    spy = _Spy()
    got, _init, progs, rts = _train(_config(tmp_path, f"k{k}", reduce_grad, k), spy)
    assert got.keys() == ref.keys()
    for name, v in ref.items():
        np.testing.assert_array_equal(got[name], v, err_msg=f"k={k} {name}")
    stream = "reduce" if reduce_grad == "async" else "compute"
    for prog in progs:
        r, stages = prog["rank"], rts[prog["rank"]].stages
        assert {st.buckets for st in stages.values()} == {k}  # every stage split (sync_last_reduce off)
        want = [i["text"] for i in prog["instrs"] if "bucket" in i and i["op"] == "REDUCE_GRAD"]
        assert len(want) == k * len(stages) and all(f" {stream} REDUCE_GRAD" in t for t in want)
        # the instructions that issued the bucket collectives of step 0, in order: the program's
        ran: list[str] = []
        for e in spy.logs[r].log:
            if e["step"] == 0 and e["call"] == "collective" and "bucket" in e["text"] and e["text"] not in ran:
                ran.append(e["text"])
        assert ran == want
        # when bucket j is reduced, pieces 0..j of the last microbatch's backward ran, j+1.. not yet
        for _rr, tag, nxt in [x for x in spy.reductions if x[0] == r][:len(want)]:
            j = int(tag.split("bucket")[1].split("/")[0])
            assert nxt == ({} if j == k - 1 else {MBS - 1: j + 1}), (r, tag, nxt)
    # each bucket reduced its segment only: the segments cover the stage's parameters once, and
    # a segment's reduce-scatter input was its own padded length (the recorded counts per tag)
    st = rts[0].states[0]
    assert [seg.bucket for seg in st.segments] == list(reversed(range(k)))
    assert sum(seg.numel for seg in st.segments) == st.numel and len({seg.numel for seg in st.segments}) > 1


def test_a_checkpoint_keeps_its_bucket_layout(tmp_path, one_bucket):
    """The shard layout is per bucket: a checkpoint saved with k = 3 is refused by a k = 1 run,
    naming both, and restores into a k = 3 run."""
    from ppstream.mindspore.components import checkpoint
    _ref, one = one_bucket
    _got, _init, progs, rts = _train(_config(tmp_path, "k3", "async", 3), steps=0)
    w = {"pp": 2, "vpp": 1, "shard": 2, "replicate": 2}
    checkpoint.save(str(tmp_path / "ck"), 0, rts[0], {"world": w})
    with pytest.raises(checkpoint.CheckpointError, match=r"saved with 3 gradient bucket\(s\), this run has 1"):
        checkpoint.load(str(tmp_path / "ck"), one[0])
    checkpoint.load(str(tmp_path / "ck"), rts[0])


def _stage(buckets: int, recompute: bool):
    """Stage 0 of 1 (first and last) of the user's model with 5 layers, split into ``buckets``."""
    import sys
    import mindspore as ms
    from ppstream.mindspore.model.stage_cell import StageCell
    from ppstream.mindspore.training.stage import PipelineStage
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "usermodels"))
    try:
        import mlp_classifier
    finally:
        sys.path.pop(0)
    ms.set_seed(3)
    parts = mlp_classifier.build({**USER_MODEL, "num_layers": 5})
    return PipelineStage(0, StageCell(parts, (0, 4), True, True, 0.5, buckets=buckets), recompute=recompute)


@pytest.mark.parametrize("recompute", [False, True])
def test_the_chained_group_vjps_are_the_stage_vjp(recompute):
    """Two microbatches forward, then mb1 whole and mb0 as 3 pieces (as a program's last
    backward): the accumulated gradients equal the unsplit stage's bit for bit; pieces out of
    order or a second output gradient are refused."""
    import mindspore as ms
    rng = np.random.default_rng(0)
    xs = [ms.Tensor(rng.standard_normal((4, USER_MODEL["features"])).astype(np.float32)) for _ in range(2)]
    ys = [ms.Tensor(rng.integers(0, USER_MODEL["classes"], 4).astype(np.int32)) for _ in range(2)]
    whole, split = _stage(1, recompute), _stage(3, recompute)
    for st in (whole, split):
        for mb in (0, 1):
            st.forward(mb, xs[mb], ys[mb])
        st.backward(1, None)
    whole.backward(0, None)
    with pytest.raises(RuntimeError, match=r"B mb0 s0 bucket1/3: the next piece of mb0 is bucket0/3"):
        split.backward_bucket(0, 1, 3, None)
    split.backward_bucket(0, 0, 3, None)
    with pytest.raises(RuntimeError, match=r"bucket1/3: only bucket 0 takes the stage's output gradient"):
        split.backward_bucket(0, 1, 3, xs[0])
    split.backward_bucket(0, 1, 3, None)
    assert split.backward_bucket(0, 2, 3, None) is None and split.idle()  # the first stage sends nothing
    assert [len(split.cell.bucket_params(j)) for j in range(3)] == [6 + 4, 6 * 2, 2 + 6 * 2]  # last / first go along
    for (name, _p), a, b in zip(whole.named, whole.take_grads(), split.take_grads()):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy(), err_msg=name)
    assert whole.forward_runs == split.forward_runs == (4 if recompute else 2)


def test_bucket_layers_follow_the_engines_rule():
    from ppstream.mindspore.model.layer_groups import bucket_layers
    # ir.h: bucket j of L layers holds backward-order positions [floor(jL/k), floor((j+1)L/k))
    assert [list(bucket_layers(j, 3, 7)) for j in range(3)] == [[5, 6], [3, 4], [0, 1, 2]]
    assert [list(bucket_layers(j, 2, 4)) for j in range(2)] == [[2, 3], [0, 1]]
    assert list(bucket_layers(0, 1, 5)) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="bucket 3/3 of a stage of 4 layers"):
        bucket_layers(3, 3, 4)
