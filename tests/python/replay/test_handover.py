"""`ppstream replay` is the executable `ppstream-replay` beside the CLI (docs/replay.md,
"Executables"): the CLI hands every argument over unchanged, names the missing executable's path
when it is not there, and neither links nor loads Open MPI itself. None of these start MPI."""
import os
import shutil
import subprocess
import sys

import pytest

# The CLI installed beside this interpreter (as in test_replay.py), else the one on PATH.
PPSTREAM = shutil.which("ppstream", path=os.path.dirname(sys.executable)) or shutil.which("ppstream")
REPLAY = PPSTREAM and shutil.which("ppstream-replay", path=os.path.dirname(PPSTREAM))
_MISSING = ("ppstream CLI not installed" if PPSTREAM is None else
            f"ppstream-replay not installed beside {PPSTREAM}" if REPLAY is None else None)
if _MISSING and os.environ.get("CI"):
    raise RuntimeError(f"tests/python/replay: {_MISSING}")  # CI installs both (scripts/setup.sh)
pytestmark = [pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]

BAD_CONFIG = ["--set", "pipeline_parallel_size=2", "--set", "num_layers=4", "--set", "micro_batch_num=0"]


def test_arguments_reach_ppstream_replay_unchanged():
    """Options before and after a bad value give the replay executable's own error and exit code."""
    via_cli = subprocess.run([PPSTREAM, "replay", *BAD_CONFIG, "--steps", "2"], capture_output=True, text=True, timeout=60)
    direct = subprocess.run([REPLAY, *BAD_CONFIG, "--steps", "2"], capture_output=True, text=True, timeout=60)
    assert via_cli.returncode == direct.returncode == 2, via_cli.stderr
    assert "micro_batch_num" in direct.stderr, direct.stderr
    assert via_cli.stderr == direct.stderr and via_cli.stdout == direct.stdout


def test_help_is_replays_own():
    res = subprocess.run([PPSTREAM, "replay", "--help"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "ppstream replay" in res.stdout and "--calibrate" in res.stdout and "--hostfile" in res.stdout


def test_missing_replay_executable_is_named(tmp_path):
    """A CLI without ppstream-replay beside it (found through /proc/self/exe, not PATH) says which
    file it looked for and exits 127."""
    lone = tmp_path / "ppstream"
    shutil.copy2(PPSTREAM, lone)
    res = subprocess.run([str(lone), "replay", "cfg.yaml"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PATH": os.path.dirname(REPLAY) + os.pathsep + os.environ.get("PATH", "")})
    assert res.returncode == 127
    assert f"cannot start {tmp_path / 'ppstream-replay'}: No such file or directory" in res.stderr, res.stderr
    assert "Open MPI" in res.stderr


def _needed_libraries(exe):
    """The shared libraries the dynamic loader maps for `exe`, transitively (ldd)."""
    res = subprocess.run(["ldd", exe], capture_output=True, text=True, timeout=60, check=True)
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


def test_only_replay_loads_open_mpi():
    assert not [lib for lib in _needed_libraries(PPSTREAM) if "libmpi" in lib or "open-pal" in lib]
    assert [lib for lib in _needed_libraries(REPLAY) if lib.startswith("libmpi")]
