"""scripts/ascend_smoke.sh end to end on CPU (the Ascend node's one command, device aside).

``test_ascend_smoke_on_cpu``: ``ppstream analyze RUN_DIR`` and ``ppstream diff RUN_A RUN_B`` on the
train run directories (host traces and MindSpore's CPU profiler output). 4 runs x 8 ranks, 2
steps, a tiny model. ``test_whatif_lifts_the_inline_runs``: ``ppstream whatif RUN_DIR
--reduce-grad async`` on the same runs (docs/whatif.md "Train run directories"; no run of its own).
"""
from __future__ import annotations

import glob
import json
import os
import subprocess

import pytest

from conftest import have_fortunes, programs_with_sends

pytestmark = [pytest.mark.multiprocess,
              pytest.mark.skipif(not have_fortunes(), reason="needs /usr/share/games/fortunes (scripts/setup.sh)")]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PPSTREAM = os.path.join(ROOT, ".venv", "bin", "ppstream")  # what ascend_smoke.sh runs
if not os.path.exists(PPSTREAM):
    PPSTREAM = "ppstream"
TINY = ["--set", "model.hidden=16", "--set", "model.ffn=16", "--set", "model.seq_len=16"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke")
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "ascend_smoke.sh"), "--device", "cpu", "--out", str(out),
                           "--steps", "2", "--timeout", "400", *TINY], capture_output=True, text=True, timeout=1800)
    return out, proc


def _slices(run: str, rank: int) -> list[dict]:
    with open(os.path.join(run, f"rank{rank}", "trace.json"), encoding="utf-8") as f:
        return [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]


def send_b_issued_before_reduction_ends(run: str) -> dict[tuple[int, int], bool]:
    """(rank, stage) → is the BATCH with SEND_B of the stage's last backward (the engine's
    stage_backwards) issued before the stage's REDUCE_GRAD ends, in the last step (from the
    runtime's host trace)."""
    out = {}
    for prog, send_b in programs_with_sends(run):
        r = prog["rank"]
        instrs = prog["instrs"]
        reduce = {ins["stage"]: i for i, ins in enumerate(instrs) if ins["op"] == "REDUCE_GRAD"}
        sl = _slices(run, r)
        last_step_start = max(e["ts"] for e in sl if e["args"].get("kind") == "step")
        by_index = {e["args"]["index"]: e for e in sl if "index" in e["args"] and e["ts"] >= last_step_start}
        for s, ri in reduce.items():
            if s in send_b:
                red = by_index[ri]
                out[(r, s)] = by_index[send_b[s]]["ts"] < red["ts"] + red["dur"]
    return out


def test_async_issues_every_send_b_before_its_reduction_ends_inline_does_not(smoke):
    out, proc = smoke
    for layout in ("fsdp4", "hsdp2x2"):
        run_a, run_i = str(out / f"{layout}-async"), str(out / f"{layout}-inline")
        assert os.path.exists(os.path.join(run_a, "summary.json")), proc.stdout[-3000:] + proc.stderr[-2000:]
        ev_a = send_b_issued_before_reduction_ends(run_a)
        assert ev_a and all(ev_a.values()), (layout, ev_a)
        ev_i = send_b_issued_before_reduction_ends(run_i)
        assert ev_i and not any(ev_i.values()), (layout, ev_i)  # inline: the reduction ends first
        # MindSpore's profiler wrote its output on every rank (first step skipped by the schedule)
        for r in range(8):
            views = glob.glob(os.path.join(run_a, "profile", f"rank{r}_*_ascend_ms",
                                           "ASCEND_PROFILER_OUTPUT", "trace_view.json"))
            assert len(views) == 1, (layout, r)


def test_ascend_smoke_on_cpu(smoke):
    out, proc = smoke
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    for layout in ("fsdp4", "hsdp2x2"):
        report = (out / f"{layout}-async.analyze.txt").read_text()
        assert "SEND_B" in report, report[-3000:]
        profile = (out / f"{layout}-async.profile.txt").read_text()  # MindSpore's own CPU profiler output
        assert "compute_ms" in profile and "rank" in profile, profile[-2000:]
        assert (out / f"{layout}.diff.txt").read_text().strip()


def test_whatif_lifts_the_inline_runs_and_predicts_async(smoke):
    """The run directory's host traces lifted into the programs of its config.yaml (compiled again,
    checked against programs.json, verified under cpu-serial), re-simulated under cpu-mccl (MCCL's
    eager sends); its measured steps are
    the runtime's own step times (summary.json). Asserts only what cannot flake."""
    import ppstream
    out, proc = smoke
    for layout, (dp, pp) in (("fsdp4", (4, 2)), ("hsdp2x2", (4, 2))):
        run = out / f"{layout}-inline"
        assert (run / "config.yaml").exists(), proc.stdout[-3000:] + proc.stderr[-2000:]
        w = subprocess.run([PPSTREAM, "whatif", str(run), "--reduce-grad", "async", "--json"], capture_output=True,
                           text=True, timeout=300)
        assert w.returncode == 0, w.stderr
        res = json.loads(w.stdout)
        assert (res["dp"], res["pp"]) == (dp, pp)
        summary = json.loads((run / "summary.json").read_text())
        assert [s["step"] for s in res["steps"]] == [0, 1]
        for s, ms in zip(res["steps"], summary["step_ms"]):
            assert abs(s["measured_ms"] - ms) < 1e-3 * ms, (s, ms)
            assert s["resimulated_ms"] > 0 and s["ideal_ms"] > 0
        assert any("verified under cpu-serial, re-simulated under cpu-mccl" in n for n in res["notes"]), res["notes"]
        p = res["predicted_step_ms"]
        assert p["policy"] == "async" and p["measured_costs_ms"] > 0 and len(p["per_step_ms"]) == 2
        assert ppstream.whatif(str(run), progress=False)["steps"] == res["steps"]  # the Python API, same figures
