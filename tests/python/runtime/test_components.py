"""The training components' formulas against hand-derived values (no MindSpore collectives, seconds).

LR schedule: Megatron-LM's OptimizerParamScheduler formula at chosen points; the dynamic loss
scaler's trajectory (hysteresis, back-off, growth); the clip coefficient; the forward projection
of a compiled program; checkpoint directory resolution and the launcher-side resume checks.
"""
from __future__ import annotations

import json
import re
import math
import os

import pytest

import ppstream
from conftest import write_config
from ppstream.mindspore.components import checkpoint, evaluate
from ppstream.mindspore.components.clipping import clip_coefficient
from ppstream.mindspore.components.loss_scale import DynamicLossScaler, LossScaleError, scaling_enabled
from ppstream.mindspore.components.lr_schedule import LrSchedule, ScheduleError

BASE = {"lr": 1.0e-3, "min_lr": 1.0e-4, "lr_warmup_init": 0.0, "lr_warmup_steps": 2, "lr_decay_steps": 6,
        "lr_decay_style": "cosine"}


def test_cosine_schedule_with_warmup_matches_hand_values():
    s = LrSchedule.from_train(BASE, steps=100)
    # warm-up: 0, max/2, max; then min + (max-min) * 0.5 * (cos(pi r) + 1), r = (n-2)/4; past D: min
    want = [0.0, 5.0e-4, 1.0e-3, 1.0e-4 + 9.0e-4 * 0.8535533905932737, 5.5e-4, 1.0e-4 + 9.0e-4 * 0.1464466094067262,
            1.0e-4, 1.0e-4]
    for n, w in enumerate(want):
        assert s.lr(n) == pytest.approx(w, rel=1e-12, abs=1e-18), n


def test_linear_and_constant_schedules():
    lin = LrSchedule.from_train({**BASE, "lr_decay_style": "linear"}, steps=100)
    assert [lin.lr(n) for n in (3, 4, 5, 6)] == pytest.approx([7.75e-4, 5.5e-4, 3.25e-4, 1.0e-4], rel=1e-12)
    const = LrSchedule.from_train({**BASE, "lr_decay_style": "constant", "lr_warmup_steps": 0}, steps=3)
    assert [const.lr(n) for n in range(5)] == [1.0e-3] * 5
    # lr_decay_steps 0: the run's steps
    assert LrSchedule.from_train({**BASE, "lr_decay_steps": 0}, steps=10).decay_steps == 10


@pytest.mark.parametrize("change, key", [({"lr_decay_style": "step"}, "lr_decay_style"),
                                         ({"lr_warmup_steps": 6}, "lr_warmup_steps"),
                                         ({"min_lr": 2.0e-3}, "min_lr"),
                                         ({"lr_warmup_init": -1.0}, "lr_warmup_init")])
def test_schedule_errors_name_the_key(change, key):
    with pytest.raises(ScheduleError, match=f"train.{key}"):
        LrSchedule.from_train({**BASE, **change}, steps=100)


def test_dynamic_loss_scaler_trajectory():
    s = DynamicLossScaler(scale=1024.0, min_scale=256.0, window=2, hysteresis=2)
    seen = []
    for found_inf in (True, True, True, False, False, False, True, True, True, True):
        s.update(found_inf)
        seen.append(s.scale)
    # 1st inf: hysteresis 2 -> 1, kept; 2nd: 0 -> halve; 3rd: still <= 0 -> halve; 2 clean -> double
    # (tracker reset to 2); clean; inf -> 1 kept; inf -> halve; inf -> halve, clamped at min 256
    assert seen == [1024.0, 512.0, 256.0, 256.0, 512.0, 512.0, 512.0, 256.0, 256.0, 256.0]
    assert DynamicLossScaler.from_state(s.state()) == s


def test_loss_scale_modes():
    t = {"loss_scale": "auto"}
    assert scaling_enabled(t, "float16") and not scaling_enabled(t, "float32")
    assert scaling_enabled({"loss_scale": "dynamic"}, "float32")
    assert not scaling_enabled({"loss_scale": "none"}, "float16")
    with pytest.raises(LossScaleError, match="train.loss_scale='on'"):
        scaling_enabled({"loss_scale": "on"}, "float16")
    with pytest.raises(LossScaleError, match="train.min_loss_scale"):
        DynamicLossScaler.from_train({"initial_loss_scale": 1.0, "min_loss_scale": 2.0, "loss_scale_window": 1,
                                      "hysteresis": 1})


def test_clip_coefficient():
    assert clip_coefficient(4.0, 1.0) == pytest.approx(1.0 / (4.0 + 1e-6))
    assert clip_coefficient(0.5, 1.0) is None  # already inside the ball: untouched
    assert clip_coefficient(4.0, 0.0) is None  # clipping off


def test_forward_program_keeps_the_forward_half(tmp_path):
    cfg = write_config(str(tmp_path / "c.yaml"), pp=2, vpp=2, layers=4, mbs=4, mode="hsdp", shard=2, replicate=2)
    pset = json.loads(ppstream.compile(cfg, True, "cpu-serial"))
    for p in pset["programs"]:
        fp = evaluate.forward_program(p)
        ops_ = [i["op"] for i in fp["instrs"]]
        assert not {"B", "REDUCE_GRAD", "OPT_STEP"} & set(ops_)
        assert ops_.count("F") == [i["op"] for i in p["instrs"]].count("F") == 8
        kinds = [o["kind"] for i in fp["instrs"] if i["op"] == "BATCH" for o in i["p2p"]]
        assert kinds and set(kinds) <= {"SEND_F", "RECV_F"}
        # every forward transfer survives: as many as in the full program
        assert len(kinds) == sum(1 for i in p["instrs"] if i["op"] == "BATCH" for o in i["p2p"]
                                 if o["kind"] in ("SEND_F", "RECV_F"))
        # order kept: the projection is a subsequence of the program
        it = iter(p["instrs"])
        assert all(any(x["text"].split(" (")[0] == y["text"] for y in it) for x in fp["instrs"])


def _meta(step: int, world=None) -> dict:
    world = world or {"pp": 1, "vpp": 1, "shard": 2, "replicate": 1}
    return {"format": checkpoint.FORMAT, "step": step, "updates": step, "loss_scaler": None, "data": {"batches": step},
            "world": world, "stage_layers": [[0, 1]], "model": {"hidden": 8},
            "recipe": {"model": "ppstream.mindspore.model.moe:build", "data": "ppstream.mindspore.data.text:batches"},
            "schedule": {"style": "constant"},
            "files": checkpoint.expected_files(world)}


def _write_ckpt(run_dir: str, step: int, files: bool = True) -> str:
    d = checkpoint.step_dir(run_dir, step)
    os.makedirs(d)
    meta = _meta(step)
    with open(os.path.join(d, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f)
    for name in meta["files"] if files else []:
        open(os.path.join(d, name), "wb").close()
    return d


def test_resume_resolves_the_newest_complete_checkpoint(tmp_path):
    run = str(tmp_path / "run")
    c3 = _write_ckpt(run, 3)
    _write_ckpt(run, 6, files=False)  # rank files missing: incomplete, skipped
    assert checkpoint.resolve(run) == c3
    assert checkpoint.resolve(c3) == c3
    with pytest.raises(checkpoint.CheckpointError, match="neither a checkpoint directory"):
        checkpoint.resolve(str(tmp_path))


def test_resume_checks_name_the_mismatch(tmp_path):
    run = str(tmp_path / "run")
    c3 = _write_ckpt(run, 3)
    now = _meta(0)
    assert checkpoint.check_resumable(c3, now, steps=6)["step"] == 3
    with pytest.raises(checkpoint.CheckpointError, match="nothing left to run"):
        checkpoint.check_resumable(c3, now, steps=3)
    with pytest.raises(checkpoint.CheckpointError, match="world differs"):
        checkpoint.check_resumable(c3, {**now, "world": {"pp": 2, "vpp": 1, "shard": 2, "replicate": 1}}, steps=6)
    with pytest.raises(checkpoint.CheckpointError, match="recipe differs"):
        checkpoint.check_resumable(c3, {**now, "recipe": {**now["recipe"], "data": "mine.data:batches"}}, steps=6)
    with pytest.raises(checkpoint.CheckpointError, match="schedule differs"):
        checkpoint.check_resumable(c3, {**now, "schedule": {"style": "cosine"}}, steps=6)
    os.remove(os.path.join(c3, checkpoint.shard_file(0, 1, 2)))
    with pytest.raises(checkpoint.CheckpointError, match=r"incomplete, missing s0.shard1of2.npz"):
        checkpoint.check_resumable(c3, now, steps=6)


def test_user_data_with_evaluation_needs_an_eval_data_factory(tmp_path):
    from ppstream.mindspore.runconfig import RunConfigError, load_run_config
    cfg = write_config(str(tmp_path / "c.yaml"), pp=2, vpp=1, layers=2, mbs=2, model={"width": 4},
                       train={"model": "mine:build", "data": "mine:batches", "eval_every": 2})
    with pytest.raises(RunConfigError, match=re.escape("train.eval_every=2 with train.data='mine:batches': set "
                                                       "train.eval_data")):
        load_run_config(cfg)
    assert load_run_config(cfg, {"train.eval_data": "mine:held_out"}).train["eval_data"] == "mine:held_out"
    # the components' rules hold for a user's model too
    with pytest.raises(RunConfigError, match=re.escape(f"{cfg}: train.clip_grad=-1.0")):
        load_run_config(cfg, {"train.eval_data": "mine:held_out", "train.clip_grad": "-1"})


@pytest.mark.parametrize("key, value, match", [
    ("lr_decay_style", "step", "train.lr_decay_style='step'"),
    ("lr_warmup_steps", "9", "train.lr_warmup_steps=9 must be less than train.lr_decay_steps=5"),
    ("clip_grad", "-1", "train.clip_grad=-1.0"),
    ("loss_scale", "static", "train.loss_scale='static'"),
    ("reduce_dtype", "int8", "train.reduce_dtype='int8'"),
    ("eval_holdout", "1.5", "train.eval_holdout=1.5"),
])
def test_bad_component_settings_name_file_and_key(tmp_path, key, value, match):
    from ppstream.mindspore.runconfig import RunConfigError, load_run_config
    cfg = write_config(str(tmp_path / "c.yaml"), pp=2, vpp=1, layers=2, mbs=2,
                       train={"lr_decay_style": "cosine", "steps": 5})
    load_run_config(cfg)  # the base config is fine
    with pytest.raises(RunConfigError, match=re.escape(f"{cfg}: {match}")):
        load_run_config(cfg, {f"train.{key}": value})
