"""Shared helpers for the runtime tests: skip without MindSpore, run `ppstream train` as a subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ms = pytest.importorskip("mindspore", reason="MindSpore not installed (pip install -r requirements-mindspore.txt)")
pytest.importorskip("ppstream._core", reason="ppstream._core not built")

FORTUNES = "/usr/share/games/fortunes"

# Tiny model used by every equivalence test. top_k == experts: top-k routing is discontinuous,
# and float summation order (which differs between layouts) flips near-tie tokens to another
# expert, so with top-1 the layouts agree only to ~1e-4 absolute after a few AdamW steps.
MODEL = {"hidden": 32, "heads": 2, "experts": 2, "top_k": 2, "ffn": 64, "seq_len": 32}
# AdamW's eps at 1e-6 (not 1e-8): an element whose gradient is ~1e-8 (embedding rows of rare bytes)
# would otherwise turn summation-order rounding, which differs between layouts, into a visible
# share of an update; a larger eps keeps every layout within rtol 1e-4 of the baseline.
TRAIN = {"steps": 5, "micro_batch_size": 2, "text": FORTUNES, "eps": 1.0e-6}


def write_config(path: str, *, pp: int, vpp: int, layers: int, mbs: int, mode: str = "none", shard: int = 1,
                 replicate: int = 1, reduce_grad: str = "async", overlap_p2p: bool = True,
                 model: dict | None = None, train: dict | None = None) -> str:
    sched = "interleaved_1f1b" if vpp > 1 else "1f1b"
    lines = [f"pipeline_parallel_size: {pp}", f"pipeline_parallel_interleave_num: {vpp}", f"num_layers: {layers}",
             f"micro_batch_num: {mbs}", f"pipeline_parallel_overlap_p2p: {str(overlap_p2p).lower()}",
             "pipeline_parallel_overlap_b_f: true", "pipeline_parallel_p2p_transport: multi_stream",
             f"schedule: {sched}"]
    if mode != "none":
        lines += ["data_parallel:", f"  mode: {mode}", f"  shard_size: {shard}", f"  replicate_size: {replicate}",
                  "  reshard_after_backward: true", f"  reduce_grad: {reduce_grad}", "  sync_last_reduce: true"]
    lines += ["model: " + json.dumps(model or MODEL), "train: " + json.dumps({**TRAIN, **(train or {})})]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def run_train(config: str, out: str, *extra: str, timeout: float = 300.0) -> subprocess.CompletedProcess:
    """Runs the launcher; its own --timeout kills a hung job and names the hung ranks."""
    cmd = [sys.executable, "-m", "ppstream.mindspore.train", config, "--out", out, "--timeout", str(timeout), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60)


def load_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def programs_with_sends(run_dir: str) -> list[tuple[dict, dict[int, int]]]:
    """Each program of a run's programs.json with {stage: index of the BATCH holding the SEND_B of
    the stage's last backward} (the engine's stage_backwards; stage 0 has none)."""
    from ppstream import _core
    with open(os.path.join(run_dir, "programs.json"), encoding="utf-8") as f:
        text = f.read()
    return [(p, {b["stage"]: b["send"] for b in _core.stage_backwards(text, p["rank"]) if b["send"] is not None})
            for p in json.loads(text)["programs"]]


def have_fortunes() -> bool:
    return os.path.isdir(FORTUNES)


def pytest_configure(config):
    config.addinivalue_line("markers", "multiprocess: 8-process msrun runs (slow; select with -m multiprocess)")
    config.addinivalue_line("markers", "netns: two hosts made of network namespaces (root; test_two_nodes.py, ~2 min)")
