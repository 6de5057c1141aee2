"""Single-process checks of the runtime's parts (config map, topology, data, HSDP layout, launcher)."""
from __future__ import annotations

import os

import numpy as np
import pytest

from ppstream.mindspore.parallel.groups import Topology
from ppstream import ConfigError, _core
from ppstream.mindspore.runconfig import RunConfigError, load_run_config
from ppstream.mindspore.launch.cli import hung_ranks


def _write(tmp_path, text):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return str(path)


def test_stage_layers_from_strings_follow_chunk_order(tmp_path):
    # rank 0 holds stages 0 and 2, rank 1 stages 1 and 3 (s = chunk * pp + pp_rank)
    cfg = load_run_config(_write(tmp_path, """
pipeline_parallel_size: 2
pipeline_parallel_interleave_num: 2
micro_batch_num: 2
pipeline_parallel_layers_per_stage: ["0-1,4-5", "2-3,6-7"]
model: {hidden: 16}
"""))
    assert cfg.stage_layers == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert cfg.model["hidden"] == 16


def test_stage_layers_even_split_and_errors_come_from_the_core_loader(tmp_path):
    base = "pipeline_parallel_size: 2\npipeline_parallel_interleave_num: 2\nmicro_batch_num: 2\n"
    assert load_run_config(_write(tmp_path, base + "num_layers: 6\n")).stage_layers == [(0, 1), (2, 3), (4, 4), (5, 5)]
    with pytest.raises(ConfigError, match="num_layers=3"):
        load_run_config(_write(tmp_path, base + "num_layers: 3\n"))
    with pytest.raises(RunConfigError, match="model.top_k=3"):
        load_run_config(_write(tmp_path, base + "num_layers: 4\nmodel: {experts: 2, top_k: 3}\n"))


def test_train_values_are_typed_and_checked(tmp_path):
    base = "pipeline_parallel_size: 1\nmicro_batch_num: 1\nnum_layers: 2\n"
    # PyYAML reads 1e-6 (no dot) as a string: it must still arrive as a float.
    assert load_run_config(_write(tmp_path, base + "train: {eps: 1e-6, lr: 1}\n")).train["eps"] == 1e-6
    with pytest.raises(RunConfigError, match="train.lr='fast': expected float"):
        load_run_config(_write(tmp_path, base + "train: {lr: fast}\n"))
    with pytest.raises(RunConfigError, match="model.hidden=32.5: expected int"):
        load_run_config(_write(tmp_path, base + "model: {hidden: 32.5}\n"))


def test_topology_groups_match_expanded_rank_numbering():
    # pp=2, shard=2, replicate=2: rank 6 = pp_rank 1 * 4 + replicate 1 * 2 + shard 0
    t = Topology(2, 2, 2, 2, 6)
    assert (t.pp_rank, t.replicate_index, t.shard_index) == (1, 1, 0)
    assert t.shard_group().ranks == (6, 7)
    assert t.replicate_group().ranks == (4, 6)
    assert t.local_stages() == [1, 3]
    with pytest.raises(ValueError, match="expected 'shard' or 'replicate'"):
        _core.dp_group("pipeline", 6, 2, 2, 2)
    with pytest.raises(ValueError, match="rank 8 outside a world"):
        _core.dp_group("shard", 8, 2, 2, 2)


def test_hung_ranks_names_each_unfinished_rank(tmp_path):
    prog = tmp_path / "progress"
    prog.mkdir()
    (prog / "rank0.txt").write_text("done\n")
    (prog / "rank1.txt").write_text("step 2 #17 r1 reduce REDUCE_GRAD s1\n")
    assert hung_ranks(str(tmp_path), range(3)) == ["r1: step 2 #17 r1 reduce REDUCE_GRAD s1",
                                            "r2: (never started: no heartbeat)"]


def test_data_rows_are_the_same_for_any_dp_split():
    from ppstream.mindspore.data.text import TextData
    corpus = np.frombuffer(bytes(range(256)) * 64, dtype=np.uint8)
    a = TextData(corpus, 8, 2, 4, 2, seed=7)  # dp 2, 4 microbatches
    tok, lab = a.microbatch(3, 1, 2)
    assert tok.shape == (2, 8) and np.array_equal(tok[:, 1:], lab[:, :-1])
    # the same rows as the matching (dp index, microbatch) of the baseline's own loop
    b = TextData(corpus, 8, 2, 4, 2, seed=7)
    assert np.array_equal(b.microbatch(3, 1, 2)[0], tok)


def test_hsdp_layout_pads_and_shards_the_flat_vector():
    import mindspore as ms
    from ppstream.mindspore.parallel.groups import Group
    from ppstream.mindspore.training.hsdp import HsdpState
    from ppstream.mindspore.model.moe import build
    from ppstream.mindspore.model.stage_cell import StageCell
    from ppstream.mindspore.training.stage import PipelineStage

    ms.set_device("CPU")
    cfg = {"hidden": 4, "heads": 2, "experts": 2, "top_k": 1, "ffn": 6, "seq_len": 4, "vocab": 8, "seed": 1,
           "num_layers": 1}
    train = {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0}
    cell = StageCell(build(cfg), (0, 0), False, False, 1.0)
    st = PipelineStage(0, cell)
    # one block: ln 4+4, wqkv 4*12, wo 16, ln 4+4, router 8, w1 2*4*6, w2 2*6*4 = 184 → 3 shards of 62 (2 padding)
    state = HsdpState(st, Group("g", (0, 1, 2), 2), Group("r", (0,), 0), sharded=True, reduced=True, train_cfg=train)
    assert state.numel == 184 and state.shard_len == 62 and state.padded == 186
    assert all(p.size == 0 for p in st.params)  # resharded at start
    assert float(state.shard.asnumpy()[-1]) == 0.0  # the padding lives in the last shard


def test_comm_plan_one_group_per_program_stream_and_per_peer_pair(tmp_path):
    import json
    import ppstream
    from conftest import write_config
    from ppstream.mindspore.parallel.commplan import CommPlan
    cfg = write_config(str(tmp_path / "c.yaml"), pp=2, vpp=2, layers=4, mbs=4, mode="hsdp", shard=2, replicate=2)
    pset = json.loads(ppstream.compile(cfg, True, "ascend-mindspore"))
    w = pset["world"]
    plans = [CommPlan(Topology(w["pp"], w["vpp"], w["shard"], w["replicate"], r), pset["programs"][r])
             for r in range(len(pset["programs"]))]
    p4 = plans[4]  # pp rank 1, shard index 0, replicate index 0: shard group (4, 5), replicate (4, 6)
    shard, rep = p4.shard, p4.replicate
    assert p4.collective(shard, "fsdp").name == "pps_shard_4_5_fsdp"
    assert p4.collective(shard, "reduce").name == "pps_shard_4_5_reduce"
    assert p4.collective(rep, "compute").name == rep.name  # sync_last reduction and the final gather
    assert p4.collective(shard, "reduce").ranks == shard.ranks
    with pytest.raises(RuntimeError, match="no communication group planned"):
        p4.collective(rep, "fsdp")  # UNSHARD never all-reduces
    assert p4.p2p(0).name == "pps_p2p_0_4" and p4.p2p(0).index == 1
    names = [g.name for g in p4.groups()]
    assert names == [g.name for g in sorted(p4.groups(), key=lambda g: (g.ranks, g.name))]
    # members of a group plan the same groups for it (so they create and issue on the same names)
    for plan in plans:
        for g in plan.groups():
            for member in g.ranks:
                assert g.name in {x.name for x in plans[member].groups()}, (plan.rank, g.name, member)


def test_profile_schedule_skips_the_warm_up_step():
    from ppstream.mindspore.training.profiling import profile_schedule
    assert profile_schedule(5) == {"skip_first": 1, "wait": 0, "warmup": 0, "active": 4, "repeat": 1}
    assert profile_schedule(1) == {"skip_first": 0, "wait": 0, "warmup": 0, "active": 1, "repeat": 1}
    with pytest.raises(ValueError, match="at least one step"):
        profile_schedule(0)


def test_text_corpus_reads_files_with_a_dot_and_skips_indexes_and_links(tmp_path):
    from ppstream.mindspore.data.text import load_corpus
    text = b"a line of text\n" * 300  # 4500 bytes
    (tmp_path / "corpus.txt").write_bytes(text)
    (tmp_path / "corpus.dat").write_bytes(b"\0" * 5000)  # a strfile index: skipped
    os.symlink(tmp_path / "corpus.txt", tmp_path / "corpus.u8")  # a link: skipped
    assert load_corpus(str(tmp_path)).tobytes() == text
    (tmp_path / "corpus.txt").write_bytes(b"short")
    with pytest.raises(ValueError, match=r"train\.text: .* holds only 5 bytes of text in 1 files"):
        load_corpus(str(tmp_path))
