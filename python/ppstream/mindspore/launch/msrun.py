"""Launch: the msrun command of a run, the world-size check, and a launcher that owns its tree.

``Cluster`` holds msrun's multi-node settings; ``check_world`` refuses a world larger than the
workers it is given (before any program file is written); ``msrun_command`` builds the command
line; ``run_msrun`` starts it and waits with a timeout.

Process tree: msrun starts each worker with ``setsid`` (its own session), so killing msrun's
process group does not reach them. Ownership is therefore a chain of parent-death signals:
msrun gets ``PR_SET_PDEATHSIG=SIGKILL`` from the launcher (``preexec_fn``), every worker and
msrun's scheduler (they run worker.py) set it on themselves at start-up, and msrun's
log-tailing child is never started (``--tail_worker_log`` names no rank; the launcher follows
the loss rank's log file itself). So however the launcher ends — timeout, Ctrl-C, SIGTERM, or
SIGKILL — msrun dies, and with it every worker. On timeout / SIGINT / SIGTERM the launcher also
kills msrun's process group at once.
"""
from __future__ import annotations

import ctypes
import dataclasses
import glob
import os
import signal
import subprocess
import time

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


# Ascend communication-stream mode (MindSpore's MS_DEV_RUNTIME_CONF key multi_stream): "group"
# gives every communication group its own device stream (MindSpore's default); "true" puts all
# communication on one stream, which would queue a BWD_SEND behind the stage's reduction again
# and undo the async policy; "false" runs it on the issuing stream. Set explicitly, never
# inherited (docs/runtime.md, "Communication streams").
COMM_STREAM_MODE = "group"
# The engine profile that models each mode (docs/semantics.md, "Platform profiles"): programs
# run on Ascend are verified under the profile of the mode the launcher sets, and the worker
# refuses any other mode. "false" has no profile and is never set.
COMM_STREAM_PROFILES = {"group": "ascend-mindspore", "true": "ascend-mindspore-one-comm-stream"}


def runtime_conf(existing: str) -> str:
    """``existing`` MS_DEV_RUNTIME_CONF ("key:value,...") with multi_stream forced to COMM_STREAM_MODE."""
    items = [kv for kv in existing.split(",") if kv.strip() and kv.split(":", 1)[0].strip() != "multi_stream"]
    return ",".join(items + [f"multi_stream:{COMM_STREAM_MODE}"])


def comm_stream_mode(conf: str) -> str | None:
    """The multi_stream value of an MS_DEV_RUNTIME_CONF string (the last one wins), or None."""
    mode = None
    for kv in conf.split(","):
        key, _, value = kv.partition(":")
        if key.strip() == "multi_stream":
            mode = value.strip()
    return mode


def check_runtime_conf(conf: str) -> None:
    """Refuses (RuntimeError) an MS_DEV_RUNTIME_CONF whose multi_stream is not COMM_STREAM_MODE:
    the programs were verified under COMM_STREAM_PROFILES[COMM_STREAM_MODE] only."""
    mode = comm_stream_mode(conf)
    if mode != COMM_STREAM_MODE:
        raise RuntimeError(f"MS_DEV_RUNTIME_CONF={conf!r}: multi_stream is {mode!r}, expected {COMM_STREAM_MODE!r} "
                           f"(set by ppstream train; the programs were verified under "
                           f"{COMM_STREAM_PROFILES[COMM_STREAM_MODE]}; see docs/runtime.md)")


class WorldTooLarge(ValueError):
    """The program set has more ranks than the workers the launcher was given."""


@dataclasses.dataclass(frozen=True)
class Cluster:
    """msrun's settings: total workers, workers on this node, scheduler address, this node's rank."""
    worker_num: int
    local_worker_num: int
    master_addr: str = "127.0.0.1"
    master_port: int = 8118
    node_rank: int = 0
    log_dir: str = ""

    @property
    def multi_node(self) -> bool:
        return self.local_worker_num < self.worker_num

    def local_ranks(self, world: int) -> range:
        """The ranks this node runs: msrun numbers them node_rank * local_worker_num + i."""
        if not self.multi_node:
            return range(world)
        first = self.node_rank * self.local_worker_num
        return range(first, first + self.local_worker_num)


def default_local_workers(device: str) -> int:
    """Workers one node runs when not told: its NPUs on Ascend (/dev/davinciN), else
    max(8, CPU cores) (CPU ranks are processes; more need --local-worker-num)."""
    if device == "ascend":
        n = len([p for p in glob.glob("/dev/davinci[0-9]*") if p[len("/dev/davinci"):].isdigit()])
        return max(n, 1)
    return max(8, os.cpu_count() or 1)


def check_world(world: int, shape: str, cluster: Cluster) -> None:
    """Raises WorldTooLarge unless ``world`` ranks fit the cluster (multi-node: exactly fill it)."""
    if world > cluster.worker_num:
        raise WorldTooLarge(
            f"the config needs a world of {world} ranks ({shape}) but the launcher has {cluster.worker_num} "
            f"workers (--worker-num {cluster.worker_num}, {cluster.local_worker_num} on this node); "
            f"run on more nodes (--worker-num {world} --local-worker-num N --node-rank K --master-addr HOST) "
            f"or shrink pipeline_parallel_size / data_parallel sizes")
    if cluster.multi_node and world != cluster.worker_num:
        raise WorldTooLarge(f"multi-node run: the world has {world} ranks ({shape}) but --worker-num is "
                            f"{cluster.worker_num}; they must be equal")
    if cluster.worker_num % cluster.local_worker_num and cluster.multi_node:
        raise WorldTooLarge(f"--worker-num {cluster.worker_num} is not a multiple of --local-worker-num "
                            f"{cluster.local_worker_num}")
    if cluster.multi_node and not 0 <= cluster.node_rank < cluster.worker_num // cluster.local_worker_num:
        raise WorldTooLarge(f"--node-rank {cluster.node_rank}: expected 0..{cluster.worker_num // cluster.local_worker_num - 1}")


def msrun_command(msrun: str, cluster: Cluster, world: int, worker_script: str, run_dir: str) -> list[str]:
    """The msrun command line for this node (one worker per rank, single node: all ``world``)."""
    local = cluster.local_worker_num if cluster.multi_node else world
    total = cluster.worker_num if cluster.multi_node else world
    log_dir = cluster.log_dir or os.path.join(run_dir, "msrun_log")
    return [msrun, f"--worker_num={total}", f"--local_worker_num={local}", f"--master_addr={cluster.master_addr}",
            f"--master_port={cluster.master_port}", f"--node_rank={cluster.node_rank}", "--join=True",
            f"--log_dir={log_dir}", f"--tail_worker_log={total}",  # names no rank: msrun starts no `tail -f`
            worker_script, run_dir]


def die_with_parent() -> None:
    """SIGKILL this process when its parent exits (Linux ``PR_SET_PDEATHSIG``); exits at once if
    the parent is already gone. Called by msrun's child between fork and exec, and by worker.py."""
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


class LogFollower:
    """Prints new lines of one worker log that match ``keep`` (the launcher's view of the loss rank)."""

    def __init__(self, path: str, keep=("loss", "platform", "Error")):
        self.path, self.keep, self.offset = path, keep, 0

    def poll(self) -> None:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                f.seek(self.offset)
                chunk = f.read()
                self.offset = f.tell()
        except FileNotFoundError:
            return
        for line in chunk.splitlines():
            if any(k in line for k in self.keep):
                print(line, flush=True)


def run_msrun(cmd: list[str], env: dict, out_path: str, timeout_s: float, follow: LogFollower | None) -> int | None:
    """Runs msrun; returns its exit code, or None when it was killed at ``timeout_s``.
    SIGINT / SIGTERM kill msrun's group (workers follow by parent death) and re-raise."""
    with open(out_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=die_with_parent)

        def kill(signum=None, _frame=None):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            if signum is not None:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        old = {s: signal.signal(s, kill) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            deadline = time.monotonic() + timeout_s
            while proc.poll() is None and time.monotonic() < deadline:
                if follow:
                    follow.poll()
                time.sleep(0.2)
            if follow:
                follow.poll()
            if proc.poll() is None:
                kill()
                return None
            return proc.returncode
        finally:
            for s, h in old.items():
                signal.signal(s, h)
