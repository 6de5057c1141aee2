"""``ppstream tune CONFIG --apply OUT.yaml`` writes a config that ``ppstream train`` runs unchanged
(docs/tune.md "A config meant for train", "Where --apply writes"), through the CLI as a user runs
it (the ``ppstream`` beside this interpreter; ``--baseline``: one process, short).

- A config with a ``train:`` section: the default space leaves out the split-backward schedules
  train refuses (main's tune picked ``interleaved_zb`` here and train exited 2).
- --apply into another directory than the config's: ``train.model`` / ``train.data`` still import
  the config's own modules (main's: "no module 'regressor' in the config's directory"), and the
  losses equal those of the config as written.
- train.module_dir that is not a directory is refused naming the key (main: an unknown key).
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import have_fortunes, load_json

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PPSTREAM = os.path.join(os.path.dirname(sys.executable), "ppstream")


def ppstream(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([PPSTREAM, *args], capture_output=True, text=True, timeout=timeout)


def baseline_losses(cfg: str, out: str, steps: int) -> list[float]:
    proc = ppstream("train", cfg, "--baseline", "--steps", str(steps), "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return load_json(os.path.join(out, "result.json"))["losses"]


@pytest.mark.skipif(not have_fortunes(), reason="the built-in text data needs /usr/share/games/fortunes")
def test_tune_apply_of_a_train_config_is_a_plan_train_runs(tmp_path):
    out = str(tmp_path / "t.yaml")
    tune = ppstream("tune", os.path.join(ROOT, "examples", "small-pp2-vpp2-hsdp-train.yaml"), "--trials", "20",
                    "--quiet", "--apply", out)
    assert tune.returncode == 0, tune.stderr[-2000:]
    assert "leaves out the schedules `ppstream train` refuses" in tune.stdout
    losses = baseline_losses(out, str(tmp_path / "run"), 1)
    assert len(losses) == 1


def test_tune_apply_elsewhere_keeps_the_own_model(tmp_path):
    cfg = os.path.join(ROOT, "examples", "own-model", "pp2-vpp2-hsdp.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = str(elsewhere / "own.yaml")
    tune = ppstream("tune", cfg, "--space", "schedule=interleaved_1f1b", "--trials", "2", "--quiet", "--apply", out)
    assert tune.returncode == 0, tune.stderr[-2000:]
    applied = baseline_losses(out, str(tmp_path / "applied"), 2)
    written = baseline_losses(cfg, str(tmp_path / "written"), 2)
    assert applied == written


def test_module_dir_that_is_not_a_directory_is_refused_naming_the_key(tmp_path):
    from ppstream.mindspore.runconfig import RunConfigError, load_run_config
    cfg = tmp_path / "own.yaml"
    with open(os.path.join(ROOT, "examples", "own-model", "pp2-vpp2-hsdp.yaml"), encoding="utf-8") as f:
        cfg.write_text(f.read().replace("  seed: 7\n", "  seed: 7\n  module_dir: no-such-dir\n"))
    with pytest.raises(RunConfigError, match=r"train\.module_dir='no-such-dir': .*no-such-dir is not a directory"):
        load_run_config(str(cfg))
    cfg.write_text(cfg.read_text().replace("module_dir: no-such-dir", f"module_dir: {ROOT}/examples/own-model"))
    assert load_run_config(str(cfg)).config_dir == os.path.join(ROOT, "examples", "own-model")
