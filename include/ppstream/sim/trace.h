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
#include "ppstream/sim/memory.h"

namespace ppstream::analyze {
class TraceWriter;
}  // namespace ppstream::analyze

namespace ppstream::sim {

// Which programs to draw (cluster mode draws one pipeline replica by default).
using ProgramFilter = std::function<bool(const Program&)>;

// Chrome trace JSON in ppstream's own trace format (analyze::TraceWriter, docs/analyze.md), so
// `ppstream analyze` reads it back: pid = rank, tid = stream, slice names = canonical text with
// the rank, args.kind compute | p2p | collective | stream_wait. A collective issued on `compute`
// is drawn on a stream "compute:hccl" while compute shows EVENT_WAIT (event "CommHandle.wait"),
// as on Ascend (HCCL runs on its own stream; CommHandle.wait blocks the current one).
// `metrics_json` (an object, may be empty) is stored as the producer's metrics; `producer` names
// who measured the timings ("simulator", or "replay" for replay's measured runs).
void write_chrome_trace(std::ostream& out, const ProgramSet& set, const EngineResult& run, const CostModel& cost,
                        const ProgramFilter& filter = {}, const std::string& metrics_json = "",
                        const std::string& producer = "simulator");

// The slices of one run added to `w` (what write_chrome_trace writes), every time shifted by
// `offset_ms`: a multi-step trace adds each step at its own offset beside its step marker
// (replay --steps N). With `cost`, each collective slice carries its member's arrival delay
// (CostModel::arrival_delay_ms) so that `ppstream whatif` can tell a late member from the transfer.
void add_trace_slices(analyze::TraceWriter& w, const ProgramSet& set, const EngineResult& run,
                      const ProgramFilter& filter = {}, double offset_ms = 0, const CostModel* cost = nullptr);

// One panel of the SVG: a title and a run.
struct SvgPanel {
  std::string title;
  const ProgramSet* set = nullptr;
  const EngineResult* run = nullptr;
  const MemoryReport* memory = nullptr;  // with curves: a memory lane per rank (nullptr: none)
};
// Panels stacked on one time axis (so inline and async compare at a glance). Per rank: a
// compute lane (F blue, B green, waits red, inline collectives purple, labels "mb/s") and a
// communication lane (P2P orange, reductions purple, unshard grey), and with a panel's memory a
// memory lane (bytes held, a step line scaled to the panel's largest peak, the peak marked).
std::string render_svg(const std::vector<SvgPanel>& panels, const ProgramFilter& filter = {});

}  // namespace ppstream::sim
