"""The user's own model and data through ``train.model`` / ``train.data`` (docs/runtime.md, "Your own model").

Two models that are not ppstream's, written from MindSpore's public API in usermodels/: a
residual MLP classifier on float array data, and a small causal transformer on integer tokens
through ``nn.Embedding``. The factories are copied beside each config and imported from the
config's directory.

- 8 ranks under msrun (4 runs, 3 steps: the first loss before any update, then two optimizer
  updates; each model on both layouts, one in each reduce mode):
  PP2/VPP2 x FSDP 4 and PP2/VPP2 x HSDP 2x2; losses and gathered final parameters equal the
  ``--baseline`` run of the same config (rtol 1e-5); one forward per microbatch per stage.
- In process (``Pipeline``, 1 step: loss and the parameters after the optimizer step): async and inline bitwise equal for each model on
  PP2/VPP2 x HSDP 2x2.
- Refusals, each naming the key: bad module / function / spec, a path given as train.data,
  tied parameters across parts, several boundary tensors, a layer changing the boundary, a batch
  of the wrong size, a launcher that fails before any worker starts.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import load_json, run_train, write_config

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 3  # each further step costs ~1.4-2.2 s per 8-rank run (idle 2-core machine) on the same path
MODELS = {
    "mlp_classifier": {"features": 12, "hidden": 16, "classes": 5},
    "tiny_transformer": {"vocab": 11, "hidden": 16, "heads": 2, "seq_len": 8},
}
LAYOUTS = {
    "fsdp4": dict(pp=2, vpp=2, layers=4, mbs=2, mode="fsdp", shard=4, replicate=1),
    "hsdp2x2": dict(pp=2, vpp=2, layers=4, mbs=2, mode="hsdp", shard=2, replicate=2),
}
# (model, layout, reduce_grad) of the 8-rank runs: each model on both layouts, both reduce modes used
RUNS = [("mlp_classifier", "fsdp4", "async"), ("mlp_classifier", "hsdp2x2", "inline"),
        ("tiny_transformer", "fsdp4", "inline"), ("tiny_transformer", "hsdp2x2", "async")]


def user_config(d, model: str, layout: str, reduce_grad: str = "async", train: dict | None = None) -> str:
    """A config in directory ``d`` with the model's factory module copied beside it."""
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(HERE, "usermodels", f"{model}.py"), d)
    return write_config(os.path.join(d, f"{model}-{layout}-{reduce_grad}.yaml"), **LAYOUTS[layout],
                        reduce_grad=reduce_grad, model=MODELS[model],
                        train={"model": f"{model}:build", "data": f"{model}:batches", **(train or {})})


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("user_models")


_runs: dict = {}


def launched(workdir, model: str, layout: str, reduce_grad: str, *extra: str) -> str:
    key = (model, layout, reduce_grad) + extra
    if key not in _runs:
        d = str(workdir / model)
        cfg = user_config(d, model, layout, reduce_grad)
        out = os.path.join(d, "-".join(key).replace("--", ""))
        proc = run_train(cfg, out, "--steps", str(STEPS), "--device", "cpu", *extra, timeout=400)
        assert proc.returncode == 0, f"{key}: ppstream train failed\n{proc.stdout[-4000:]}\n{proc.stderr[-3000:]}"
        _runs[key] = out
    return _runs[key]


def gathered(run_dir: str) -> dict:
    out = {}
    for r in sorted(os.listdir(run_dir)):
        path = os.path.join(run_dir, r, "params.npz")
        if r.startswith("rank") and os.path.exists(path):
            with np.load(path) as z:
                out.update({k: z[k] for k in z.files})
    return out


@pytest.mark.multiprocess
@pytest.mark.parametrize("model,layout,reduce_grad", RUNS)
def test_user_model_on_8_ranks_equals_baseline(workdir, model, layout, reduce_grad):
    run = launched(workdir, model, layout, reduce_grad)
    # one baseline per model: both layouts have dp 4 and the same microbatches
    base = launched(workdir, model, "fsdp4", "async", "--baseline")
    losses = load_json(os.path.join(run, "summary.json"))["losses"]
    ref = load_json(os.path.join(base, "result.json"))["losses"]
    assert len(losses) == len(ref) == STEPS
    np.testing.assert_allclose(losses, ref, rtol=1e-5)
    params = gathered(run)
    with np.load(os.path.join(base, "params.npz")) as z:
        ref_params = {k: z[k] for k in z.files}
    assert set(params) == set(ref_params) and params
    for k, v in params.items():
        np.testing.assert_allclose(v, ref_params[k], rtol=1e-5, atol=1e-6, err_msg=f"{model} {layout}: {k}")
    mbs = LAYOUTS[layout]["mbs"]
    for r in range(8):  # no recompute: one forward per microbatch per stage per step
        res = load_json(os.path.join(run, f"rank{r}", "result.json"))
        assert res["forward_runs"] == {str(s): STEPS * mbs for s in res["local_stages"]}, (r, res["forward_runs"])


def _pipeline_run(cfg: str, overrides: dict, steps: int):
    from ppstream.mindspore import Pipeline
    from ppstream.mindspore.recipe import open_data
    pipe = Pipeline(cfg, overrides)
    data = open_data(pipe.cfg, pipe.dp)
    losses = [pipe.step(data.global_batch(k)) for k in range(steps)]
    return losses, pipe.parameters(), pipe.forward_runs()


@pytest.mark.parametrize("model", list(MODELS))
def test_pipeline_async_equals_inline_bitwise(tmp_path, model):
    cfg = user_config(str(tmp_path), model, "hsdp2x2")
    la, pa, fa = _pipeline_run(cfg, {}, 1)
    li, pi, _fi = _pipeline_run(cfg, {"data_parallel.reduce_grad": "inline"}, 1)
    assert la == li
    assert set(pa) == set(pi)
    for k in pa:
        assert np.array_equal(pa[k], pi[k]), k
    assert fa == {s: LAYOUTS["hsdp2x2"]["mbs"] for s in range(4)}


# -- refusals ----------------------------------------------------------------------------------
def _cfg(tmp_path, **train):
    return user_config(str(tmp_path), "mlp_classifier", "fsdp4", train=train)


@pytest.mark.parametrize("train,match", [
    ({"model": "no_such_module:build"}, r"train\.model='no_such_module:build': no module 'no_such_module'"),
    ({"model": "mlp_classifier:nope"}, r"train\.model='mlp_classifier:nope': module mlp_classifier .* has no 'nope'"),
    ({"data": "/usr/share/games/fortunes"}, r"train\.data='/usr/share/games/fortunes': expected MODULE:FUNCTION.*train\.text"),
    ({"model": "mlp_classifier:batches"}, r"train\.model=.*returned generator; expected ppstream\.mindspore\.ModelParts"),
])
def test_bad_factory_is_refused_naming_the_key(tmp_path, train, match):
    from ppstream.mindspore.launch.worker import setup_mindspore_cpu
    from ppstream.mindspore.recipe import check
    from ppstream.mindspore.runconfig import load_run_config
    setup_mindspore_cpu()
    with pytest.raises(ValueError, match=match):
        check(load_run_config(_cfg(tmp_path, **train)), 4)


BAD_MODELS = '''
import numpy as np
import mindspore as ms
from mindspore import nn, ops
from ppstream.mindspore import ModelParts
import mlp_classifier as m

class Pair(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a = nn.Dense(12, 16)
    def construct(self, x):
        h = self.a(x)
        return h, h

class Widen(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a = nn.Dense(16, 32)
    def construct(self, h):
        return self.a(h)

class TiedHead(nn.Cell):
    def __init__(self, stem):
        super().__init__()
        self.w = stem.proj.weight  # the stem's (16, 12) weight, reused
    def construct(self, h, labels):
        return ops.cross_entropy(ops.matmul(h, self.w)[:, :5], labels)

def tied(cfg):
    stem = m.Stem(12, 16)
    return ModelParts(stem, [m.Block(16) for _ in range(cfg["num_layers"])], TiedHead(stem))

def pair(cfg):
    return ModelParts(Pair(), [m.Block(16) for _ in range(cfg["num_layers"])], m.Classifier(16, 5))

def widen(cfg):
    return ModelParts(m.Stem(12, 16), [m.Block(16), Widen(), m.Block(16), m.Block(16)], m.Classifier(16, 5))

def short_batches(train):
    x, y = next(m.batches(train))
    while True:
        yield x[:-1], y[:-1]
'''


@pytest.mark.parametrize("train,match", [
    ({"model": "bad_models:tied"}, r"parameter .* is shared by ModelParts\.first and ModelParts\.last; ppstream "
                                   r"cannot take tied or shared parameters"),
    ({"model": "bad_models:pair"}, r"ModelParts\.first returned 2 tensors; .*several boundary tensors are not supported"),
    ({"model": "bad_models:widen"}, r"ModelParts\.layers\[1\] returned \(2, 32\).*every layer must keep the boundary"),
    ({"data": "bad_models:short_batches"}, r"train\.data=.*batch 0's inputs have 15 rows .* expected the global "
                                           r"batch, 16 rows"),
])
def test_what_the_protocol_cannot_take_is_refused_saying_so(tmp_path, train, match):
    from ppstream.mindspore.launch.worker import setup_mindspore_cpu
    from ppstream.mindspore.recipe import check
    from ppstream.mindspore.runconfig import load_run_config
    setup_mindspore_cpu()
    cfg = _cfg(tmp_path, **train)
    (tmp_path / "bad_models.py").write_text(BAD_MODELS)
    with pytest.raises(ValueError, match=match):
        check(load_run_config(cfg), 4)


def test_launcher_fails_fast_before_any_worker_starts(tmp_path):
    cfg = _cfg(tmp_path, data="mlp_classifier:no_data")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "ppstream.mindspore.train", cfg, "--out", str(out), "--device", "cpu"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("ppstream train:")]
    assert len(errors) == 1 and "train.data='mlp_classifier:no_data'" in errors[0] and "has no 'no_data'" in errors[0]
    assert not (out / "msrun_log").exists() and not (out / "programs.json").exists()


def test_shipped_example_runs_as_written_in_one_process(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    cfg = os.path.join(root, "examples", "own-model", "pp2-vpp2-hsdp.yaml")
    proc = subprocess.run([sys.executable, "-m", "ppstream.mindspore.train", cfg, "--baseline", "--steps", "2",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    losses = load_json(str(tmp_path / "result.json"))["losses"]
    assert len(losses) == 2 and all(np.isfinite(losses)) and losses[1] < losses[0]
