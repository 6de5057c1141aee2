"""`ppstream whatif DIR --reduce-grad async` on a `ppstream replay --trace DIR` inline run with a
straggler tail (docs/whatif.md "Our traces"). Asserts only what cannot flake: the lifting runs on
real measured timings, its programs verify, every step is re-simulated, and with the tail hidden
behind async reductions the predicted step is shorter than the same costs' inline step. The
prediction's accuracy against replay async is bench/whatif_replay_prediction.py's table."""
import json
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_configs import config_text  # noqa: E402

PPSTREAM = shutil.which("ppstream", path=os.path.dirname(sys.executable)) or shutil.which("ppstream")
REPLAY = PPSTREAM and shutil.which("ppstream-replay", path=os.path.dirname(PPSTREAM))
pytestmark = pytest.mark.skipif(REPLAY is None, reason="ppstream CLI with ppstream-replay not installed")

TAIL = """straggler:
  tails:
    - {pp_rank: 1, dp_index: 1, delay_ms: 40, collectives: [reduce_grad]}
"""


def test_whatif_predicts_async_from_a_replay_inline_trace(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(config_text(policy="inline", straggler=TAIL))
    trace = tmp_path / "trace"
    trace.mkdir()
    r = subprocess.run([PPSTREAM, "replay", str(cfg), "--reduce-grad", "inline", "--steps", "2", "--trace", str(trace)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (trace / "replay.inline.config.yaml").exists()
    w = subprocess.run([PPSTREAM, "whatif", str(trace), "--reduce-grad", "async", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert w.returncode == 0, w.stderr
    res = json.loads(w.stdout)
    assert len(res["steps"]) == 2
    assert any("verified" in n for n in res["notes"])
    assert all(s["resimulated_ms"] > 0 for s in res["steps"])
    p = res["predicted_step_ms"]
    assert p["policy"] == "async"
    assert p["measured_costs_ms"] < p["traced_ms"]  # the same measured costs: the tail is hidden
