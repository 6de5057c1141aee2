"""What a user's own model needs from training beyond the protocol (docs/runtime.md, "Your own model",
"Training mode, frozen parameters and buffers"): usermodels/train_mode.py, in process (``Pipeline``)
on the smallest sharded layout, PP2 x FSDP 2 (4 ranks), 1-2 steps.

- The stages' Cells train in training mode and evaluate in inference mode: Dropout changes the
  training loss and not the evaluation loss; BatchNorm's moving statistics move.
- ``requires_grad=False`` parameters (a frozen weight, BatchNorm's moving statistics) are not
  updated by the optimizer (weight decay on): the frozen weight is bit-identical after 2 steps,
  and not sharded away (the moving statistics a forward writes survive RESHARD).
- A virtual stage without parameters (an activation-only tail and a parameter-free loss) trains.
- A resume restores the moving statistics (the checkpoint's ``buffer:NAME``) bitwise.
- The launcher's helpers: the earliest worker error is printed, whichever rank; ``Pipeline``'s
  ``overrides`` follow docs/python.md's rule; ``check_parts`` names the config's key.
"""
from __future__ import annotations

import os
import shutil
import types

import numpy as np
import pytest

from conftest import write_config

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = {"inputs": 5, "width": 8, "outputs": 3}


def _config(d, model: dict | None = None, train: dict | None = None) -> str:
    shutil.copy(os.path.join(HERE, "usermodels", "train_mode.py"), d)
    return write_config(os.path.join(d, "train_mode.yaml"), pp=2, vpp=1, layers=4, mbs=2, mode="fsdp", shard=2,
                        model={**MODEL, **(model or {})},
                        train={"model": "train_mode:build", "data": "train_mode:batches", "steps": 2,
                               "weight_decay": 0.1, "lr": 1.0e-2, **(train or {})})


def _run(cfg: str, steps: int, evaluate: bool = False):
    from ppstream.mindspore import Pipeline
    from ppstream.mindspore.recipe import open_data
    pipe = Pipeline(cfg)
    data = open_data(pipe.cfg, pipe.dp)
    losses = [pipe.step(data.global_batch(k)) for k in range(steps)]
    ev = pipe.evaluate([data.global_batch(100)]) if evaluate else None
    return losses, ev, pipe.parameters()


def test_dropout_drops_in_training_and_not_in_evaluation(tmp_path):
    # lr 0, no weight decay: both models keep their (equal) initial parameters, so evaluation
    # (inference mode: Dropout is the identity) must give the same loss; training must not
    (tmp_path / "p0").mkdir()
    (tmp_path / "p5").mkdir()
    train = {"lr": 0.0, "weight_decay": 0.0}
    l0, e0, _ = _run(_config(str(tmp_path / "p0"), {"dropout": 0.0}, train), 1, evaluate=True)
    l5, e5, _ = _run(_config(str(tmp_path / "p5"), {"dropout": 0.5}, train), 1, evaluate=True)
    assert l0 != l5, "Dropout(p=0.5) gave the training loss of p=0: the Cells are not in training mode"
    assert e0 == e5, "evaluation must run in inference mode (Dropout off)"


def test_batchnorm_moving_statistics_move_under_fsdp(tmp_path):
    _losses, _ev, p = _run(_config(str(tmp_path), {"bn": True}), 2)
    # written by the training forward (batch statistics), not reset by RESHARD / UNSHARD (they
    # start at 0 and 1; AdamW's decay alone would leave the mean at 0 and the variance at 0.998)
    for i in range(4):
        assert np.abs(p[f"layers.{i}.bn.moving_mean"]).max() > 1e-3, i
        assert np.abs(p[f"layers.{i}.bn.moving_variance"] - 1.0).max() > 1e-2, i
    assert np.abs(p["layers.0.bn.gamma"] - 1.0).max() > 0  # trainable BatchNorm parameters do train


def test_a_frozen_parameter_is_bit_identical_after_steps_with_weight_decay(tmp_path):
    _losses, _ev, p = _run(_config(str(tmp_path)), 2)
    assert np.array_equal(p["first.scale"], np.full((MODEL["width"],), 0.5, np.float32)), p["first.scale"]


def test_a_stage_without_parameters_trains(tmp_path):
    # layers 2-3 are tanh and the loss has no parameters: stage 1 (layers 2-3 + last) holds none
    cfg = _config(str(tmp_path), {"bare_tail": True})
    from ppstream.mindspore import Pipeline
    from ppstream.mindspore.recipe import open_data
    pipe = Pipeline(cfg)
    data = open_data(pipe.cfg, pipe.dp)
    losses = [pipe.step(data.global_batch(k)) for k in range(2)]
    assert all(np.isfinite(losses)) and losses[0] != losses[1], losses
    p = pipe.parameters()
    assert sorted(k for k in p if k.startswith(("layers.2", "layers.3", "last"))) == []
    assert "layers.1.dense.weight" in p


def test_pipeline_overrides_follow_the_python_api_rule(tmp_path):
    from ppstream.mindspore import Pipeline
    cfg = _config(str(tmp_path))
    with pytest.raises(TypeError, match=r"Pipeline: overrides: expected a dict .* not list"):
        Pipeline(cfg, overrides=["model.bn=true"])
    with pytest.raises(TypeError, match=r"Pipeline: overrides\['model.bn'\]: expected a str, int or float .* not bool"):
        Pipeline(cfg, overrides={"model.bn": True})
    with pytest.raises(TypeError, match=r"Pipeline: overrides: key 1: expected a str"):
        Pipeline(cfg, overrides={1: "2"})


def test_layer_count_error_names_the_config_key():
    from mindspore import nn
    from ppstream.mindspore import ModelParts
    from ppstream.mindspore.model.protocol import ModelProtocolError, check_parts
    parts = ModelParts(nn.Dense(2, 2), [nn.Dense(2, 2)], nn.Dense(2, 2))
    with pytest.raises(ModelProtocolError) as e:
        check_parts(parts, 2, "train.model='m:build'")
    assert "the config's num_layers" in str(e.value) and "pipeline.num_layers" not in str(e.value)


def test_launcher_prints_the_first_worker_error_whichever_rank(tmp_path, capsys):
    from ppstream.mindspore.launch import cli, worker
    run_dir = str(tmp_path)
    os.makedirs(os.path.join(run_dir, "progress"))
    for r, line in [(0, "step 3 #3 r0 compute F mb0 s0"), (1, "step 3 #3 r1 compute F mb0 s0"),
                    (2, "step 3 #9 r2 recv RECV_F s1")]:
        with open(os.path.join(run_dir, "progress", f"rank{r}.txt"), "w", encoding="utf-8") as f:
            f.write(line + "\n")
    worker.record_failure(run_dir, 1, ValueError("train.data='m:short': the data ended after 3 batches\nmore"))
    worker.record_failure(run_dir, 2, RuntimeError("RECV_F s1: peer r1 is gone"))
    with open(os.path.join(run_dir, "progress", "rank1.error"), encoding="utf-8") as f:
        assert f.read().split(" ", 1)[1] == "ValueError: train.data='m:short': the data ended after 3 batches\n"
    code = cli._report(types.SimpleNamespace(timeout=60.0), run_dir, 3, range(3), 1, 1.0)
    out = capsys.readouterr().out
    assert code == 1
    assert "first worker error: r1: ValueError: train.data='m:short': the data ended after 3 batches" in out, out
    assert "peer r1 is gone" not in out


def test_resume_restores_the_batchnorm_statistics_bitwise(tmp_path):
    # 2 steps straight vs 1 step, checkpoint, a fresh world restoring it, 1 step: the moving
    # statistics (buffers, outside the shard) travel in the checkpoint's buffer:NAME arrays
    import json
    import ppstream
    from ppstream.mindspore.components import checkpoint
    from ppstream.mindspore.parallel.groups import Topology
    from ppstream.mindspore.platforms.fake import FakePlatform, FakeWorld
    from ppstream.mindspore.runconfig import load_run_config
    from ppstream.mindspore.training.rank import RankRuntime
    config = _config(str(tmp_path), {"bn": True})
    cfg = load_run_config(config)
    pset = json.loads(ppstream.compile(config, True, FakePlatform.profile))
    w = pset["world"]

    def world(steps):
        fw = FakeWorld(len(pset["programs"]), timeout_s=120)
        rts = fw.run_ranks(lambda r: RankRuntime(cfg, Topology(w["pp"], w["vpp"], w["shard"], w["replicate"], r),
                                                 pset["programs"][r], pset["mode"].lower(), FakePlatform(fw, r)))
        for k in steps:
            fw.run_ranks(lambda r: rts[r].run_step(k))
        return rts, fw

    def gathered(rts, fw):
        out = {}
        for rt, p in zip(rts, fw.run_ranks(lambda r: rts[r].full_parameters())):
            if rt.topo.dp_index == 0:
                out.update(p)
        return out

    want = gathered(*world(range(2)))
    ckpt = checkpoint.step_dir(str(tmp_path / "run"), 1)
    stopped, fw1 = world(range(1))
    fw1.run_ranks(lambda r: checkpoint.save(ckpt, 1, stopped[r], {"world": w, "stage_layers": [], "model": {},
                                                                   "schedule": {}}))
    resumed, fw2 = world([])
    fw2.run_ranks(lambda r: checkpoint.load(ckpt, resumed[r]))
    fw2.run_ranks(lambda r: resumed[r].run_step(1))
    got = gathered(resumed, fw2)
    assert set(got) == set(want) and "layers.3.bn.moving_mean" in got
    assert np.abs(got["layers.3.bn.moving_mean"]).max() > 1e-3
    for k in want:
        assert np.array_equal(got[k], want[k]), k
