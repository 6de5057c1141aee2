// Views of one simulated step: a Chrome-trace / Perfetto JSON timeline (pid = rank, tid =
// stream) and an SVG pipeline diagram (ranks × time). Both are drawn from the engine's
// per-instruction timings; slice names are the instructions' canonical text, stream waits are
// named EVENT_WAIT as the Ascend profiler names them.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "ppstream/engine/engine.h"
#include "ppstream/program/ir.h"

namespace ppstream::sim {

// Which programs to draw (cluster mode draws one pipeline replica by default).
using ProgramFilter = std::function<bool(const Program&)>;

// Chrome trace event format ("JSON Object Format": {"traceEvents": [...]}, ts/dur in µs):
//   ph "M" process_name "r3 (pp 3)" / thread_name = stream; ph "X" slices with cat
//   compute | p2p | collective | wait, args {text, index, …}. A collective issued on `compute`
//   is drawn on a thread "<stream>:hccl" and the compute stream shows EVENT_WAIT meanwhile,
//   as on Ascend (HCCL runs on its own stream; CommHandle.wait blocks the current one).
void write_chrome_trace(std::ostream& out, const ProgramSet& set, const EngineResult& run, const CostModel& cost,
                        const ProgramFilter& filter = {}, const std::string& label = "");

// One panel of the SVG: a title and a run.
struct SvgPanel {
  std::string title;
  const ProgramSet* set = nullptr;
  const EngineResult* run = nullptr;
};
// Panels stacked on one time axis (so inline and async compare at a glance). Per rank: a
// compute lane (F blue, B green, waits red, inline collectives purple, labels "mb/s") and a
// communication lane (P2P orange, reductions purple, unshard grey).
std::string render_svg(const std::vector<SvgPanel>& panels, const ProgramFilter& filter = {});

}  // namespace ppstream::sim
