#include "our_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ppstream/analyze/trace_format.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace tf = ppstream::analyze::trace_format;

bool is_ppstream_trace(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  constexpr std::streamoff kTail = 64 * 1024;
  f.seekg(std::max<std::streamoff>(0, size - kTail));
  std::string tail((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return tail.find(R"("otherData":{"ppstream":)") != std::string::npos;
}

OurTrace read_our_trace(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw LiftError("whatif: cannot read " + path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw LiftError(fmt::format("whatif: {}: not JSON: {}", path, e.what()));
  }
  OurTrace t;
  t.path = path;
  const auto meta = doc.find("otherData");
  if (meta == doc.end() || !meta->is_object() || !meta->contains(tf::kMetaKey))
    throw LiftError(fmt::format("whatif: {}: no otherData.ppstream: not ppstream's trace format", path));
  const auto& pm = (*meta)[std::string(tf::kMetaKey)];
  t.producer = pm.value(std::string(tf::kMetaProducer), std::string());
  if (pm.contains(tf::kMetaMetrics) && pm[std::string(tf::kMetaMetrics)].is_object())
    t.policy = pm[std::string(tf::kMetaMetrics)].value("policy", std::string());
  const auto ev = doc.find("traceEvents");
  if (ev == doc.end() || !ev->is_array()) throw LiftError(fmt::format("whatif: {}: no traceEvents array", path));
  t.first_start_ms = std::numeric_limits<double>::infinity();
  t.last_end_ms = 0;
  size_t n = 0;
  for (const auto& e : *ev) {
    const size_t idx = n++;
    if (!e.is_object() || e.value("ph", std::string()) != "X") continue;
    const auto bad = [&](const std::string& what) {
      return LiftError(fmt::format("whatif: {}: traceEvents[{}]: {}", path, idx, what));
    };
    if (!e.contains("pid") || !e["pid"].is_number_integer() || !e.contains("ts") || !e["ts"].is_number() ||
        !e.contains("dur") || !e["dur"].is_number() || !e.contains("name") || !e["name"].is_string())
      throw bad("expected integer pid, numeric ts and dur, string name");
    const auto args = e.find("args");
    const std::string kind = args != e.end() && args->is_object() ? args->value(std::string(tf::kArgKind), std::string()) : "";
    if (kind == tf::kStepKind)
      throw bad("a step marker: multi-step traces (replay --trace) are not lifted into programs yet");
    if (kind == "stream_wait") {
      ++t.waits_skipped;
      continue;
    }
    if (kind != "compute" && kind != "p2p" && kind != "collective")
      throw bad(fmt::format("args.kind '{}': expected compute, p2p, collective, stream_wait", kind));
    OurSlice s;
    s.kind = kind;
    s.start_ms = e["ts"].get<double>() / 1000.0;
    s.end_ms = s.start_ms + e["dur"].get<double>() / 1000.0;
    s.arrival_ms = args->value(std::string(tf::kArgArrivalDelay), 0.0);
    const auto rank = e["pid"].get<int32_t>();
    const std::string name = e["name"].get<std::string>();
    if (!t.slices[rank].emplace(name, s).second)
      throw bad(fmt::format("rank {} has '{}' twice: one step per trace expected", rank, name));
    ++t.slices_read;
    t.first_start_ms = std::min(t.first_start_ms, s.start_ms);
    t.last_end_ms = std::max(t.last_end_ms, s.end_ms);
  }
  if (t.slices_read == 0) throw LiftError(fmt::format("whatif: {}: no work slices", path));
  return t;
}

}  // namespace ppstream::whatif
