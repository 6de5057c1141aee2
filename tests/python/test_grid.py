"""The whole verification grid through the installed (optimized) ppstream executable."""
import pathlib
import re
import shutil
import subprocess
import sys


def ppstream_exe():
    return shutil.which("ppstream") or str(pathlib.Path(sys.executable).parent / "ppstream")


def test_whole_grid_verifies():
    res = subprocess.run([ppstream_exe(), "verify", "--grid"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-4000:]
    m = re.search(r"grid: (\d+)/(\d+) configurations verified", res.stdout)
    assert m, res.stdout
    assert m.group(1) == m.group(2)
    assert int(m.group(2)) > 9000  # overlap_b_f is not a grid axis (it does not change the lowering)
