"""`ppstream train --save-every` / `--resume` for real: msrun, 4 CPU ranks (PP2 × FSDP 2), MCCL.

Run A trains 6 steps with clipping, a warm-up + cosine schedule, evaluation every 2 steps and
bfloat16 collectives (MCCL's all_reduce / all_gather in bfloat16), writing sharded checkpoints
after steps 3 and 6. Run B resumes from A's step-3 checkpoint with
the same --steps 6: its steps 4-6 (losses, gradient norms, learning rates, evaluation loss) and
final parameters equal A's bitwise. Also: a resume whose schedule differs is refused before any
worker starts, naming the mismatch.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import load_json, run_train, write_config

pytestmark = pytest.mark.multiprocess

TINY = {"hidden": 8, "heads": 2, "experts": 2, "top_k": 2, "ffn": 16, "seq_len": 8}
TRAIN = {"clip_grad": 0.05, "lr": 1.0e-2, "min_lr": 1.0e-3, "lr_warmup_steps": 2, "lr_warmup_init": 1.0e-3,
         "lr_decay_style": "cosine", "eval_every": 2, "eval_batches": 1,
         "reduce_dtype": "bfloat16", "all_gather_dtype": "bfloat16"}


def _corpus(tmp_path) -> str:
    import ppstream.mindspore.model.moe as moe
    path = str(tmp_path / "corpus.txt")
    with open(moe.__file__, "rb") as src, open(path, "wb") as f:
        f.write(src.read() * 4)
    return path


def _params(run_dir: str) -> dict:
    out = {}
    for r in range(4):
        p = os.path.join(run_dir, f"rank{r}", "params.npz")
        if os.path.exists(p):
            with np.load(p) as z:
                out.update({k: z[k] for k in z.files})
    return out


def test_resumed_run_continues_bitwise(tmp_path):
    cfg = write_config(str(tmp_path / "c.yaml"), pp=2, vpp=1, layers=2, mbs=2, mode="fsdp", shard=2, model=TINY,
                       train={**TRAIN, "text": _corpus(tmp_path)})
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    ra = run_train(cfg, a, "--steps", "6", "--save-every", "3", "--local-worker-num", "4")
    assert ra.returncode == 0, ra.stdout + ra.stderr
    assert sorted(os.listdir(os.path.join(a, "checkpoints"))) == ["step3", "step6"]
    # one file per stage and shard index (no replicas here), meta.json by rank 0
    assert sorted(os.listdir(os.path.join(a, "checkpoints", "step3"))) == \
        ["meta.json", "s0.shard0of2.npz", "s0.shard1of2.npz", "s1.shard0of2.npz", "s1.shard1of2.npz"]

    refused = run_train(cfg, str(tmp_path / "x"), "--steps", "6", "--resume", a, "--set", "train.lr_warmup_steps=1")
    assert refused.returncode == 2 and "schedule differs" in refused.stderr, refused.stderr
    assert not os.path.exists(os.path.join(tmp_path, "x", "rank0"))  # refused before any worker started

    rb = run_train(cfg, b, "--steps", "6", "--resume", os.path.join(a, "checkpoints", "step3"),
                   "--local-worker-num", "4")
    assert rb.returncode == 0, rb.stdout + rb.stderr
    sa, sb = load_json(os.path.join(a, "summary.json")), load_json(os.path.join(b, "summary.json"))
    assert sa["first_step"] == 0 and sb["first_step"] == 3
    assert sb["losses"] == sa["losses"][3:]
    assert sb["opt"] == sa["opt"][3:]
    assert min(o["grad_norm"] for o in sa["opt"]) > TRAIN["clip_grad"]  # clipping was active
    assert sa["eval"][1:] == sb["eval"] and [e[0] for e in sa["eval"]] == [2, 4, 6]
    pa, pb = _params(a), _params(b)
    assert pa and set(pa) == set(pb)
    for k in pa:
        assert np.array_equal(pa[k], pb[k]), k
