// Reads ppstream's own trace format (docs/analyze.md "Our trace format": `simulate --trace`) for
// the what-if: every work slice by rank and canonical instruction text, with its member arrival
// delay (args.arrival_delay_ms). Times in ms.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace ppstream::whatif {

struct OurSlice {
  double start_ms = 0, end_ms = 0;
  double arrival_ms = 0;  // collectives: arrival delay after posting
  std::string kind;       // compute | p2p | collective
};

struct OurTrace {
  std::string path;
  std::string producer;                              // "simulator", "replay", …
  std::string policy;                                // producer metrics' "policy", if any
  std::map<int32_t, std::map<std::string, OurSlice>> slices;  // rank → canonical text → slice
  int64_t slices_read = 0;
  int64_t waits_skipped = 0;  // EVENT_WAIT slices: the engine derives waits, they cost nothing
  double first_start_ms = 0, last_end_ms = 0;
};

// Throws LiftError naming the file and the event (index) on a malformed event, a repeated
// instruction on one rank, a trace with step markers (several steps: not supported yet) or
// without ppstream metadata.
OurTrace read_our_trace(const std::string& path);

}  // namespace ppstream::whatif
