"""Executor: runs one rank's verified stream program, instruction by instruction, on a platform.

Every instruction is issued inside ``platform.stream(instr["stream"])`` after
``platform.begin_instr``. What a compute op needs, who produces it and which P2P op carries it
come from the engine's dependency model (``ppstream._core.needs_of`` / ``send_of`` /
``carried_by``, include/ppstream/program/deps.h), never from rules of its own: one buffer map
keyed by the producer's (role, microbatch, stage) holds each stage-boundary tensor from its
producer (or its RECV) to its consumer (or its SEND). A neighbour on the same rank (PP 1, or
VPP) therefore hands over directly through the map. The stage's own stash (its recorded
forward) stays in ``PipelineStage``. No threads: the host issues in program order; overlap
comes only from device streams. The last stage's losses are summed on the device; the host
reads the sum once, after the step's ``synchronize``. ``OPT_STEP`` is the ``OptStep``
component's (components/opt_step.py: loss-scale check, clipping, LR schedule, AdamW). With
``forward_only`` (evaluation, components/evaluate.py) the program is the forward projection and
every F runs without recording a graph. Every RECORD, WAIT and the synchronize are also told to
the platform's ``holds``, which keep the buffers of side-stream communication alive until the
event that ends it has been waited (platforms/holds.py).
"""
from __future__ import annotations

from typing import Callable

import mindspore as ms

from ppstream import _core
from ppstream.mindspore.training.hsdp import HsdpState
from ppstream.mindspore.platforms.base import P2P, Platform
from ppstream.mindspore.training.stage import PipelineStage
from ppstream.mindspore.training.trace import HostTrace


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


Handover = tuple[str, int, int]  # (role, mb, stage) of the producer: "FORWARD", 3, 1 (deps.h Transfer)


class ComputePlan:
    """A compute op's handovers, from the dependency model: the neighbouring stages' outputs it
    takes (``inputs``) and the key its own output is left under for the next stage (``output``;
    None when nothing goes on: the last stage's F yields the loss, stage 0's B no gradient)."""

    __slots__ = ("inputs", "output")

    def __init__(self, op: str, mb: int, stage: int, num_stages: int):
        # needs without a recv are the stage's own stash, which PipelineStage keeps
        self.inputs = [(n["role"], n["mb"], n["stage"]) for n in _core.needs_of(op, mb, stage, num_stages)
                       if n["recv"] is not None]
        send = _core.send_of(op, stage, num_stages)
        self.output = None if send is None else _handover(_core.carried_by(send, mb, stage))


def _handover(t: dict) -> Handover:
    return (t["role"], t["mb"], t["stage"])


class Executor:

    def __init__(self, program: dict, num_stages: int, stages: dict[int, PipelineStage],
                 states: dict[int, HsdpState], platform: Platform, act: ActivationSpec, trace: HostTrace,
                 progress: Progress, opt=None, forward_only: bool = False):
        self.program, self.stages, self.states, self.platform = program, stages, states, platform
        self.opt, self.forward_only = opt, forward_only
        self.label = "eval batch" if forward_only else "step"  # heartbeat: "eval batch 0 #12 …"
        self.step = -1
        self.act, self.trace, self.progress = act, trace, progress
        # per instruction index: the compute op's plan, or each P2P op's handover in a BATCH
        self.plans: dict[int, ComputePlan] = {}
        self.transfers: dict[int, list[Handover]] = {}
        for i, ins in enumerate(program["instrs"]):
            if _core.roles_of(ins["op"]):  # a compute op (F, B, I, W)
                self.plans[i] = ComputePlan(ins["op"], ins["mb"], ins["stage"], num_stages)
            elif ins["op"] == "BATCH":
                self.transfers[i] = [_handover(_core.carried_by(o["kind"], o["mb"], o["stage"])) for o in ins["p2p"]]
        # stage-boundary tensors between producer (or RECV) and consumer (or SEND)
        self.handovers: dict[Handover, ms.Tensor] = {}
        self.index = -1  # the instruction being issued
        self.loss_sum: ms.Tensor | None = None
        self.batch: Callable[[int], tuple[ms.Tensor, ms.Tensor]] | None = None
        self.no_labels = ms.Tensor(0.0, ms.float32)  # the labels input of a stage without the head

    # -- one step ---------------------------------------------------------------------------
    def run_step(self, step: int, batch: Callable[[int], tuple[ms.Tensor, ms.Tensor]]) -> float | None:
        """Runs the program once; returns the sum of this rank's last-stage (scaled) losses
        (None when the rank holds no last stage) — the step's only host read of a device value."""
        self.batch, self.loss_sum, self.step = batch, None, step
        t0 = self.trace.now_us()
        self.platform.begin_step(step)
        for i, instr in enumerate(self.program["instrs"]):
            self._issue(step, i, instr)
        self.platform.synchronize()
        self.platform.holds.synchronized()  # the device is idle: nothing is in use any more
        self._check_drained(step)
        loss = None if self.loss_sum is None else float(self.loss_sum.asnumpy())
        t1 = self.trace.now_us()
        self.trace.step(step, t0, t1)
        # The step time the launcher reports (summary.json step_ms): the same two clock reads as
        # the trace's step marker, so `whatif RUN_DIR`'s measured step is it exactly (a window
        # timed around this call also held the caller's frames, a preemption or a GC pass).
        self.last_step_ms = (t1 - t0) / 1e3
        return loss

    def _issue(self, step: int, i: int, instr: dict) -> None:
        text = instr["text"]
        self.progress.write(f"{self.label} {step} #{i} {text}")
        self.platform.begin_instr(i, instr)
        self.index = i
        t0 = self.trace.now_us()
        run = getattr(self, "_op_" + instr["op"], None)
        if run is None:  # e.g. I / W of a zero-bubble schedule: `ppstream train` refuses those before launch
            raise RuntimeError(f"r{self.program.get('rank', '?')} #{i}: the MindSpore runtime cannot run {text!r} "
                               "(split backward I/W is not supported; use schedule 1f1b or interleaved_1f1b)")
        with self.platform.stream(instr["stream"]):
            run(instr)
        self.trace.instr(i, instr, t0, self.trace.now_us(), arrival_ms=self.platform.take_delay_ms(i))

    def _check_drained(self, step: int) -> None:
        leftovers = list(self.handovers)
        if leftovers or not all(s.idle() for s in self.stages.values()):
            raise RuntimeError(f"r{self.program['rank']} step {step}: buffers left after the program: {leftovers}")

    # -- compute ----------------------------------------------------------------------------
    def _take(self, key: Handover, text: str) -> ms.Tensor:
        try:
            return self.handovers.pop(key)
        except KeyError:
            raise RuntimeError(f"r{self.program['rank']} #{self.index} {text}: no {key[0]} of mb{key[1]} s{key[2]} "
                               "(neither produced here nor received before)") from None

    def _op_F(self, instr: dict) -> None:
        mb, s = instr["mb"], instr["stage"]
        plan, st = self.plans[self.index], self.stages[s]
        tokens, labels = self.batch(mb)
        got = [self._take(k, instr["text"]) for k in plan.inputs]
        x = got[0] if got else tokens  # stage 0 takes nothing from a stage: its input is the data
        lab = labels if st.last else self.no_labels
        out = st.evaluate(x, lab) if self.forward_only else st.forward(mb, x, lab)
        if plan.output is not None:
            self.handovers[plan.output] = out
        else:  # the last stage: its output is the (scaled) loss, which stays on the device
            self.loss_sum = out if self.loss_sum is None else self.loss_sum + out

    def _op_B(self, instr: dict) -> None:
        """``B mb s``, or one piece ``B mb s bucket<j>/<k>`` of a split backward: the first piece
        (j = 0, the stage's last layers) takes the received output gradient, the pieces chain the
        gradient inside the stage (training/stage.py), and the last (j = k-1) leaves the input
        gradient for the send — deps.h's rule that only the last piece fills the input grad."""
        mb, s = instr["mb"], instr["stage"]
        plan = self.plans[self.index]
        j, k = instr.get("bucket", (0, 1))
        got = [self._take(key, instr["text"]) for key in plan.inputs] if j == 0 else []
        dy = got[0] if got else None  # the last stage takes nothing from a stage: it starts from its loss
        scale = self.opt.loss_scale if self.opt is not None else 1.0
        st = self.stages[s]
        dx = st.backward(mb, dy, scale) if k == 1 else st.backward_bucket(mb, j, k, dy, scale)
        if plan.output is not None and j == k - 1:
            self.handovers[plan.output] = dx

    # -- P2P --------------------------------------------------------------------------------
    def _op_BATCH(self, instr: dict) -> None:
        ops, recvs = [], []
        for op, key in zip(instr["p2p"], self.transfers[self.index]):
            if op["kind"].startswith("SEND"):
                ops.append(P2P(op["kind"], op["peer"], tensor=self._take(key, instr["text"])))
            else:
                ops.append(P2P(op["kind"], op["peer"], shape=self.act.shape, dtype=self.act.dtype))
                recvs.append(key)
        got = self.platform.p2p_batch(ops, "BATCH")
        for key, t in zip(recvs, got):
            self.handovers[key] = t

    # -- events -----------------------------------------------------------------------------
    def _op_RECORD(self, instr: dict) -> None:
        self.platform.record(instr["event"])
        self.platform.holds.recorded(instr["event"], instr["stream"])

    def _op_WAIT(self, instr: dict) -> None:
        self.platform.wait(instr["event"])
        self.platform.holds.waited(instr["event"], instr["stream"])  # what the event ends may be freed now

    # -- HSDP -------------------------------------------------------------------------------
    def _op_UNSHARD(self, instr: dict) -> None:
        s = instr["stage"]
        self.states[s].unshard(self.platform, f"UNSHARD s{s}")

    def _op_RESHARD(self, instr: dict) -> None:
        self.states[instr["stage"]].reshard()

    def _op_REDUCE_GRAD(self, instr: dict) -> None:
        s = instr["stage"]
        tag = f"REDUCE_GRAD s{s}"
        bucket = None
        if "bucket" in instr:  # REDUCE_GRAD s bucket<j>/<k>: bucket j's gradients only (hsdp.py)
            bucket, k = instr["bucket"]
            tag += f" bucket{bucket}/{k}"
        self.platform.counts[tag] += 1
        self.states[s].reduce_grad(self.platform, tag, bucket)

    def _op_OPT_STEP(self, instr: dict) -> None:
        self.opt.run(self.states, self.platform, self.step)
