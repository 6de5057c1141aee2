"""Evaluation: the mean loss over held-out batches, every ``train.eval_every`` steps.

The forward pass runs through the pipeline on the *forward projection* of the rank's verified
program (``forward_program``): the same instructions in the same order, minus the backward
(``B``), the backward P2P ops (``SEND_B`` / ``RECV_B``, dropped from their BATCH on both sides;
a BATCH left empty is dropped), ``REDUCE_GRAD`` and ``OPT_STEP``. ``F``, the forward P2P,
``UNSHARD`` / ``RESHARD`` and every ``RECORD`` / ``WAIT`` stay. Dropping both ends of every
backward transfer and the ops that only follow from it removes happens-before edges and adds
none, so the projection is deadlock-free and per-peer FIFO whenever the verified program is
(every rank projects its own program the same way). Forwards run without recording a graph
(``PipelineStage.evaluate``), so nothing is kept for a backward and no gradient changes.

Held-out data: the ``train.eval_data`` factory's first ``train.eval_batches`` global batches
(recipe.open_eval_data: read once, reused by every evaluation), sliced by data-parallel rank and
microbatch exactly as training batches. Its default with the built-in text data keeps the last
``train.eval_holdout`` fraction of the corpus for evaluation and trains on the rest (batch i
drawn like step i's, from the held-out part); a user's ``train.data`` must name its own. The eval loss is the mean over those batches of the global batch's mean loss (the
launcher averages the loss-holding ranks, as for training losses).
"""
from __future__ import annotations

BACKWARD_P2P = ("SEND_B", "RECV_B")
DROPPED = ("B", "REDUCE_GRAD", "OPT_STEP")


def forward_program(program: dict) -> dict:
    """The forward projection of one rank's program (JSON dict form); see the module doc."""
    instrs = []
    for ins in program["instrs"]:
        if ins["op"] in DROPPED:
            continue
        if ins["op"] == "BATCH":
            ops_ = [o for o in ins["p2p"] if o["kind"] not in BACKWARD_P2P]
            if not ops_:
                continue
            if len(ops_) != len(ins["p2p"]):
                ins = {**ins, "p2p": ops_, "text": ins["text"] + " (forward part)"}
        instrs.append(ins)
    return {**program, "instrs": instrs}


def should_evaluate(train: dict, steps_done: int) -> bool:
    """After ``steps_done`` completed steps (Megatron: ``iteration % eval_interval == 0``)."""
    every = int(train["eval_every"])
    return every > 0 and steps_done % every == 0


def check(train: dict) -> None:
    if int(train["eval_every"]) < 0 or int(train["eval_batches"]) < 1:
        raise ValueError(f"train.eval_every={train['eval_every']} / train.eval_batches={train['eval_batches']}: "
                         "expected eval_every >= 0 (0: off) and eval_batches >= 1")
    if not 0.0 < float(train["eval_holdout"]) < 1.0:
        raise ValueError(f"train.eval_holdout={train['eval_holdout']}: expected a fraction in (0, 1)")
