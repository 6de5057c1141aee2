// The verifier's driver: builds the shared topology once, runs every rule (structure, deadlock
// per platform, then the static rules) and returns all violations; also the message format.
#include "ppstream/verify/verify.h"

#include <fmt/format.h>

#include "ppstream/program/format.h"
#include "verify/report.h"
#include "verify/verify_topology.h"

namespace ppstream {

std::string Violation::to_string() const {
  std::string out = fmt::format("verify: r{}", rank.v);
  if (index >= 0) out += fmt::format(" #{}", index);
  if (!stream.empty()) out += " " + stream;
  out += fmt::format(": [{}] {}", rule, message);
  if (!after_pass.empty()) out += fmt::format(" (after pass {})", after_pass);
  return out;
}

namespace {
std::string verify_error_text(std::string_view context, const std::vector<Violation>& violations) {
  std::string msg = fmt::format("{}: {} violation(s):", context, violations.size());
  for (const Violation& v : violations) msg += "\n  " + v.to_string();
  return msg;
}
}  // namespace

VerifyError::VerifyError(std::string_view context, std::vector<Violation> violations)
    : std::runtime_error(verify_error_text(context, violations)), violations_(std::move(violations)) {}

void require_verified(const ProgramSet& set, const VerifyOptions& opts, std::string_view context) {
  auto violations = verify(set, opts);
  if (!violations.empty()) throw VerifyError(context, std::move(violations));
}

namespace verify_detail {

void Report::add(const char* rule, int32_t prog, int32_t index, std::string message) {
  Violation v;
  v.rule = rule;
  if (prog >= 0 && prog < static_cast<int32_t>(set_.programs.size())) {
    v.rank = set_.programs[prog].rank;
    if (index >= 0) {
      v.index = index;
      v.stream = stream_of(prog, index);
    }
  }
  v.message = std::move(message);
  v.after_pass = opts_.after_pass;
  out_.push_back(std::move(v));
}

std::string Report::stream_of(int32_t prog, int32_t index) const {
  const Program& p = set_.programs[prog];
  const StreamId id = p.instrs[index].stream;
  return id.v < p.stream_names.size() ? p.stream_names[id.v] : fmt::format("<stream id {}>", id.v);
}

std::string Report::local(int32_t prog, int32_t index) const {
  return fmt::format("{} (#{} {})", op_text(set_.programs[prog], instr(prog, index)), index, stream_of(prog, index));
}

std::string Report::remote(int32_t prog, int32_t index) const {
  return fmt::format("r{} #{} {} {}", rank(prog).v, index, stream_of(prog, index), op_text(set_.programs[prog], instr(prog, index)));
}

std::string Report::op(int32_t prog, int32_t index) const { return op_text(set_.programs[prog], instr(prog, index)); }

void check_structure(const engine::Topology& topo, Report& rep) {
  for (const auto& e : topo.errors) rep.add("structure", e.prog, e.instr, e.message);
}

}  // namespace verify_detail

std::vector<Violation> verify(const ProgramSet& set, const VerifyOptions& opts) {
  return verify_topology(engine::build_topology(set), opts);
}

std::vector<Violation> verify_topology(const engine::Topology& topo, const VerifyOptions& opts) {
  using namespace verify_detail;
  const ProgramSet& set = *topo.set;
  std::vector<Violation> out;
  Report rep(set, opts, out);
  check_structure(topo, rep);
  // A rank-level structure error (a rank outside the world or out of order, a wrong pp_rank, too
  // many streams) leaves the static rules' rank and stage arithmetic undefined for that program
  // (e.g. `pp_rank + c * pp` for r2147483647): the static rules skip it (Topology::skip) and
  // check the others. World sizes in error: no program's arithmetic is defined.
  if (world_size_error(set.world)) return out;
  if (topo.errors.empty()) check_deadlock(topo, opts.platforms, rep);
  check_p2p_fifo(topo, rep);
  check_batch_shape(topo, rep);
  check_collective_order(topo, rep);
  check_communicator_order(topo, rep);
  check_events(topo, rep);
  check_happens_before(topo, rep);
  check_send_before_reduce(topo, rep);
  if (opts.complete) {  // only a finished program can hold every reduction, reshard and drain
    check_once(topo, rep);
    check_drain_count(topo, rep);
  }
  return out;
}

}  // namespace ppstream
