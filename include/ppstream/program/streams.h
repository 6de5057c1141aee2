// The well-known stream names of the IR, defined once (docs/semantics.md "Execution": a rank's
// named streams). A stream is a name in `Instr::stream`; these are the ones the lowering
// creates and the verifier, simulator, replay and analyzer look for. Programs written by hand
// may use any other name (a stream of its own).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ppstream::streams {

inline constexpr std::string_view kCompute = "compute";  // F/B/I/W, OPT_STEP, inline reductions, BATCHes before assign-p2p-streams
inline constexpr std::string_view kReduce = "reduce";    // async gradient reductions (REDUCE_GRAD between RECORD/WAITs)
inline constexpr std::string_view kFsdp = "fsdp";        // UNSHARD (all-gather) prefetch
inline constexpr std::string_view kP2P = "p2p";          // BATCHes under the plain and batch transports
// Traces only: a collective issued on `compute` runs on HCCL's own stream, drawn as this one.
inline constexpr std::string_view kComputeHccl = "compute:hccl";

// The P2P stream of pipeline edge `edge` under the multi_stream transport: "p2p.E" (edge E
// joins PP ranks E and E+1 mod pp).
inline std::string p2p_edge(int32_t edge) { return std::string(kP2P) + "." + std::to_string(edge); }

}  // namespace ppstream::streams
