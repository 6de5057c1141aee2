#include "ppstream/sim/trace.h"

#include <fmt/format.h>

#include "ppstream/analyze/trace_writer.h"
#include "ppstream/program/format.h"
#include "ppstream/program/streams.h"

namespace ppstream::sim {
namespace {
constexpr double kUsPerMs = 1000.0;
}  // namespace

void write_chrome_trace(std::ostream& out, const ProgramSet& set, const EngineResult& run, const CostModel& cost,
                        const ProgramFilter& filter, const std::string& metrics_json, const std::string& producer) {
  analyze::TraceWriter w(producer, true);
  if (!metrics_json.empty()) w.set_producer_metrics(metrics_json);
  add_trace_slices(w, set, run, filter, 0, &cost);
  w.write(out);
}

void add_trace_slices(analyze::TraceWriter& w, const ProgramSet& set, const EngineResult& run,
                      const ProgramFilter& filter, double offset_ms, const CostModel* cost) {
  using analyze::SliceKind;
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    if (filter && !filter(prog)) continue;
    const Rank r = prog.rank;
    w.set_pp_rank(r, prog.pp_rank);
    w.stream(r, prog.stream_name(streams::kCompute));
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      const std::string& stream = prog.stream_name(i.stream);
      const InstrTiming& t = run.timing[p][k];
      const double s_us = (t.start_ms + offset_ms) * kUsPerMs, d_us = (t.end_ms - t.start_ms) * kUsPerMs;
      switch (i.op) {
        case OpKind::F:
        case OpKind::B:
        case OpKind::I:
        case OpKind::W:
        case OpKind::OPT_STEP:
        case OpKind::RESHARD:
          if (d_us > 0) w.slice(r, stream, to_line(prog, i), s_us, d_us, SliceKind::COMPUTE);
          break;
        case OpKind::BATCH:
          w.slice(r, stream, to_line(prog, i), s_us, d_us, SliceKind::P2P);
          break;
        case OpKind::UNSHARD:
        case OpKind::REDUCE_GRAD: {
          const std::string group = i.op == OpKind::UNSHARD ? fmt::format("shard[pp{}]", prog.pp_rank)
                                                            : fmt::format("dp[pp{}]", prog.pp_rank);
          // Issued on compute: HCCL runs on its own stream and compute waits (CommHandle.wait).
          const bool on_compute = i.stream == streams::kCompute;
          w.slice(r, on_compute ? std::string(streams::kComputeHccl) : stream, to_line(prog, i), s_us, d_us, SliceKind::COLLECTIVE, group, 0,
                  cost ? cost->arrival_delay_ms(prog, i) : 0.0);
          if (on_compute && d_us > 0) w.wait(r, stream, "CommHandle.wait", to_line(prog, i), s_us, d_us);
          break;
        }
        case OpKind::COLLECTIVE:
          w.slice(r, stream, to_line(prog, i), s_us, d_us, SliceKind::COLLECTIVE, prog.collective(i.coll).group, 0,
                  cost ? cost->arrival_delay_ms(prog, i) : 0.0);
          break;
        case OpKind::WAIT:
          if (t.start_ms > t.ready_ms)
            w.wait(r, stream, prog.event_name(i.event), to_line(prog, i), (t.ready_ms + offset_ms) * kUsPerMs,
                   (t.start_ms - t.ready_ms) * kUsPerMs);
          break;
        case OpKind::RECORD:
          break;
      }
    }
  }
}

}  // namespace ppstream::sim
