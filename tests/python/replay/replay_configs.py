"""The replay configurations shared by tests/python/replay/test_replay.py (what must hold on
every run) and bench/replay_agreement.py (measured against simulated, printed): every schedule
(GPipe, 1F1B, interleaved), DP none / FSDP / HSDP / replicate-only, every P2P transport,
overlap flags on and off, with and without a straggler (docs/replay.md, "Tests", "Bench")."""


def config_text(pp=2, vpp=1, mb=4, schedule="1f1b", mode="fsdp", shard=2, replicate=1, transport="batch",
                overlap_p2p=True, overlap_b_f=True, straggler="", policy="async", layers=8, f_ms=10.0, b_ms=20.0,
                buckets=1):
    dp = "" if mode == "none" else f"""
data_parallel:
  mode: {mode}
  shard_size: {shard}
  replicate_size: {replicate}
  reduce_grad: {policy}
""" + (f"  reduce_buckets: {buckets}\n" if buckets != 1 else "")
    return f"""pipeline_parallel_size: {pp}
pipeline_parallel_interleave_num: {vpp}
num_layers: {layers}
micro_batch_num: {mb}
pipeline_parallel_overlap_p2p: {str(overlap_p2p).lower()}
pipeline_parallel_overlap_b_f: {str(overlap_b_f).lower()}
pipeline_parallel_p2p_transport: {transport}
schedule: {schedule}
{dp}
cost:
  forward_ms_per_layer: {f_ms}
  backward_ms_per_layer: {b_ms}
  optimizer_ms: 4.0
  # Latencies above what MPI takes here (0.2-2 ms per P2P with polling on a loaded 2-core
  # machine), so that measured transfers follow the model (docs/replay.md, "Accuracy").
  p2p_latency_ms: 2.0
  p2p_bandwidth_gb_per_s: 10
  activation_bytes: 1048576
  grad_bytes_per_layer: 1.0e7
  param_bytes_per_layer: 5.0e6
  collective_alpha_ms: 1.0
  shard_bandwidth_gb_per_s: 20
  replicate_bandwidth_gb_per_s: 10
{straggler}"""


TAIL = """straggler:
  tails:
    - {pp_rank: 1, dp_index: 1, delay_ms: 40, collectives: [reduce_grad]}
"""

HSDP = dict(mode="hsdp", shard=2, replicate=2)  # 2 PP ranks x dp 4 = 8 processes

CONFIGS = {
    "gpipe-fsdp-batch": dict(schedule="gpipe"),
    "1f1b-fsdp-batch": dict(),
    "1f1b-fsdp-plain": dict(transport="plain", overlap_p2p=False, overlap_b_f=False),
    "1f1b-hsdp-multi": dict(transport="multi_stream", **HSDP),
    "1f1b-nodp": dict(mode="none", pp=4, mb=8),
    "1f1b-fsdp-straggler": dict(straggler=TAIL),
    "interleaved-hsdp-multi": dict(schedule="interleaved_1f1b", vpp=2, transport="multi_stream", **HSDP),
    "interleaved-fsdp-batch": dict(schedule="interleaved_1f1b", vpp=2),
    # Gradient buckets: each stage's last backward in 2 pieces, each bucket reduced after its own.
    "interleaved-hsdp-buckets": dict(schedule="interleaved_1f1b", vpp=2, buckets=2, **HSDP),
    "interleaved-fsdp-nooverlap": dict(schedule="interleaved_1f1b", vpp=2, overlap_p2p=False, overlap_b_f=False),
    "interleaved-fsdp-straggler": dict(schedule="interleaved_1f1b", vpp=2, straggler=TAIL, transport="multi_stream"),
    "1f1b-ddp-replicate": dict(mode="hsdp", shard=1, replicate=2),
    "gpipe-hsdp-straggler": dict(schedule="gpipe", straggler=TAIL, **HSDP),
    # Split backward (I, W) and V placement (rank r holds stages r and 3-r; s1 -> s2 is local).
    "zbv-fsdp-batch": dict(schedule="zbv", vpp=2),
}
