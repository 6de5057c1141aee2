"""`ppstream tune --from-trace DIR` on a `ppstream replay --trace DIR` run (4 ranks: PP 2 x FSDP 2,
1F1B, inline reductions, a 40 ms tail on one member's reductions; docs/tune.md "From a trace").
End to end on real measured timings: the replay's directory is lifted, every plan is costed from it,
the config as written is the trace's own programs (every instruction measured), and the tail it
observed is what the baselines see: async hides the 40 ms that inline waits. Asserts only what
cannot flake (the tail is 40 ms; the host's noise on this machine is a few ms)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_configs import TAIL, config_text  # noqa: E402

PPSTREAM = shutil.which("ppstream", path=os.path.dirname(sys.executable)) or shutil.which("ppstream")
REPLAY = PPSTREAM and shutil.which("ppstream-replay", path=os.path.dirname(PPSTREAM))
pytestmark = pytest.mark.skipif(REPLAY is None, reason="ppstream CLI with ppstream-replay not installed")


def test_tune_from_a_replay_trace_directory(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(config_text(policy="inline", straggler=TAIL))
    trace = tmp_path / "trace"
    trace.mkdir()
    r = subprocess.run([PPSTREAM, "replay", str(cfg), "--steps", "2", "--trace", str(trace)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    t = subprocess.run([PPSTREAM, "tune", "--from-trace", str(trace), "--trials", "8", "--quiet", "--json",
                        "--space", "schedule=1f1b,zb_h1", "--space", "data_parallel.reduce_grad=inline,async"],
                       capture_output=True, text=True, timeout=300)
    assert t.returncode == 0, t.stderr
    res = json.loads(t.stdout)
    assert res["cost_source"] == "trace"
    assert res["trace"]["steps"] == 2
    assert res["trace"]["config"].endswith("replay.inline.config.yaml")
    assert res["as_written"]["measured_instructions"] > 0
    assert res["as_written"]["unmeasured_instructions"] == {}
    assert res["as_written"]["derived_instructions"] == {}
    assert res["plans"], res["log"]
    assert res["plans"][0]["p99_ms"] <= res["as_written"]["p99_ms"]
    base = {b["label"]: b for b in res["baselines"]}
    assert base["inline"]["p99_ms"] > base["async"]["p99_ms"] + 20  # the observed 40 ms tail, hidden by async
    zb = [p for p in res["plans"] if "schedule=zb_h1" in p["label"]]
    assert zb and zb[0]["derived_instructions"].get("I", 0) > 0  # the split backward, from the measured B
