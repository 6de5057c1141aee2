"""The dependency model (include/ppstream/program/deps.h) through ppstream._core, against values
derived by hand from its rules and from the two-rank program below."""
import json

import pytest

from ppstream import _core

# PP 2, two microbatches, 1F1B, no data parallelism. Instruction indices are in the comments.
TWO_RANKS = """world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none
r0 compute F mb0 s0
r0 compute RECORD fwd_out[mb0,s0]
r0 p2p WAIT fwd_out[mb0,s0]
r0 p2p BATCH{SEND_F mb0 s0 ->r1}
r0 compute F mb1 s0
r0 compute RECORD fwd_out[mb1,s0]
r0 p2p WAIT fwd_out[mb1,s0]
r0 p2p BATCH{SEND_F mb1 s0 ->r1; RECV_B mb0 s0 <-r1}
r0 p2p RECORD recv_B[mb0,s0]
r0 compute WAIT recv_B[mb0,s0]
r0 compute B mb0 s0
r0 p2p BATCH{RECV_B mb1 s0 <-r1}
r0 p2p RECORD recv_B[mb1,s0]
r0 compute WAIT recv_B[mb1,s0]
r0 compute B mb1 s0
r0 compute OPT_STEP
r1 p2p BATCH{RECV_F mb0 s1 <-r0}
r1 p2p RECORD recv_F[mb0,s1]
r1 compute WAIT recv_F[mb0,s1]
r1 compute F mb0 s1
r1 compute B mb0 s1
r1 compute RECORD bwd_out[mb0,s1]
r1 p2p WAIT bwd_out[mb0,s1]
r1 p2p BATCH{SEND_B mb0 s1 ->r0; RECV_F mb1 s1 <-r0}
r1 p2p RECORD recv_F[mb1,s1]
r1 compute WAIT recv_F[mb1,s1]
r1 compute F mb1 s1
r1 compute B mb1 s1
r1 compute RECORD bwd_out[mb1,s1]
r1 p2p WAIT bwd_out[mb1,s1]
r1 p2p BATCH{SEND_B mb1 s1 ->r0}
r1 compute OPT_STEP
"""
# r0: B mb0 #10, B mb1 #14; r1: B mb0 #4, B mb1 #11, SEND_B mb0 in BATCH #7, SEND_B mb1 in #14.


def need(buffer, role, mb, stage, recv):
    return {"buffer": buffer, "role": role, "mb": mb, "stage": stage, "recv": recv}


def test_roles_of_each_compute_op():
    assert _core.roles_of("F") == ["FORWARD"]
    assert _core.roles_of("B") == ["INPUT_GRAD", "WEIGHT_GRAD"]
    assert _core.roles_of("I") == ["INPUT_GRAD"]
    assert _core.roles_of("W") == ["WEIGHT_GRAD"]
    assert _core.roles_of("BATCH") == []


def test_needs_name_the_producer_and_the_receive_of_four_stages():
    assert _core.needs_of("F", 3, 0, 4) == []  # stage 0 reads the data
    assert _core.needs_of("F", 3, 2, 4) == [need("activation", "FORWARD", 3, 1, "RECV_F")]
    assert _core.needs_of("B", 3, 3, 4) == [need("stash", "FORWARD", 3, 3, None)]  # the last stage: its loss
    assert _core.needs_of("B", 3, 1, 4) == [need("input grad", "INPUT_GRAD", 3, 2, "RECV_B"),
                                            need("stash", "FORWARD", 3, 1, None)]
    assert _core.needs_of("I", 3, 1, 4) == _core.needs_of("B", 3, 1, 4)
    assert _core.needs_of("W", 3, 1, 4) == [need("dX stash", "INPUT_GRAD", 3, 1, None)]
    assert _core.needs_of("OPT_STEP", 0, 0, 1) == []


def test_sends_leave_every_stage_but_the_ends():
    assert [_core.send_of("F", s, 4) for s in range(4)] == ["SEND_F", "SEND_F", "SEND_F", None]
    assert [_core.send_of("B", s, 4) for s in range(4)] == [None, "SEND_B", "SEND_B", "SEND_B"]
    assert _core.send_of("I", 1, 4) == "SEND_B"
    assert _core.send_of("W", 1, 4) is None
    assert _core.send_of("F", 0, 1) is None and _core.send_of("B", 0, 1) is None  # PP 1: no neighbour


def test_mirror_and_transfer_name_the_same_producer_on_both_ends():
    assert _core.mirror_of("SEND_F", 5, 1, 3, 1) == {"kind": "RECV_F", "mb": 5, "stage": 2, "peer": 1}
    assert _core.mirror_of("RECV_B", 5, 1, 3, 1) == {"kind": "SEND_B", "mb": 5, "stage": 2, "peer": 1}
    assert _core.carried_by("SEND_F", 5, 1) == {"role": "FORWARD", "mb": 5, "stage": 1}
    assert _core.carried_by("RECV_F", 5, 2) == {"role": "FORWARD", "mb": 5, "stage": 1}
    assert _core.carried_by("SEND_B", 5, 2) == {"role": "INPUT_GRAD", "mb": 5, "stage": 2}
    assert _core.carried_by("RECV_B", 5, 1) == {"role": "INPUT_GRAD", "mb": 5, "stage": 2}
    # every P2P op of the program and its mirror on the peer carry the same thing
    programs = json.loads(_core.to_json(TWO_RANKS))["programs"]
    ops = [(p["rank"], op) for p in programs for i in p["instrs"] if i["op"] == "BATCH" for op in i["p2p"]]
    assert len(ops) == 8
    for rank, op in ops:
        m = _core.mirror_of(op["kind"], op["mb"], op["stage"], op["peer"], rank)
        peer_ops = [o for r, o in ops if r == op["peer"]]
        assert {**m, "peer": rank} in [{k: o[k] for k in ("kind", "mb", "stage", "peer")} for o in peer_ops]
        assert _core.carried_by(op["kind"], op["mb"], op["stage"]) == _core.carried_by(m["kind"], m["mb"], m["stage"])


def test_stage_backwards_of_a_hand_written_program():
    pset = _core.to_json(TWO_RANKS)
    assert _core.stage_backwards(pset, 0) == [{"stage": 0, "last_weight_grad": 14, "last_input_grad": 14, "send": None}]
    assert _core.stage_backwards(pset, 1) == [{"stage": 1, "last_weight_grad": 11, "last_input_grad": 11, "send": 14}]


def test_stage_backwards_of_a_compiled_vpp_rank_lists_both_local_stages():
    text = ("pipeline_parallel_size: 2\npipeline_parallel_interleave_num: 2\nnum_layers: 4\nmicro_batch_num: 4\n"
            "schedule: interleaved_1f1b\n")
    pset = _core.compile_text(text, expanded=False)
    prog = json.loads(pset)["programs"][1]
    got = _core.stage_backwards(pset, 1)
    assert [g["stage"] for g in got] == [1, 3]  # s = chunk * pp + pp_rank
    for g in got:
        last_b = max(i for i, ins in enumerate(prog["instrs"]) if ins["op"] == "B" and ins["stage"] == g["stage"])
        assert g["last_weight_grad"] == g["last_input_grad"] == last_b
        b = prog["instrs"][last_b]
        batch = prog["instrs"][g["send"]]
        assert {"kind": "SEND_B", "mb": b["mb"], "stage": b["stage"]} in [
            {k: o[k] for k in ("kind", "mb", "stage")} for o in batch["p2p"]]


@pytest.mark.parametrize("call, message", [
    (lambda: _core.needs_of("X", 0, 0, 4), "needs_of: op 'X'"),
    (lambda: _core.needs_of("F", 0, 4, 4), r"needs_of: mb0 s4 of 4 stages"),
    (lambda: _core.needs_of("F", -1, 0, 4), r"mb >= 0"),
    (lambda: _core.send_of("B", 0, 0), r"num_stages >= 1"),
    (lambda: _core.roles_of("f"), "roles_of: op 'f'"),
    (lambda: _core.carried_by("SEND_X", 0, 0), "carried_by: kind 'SEND_X'"),
    (lambda: _core.carried_by("RECV_F", 0, 0), "RECV_F needs stage >= 1"),
    (lambda: _core.mirror_of("recv_b", 0, 0, 1, 0), "mirror_of: kind 'recv_b'"),
    (lambda: _core.stage_backwards(_core.to_json(TWO_RANKS), 2), "stage_backwards: rank 2 has no program"),
])
def test_bad_arguments_raise_value_errors_naming_the_call(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_stage_backwards_bad_json_is_a_parse_error():
    with pytest.raises(_core.ParseError):
        _core.stage_backwards("{", 0)
