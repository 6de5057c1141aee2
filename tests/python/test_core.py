"""ppstream._core through Python: compile, verify, errors, text/JSON forms."""
import json
import pathlib

import pytest

import ppstream

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seed-pp4-vpp2-hsdp.yaml"


def rank_lines(programs_json, rank):
    data = json.loads(programs_json)
    prog = next(p for p in data["programs"] if p["rank"] == rank)
    return [i["text"] for i in prog["instrs"]]


def test_seed_async_sends_before_reducing():
    lines = rank_lines(ppstream.compile(str(SEED), expanded=False, platform="all"), 3)
    b = lines.index("r3 compute B mb15 s7")
    batch = lines.index("r3 p2p.2 BATCH{RECV_B mb12 s3 <-r0; SEND_B mb15 s7 ->r2}")
    assert lines[b + 1] == "r3 compute RECORD compute_ready[s7]"
    assert batch < lines.index("r3 reduce REDUCE_GRAD s7")


def test_seed_inline_override_reduces_on_compute_first():
    out = ppstream.compile(str(SEED), expanded=False, overrides={"data_parallel.reduce_grad": "inline"})
    lines = rank_lines(out, 3)
    b = lines.index("r3 compute B mb15 s7")
    assert lines[b + 1] == "r3 compute REDUCE_GRAD s7"


def test_expanded_world_has_every_dp_rank():
    text = """
pipeline_parallel_size: 2
pipeline_parallel_interleave_num: 2
micro_batch_num: 4
num_layers: 4
data_parallel: {mode: hsdp, shard_size: 2, replicate_size: 2, reduce_grad: async}
"""
    data = json.loads(ppstream.compile_text(text, expanded=True, platform="cpu-serial"))
    assert [p["rank"] for p in data["programs"]] == list(range(8))
    assert [p["pp_rank"] for p in data["programs"]] == [0] * 4 + [1] * 4
    # Rank 5 = PP rank 1, DP index 1: its peers are DP index 1 of PP rank 0 = rank 1.
    peers = {op["peer"] for i in data["programs"][5]["instrs"] if i["op"] == "BATCH" for op in i["p2p"]}
    assert peers == {1}


def test_bad_config_names_key_and_rule():
    with pytest.raises(ppstream.ConfigError, match="micro_batch_num=9.*multiple of its rounds"):
        ppstream.compile_text(
            "pipeline_parallel_size: 4\npipeline_parallel_interleave_num: 2\nmicro_batch_num: 9\nnum_layers: 8\n"
        )


def test_verify_reports_a_wait_without_record():
    text = """world pp=1 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none
r0 compute WAIT never_recorded
r0 compute F mb0 s0
r0 compute B mb0 s0
r0 compute OPT_STEP
"""
    violations = ppstream.verify_text(text, platform="strict")
    assert violations and any("never_recorded" in v for v in violations)


def test_text_and_json_round_trip():
    out = ppstream.compile(str(SEED), expanded=False)
    text = ppstream.to_text(out)
    assert ppstream.to_text(ppstream.to_json(text)) == text


def test_cli_compile_prints_seed_rank(tmp_path):
    import shutil
    import subprocess

    exe = shutil.which("ppstream") or str(pathlib.Path(__import__("sys").executable).parent / "ppstream")
    res = subprocess.run([exe, "compile", str(SEED), "--rank", "3"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "r3 p2p.2 BATCH{RECV_B mb12 s3 <-r0; SEND_B mb15 s7 ->r2}" in res.stdout


def test_simulate_seed_shows_the_474ms_wait_only_inline():
    report = json.loads(ppstream.simulate(str(ROOT / "examples" / "seed-300b-moe.yaml"), reduce_grad="both"))
    cmp = report["comparison"]
    r1 = next(w for w in cmp["longest_p2p_wait"] if w["rank"] == 1)
    assert r1["peer"] == 2 and r1["event"].startswith("recv_B")
    assert r1["inline_ms"] >= 400.0
    assert r1["async_ms"] <= 1.0
    assert cmp["step_time_ms"]["async"] < cmp["step_time_ms"]["inline"]
    assert cmp["reduce_overlap_ratio"]["async"] > cmp["reduce_overlap_ratio"]["inline"]


def test_simulate_one_comm_stream_platform_brings_the_backward_wait_back_under_async():
    # MindSpore's multi_stream:true (one communication stream per rank) queues PP rank 2's
    # remaining sends behind its reduction: PP rank 1's backward receive waits again.
    seed = str(ROOT / "examples" / "seed-300b-moe.yaml")

    def r1_backward_wait(platform):
        report = json.loads(ppstream.simulate(seed, reduce_grad="async", platform=platform))
        assert report["platform"] == platform
        waits = report["policies"]["async"]["compute_waits"]
        return report, max((w["wait_ms"] for w in waits
                            if w["rank"] == 1 and w["peer"] == 2 and w["event"].startswith("recv_B")), default=0.0)

    group, group_wait = r1_backward_wait("ascend-mindspore")
    one, one_wait = r1_backward_wait("ascend-mindspore-one-comm-stream")
    assert group_wait < 100.0 < 300.0 < one_wait
    assert one["policies"]["async"]["step_time_ms"] > group["policies"]["async"]["step_time_ms"]
    with pytest.raises(ValueError, match="strict is untimed"):
        ppstream.simulate(seed, reduce_grad="async", platform="strict")


def test_overrides_apply_together_as_the_cli_set():
    # Issue 13: compile_text applied overrides one key at a time, so pp=4 failed against the
    # base's two layer strings before the new four were set. They must apply together.
    base = (
        "pipeline_parallel_size: 2\nmicro_batch_num: 4\nnum_layers: 4\n"
        "pipeline_parallel_layers_per_stage: ['0-1', '2-3']\n"
    )
    overrides = {"pipeline_parallel_size": "4", "pipeline_parallel_layers_per_stage": "0-0;1-1;2-2;3-3"}
    data = json.loads(ppstream.compile_text(base, overrides=overrides))
    assert [p["rank"] for p in data["programs"]] == [0, 1, 2, 3]
    with pytest.raises(ppstream.ConfigError, match="pipeline_parallel_layers_per_stage"):
        ppstream.compile_text(base, overrides={"pipeline_parallel_size": "4"})


def test_platform_profiles_are_the_names_compile_accepts():
    # the Python platforms' KNOWN_PROFILES come from this list (platform_base.py)
    profiles = ppstream._core.platform_profiles()
    text = "pipeline_parallel_size: 2\nmicro_batch_num: 2\nnum_layers: 2\n"
    with pytest.raises(ValueError) as err:
        ppstream.compile_text(text, platform="cpu")
    assert f"expected {', '.join(profiles)} or all" in str(err.value)
    for p in profiles:
        assert json.loads(ppstream.compile_text(text, platform=p))["programs"]
