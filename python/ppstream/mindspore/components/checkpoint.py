"""Sharded checkpoints: every stage's parameter shards with their AdamW state, and the run's position.

Layout of one checkpoint, ``RUN_DIR/checkpoints/step{N}/`` (N = steps completed):

- ``s{S}.shard{I}of{K}.npz`` — virtual stage S, shard index I of K (K = 1 without sharding):
  ``shard`` (float32 [L], the flat parameter slice of ``HsdpState``, zero padding included),
  ``m``, ``v`` (float32 [L], AdamW moments), ``t`` (int, AdamW's update count), ``buckets``
  (int, the stage's gradient buckets k: the flat layout is per bucket, training/hsdp.py; a file
  without it is k = 1), and ``buffer:NAME`` for each of the stage's ``requires_grad=False``
  parameters (frozen weights, BatchNorm's moving statistics; ``NAME`` as in params.npz), as the
  rank holds it. Written by the
  ranks of replicate index 0 only — replicas hold the same values, so nothing is stored twice
  (torch.distributed.checkpoint's deduplication); every replica reads the same file back (so
  a replica of replicate index r > 0 resumes with index 0's BatchNorm statistics, which its own
  data had moved apart; trainable parameters are equal on replicas).
- ``meta.json`` — written by rank 0: ``format``, ``step`` (N), ``updates`` (optimizer updates
  taken: the LR schedule position), ``loss_scaler`` (its state, or null), ``data`` (the data
  position: ``{"batches": N}``, global batches of the ``train.data`` factory consumed; a resume
  reads the factory's iterator afresh and drops its first N batches, ``GlobalBatches.skip``),
  ``world`` (pp / vpp / shard / replicate), ``stage_layers``, ``model``, ``recipe`` (the
  ``train.model`` / ``train.data`` factories), ``schedule`` and ``loss_scaling``
  (what the shards and the position mean), and ``files`` (every shard file; a checkpoint is complete when all exist).

Every file is written to a temporary name and renamed, so a crash leaves no half-written file
under the final name. A resume (``--resume DIR``: a checkpoint directory, or a run directory,
whose newest complete checkpoint is taken) checks in the launcher, before any worker starts,
that the checkpoint is complete and that world, layer map, model, model and data factories, schedule and loss scaling
(on / off) equal the new run's (as Megatron's OptimizerParamScheduler refuses a changed schedule); resharding to another
layout is not supported. Restoring copies the float32 arrays back bit for bit, so on CPU the
resumed steps equal an uninterrupted run's bitwise (tested).
"""
from __future__ import annotations

import json
import os
import re

import numpy as np

FORMAT = 1
_STEP_DIR = re.compile(r"^step(\d+)$")


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed from; the message names the file and the mismatch."""


def step_dir(run_dir: str, step: int) -> str:
    return os.path.join(run_dir, "checkpoints", f"step{step}")


def shard_file(stage: int, index: int, count: int) -> str:
    return f"s{stage}.shard{index}of{count}.npz"


def expected_files(world: dict) -> list[str]:
    """Every shard file of a checkpoint of this world (all stages × shard indices)."""
    k = world["shard"]
    return [shard_file(s, i, k) for s in range(world["pp"] * world["vpp"]) for i in range(k)]


def _atomic_savez(path: str, **arrays) -> None:
    tmp = path + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def _atomic_json(path: str, obj: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def save(out: str, step: int, rt, meta: dict) -> None:
    """This rank's part of checkpoint ``step`` under ``out`` (a checkpoint directory).
    ``meta``: the run-wide fields (world, stage_layers, model, schedule); rank 0 writes meta.json."""
    os.makedirs(out, exist_ok=True)
    topo = rt.topo
    if topo.replicate_index == 0:
        for s, st in rt.states.items():
            a = st.optim
            _atomic_savez(os.path.join(out, shard_file(s, topo.shard_index, topo.shard)), shard=st.shard.asnumpy(), m=a.m.asnumpy(),
                          v=a.v.asnumpy(), t=np.int64(a.t), buckets=np.int64(st.buckets),
                          **{f"buffer:{n}": p.asnumpy() for n, p in st.stage.buffers})
    if topo.rank == 0:
        world = meta["world"]
        _atomic_json(os.path.join(out, "meta.json"),
                     {"format": FORMAT, "step": step, **rt.opt.state(), "data": {"batches": step}, **meta,
                      "files": expected_files(world)})


def load(ckpt: str, rt) -> dict:
    """Restores this rank's stages (shards, AdamW state) and the optimizer step's state from
    checkpoint directory ``ckpt``; returns its meta. Raises CheckpointError naming a bad file."""
    import mindspore as ms
    meta = read_meta(ckpt)
    topo = rt.topo
    for s, st in rt.states.items():
        path = os.path.join(ckpt, shard_file(s, topo.shard_index, topo.shard))
        try:
            with np.load(path) as z:
                shard, m, v, t = z["shard"], z["m"], z["v"], int(z["t"])
                buckets = int(z["buckets"]) if "buckets" in z.files else 1
                buffers = {n: z[f"buffer:{n}"] for n, _p in st.stage.buffers}
        except (OSError, KeyError) as e:
            raise CheckpointError(f"checkpoint {path}: {e}") from None
        if buckets != st.buckets:
            raise CheckpointError(f"checkpoint {path}: stage s{s} was saved with {buckets} gradient bucket(s), this run "
                                  f"has {st.buckets} (data_parallel.reduce_buckets; the shard layout is per bucket): "
                                  "resume with the checkpoint's reduce_buckets")
        if shard.shape != (st.shard_len,) or shard.dtype != np.float32:
            raise CheckpointError(f"checkpoint {path}: shard is {shard.dtype} {shard.shape}, stage s{s} expects "
                                  f"float32 ({st.shard_len},)")
        for n, p in st.stage.buffers:
            now = p.asnumpy()
            if buffers[n].shape != now.shape or buffers[n].dtype != now.dtype:
                raise CheckpointError(f"checkpoint {path}: buffer:{n} is {buffers[n].dtype} {buffers[n].shape}, "
                                      f"stage s{s} expects {now.dtype} {now.shape}")
        st.restore(ms.Tensor(shard), ms.Tensor(m), ms.Tensor(v), t)
        for n, p in st.stage.buffers:
            p.set_data(ms.Tensor(buffers[n]))
    rt.opt.load_state(meta)
    rt.data.skip(int(meta["data"]["batches"]))
    return meta


def read_meta(ckpt: str) -> dict:
    path = os.path.join(ckpt, "meta.json")
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise CheckpointError(f"--resume {ckpt}: no meta.json (not a checkpoint directory, or rank 0 did not "
                              "finish writing it)") from None
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{path}: not JSON ({e})") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{path}: format {meta.get('format')!r}, this ppstream reads format {FORMAT}")
    return meta


def _complete(ckpt: str) -> bool:
    try:
        meta = read_meta(ckpt)
    except CheckpointError:
        return False
    return all(os.path.exists(os.path.join(ckpt, f)) for f in meta["files"])


def resolve(path: str) -> str:
    """``--resume PATH``: a checkpoint directory (has meta.json) as is; a run directory: its newest
    complete checkpoint. Raises CheckpointError when there is none."""
    path = os.path.abspath(path)
    if os.path.exists(os.path.join(path, "meta.json")):
        return path
    root = os.path.join(path, "checkpoints")
    steps = sorted((int(m.group(1)) for n in (os.listdir(root) if os.path.isdir(root) else [])
                    if (m := _STEP_DIR.match(n))), reverse=True)
    for n in steps:
        if _complete(os.path.join(root, f"step{n}")):
            return os.path.join(root, f"step{n}")
    raise CheckpointError(f"--resume {path}: neither a checkpoint directory (meta.json) nor a run directory with a "
                          f"complete checkpoint under checkpoints/step*/")


def check_resumable(ckpt: str, meta_now: dict, steps: int) -> dict:
    """Launcher-side check before any worker starts: complete, same world / layers / model /
    schedule, and steps left to run. Returns the checkpoint's meta; raises CheckpointError."""
    meta = read_meta(ckpt)
    missing = [f for f in meta["files"] if not os.path.exists(os.path.join(ckpt, f))]
    if missing:
        raise CheckpointError(f"--resume {ckpt}: incomplete, missing {', '.join(missing[:4])}"
                              + (f" and {len(missing) - 4} more" if len(missing) > 4 else ""))
    for key in ("world", "stage_layers", "model", "recipe", "schedule", "loss_scaling"):
        if json.dumps(meta.get(key), sort_keys=True) != json.dumps(meta_now.get(key), sort_keys=True):
            raise CheckpointError(f"--resume {ckpt}: {key} differs from this run's: checkpoint {meta[key]}, "
                                  f"now {meta_now[key]} (resuming into another {key} is not supported)")
    if meta["step"] >= steps:
        raise CheckpointError(f"--resume {ckpt}: the checkpoint is at step {meta['step']} and the run has "
                              f"{steps} steps; nothing left to run (raise --steps)")
    return meta
