// Stream identity in the IR (docs/semantics.md "Execution": a rank's named streams). A stream
// is a `StreamId`: an index into its Program's table of stream names (Program::stream_names,
// ir.h). The well-known streams the lowering creates and the verifier, simulator, replay and
// analyzer look for are named once here and seed every table in this fixed order, so their ids
// are the compile-time constants below on every program and comparing against them needs no
// name lookup. Any other name (the multi_stream transport's "p2p.E", a stream of a hand-written
// program) is appended to its program's table on first use (Program::intern_stream), so its id
// means something only together with that program.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace ppstream {

// An index into one Program's stream table. A small value type: equality, order (by index, not
// by name) and hashing; no conversion from an int or a name (go through Program::intern_stream
// or the constants in streams::).
struct StreamId {
  uint32_t v = 0;  // 32 bits: a parsed program may name any number of streams (the verifier caps them)
  constexpr StreamId() = default;
  constexpr explicit StreamId(uint32_t x) : v(x) {}
  auto operator<=>(const StreamId&) const = default;
};

namespace streams {

// The well-known names, in table order (the one definition of their spelling).
inline constexpr std::array<std::string_view, 4> kWellKnown = {"compute", "reduce", "fsdp", "p2p"};
inline constexpr StreamId kCompute{0};  // F/B/I/W, OPT_STEP, inline reductions, BATCHes before assign-p2p-streams
inline constexpr StreamId kReduce{1};   // async gradient reductions (REDUCE_GRAD between RECORD/WAITs)
inline constexpr StreamId kFsdp{2};     // UNSHARD (all-gather) prefetch
inline constexpr StreamId kP2P{3};      // BATCHes under the plain and batch transports

// The name of a well-known stream (id < kWellKnown.size()).
constexpr std::string_view name_of(StreamId known) { return kWellKnown[known.v]; }

// Traces only (not a program stream): a collective issued on `compute` runs on HCCL's own
// stream, drawn as this one.
inline constexpr std::string_view kComputeHccl = "compute:hccl";

// The name of the P2P stream of pipeline edge `edge` under the multi_stream transport: "p2p.E"
// (edge E joins PP ranks E and E+1 mod pp). Intern it in the program that uses it.
inline std::string p2p_edge(int32_t edge) { return std::string(name_of(kP2P)) + "." + std::to_string(edge); }

}  // namespace streams
}  // namespace ppstream

template <>
struct std::hash<ppstream::StreamId> {
  size_t operator()(ppstream::StreamId s) const noexcept { return s.v; }
};
