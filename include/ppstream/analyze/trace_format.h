// ppstream's own trace format: Chrome trace JSON shared by the simulator, the MindSpore runtime
// and the analyzer. The full definition is docs/analyze.md ("Our trace format"); these are the
// keys and values both the writer and the reader use, so they cannot drift.
#pragma once

#include <string_view>
#include <vector>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::trace_format {

inline constexpr int kVersion = 1;
// Top level: {"traceEvents": [...], "otherData": {"ppstream": {...}}} ("metadata" also accepted).
inline constexpr std::string_view kMetaKey = "ppstream";
inline constexpr std::string_view kMetaVersion = "version";      // int, kVersion
inline constexpr std::string_view kMetaProducer = "producer";    // "simulator" | "runtime" | …
inline constexpr std::string_view kMetaClock = "clock";          // "global" | "per_rank"
inline constexpr std::string_view kMetaRanks = "ranks";          // {"3": {"pp_rank": 3}}
inline constexpr std::string_view kMetaPPRank = "pp_rank";
inline constexpr std::string_view kMetaMetrics = "metrics";      // producer's own metrics object

// Events: pid = rank, tid = stream (named by a "thread_name" metadata event), "ph":"X",
// ts/dur in µs (decimals allowed), name = canonical instruction text.
inline constexpr std::string_view kArgKind = "kind";    // to_string(SliceKind) or "step"
inline constexpr std::string_view kArgGroup = "group";  // collective group, e.g. "replicate[0]"
inline constexpr std::string_view kArgBytes = "bytes";  // integer
// collectives: this member's arrival delay (ms) after it posted (the straggler model), when > 0
inline constexpr std::string_view kArgArrivalDelay = "arrival_delay_ms";
inline constexpr std::string_view kArgEvent = "event";  // stream waits: the event waited for
inline constexpr std::string_view kArgInstr = "instr";  // stream waits: the WAIT's canonical text
inline constexpr std::string_view kArgStep = "step";    // step markers: integer step id
inline constexpr std::string_view kStepKind = "step";   // args.kind of a step-marker slice
inline constexpr std::string_view kWaitName = "EVENT_WAIT";  // name of stream-wait slices

// The P2P operations written in a canonical BATCH text, e.g.
// `r3 p2p.2 BATCH{SEND_B mb15 s7 ->r2; RECV_B mb12 s3 <-r0}` → {SEND→2, RECV←0}, each with its
// P2POp, parsed by parse_instr_line (program/format.h).
// Returns empty when the text holds no BATCH; throws TraceError naming the text when it is not
// a canonical BATCH line (e.g. an op lacks its `->rN` / `<-rN` peer).
std::vector<P2PPart> parse_batch_parts(std::string_view text);

}  // namespace ppstream::analyze::trace_format
