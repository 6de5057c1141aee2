"""The whole verification grid through the installed (optimized) ppstream executable."""
import pathlib
import re
import shutil
import subprocess
import sys


def ppstream_exe():
    return shutil.which("ppstream") or str(pathlib.Path(sys.executable).parent / "ppstream")


def verify_grid(*extra: str) -> None:
    res = subprocess.run([ppstream_exe(), "verify", "--grid", *extra], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-4000:]
    m = re.search(r"grid: (\d+)/(\d+) configurations verified", res.stdout)
    assert m, res.stdout
    assert m.group(1) == m.group(2)
    assert int(m.group(2)) > 9000  # overlap_b_f is not a grid axis (it does not change the lowering)


def test_whole_grid_verifies():
    verify_grid()


def test_whole_grid_verifies_under_the_ascend_runtime_profile():
    # ascend-mindspore: a rank's ops with one peer run in issue order on the pair group's device
    # stream across all P2P streams (docs/semantics.md, "Communication queues") — the profile
    # `ppstream train` verifies Ascend runs under, which can hang what strict runs.
    verify_grid("--platform", "ascend-mindspore")
