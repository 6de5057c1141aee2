#!/usr/bin/env python3
"""Generate PyTorch's pipeline compute orders for a grid of (schedule, pp, vpp, microbatches).

PyTorch is an oracle here, never a project dependency: the script installs torch==2.13.0 (CPU
wheel) into its own venv and re-runs itself there:
    python3 scripts/torch_orders.py            # creates .torch-venv/, writes the data file
    python3 scripts/torch_orders.py --venv DIR --out FILE
It builds each schedule class of torch.distributed.pipelining.schedules with stand-in stages
(no process group: only the attributes the schedule constructors read) and records
`pipeline_order` — per PP rank one string of its compute actions in order, bubbles (None)
dropped, in torch's own action notation STAGE TYPE MICROBATCH ("2F0" = forward of microbatch 0
on stage 2), type F (forward), B (full backward), I (input-gradient backward), W
(weight-gradient backward). DualPipeV's OVERLAP_F_B actions are written as their sub-actions in
order (an F, then a B): torch's runtime runs them that way unless a custom overlap function is
registered. The V schedules (ZBV, DualPipeV) get stages r and 2p-1-r per rank (vpp 2 only).
The single-stage classes (GPipe, 1F1B) build `pipeline_order` from `_get_pipeline_order()` in
torch >= 2.9; REDUCE_GRAD and other non-compute actions are dropped. Output: tests/data/torch_orders/orders.json with
{"torch_version", "schedules": {name: [{"pp", "vpp", "microbatches", "order": [[...], ...]}]}}.
Grid points torch rejects are recorded with "error" instead of "order".
Test: tests/cpp/schedule/torch_orders_test.cpp.
"""
import argparse
import json
import os
import subprocess
import sys

TORCH = "torch==2.13.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Our schedule name → (torch class, kind): "single" (one stage per rank), "loop" (stage c*p + r),
# "v" (stages r and 2p-1-r, vpp 2).
SCHEDULES = {
    "gpipe": ("ScheduleGPipe", "single"),
    "1f1b": ("Schedule1F1B", "single"),
    "interleaved_1f1b": ("ScheduleInterleaved1F1B", "loop"),
    "interleaved_zb": ("ScheduleInterleavedZeroBubble", "loop"),
    "zbv": ("ScheduleZBVZeroBubble", "v"),
    "dualpipev": ("ScheduleDualPipeV", "v"),
}
TYPES = {"F": "F", "B": "B", "I": "I", "W": "W"}


def in_venv(venv):
    return os.path.realpath(sys.prefix) == os.path.realpath(venv)


def ensure_venv(venv):
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    subprocess.check_call([py, "-m", "pip", "install", "-q", TORCH])
    return py


class Stage:
    """What the schedule constructors read from a pipeline stage (no communication)."""

    def __init__(self, stage_index, num_stages, group_size, group_rank):
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.group_size = group_size
        self.group_rank = group_rank
        self.group = None
        self.submod = None  # not an nn.Module: the torch.compile check skips it
        self.is_first = stage_index == 0
        self.is_last = stage_index == num_stages - 1
        self.stage_index_to_group_rank = {}


def stages_of(rank, pp, vpp, v_placement):
    n = pp * vpp
    if v_placement:  # rank r holds stages r and 2p-1-r
        idx = [rank, 2 * pp - 1 - rank]
    else:
        idx = [c * pp + rank for c in range(vpp)]
    return [Stage(i, n, pp, rank) for i in idx]


def compute_actions(a):
    """A torch action as our compute actions: OVERLAP_F_B → its sub-actions in order."""
    if a is None:
        return []
    t = a.computation_type.value  # "F", "B", "I", "W", "OVERLAP_F_B", or a communication action
    if t == "OVERLAP_F_B":
        return [x for sub in a.sub_actions for x in compute_actions(sub)]
    if t not in TYPES:
        return []  # communication / unshard / reduce actions are not compute
    return [f"{a.stage_index}{t}{a.microbatch_index}"]


def order_of(cls, kind, pp, vpp, m):
    if kind == "single":
        sched = cls(Stage(0, pp, pp, 0), m)
    else:
        sched = cls(stages_of(0, pp, vpp, kind == "v"), m)
    return [" ".join(x for a in sched.pipeline_order[r] for x in compute_actions(a)) for r in range(pp)]


def grid(kind):
    for pp in range(2, 9):
        for vpp in (1,) if kind == "single" else (2,) if kind == "v" else (2, 3, 4):
            for m in sorted({1, 2, 3, pp - 1, pp, pp + 1, 2 * pp, 2 * pp + 1, 2 * pp + 2, 3 * pp, 4 * pp}):
                if m >= 1:
                    yield pp, vpp, m


def generate(out_path):
    import torch
    from torch.distributed.pipelining import schedules as S

    data = {"torch_version": torch.__version__, "generator": "scripts/torch_orders.py", "schedules": {}}
    for name, (cls_name, kind) in SCHEDULES.items():
        cls = getattr(S, cls_name)
        rows = []
        for pp, vpp, m in grid(kind):
            row = {"pp": pp, "vpp": vpp, "microbatches": m}
            try:
                row["order"] = order_of(cls, kind, pp, vpp, m)
            except (ValueError, AssertionError, RuntimeError) as e:
                row["error"] = str(e).splitlines()[0]
            rows.append(row)
        data["schedules"][name] = {"torch_class": cls_name, "points": rows}
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    n = sum(len(s["points"]) for s in data["schedules"].values())
    print(f"wrote {out_path}: {n} grid points, torch {torch.__version__}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default=os.path.join(ROOT, ".torch-venv"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "torch_orders", "orders.json"))
    args = ap.parse_args()
    if not in_venv(args.venv):
        py = ensure_venv(args.venv)
        sys.exit(subprocess.call([py, os.path.abspath(__file__), "--venv", args.venv, "--out", args.out]))
    generate(args.out)


if __name__ == "__main__":
    main()
