// The SVG pipeline diagram (see trace.h): hand-written SVG 1.1, no scripts, readable in any
// browser. Geometry: 160 px label column, 1400 px of time, two 18 px lanes per rank (and a 26 px memory lane when the panel has a memory report).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "ppstream/sim/trace.h"
#include "ppstream/program/streams.h"

namespace ppstream::sim {
namespace {

constexpr double kLeft = 170, kWidth = 1400, kLane = 18, kRankGap = 8, kPanelHead = 34, kAxis = 26, kMemLane = 26;

const char* kF = "#4e79a7";
const char* kB = "#59a14f";
const char* kWait = "#e15759";
const char* kP2P = "#f28e2b";
const char* kReduce = "#b07aa1";
const char* kUnshard = "#9d9d9d";
const char* kOpt = "#9c755f";
const char* kMem = "#17becf";

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

double nice_step(double span) {
  const double raw = span / 10.0;
  const double mag = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

// One instruction as drawn: its box (lane 0 = compute, 1 = communication), colour, label and
// tooltip. color == nullptr: not drawn (RECORD, WAITs off compute, …).
struct Box {
  double a = 0, b = 0;  // ms
  double lane = 0;
  const char* color = nullptr;
  std::string label, tip;
};

Box box_of(const Program& prog, const Instr& i, const InstrTiming& t) {
  const bool on_compute = i.stream == streams::kCompute;
  Box x{t.start_ms, t.end_ms, on_compute ? 0.0 : 1.0, nullptr, {}, {}};
  switch (i.op) {
    case OpKind::F: x.color = kF, x.label = fmt::format("{}/{}", i.mb.v, i.stage.v), x.tip = fmt::format("F mb{} s{}", i.mb.v, i.stage.v); break;
    case OpKind::B:
    case OpKind::I:
    case OpKind::W:
      x.color = kB, x.label = fmt::format("{}/{}", i.mb.v, i.stage.v);
      x.tip = fmt::format("{} mb{} s{}", to_string(i.op), i.mb.v, i.stage.v);
      break;
    case OpKind::OPT_STEP: x.color = kOpt, x.tip = "OPT_STEP"; break;
    case OpKind::BATCH: x.color = kP2P, x.lane = 1, x.tip = fmt::format("BATCH on {} ({} ops)", prog.stream_name(i.stream), i.p2p.size()); break;
    case OpKind::REDUCE_GRAD: x.color = kReduce, x.lane = 1, x.label = fmt::format("R s{}", i.stage.v), x.tip = fmt::format("REDUCE_GRAD s{} on {}", i.stage.v, prog.stream_name(i.stream)); break;
    case OpKind::UNSHARD: x.color = kUnshard, x.lane = 1, x.label = fmt::format("U s{}", i.stage.v), x.tip = fmt::format("UNSHARD s{}", i.stage.v); break;
    case OpKind::WAIT:
      if (on_compute) x.a = t.ready_ms, x.b = t.start_ms, x.color = kWait, x.tip = "EVENT_WAIT " + prog.event_name(i.event);
      break;
    default: break;
  }
  return x;
}

void draw_legend(std::ostringstream& o) {
  double lx = kLeft;
  for (auto [color, name] : std::vector<std::pair<const char*, const char*>>{
           {kF, "forward"}, {kB, "backward"}, {kP2P, "P2P batch"}, {kReduce, "REDUCE_GRAD"}, {kUnshard, "UNSHARD"},
           {kWait, "stream wait (EVENT_WAIT)"}, {kOpt, "optimizer"}, {kMem, "memory held"}}) {
    o << fmt::format(R"(<rect x="{:.1f}" y="8" width="12" height="12" fill="{}"/><text x="{:.1f}" y="18">{}</text>)", lx, color, lx + 16, name)
      << "\n";
    lx += 40 + 6.5 * static_cast<double>(std::string_view(name).size());  // room for the label
  }
}

// The time axis at height y, its grid lines reaching down to `bottom`.
void draw_axis(std::ostringstream& o, double y, double bottom, double span, double scale) {
  const double step = nice_step(span);
  for (double t = 0; t <= span + 1e-9; t += step) {
    const double x = kLeft + t * scale;
    o << fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}" stroke="#ddd"/><text x="{0:.1f}" y="{3:.1f}" text-anchor="middle">{4:g} ms</text>)",
                     x, y + 12, bottom, y + 10, t)
      << "\n";
  }
}

// One rank's two lanes (compute, communication) with their top at y.
void draw_rank(std::ostringstream& o, const Program& prog, const std::vector<InstrTiming>& timing, double y, double scale) {
  o << fmt::format(R"(<text x="10" y="{:.1f}">r{} (pp {}) compute</text><text x="10" y="{:.1f}" fill="#666">comm</text>)",
                   y + 13, prog.rank.v, prog.pp_rank, y + kLane + 13)
    << "\n";
  for (size_t k = 0; k < prog.instrs.size(); ++k) {
    const Instr& i = prog.instrs[k];
    const Box bx = box_of(prog, i, timing[k]);
    if (!bx.color || bx.b - bx.a <= 0) continue;
    const double x = kLeft + bx.a * scale, w = std::max((bx.b - bx.a) * scale, 0.5);
    const double ry = y + bx.lane * kLane + 2;
    o << fmt::format(R"(<rect x="{:.2f}" y="{:.1f}" width="{:.2f}" height="{:.1f}" fill="{}" stroke="white" stroke-width="0.3"><title>{} {:.3f}–{:.3f} ms</title></rect>)",
                     x, ry, w, kLane - 4, bx.color, escape(bx.tip), bx.a, bx.b);
    // Inline collectives block compute: show the wait on the compute lane too.
    if ((i.op == OpKind::REDUCE_GRAD || i.op == OpKind::UNSHARD) && i.stream == streams::kCompute)
      o << fmt::format(R"(<rect x="{:.2f}" y="{:.1f}" width="{:.2f}" height="{:.1f}" fill="{}" opacity="0.8"><title>EVENT_WAIT on {} {:.3f}–{:.3f} ms</title></rect>)",
                       x, y + 2, w, kLane - 4, kWait, escape(bx.tip), bx.a, bx.b);
    if (!bx.label.empty() && w > 6.0 * static_cast<double>(bx.label.size()))
      o << fmt::format(R"(<text x="{:.2f}" y="{:.1f}" text-anchor="middle" fill="white">{}</text>)", x + w / 2, ry + 10, bx.label);
    o << "\n";
  }
}

// A rank's memory lane (top at y): the bytes held as a step line, scaled so that `max_bytes`
// fills the lane; the peak marked with its value and time.
void draw_memory(std::ostringstream& o, const RankMemory& m, double y, double scale, double max_bytes, double span) {
  o << fmt::format(R"(<text x="10" y="{:.1f}" fill="#666">memory (peak {})</text>)", y + 15, format_bytes(m.peak_bytes)) << "\n";
  const double h = kMemLane - 4, base = y + kMemLane - 2;
  auto yb = [&](double bytes) { return base - (max_bytes > 0 ? bytes / max_bytes * h : 0.0); };
  std::string pts = fmt::format("{:.2f},{:.2f}", kLeft, base);
  double last = 0;
  for (const MemoryPoint& pt : m.curve) {
    const double x = kLeft + pt.t_ms * scale;
    pts += fmt::format(" {:.2f},{:.2f} {:.2f},{:.2f}", x, yb(last), x, yb(pt.bytes));
    last = pt.bytes;
  }
  pts += fmt::format(" {:.2f},{:.2f}", kLeft + span * scale, yb(last));
  o << fmt::format(R"(<line x1="{:.1f}" x2="{:.1f}" y1="{:.2f}" y2="{:.2f}" stroke="#eee"/>)", kLeft, kLeft + span * scale, base, base)
    << fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="1.2"/>)", pts, kMem)
    << fmt::format(R"(<circle cx="{:.2f}" cy="{:.2f}" r="2.5" fill="{}"><title>peak {} at {:.3f} ms</title></circle>)",
                   kLeft + m.peak_ms * scale, yb(m.peak_bytes), kMem, format_bytes(m.peak_bytes), m.peak_ms)
    << "\n";
}

double row_height(const SvgPanel& pn) { return 2 * kLane + kRankGap + (pn.memory ? kMemLane : 0.0); }

size_t shown_rows(const SvgPanel& pn, const ProgramFilter& filter) {
  size_t rows = 0;
  for (const Program& p : pn.set->programs) rows += (!filter || filter(p)) ? 1 : 0;
  return rows;
}

}  // namespace

std::string render_svg(const std::vector<SvgPanel>& panels, const ProgramFilter& filter) {
  double span = 0;
  for (const SvgPanel& pn : panels) {
    span = std::max(span, pn.run->makespan_ms);
    if (pn.memory && pn.memory->ranks.size() != pn.set->programs.size())
      throw std::invalid_argument("svg: a panel's memory report does not list every program");
  }
  // A non-finite span would never end the axis-tick loop.
  if (!std::isfinite(span)) throw std::invalid_argument(fmt::format("svg: step time {} ms is not finite", span));
  span = std::max(span, 1e-9);
  const double scale = kWidth / span;
  double rows_height = 0, max_bytes = 0;
  for (const SvgPanel& pn : panels) {
    rows_height += static_cast<double>(shown_rows(pn, filter)) * row_height(pn);
    if (pn.memory) max_bytes = std::max(max_bytes, pn.memory->peak_bytes);
  }
  const double height = 40 + static_cast<double>(panels.size()) * (kPanelHead + kAxis) + rows_height + 30;
  std::ostringstream o;
  o << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" font-size="10">)",
                   kLeft + kWidth + 20, height)
    << "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  draw_legend(o);
  double y = 40;
  for (const SvgPanel& pn : panels) {
    o << fmt::format(R"(<text x="10" y="{:.1f}" font-size="14" font-weight="bold">{} — step {:.1f} ms</text>)", y + 20,
                     escape(pn.title), pn.run->makespan_ms)
      << "\n";
    y += kPanelHead;
    draw_axis(o, y, y + kAxis + static_cast<double>(shown_rows(pn, filter)) * row_height(pn), span, scale);
    y += kAxis - 6;
    for (size_t p = 0; p < pn.set->programs.size(); ++p) {
      if (filter && !filter(pn.set->programs[p])) continue;
      draw_rank(o, pn.set->programs[p], pn.run->timing[p], y, scale);
      if (pn.memory && pn.memory->ranks[p].computed) draw_memory(o, pn.memory->ranks[p], y + 2 * kLane, scale, max_bytes, span);
      y += row_height(pn);
    }
    y += 6;
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace ppstream::sim
