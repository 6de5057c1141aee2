#include "measured_cost.h"

#include <fmt/format.h>

#include "ppstream/program/format.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace {
bool is_compute(OpKind op) {
  return op == OpKind::F || op == OpKind::B || op == OpKind::I || op == OpKind::W || op == OpKind::OPT_STEP ||
         op == OpKind::RESHARD;
}
}  // namespace

std::vector<std::string> instr_keys(const Program& prog) {
  std::vector<std::string> keys(prog.instrs.size());
  std::unordered_map<std::string, int32_t> seen;
  for (size_t k = 0; k < prog.instrs.size(); ++k) {
    const Instr& i = prog.instrs[k];
    if (i.op == OpKind::RECORD || i.op == OpKind::WAIT) continue;
    std::string text = op_text(prog, i);
    const int32_t n = seen[text]++;
    keys[k] = fmt::format("{}#{}", text, n);
  }
  return keys;
}

std::vector<std::vector<MeasuredCost>> costs_for(const ProgramSet& set, const MeasuredTable& table) {
  std::vector<std::vector<MeasuredCost>> out(set.programs.size());
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    out[p].resize(prog.instrs.size());
    const auto r = static_cast<size_t>(prog.rank.v);
    const std::vector<std::string> keys = instr_keys(prog);
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      if (i.op == OpKind::RECORD || i.op == OpKind::WAIT) continue;
      const MeasuredCost* found = nullptr;
      if (r < table.size()) {
        const auto it = table[r].find(keys[k]);
        if (it != table[r].end()) found = &it->second;
      }
      if (found) {
        out[p][k] = *found;
      } else if (!is_compute(i.op)) {
        throw LiftError(fmt::format("whatif: no measured cost for '{}' (rank {}): the trace has no slice for it",
                                    to_line(prog, i), prog.rank.v));
      }
    }
  }
  return out;
}

MeasuredCostModel::MeasuredCostModel(const ProgramSet& set, std::vector<std::vector<MeasuredCost>> costs,
                                     const std::vector<std::vector<double>>* host_gap_ms)
    : set_(&set), costs_(std::move(costs)), host_gap_ms_(host_gap_ms) {}

double MeasuredCostModel::host_issue_ms(const Program& p, const Instr& i) const {
  if (!host_gap_ms_) return 0.0;
  const auto pi = static_cast<size_t>(&p - set_->programs.data());
  const auto ki = static_cast<size_t>(&i - p.instrs.data());
  return host_gap_ms_->at(pi).at(ki);
}

const MeasuredCost& MeasuredCostModel::at(const Program& p, const Instr& i) const {
  const auto pi = static_cast<size_t>(&p - set_->programs.data());
  const auto ki = static_cast<size_t>(&i - p.instrs.data());
  return costs_.at(pi).at(ki);
}

}  // namespace ppstream::whatif
