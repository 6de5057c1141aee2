"""Executor: runs one rank's verified stream program, instruction by instruction, on a platform.

Every instruction is issued inside ``platform.stream(instr["stream"])`` after
``platform.begin_instr``. Buffers are keyed by (microbatch, stage): activations received or
produced for a stage's forward, output gradients for its backward. A stage whose neighbour
lives on the same rank (PP 1) hands over directly. No threads: the host issues in program
order; overlap comes only from device streams. The last stage's losses are summed on the
device; the host reads the sum once, after the step's ``synchronize``.
"""
from __future__ import annotations

from typing import Callable

import mindspore as ms

from ppstream.mindspore.hsdp import HsdpState
from ppstream.mindspore.platform_base import P2P, Platform
from ppstream.mindspore.stage import PipelineStage
from ppstream.mindspore.trace import HostTrace


class Progress:
    """Heartbeat file: the instruction a rank is at, so a harness can name a hung rank."""

    def __init__(self, path: str | None):
        self.path = path

    def write(self, line: str) -> None:
        if self.path is None:
            return
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(line + "\n")


class ActivationSpec:
    """Shape and dtype of a stage boundary tensor (activation and its gradient): receive buffers."""

    def __init__(self, shape: tuple[int, ...], dtype):
        self.shape, self.dtype = tuple(shape), dtype


class Executor:

    def __init__(self, program: dict, stages: dict[int, PipelineStage], states: dict[int, HsdpState],
                 platform: Platform, act: ActivationSpec, trace: HostTrace, progress: Progress):
        self.program, self.stages, self.states, self.platform = program, stages, states, platform
        self.act, self.trace, self.progress = act, trace, progress
        self.fwd_in: dict[tuple[int, int], ms.Tensor] = {}
        self.bwd_in: dict[tuple[int, int], ms.Tensor] = {}
        self.fwd_out: dict[tuple[int, int], ms.Tensor] = {}
        self.bwd_out: dict[tuple[int, int], ms.Tensor] = {}
        self.loss_sum: ms.Tensor | None = None
        self.batch: Callable[[int], tuple[ms.Tensor, ms.Tensor]] | None = None
        self.no_labels = ms.Tensor(0.0, ms.float32)  # the labels input of a stage without the head

    # -- one step ---------------------------------------------------------------------------
    def run_step(self, step: int, batch: Callable[[int], tuple[ms.Tensor, ms.Tensor]]) -> float | None:
        """Runs the program once; returns the sum of this rank's last-stage (scaled) losses
        (None when the rank holds no last stage) — the step's only host read of a device value."""
        self.batch, self.loss_sum = batch, None
        t0 = self.trace.now_us()
        self.platform.begin_step(step)
        for i, instr in enumerate(self.program["instrs"]):
            self._issue(step, i, instr)
        self.platform.synchronize()
        self._check_drained(step)
        loss = None if self.loss_sum is None else float(self.loss_sum.asnumpy())
        self.trace.step(step, t0, self.trace.now_us())
        return loss

    def _issue(self, step: int, i: int, instr: dict) -> None:
        text = instr["text"]
        self.progress.write(f"step {step} #{i} {text}")
        self.platform.begin_instr(i, instr)
        t0 = self.trace.now_us()
        run = getattr(self, "_op_" + instr["op"], None)
        if run is None:  # e.g. I / W of a zero-bubble schedule: `ppstream train` refuses those before launch
            raise RuntimeError(f"r{self.program.get('rank', '?')} #{i}: the MindSpore runtime cannot run {text!r} "
                               "(split backward I/W is not supported; use schedule 1f1b or interleaved_1f1b)")
        with self.platform.stream(instr["stream"]):
            run(instr)
        self.trace.instr(i, instr, t0, self.trace.now_us())

    def _check_drained(self, step: int) -> None:
        leftovers = [k for d in (self.fwd_in, self.bwd_in, self.fwd_out, self.bwd_out) for k in d]
        if leftovers or not all(s.idle() for s in self.stages.values()):
            raise RuntimeError(f"r{self.program['rank']} step {step}: buffers left after the program: {leftovers}")

    # -- compute ----------------------------------------------------------------------------
    def _op_F(self, instr: dict) -> None:
        mb, s = instr["mb"], instr["stage"]
        st = self.stages[s]
        tokens, labels = self.batch(mb)
        x = tokens if st.first else self.fwd_in.pop((mb, s))
        out = st.forward(mb, x, labels if st.last else self.no_labels)
        if st.last:
            self.loss_sum = out if self.loss_sum is None else self.loss_sum + out  # stays on the device
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
                ops.append(P2P(kind, op["peer"], shape=self.act.shape, dtype=self.act.dtype))
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
        self.platform.counts[f"REDUCE_GRAD s{s}"] += 1
        self.states[s].reduce_grad(self.platform, f"REDUCE_GRAD s{s}")

    def _op_OPT_STEP(self, instr: dict) -> None:
        for s in sorted(self.states):
            self.states[s].opt_step()
