"""Executor: runs one rank's verified stream program, instruction by instruction, on a platform.

Every instruction is issued inside ``platform.stream(instr["stream"])``. Buffers are keyed by
(microbatch, stage): activations received or produced for a stage's forward, output gradients
for its backward. A stage whose neighbour lives on the same rank (PP 1) hands over directly.
No threads: the host issues in program order; overlap comes only from device streams.
"""
from __future__ import annotations

import time
from typing import Callable

import mindspore as ms

from ppstream.mindspore.hsdp import HsdpState
from ppstream.mindspore.platform_base import P2P, Platform
from ppstream.mindspore.stage import PipelineStage
from ppstream.mindspore.trace import HostTrace


class Progress:
    """Heartbeat file: the instruction a rank is at, so a harness can name a hung rank."""

    def __init__(self, path: str):
        self.path = path

    def write(self, line: str) -> None:
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(line + "\n")


class Executor:

    def __init__(self, program: dict, num_stages: int, pp: int, stages: dict[int, PipelineStage],
                 states: dict[int, HsdpState], platform: Platform, act_shape: tuple[int, ...],
                 trace: HostTrace, progress: Progress, straggle_ms: float = 0.0):
        self.program, self.num_stages, self.pp = program, num_stages, pp
        self.stages, self.states, self.platform = stages, states, platform
        self.act_shape, self.trace, self.progress, self.straggle_ms = act_shape, trace, progress, straggle_ms
        self.fwd_in: dict[tuple[int, int], ms.Tensor] = {}
        self.bwd_in: dict[tuple[int, int], ms.Tensor] = {}
        self.fwd_out: dict[tuple[int, int], ms.Tensor] = {}
        self.bwd_out: dict[tuple[int, int], ms.Tensor] = {}
        self.loss_sum = 0.0
        self.batch: Callable[[int], tuple[ms.Tensor, ms.Tensor]] | None = None
        self.no_labels = ms.Tensor(0.0, ms.float32)  # the labels input of a stage without the head

    # -- one step ---------------------------------------------------------------------------
    def run_step(self, step: int, batch: Callable[[int], tuple[ms.Tensor, ms.Tensor]]) -> float:
        """Runs the program once; returns the sum of this rank's last-stage (scaled) losses."""
        self.batch, self.loss_sum = batch, 0.0
        self.platform.begin_step()
        if hasattr(self.platform, "step"):
            self.platform.step = step
        for i, instr in enumerate(self.program["instrs"]):
            text = instr["text"]
            self.progress.write(f"step {step} #{i} {text}")
            self.platform.instr_text = text
            if hasattr(self.platform, "instr_index"):
                self.platform.instr_index = i
            t0 = self.trace.now_us()
            with self.platform.stream(instr["stream"]):
                getattr(self, "_op_" + instr["op"])(instr)
            self.trace.slice(text, instr["stream"], t0, self.trace.now_us(),
                             {"step": step, "index": i, "op": instr["op"]})
        self.platform.synchronize()
        leftovers = [k for d in (self.fwd_in, self.bwd_in, self.fwd_out, self.bwd_out) for k in d]
        if leftovers or not all(s.idle() for s in self.stages.values()):
            raise RuntimeError(f"r{self.program['rank']} step {step}: buffers left after the program: {leftovers}")
        return self.loss_sum

    # -- compute ----------------------------------------------------------------------------
    def _op_F(self, instr: dict) -> None:
        mb, s = instr["mb"], instr["stage"]
        st = self.stages[s]
        tokens, labels = self.batch(mb)
        x = tokens if st.first else self.fwd_in.pop((mb, s))
        out = st.forward(mb, x, labels if st.last else self.no_labels)
        if st.last:
            self.loss_sum += float(out.asnumpy())
        elif s + 1 in self.stages:
            self.fwd_in[(mb, s + 1)] = out
        else:
            self.fwd_out[(mb, s)] = out

    def _op_B(self, instr: dict) -> None:
        mb, s = instr["mb"], instr["stage"]
        st = self.stages[s]
        dx = st.backward(mb, None if st.last else self.bwd_in.pop((mb, s)))
        if st.first:
            return
        if s - 1 in self.stages:
            self.bwd_in[(mb, s - 1)] = dx
        else:
            self.bwd_out[(mb, s)] = dx

    # -- P2P --------------------------------------------------------------------------------
    def _op_BATCH(self, instr: dict) -> None:
        ops, recvs = [], []
        for op in instr["p2p"]:
            key = (op["mb"], op["stage"])
            kind = op["kind"]
            if kind == "SEND_F":
                ops.append(P2P(kind, op["peer"], tensor=self.fwd_out.pop(key)))
            elif kind == "SEND_B":
                ops.append(P2P(kind, op["peer"], tensor=self.bwd_out.pop(key)))
            else:
                ops.append(P2P(kind, op["peer"], shape=self.act_shape))
                recvs.append((kind, key))
        got = self.platform.p2p_batch(ops, "BATCH")
        for (kind, key), t in zip(recvs, got):
            (self.fwd_in if kind == "RECV_F" else self.bwd_in)[key] = t

    # -- events -----------------------------------------------------------------------------
    def _op_RECORD(self, instr: dict) -> None:
        self.platform.record(instr["event"])

    def _op_WAIT(self, instr: dict) -> None:
        self.platform.wait(instr["event"])

    # -- HSDP -------------------------------------------------------------------------------
    def _op_UNSHARD(self, instr: dict) -> None:
        s = instr["stage"]
        self.states[s].unshard(self.platform, f"UNSHARD s{s}")

    def _op_RESHARD(self, instr: dict) -> None:
        self.states[instr["stage"]].reshard()

    def _op_REDUCE_GRAD(self, instr: dict) -> None:
        s = instr["stage"]
        if self.straggle_ms > 0:
            time.sleep(self.straggle_ms / 1000.0)  # injected straggler: this rank's reduction starts late
        self.platform.counts[f"REDUCE_GRAD s{s}"] += 1
        self.states[s].reduce_grad(self.platform, f"REDUCE_GRAD s{s}")

    def _op_OPT_STEP(self, instr: dict) -> None:
        for s in sorted(self.states):
            self.states[s].opt_step()
