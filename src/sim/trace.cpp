#include "ppstream/sim/trace.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "ppstream/program/format.h"

namespace ppstream::sim {
namespace {

constexpr double kUsPerMs = 1000.0;

struct Slice {
  std::string name, cat;
  double start_ms, end_ms;
  nlohmann::json args;
};

}  // namespace

void write_chrome_trace(std::ostream& out, const ProgramSet& set, const EngineResult& run, const CostModel& cost,
                        const ProgramFilter& filter, const std::string& label) {
  nlohmann::json events = nlohmann::json::array();
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    if (filter && !filter(prog)) continue;
    const int32_t pid = prog.rank.v;
    std::map<std::string, int> tids;  // stream → tid, in order of first use (compute first)
    auto tid_of = [&](const std::string& stream) {
      auto [it, fresh] = tids.emplace(stream, static_cast<int>(tids.size()));
      if (fresh)
        events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", it->second}, {"args", {{"name", stream}}}});
      return it->second;
    };
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", fmt::format("r{} (pp {})", pid, prog.pp_rank)}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    tid_of("compute");
    auto emit = [&](const std::string& stream, const Slice& s) {
      if (s.end_ms - s.start_ms <= 0 && s.cat == "wait") return;
      nlohmann::json e = {{"name", s.name}, {"cat", s.cat}, {"ph", "X"}, {"pid", pid}, {"tid", tid_of(stream)},
                          {"ts", s.start_ms * kUsPerMs}, {"dur", (s.end_ms - s.start_ms) * kUsPerMs}};
      if (!s.args.empty()) e["args"] = s.args;
      events.push_back(std::move(e));
    };
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      const InstrTiming& t = run.timing[p][k];
      const std::string text = to_text(prog.rank, i);
      const nlohmann::json base = {{"text", text}, {"index", k}};
      switch (i.op) {
        case OpKind::F:
        case OpKind::B:
        case OpKind::OPT_STEP:
        case OpKind::RESHARD:
          if (t.end_ms > t.start_ms) emit(i.stream, {to_text(i).substr(i.stream.size() + 1), "compute", t.start_ms, t.end_ms, base});
          break;
        case OpKind::BATCH: {
          nlohmann::json args = base;
          args["posted_ms"] = t.start_ms;
          args["matched_ms"] = t.end_ms - cost.batch_ms(prog, i);
          emit(i.stream, {to_text(i).substr(i.stream.size() + 1), "p2p", t.start_ms, t.end_ms, args});
          break;
        }
        case OpKind::UNSHARD:
        case OpKind::REDUCE_GRAD: {
          nlohmann::json args = base;
          args["arrived_ms"] = t.end_ms - cost.collective_ms(prog, i);
          const std::string name = to_text(i).substr(i.stream.size() + 1);
          if (i.stream == "compute") {
            emit("compute:hccl", {name, "collective", t.start_ms, t.end_ms, args});
            emit(i.stream, {"EVENT_WAIT", "wait", t.start_ms, t.end_ms, {{"text", text}, {"index", k}, {"waits_for", name}}});
          } else {
            emit(i.stream, {name, "collective", t.start_ms, t.end_ms, args});
          }
          break;
        }
        case OpKind::WAIT:
          emit(i.stream, {"EVENT_WAIT", "wait", t.ready_ms, t.start_ms, {{"text", text}, {"index", k}, {"event", i.event}}});
          break;
        case OpKind::RECORD:
          break;
      }
    }
  }
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ms"},
                        {"otherData", {{"producer", "ppstream simulate"}, {"label", label}, {"step_time_ms", run.makespan_ms}}}};
  out << doc.dump() << "\n";
}

}  // namespace ppstream::sim
