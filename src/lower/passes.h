// The lowering passes, one per file, each a function ProgramSet → ProgramSet (see lower.h). A
// pass takes its input by value: compile moves each result into the next pass, which rewrites
// the programs in place (moving instructions) instead of copying the set.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/program/ir.h"
#include "ppstream/program/streams.h"

namespace ppstream::lower {

// F/B of the schedule on `compute` and a final OPT_STEP, one program per PP rank.
ProgramSet compute_order(ProgramSet in, const PipelineConfig& cfg);
// One BATCH after each compute unit (a compute, or a B+F pair under overlap_b_f) holding the
// unit's sends and the next unit's receives; ops ordered by transfer time (unit-time model),
// so that one-at-a-time execution (cpu-serial) is deadlock-free. Batches sit on `compute`.
ProgramSet insert_p2p(ProgramSet in, const PipelineConfig& cfg);
// Moves batches to their P2P stream(s) per transport (plain: one op per batch) and adds the
// events that order them with compute (fwd_out/bwd_out before sends; recv_* or p2p_done after).
ProgramSet assign_p2p_streams(ProgramSet in, const PipelineConfig& cfg);
// reduce_buckets k > 1: each managed stage's last backward (B, or the split backward's W) split
// into k pieces over its layers in backward order (bucket 0 = the last layers first).
ProgramSet split_buckets(ProgramSet in, const PipelineConfig& cfg);
// REDUCE_GRAD per managed stage after its last backward: inline (legacy) or async; one per
// bucket after each piece when the stage is split (reduce_buckets).
ProgramSet place_reductions(ProgramSet in, const PipelineConfig& cfg);
// Async reductions' queue order on the reduction stream (reduce_order: program | priority).
ProgramSet order_reductions(ProgramSet in, const PipelineConfig& cfg);
// UNSHARD (fsdp stream, prefetch window max_active_stages) and RESHARD (owned by the reduction
// when reshard_after_backward, else after OPT_STEP).
ProgramSet fsdp_unshard_reshard(ProgramSet in, const PipelineConfig& cfg);
// Replicates the per-PP-rank programs to every DP rank (rank = pp_rank*dp + dp_index).
ProgramSet expand_world(ProgramSet in, const PipelineConfig& cfg);

// Shared helpers.
Instr make_compute(OpKind op, Microbatch mb, Stage s);  // F, B, I or W on compute
Instr make_event(OpKind op, StreamId stream, EventId event);
Instr make_stage_op(OpKind op, StreamId stream, Stage s, Bucket b = {});
// Inserts each (position, instruction) of `items` before the instruction now at that position
// (position == size: at the end); items of one position keep their order. One backward sweep
// that moves only the instructions after the first position, in place when the capacity allows
// (rebuilding a large program vector faults in every page of a new one).
void insert_before(std::vector<Instr>& instrs, std::vector<std::pair<size_t, Instr>> items);
std::string stage_event(const char* prefix, Stage s, Bucket b = {});     // "reduce_done[s7]", "reduce_done[s7.b0]"
std::string mb_stage_event(const char* prefix, Microbatch mb, Stage s);  // "fwd_out[mb3,s1]"

}  // namespace ppstream::lower
