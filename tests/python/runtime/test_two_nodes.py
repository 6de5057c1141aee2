"""Two nodes for real: ``ppstream train`` and ``ppstream replay --hostfile`` across two hosts made
of network namespaces (netns.py: a veth pair with private addresses and no other route).

- train: the same 8-rank PP2/VPP2 x HSDP 2x2 config as node 0 and node 1 (4 ranks each, msrun's
  --worker_num 8 --local_worker_num 4 --master_addr <node 0> --node_rank K) gives the one-node
  run's losses and gathered parameters bitwise; every byte between the nodes crosses the veth;
- replay: 8 MPI ranks over a hostfile naming the two addresses (OpenMPI's daemons started on
  the other host through netns.py's remote shell) pass every exact check.

Skipped, with the reason, where namespaces cannot be created (not root, a sandbox); CI runs as
root. About 2 minutes on the 2-core machine (two 8-rank trains of 1 step — its losses and the
parameters after its optimizer step —, one replay).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import netns
from conftest import have_fortunes, load_json, run_train, write_config

PPSTREAM = shutil.which("ppstream", path=os.path.dirname(sys.executable)) or shutil.which("ppstream")
_WHY = netns.unavailable()
pytestmark = [pytest.mark.multiprocess, pytest.mark.netns, pytest.mark.skipif(_WHY is not None, reason=_WHY or ""),
              pytest.mark.skipif(not have_fortunes(), reason="needs /usr/share/games/fortunes (scripts/setup.sh)")]

MODEL = {"hidden": 16, "heads": 2, "experts": 2, "top_k": 2, "ffn": 16, "seq_len": 16}
PORT = 29500  # inside node 0's namespace nothing else listens


@pytest.fixture(scope="module")
def pair():
    with netns.host_pair() as p:
        yield p
    assert not set(p.names) & set(netns.namespaces()), "namespaces left behind"


def test_host_pair_has_no_route_outside_and_is_removed_on_failure():
    with pytest.raises(ZeroDivisionError):
        with netns.host_pair() as p:
            for host in (0, 1):
                routes = p.routes(host)
                assert all("default" not in r for r in routes), routes
                # the /30 between the two and loopback's local routes: nothing else
                assert [r for r in routes if "table local" not in r] == [f"10.231.7.0/30 dev {p.links[host]} "
                                                                       f"proto kernel scope link src {p.addrs[host]}"]
            1 / 0
    assert not set(p.names) & set(netns.namespaces())
    assert subprocess.run(["ip", "link", "show", p.links[0]], capture_output=True).returncode != 0


def _node_argv(cfg: str, out: str, k: int, pair) -> list[str]:
    return [sys.executable, "-m", "ppstream.mindspore.train", cfg, "--device", "cpu", "--out", out,
            "--worker-num", "8", "--local-worker-num", "4", "--master-addr", pair.addrs[0],
            "--master-port", str(PORT), "--node-rank", str(k), "--timeout", "400"]


def _params(run: str, rank: int) -> dict[str, np.ndarray] | None:
    path = os.path.join(run, f"rank{rank}", "params.npz")
    if not os.path.exists(path):
        return None
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def test_train_over_two_nodes_equals_the_one_node_run_bitwise(pair, tmp_path):
    cfg = write_config(str(tmp_path / "cfg.yaml"), pp=2, vpp=2, layers=4, mbs=4, mode="hsdp", shard=2, replicate=2,
                       model=MODEL, train={"steps": 1})
    one = str(tmp_path / "one")
    res = run_train(cfg, one, "--device", "cpu", timeout=400)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    sent = [pair.tx_bytes(h) for h in (0, 1)]
    outs = [str(tmp_path / f"node{k}") for k in (0, 1)]
    procs = [subprocess.Popen(pair.command(k, _node_argv(cfg, outs[k], k, pair)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for k in (0, 1)]
    logs = [p.communicate(timeout=460)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(log[-3000:] for log in logs)
    # node k ran ranks 4k..4k+3; node 1 holds the last pipeline stage, so the losses
    for k in (0, 1):
        assert load_json(os.path.join(outs[k], "run.json"))["ranks"] == [4 * k, 4 * k + 3]
        assert os.path.isdir(os.path.join(outs[k], f"rank{4 * k}"))
        assert not os.path.exists(os.path.join(outs[k], f"rank{4 * (1 - k)}"))
    assert load_json(os.path.join(outs[1], "summary.json"))["losses"] == load_json(os.path.join(one, "summary.json"))["losses"]
    compared = 0
    for r in range(8):
        mine, ref = _params(outs[r // 4], r), _params(one, r)
        assert (mine is None) == (ref is None), r
        if ref is not None:
            assert sorted(mine) == sorted(ref)
            assert all(np.array_equal(mine[k], ref[k]) for k in ref), r
            compared += 1
    assert compared == 4  # shard index 0 of each (pp rank, replica)
    # the HSDP and P2P traffic between the nodes went through the veth pair, both ways
    assert all(pair.tx_bytes(h) - sent[h] > 100_000 for h in (0, 1)), [pair.tx_bytes(h) - sent[h] for h in (0, 1)]


@pytest.mark.skipif(PPSTREAM is None or shutil.which("mpirun") is None, reason="needs the ppstream CLI and mpirun")
def test_replay_over_two_hosts_passes_its_exact_checks(pair, tmp_path):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "replay"))
    from replay_configs import HSDP, config_text
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(config_text(pp=2, **HSDP))
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"{a} slots=4\n" for a in pair.addrs))
    agent = pair.rsh_agent(str(tmp_path / "rsh.sh"))
    sent = pair.tx_bytes(1)
    res = subprocess.run(pair.command(0, [PPSTREAM, "replay", str(cfg), "--hostfile", str(hosts), "--np", "8",
                                          "--steps", "2", "--timeout", "60", "--json"]),
                         capture_output=True, text=True, timeout=180, env=dict(os.environ, OMPI_MCA_plm_rsh_agent=agent))
    assert res.returncode == 0, res.stderr[-4000:]
    checks = json.loads(res.stdout)["replay"]["checks"]["async"]
    assert checks["failed"] == 0 and checks["p2p_receives"] > 0 and checks["reductions"] > 0, checks
    assert pair.tx_bytes(1) - sent > 10_000  # ranks 4..7 ran on the second host and talked over the veth
