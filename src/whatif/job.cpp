// Building the per-step template table from timer ops (docs/whatif.md "Lifting").
#include "job.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace {

// Sorted unique steps as runs: "23-27", "3, 5-6"; past 12 runs, "… (N steps in all)".
std::string step_list(const std::vector<int32_t>& steps) {
  std::string out;
  size_t runs = 0;
  for (size_t i = 0; i < steps.size();) {
    if (++runs > 12) return out + fmt::format(", … ({} steps in all)", steps.size());
    size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + (j == i ? fmt::format("{}", steps[i]) : fmt::format("{}-{}", steps[i], steps[j]));
    i = j + 1;
  }
  return out;
}

uint64_t key_of(int32_t stage, OpType t, int32_t seq) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(stage)) << 40) | (static_cast<uint64_t>(t) << 32) |
         static_cast<uint32_t>(seq);
}

// A worker whose lanes the metadata declares but that has no op at all lost its ops (a trace
// cut short, a DP rank's file emptied): read without it, the job would look smaller.
void check_declared_workers(const analyze::TimerTrace& trace) {
  int32_t dp = 0, pp = 0;
  for (const analyze::TimerOp& op : trace.ops) dp = std::max(dp, op.dp_rank + 1), pp = std::max(pp, op.pp_rank + 1);
  // A flag per (DP rank, stage) where that is small (always, but for absurd ranks: then a set).
  const bool flat = int64_t{dp} * pp <= (int64_t{1} << 24);
  std::vector<char> flags(flat ? static_cast<size_t>(dp) * static_cast<size_t>(pp) : 0);
  std::set<std::pair<int32_t, int32_t>> seen;
  for (const analyze::TimerOp& op : trace.ops) {
    if (flat) flags[static_cast<size_t>(op.dp_rank) * static_cast<size_t>(pp) + static_cast<size_t>(op.pp_rank)] = 1;
    else seen.emplace(op.dp_rank, op.pp_rank);
  }
  const auto has_op = [&](std::pair<int32_t, int32_t> w) {
    if (!flat) return seen.contains(w);
    return w.first < dp && w.second < pp &&
           flags[static_cast<size_t>(w.first) * static_cast<size_t>(pp) + static_cast<size_t>(w.second)] != 0;
  };
  for (const auto& [w, file] : trace.declared_workers)
    if (!has_op(w))
      throw LiftError(fmt::format("DP rank {}, stage {}: {} declares its lanes (thread_name metadata) but the trace "
                                  "holds no timer op of it; the lifting needs every worker's ops (give the complete "
                                  "trace of every DP rank)",
                                  w.first, w.second, file));
}

}  // namespace

std::string Job::where(int32_t k, int64_t row) const {
  const TemplateOp& op = ops[static_cast<size_t>(k)];
  return fmt::format("DP rank {}, stage {}, step {}, {} #{}", row % dp, op.stage, steps[static_cast<size_t>(row / dp)],
                     name_of(op.type), op.seq);
}

Job build_job(const analyze::TimerTrace& trace, std::optional<std::pair<int32_t, int32_t>> step_range) {
  Job job;
  std::vector<std::optional<OpType>> type_of_name(trace.strings.size());
  for (size_t i = 0; i < trace.strings.size(); ++i) type_of_name[i] = parse_op_type(trace.strings.str(static_cast<uint32_t>(i)));
  std::map<std::string, int64_t> unknown;
  std::optional<int32_t> tp;
  std::vector<int32_t> steps;
  std::optional<int32_t> last_step;
  auto kept = [&](const analyze::TimerOp& op) {
    return type_of_name[op.name] && (!step_range || (op.step >= step_range->first && op.step <= step_range->second));
  };
  for (const analyze::TimerOp& op : trace.ops) {
    if (!type_of_name[op.name]) {
      ++unknown[trace.strings.str(op.name)];
      continue;
    }
    if (!kept(op)) continue;
    if (tp && *tp != op.tp_rank) {
      throw LiftError(fmt::format("the trace holds TP ranks {} and {}; what-if reads one TP rank per (DP, PP) "
                                  "worker (the artifact traces one): pass one TP rank's lanes",
                                  *tp, op.tp_rank));
    }
    tp = op.tp_rank;
    job.dp = std::max(job.dp, op.dp_rank + 1);
    job.pp = std::max(job.pp, op.pp_rank + 1);
    job.vpp = std::max(job.vpp, op.chunk + 1);
    // The step ids, sorted and unique as they are found (a few; ops of one step mostly in a row).
    if (last_step != op.step) {
      last_step = op.step;
      const auto at = std::lower_bound(steps.begin(), steps.end(), op.step);
      if (at == steps.end() || *at != op.step) steps.insert(at, op.step);
    }
  }
  check_declared_workers(trace);
  for (const auto& [name, n] : unknown) {
    job.notes.push_back(fmt::format("{} ops named '{}' are not in the dependency model (docs/whatif.md); not "
                                    "simulated",
                                    n, name));
  }
  if (steps.empty()) {
    if (!step_range) throw LiftError("no timer op of a known type (forward-compute, …) in the trace");
    // Say which files and which steps they hold (only here: the error path).
    std::vector<int32_t> present;
    for (const analyze::TimerOp& op : trace.ops) {
      if (!type_of_name[op.name]) continue;
      const auto at = std::lower_bound(present.begin(), present.end(), op.step);
      if (at == present.end() || *at != op.step) present.insert(at, op.step);
    }
    throw LiftError(fmt::format("no timer op of a known type in steps {}-{} of {}; {}", step_range->first,
                                step_range->second,
                                trace.sources.empty() ? std::string("the trace") : fmt::format("{}", fmt::join(trace.sources, ", ")),
                                present.empty() ? std::string("the trace holds none of a known type in any step")
                                                : fmt::format("the trace holds steps {}", step_list(present))));
  }
  job.steps = steps;
  const int32_t first = steps.front();
  std::unordered_map<int32_t, int32_t> step_index;
  for (size_t i = 0; i < steps.size(); ++i) step_index[steps[i]] = static_cast<int32_t>(i);

  // The template: DP rank 0's ops in the first step.
  for (const analyze::TimerOp& op : trace.ops) {
    if (kept(op) && op.dp_rank == 0 && op.step == first)
      job.ops.push_back({op.pp_rank, *type_of_name[op.name], op.seq, op.chunk, op.mb});
  }
  std::sort(job.ops.begin(), job.ops.end(), [](const TemplateOp& a, const TemplateOp& b) {
    return std::tie(a.stage, a.type, a.seq) < std::tie(b.stage, b.type, b.seq);
  });
  std::unordered_map<uint64_t, int32_t> index;
  index.reserve(job.ops.size() * 2);
  for (size_t k = 0; k < job.ops.size(); ++k) {
    const TemplateOp& t = job.ops[k];
    if (!index.emplace(key_of(t.stage, t.type, t.seq), static_cast<int32_t>(k)).second) {
      throw LiftError(fmt::format("DP rank 0, stage {}, step {}: two {} ops with seq_id {}; expected one per seq_id",
                                  t.stage, first, name_of(t.type), t.seq));
    }
  }
  // The same index as a dense table [stage][type][seq] (seq_ids of the template are small
  // counts), where it is small; an op outside it has no counterpart (as a failed find).
  int32_t max_seq = -1;
  bool dense_ok = true;
  for (const TemplateOp& t : job.ops) {
    if (t.seq < 0) dense_ok = false;
    max_seq = std::max(max_seq, t.seq);
  }
  const int64_t seqs = int64_t{max_seq} + 1;
  dense_ok = dense_ok && int64_t{job.pp} * kOpTypes * seqs <= (int64_t{1} << 24);
  std::vector<int32_t> dense(dense_ok ? static_cast<size_t>(int64_t{job.pp} * kOpTypes * seqs) : 0, -1);
  if (dense_ok)
    for (size_t k = 0; k < job.ops.size(); ++k) {
      const TemplateOp& t = job.ops[k];
      dense[static_cast<size_t>((int64_t{t.stage} * kOpTypes + static_cast<int64_t>(t.type)) * seqs + t.seq)] = static_cast<int32_t>(k);
    }
  const auto find_op = [&](int32_t stage, OpType type, int32_t seq) -> int32_t {
    if (!dense_ok) {
      const auto it = index.find(key_of(stage, type, seq));
      return it == index.end() ? -1 : it->second;
    }
    if (stage < 0 || stage >= job.pp || seq < 0 || seq >= seqs) return -1;
    return dense[static_cast<size_t>((int64_t{stage} * kOpTypes + static_cast<int64_t>(type)) * seqs + seq)];
  };
  // A step id's index, cached for the run of ops of one step (they mostly come in a row).
  int32_t cached_step = 0, cached_index = -1;
  const auto index_of_step = [&](int32_t step) {
    if (cached_index < 0 || step != cached_step) {
      cached_step = step;
      cached_index = step_index.at(step);
    }
    return cached_index;
  };
  for (int32_t p = 0; p < job.pp; ++p) {
    if (std::none_of(job.ops.begin(), job.ops.end(), [&](const TemplateOp& t) { return t.stage == p; }))
      throw LiftError(fmt::format("stage {}: DP rank 0 has no op in step {}; expected every worker in every step", p, first));
  }

  const int64_t rows = job.rows();
  const size_t cells = job.ops.size() * static_cast<size_t>(rows);
  std::vector<int64_t> step_first(steps.size(), std::numeric_limits<int64_t>::max());
  std::vector<int64_t> step_last(steps.size(), std::numeric_limits<int64_t>::min());
  for (const analyze::TimerOp& op : trace.ops) {
    if (!kept(op)) continue;
    const size_t s = static_cast<size_t>(index_of_step(op.step));
    step_first[s] = std::min(step_first[s], op.start_ns);
    step_last[s] = std::max(step_last[s], op.start_ns + op.dur_ns);
  }
  job.start_ms.assign(cells, std::numeric_limits<double>::quiet_NaN());
  job.dur_ms.assign(cells, 0.0);
  for (const analyze::TimerOp& op : trace.ops) {
    if (!kept(op)) continue;
    const int32_t s = index_of_step(op.step);
    const int64_t row = int64_t{s} * job.dp + op.dp_rank;
    const int32_t k = find_op(op.pp_rank, *type_of_name[op.name], op.seq);
    if (k < 0) {
      throw LiftError(fmt::format("DP rank {}, stage {}, step {}: {} #{} has no counterpart on DP rank 0 in step {} "
                                  "(the lifting needs the same ops on every DP rank and step; pass --steps to "
                                  "leave steps out)",
                                  op.dp_rank, op.pp_rank, op.step, trace.strings.str(op.name), op.seq, first));
    }
    const size_t at = job.at(k, row);
    if (!std::isnan(job.start_ms[at])) {
      throw LiftError(fmt::format("{}: recorded twice (byte {} of {}); expected one op per seq_id", job.where(k, row),
                                  op.offset, trace.sources.empty() ? std::string("the trace") : trace.sources.back()));
    }
    job.start_ms[at] = static_cast<double>(op.start_ns - step_first[static_cast<size_t>(s)]) / 1e6;
    job.dur_ms[at] = static_cast<double>(op.dur_ns) / 1e6;
    ++job.trace_ops;
  }
  for (size_t k = 0; k < job.ops.size(); ++k) {
    for (int64_t r = 0; r < rows; ++r) {
      if (std::isnan(job.start_ms[job.at(static_cast<int32_t>(k), r)])) {
        throw LiftError(fmt::format("{}: missing (DP rank 0 has it in step {}); the lifting needs the same ops on "
                                    "every DP rank and step",
                                    job.where(static_cast<int32_t>(k), r), first));
      }
    }
  }
  for (size_t s = 0; s < steps.size(); ++s)
    job.measured_step_ms.push_back(static_cast<double>(step_last[s] - step_first[s]) / 1e6);
  return job;
}

}  // namespace ppstream::whatif
