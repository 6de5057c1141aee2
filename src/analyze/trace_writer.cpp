// Renders ppstream's trace format; keys come from trace_format.h so the reader agrees.
#include "ppstream/analyze/trace_writer.h"

#include <fmt/format.h>

#include <sstream>
#include <stdexcept>

#include "ppstream/analyze/trace_format.h"

namespace ppstream::analyze {
namespace tf = ppstream::analyze::trace_format;

namespace {
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(c));
        else out += c;
    }
  }
  return out + "\"";
}
}  // namespace

TraceWriter::TraceWriter(std::string producer, bool global_clock)
    : producer_(std::move(producer)), global_clock_(global_clock) {}

int64_t TraceWriter::stream(Rank rank, const std::string& name) {
  auto& m = tids_[rank];
  auto it = m.find(name);
  if (it != m.end()) return it->second;
  auto tid = static_cast<int64_t>(m.size());
  m.emplace(name, tid);
  return tid;
}

void TraceWriter::set_pp_rank(Rank rank, int32_t pp_rank) { pp_ranks_[rank] = pp_rank; }
void TraceWriter::set_producer_metrics(std::string json_object) { metrics_json_ = std::move(json_object); }

void TraceWriter::slice(Rank rank, const std::string& stream_name, const std::string& name, double start_us,
                        double dur_us, SliceKind kind, const std::string& group, uint64_t bytes,
                        double arrival_delay_ms) {
  if (kind == SliceKind::STREAM_WAIT) {
    throw std::invalid_argument(fmt::format("TraceWriter::slice '{}': stream waits go through wait()", name));
  }
  std::string args = fmt::format("{{{}:{}", quote(tf::kArgKind), quote(to_string(kind)));
  if (!group.empty()) args += fmt::format(",{}:{}", quote(tf::kArgGroup), quote(group));
  if (bytes) args += fmt::format(",{}:{}", quote(tf::kArgBytes), bytes);
  if (arrival_delay_ms > 0) args += fmt::format(",{}:{}", quote(tf::kArgArrivalDelay), arrival_delay_ms);
  args += "}";
  events_.push_back(Event{rank, stream(rank, stream_name), name, start_us, dur_us, std::move(args)});
}

void TraceWriter::wait(Rank rank, const std::string& stream_name, const std::string& event,
                       const std::string& instr, double start_us, double dur_us) {
  std::string args = fmt::format("{{{}:{},{}:{},{}:{}}}", quote(tf::kArgKind), quote(to_string(SliceKind::STREAM_WAIT)),
                                 quote(tf::kArgEvent), quote(event), quote(tf::kArgInstr), quote(instr));
  events_.push_back(Event{rank, stream(rank, stream_name), std::string(tf::kWaitName), start_us, dur_us, std::move(args)});
}

void TraceWriter::step(Rank rank, int64_t step_id, double start_us, double dur_us) {
  std::string args = fmt::format("{{{}:{},{}:{}}}", quote(tf::kArgKind), quote(tf::kStepKind), quote(tf::kArgStep), step_id);
  events_.push_back(Event{rank, stream(rank, "host"), fmt::format("step {}", step_id), start_us, dur_us, std::move(args)});
}

void TraceWriter::write(std::ostream& out) const {
  out << "{\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&]() {
    if (!first) out << ",\n";
    first = false;
  };
  for (const auto& [rank, streams] : tids_) {
    sep();
    out << fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":\"rank {}\"}}}}",
                       rank.v, rank.v);
    for (const auto& [name, tid] : streams) {
      sep();
      out << fmt::format("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
                         rank.v, tid, quote(name));
    }
  }
  for (const auto& e : events_) {
    sep();
    out << fmt::format("{{\"ph\":\"X\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f},\"args\":{}}}",
                       quote(e.name), e.rank.v, e.tid, e.start_us, e.dur_us, e.args_json);
  }
  out << "\n],\n\"otherData\":{" << quote(tf::kMetaKey) << ":{";
  out << fmt::format("{}:{},{}:{},{}:{}", quote(tf::kMetaVersion), tf::kVersion, quote(tf::kMetaProducer),
                     quote(producer_), quote(tf::kMetaClock), quote(global_clock_ ? "global" : "per_rank"));
  out << "," << quote(tf::kMetaRanks) << ":{";
  bool f2 = true;
  for (const auto& [rank, pp] : pp_ranks_) {
    out << (f2 ? "" : ",") << fmt::format("\"{}\":{{{}:{}}}", rank.v, quote(tf::kMetaPPRank), pp);
    f2 = false;
  }
  out << "}";
  if (!metrics_json_.empty()) out << "," << quote(tf::kMetaMetrics) << ":" << metrics_json_;
  out << "}}}\n";
}

std::string TraceWriter::str() const {
  std::ostringstream os;
  write(os);
  return os.str();
}

}  // namespace ppstream::analyze
