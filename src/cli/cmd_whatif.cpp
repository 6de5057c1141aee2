// `ppstream whatif PATH... [--json] [--svg OUT.svg] [--trace OUT.json] [--steps A-B] [--agg mean|median]
// [--reduce-grad inline|async] [--evaluator engine|graph] [--check-programs]`
// (docs/whatif.md).
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "commands.h"
#include "output_path.h"
#include "ppstream/analyze/readers.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::cli {
namespace {

std::pair<int32_t, int32_t> parse_steps(const std::string& s) {
  const auto dash = s.find('-');
  int32_t a = 0, b = 0;
  const auto num = [](std::string_view t, int32_t& out) {
    auto r = std::from_chars(t.data(), t.data() + t.size(), out);
    return r.ec == std::errc{} && r.ptr == t.data() + t.size() && !t.empty();
  };
  const std::string_view v(s);
  const bool ok = dash == std::string::npos ? num(v, a) && (b = a, true) : num(v.substr(0, dash), a) && num(v.substr(dash + 1), b);
  if (!ok || a > b) throw std::invalid_argument("whatif: --steps '" + s + "': expected A-B with integers A <= B, or A");
  return {a, b};
}

void write_file(const std::string& path, const std::string& text) {
  errno = 0;
  std::ofstream f(path);
  if (!f || !(f << text).flush())
    throw std::runtime_error("whatif: cannot write " + path + ": " + std::strerror(errno == 0 ? EIO : errno));
}

}  // namespace

void register_whatif(CLI::App& app, int& exit_code) {
  struct Args {
    std::vector<std::string> paths;
    bool json = false, check_programs = false;
    std::string svg, trace, steps, agg = "mean", reduce_grad, evaluator = "engine";
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("whatif", "Straggler what-if of a job's Megatron timer trace or a ppstream trace: slowdown S, per DP rank, "
                                           "stage and op type, M_W, M_S (docs/whatif.md)");
  cmd->add_option("paths", a->paths, "timer traces (.json, .json.gz: the what-if artifact's timeline format), or one ppstream "
                  "trace (simulate --cluster --trace-every-rank --trace T.json with T.json.config.yaml beside it, a replay "
                  "--trace DIR, or a `ppstream train` run directory)")->required();
  cmd->add_flag("--json", a->json, "print the result as JSON");
  cmd->add_option("--svg", a->svg, "write the DP rank x stage heatmap here")->check(output_file());
  cmd->add_option("--trace", a->trace, "write the straggler-free (ideal) step as a Chrome/Perfetto trace here")
      ->check(output_file());
  cmd->add_option("--steps", a->steps, "analyse only steps A-B (inclusive)");
  cmd->add_option("--agg", a->agg, "ideal durations: mean (compute by mean, communication by median) or median")
      ->check(CLI::IsMember({"mean", "median"}));
  cmd->add_option("--reduce-grad", a->reduce_grad, "counterfactual: re-place the gradient reductions (inline | async) "
                                                  "and predict the step")
      ->check(CLI::IsMember({"inline", "async"}));
  CLI::Option* evaluator = cmd->add_option("--evaluator", a->evaluator, "timer traces: what computes the figures: engine (default: the engine on "
                  "the lifted, verified stream programs) or graph (the lifted graph's own evaluator, the cross-check); "
                  "the figures are the same but the re-simulation with launch delays (docs/whatif.md)")
      ->check(CLI::IsMember({"engine", "graph"}));
  cmd->add_flag("--check-programs", a->check_programs,
                "timer traces: also run the other evaluator (graph or engine) beside every evaluation and report the "
                "largest difference (programs_check in the result)");
  cmd->callback([a, evaluator, &exit_code]() {
    whatif::WhatIfOptions opts;
    if (!a->steps.empty()) opts.steps = parse_steps(a->steps);
    opts.agg = a->agg == "median" ? whatif::Agg::MEDIAN : whatif::Agg::MEAN;
    if (!a->reduce_grad.empty()) opts.reduce_grad = parse_reduce_policy(a->reduce_grad);
    opts.check_programs = a->check_programs;
    opts.evaluator = a->evaluator == "graph" ? whatif::Evaluator::GRAPH : whatif::Evaluator::ENGINE;
    const bool tty = isatty(STDERR_FILENO) != 0;
    opts.progress = [tty](int64_t done, int64_t total) {
      if (tty && total > 20) std::cerr << "\rwhatif: simulation " << done << "/" << total << (done == total ? "\n" : "") << std::flush;
    };
    // The outputs before the analysis (which can take minutes): not an input, and writable.
    if (!a->svg.empty()) check_output_path("whatif --svg", a->svg, a->paths);
    if (!a->trace.empty()) check_output_path("whatif --trace", a->trace, a->paths);
    if (!a->svg.empty() && !a->trace.empty())
      if (const auto twice = analyze::same_output({{"--svg", a->svg}, {"--trace", a->trace}}))
        throw std::invalid_argument("whatif: " + *twice + "; write them to different files");
    // ppstream's own trace (simulate --trace): the stream-program path; otherwise Megatron timelines.
    const std::optional<std::string> one = whatif::ppstream_trace_of(a->paths);
    const bool ours = one.has_value();
    if (ours && a->check_programs)
      throw std::invalid_argument("whatif --check-programs: for Megatron timer traces; a ppstream trace (" +
                                  a->paths.front() + ") is already lifted into programs the engine runs");
    if (ours && evaluator->count() > 0)  // given but not read would be an option silently ignored
      throw std::invalid_argument("whatif --evaluator: for Megatron timer traces; a ppstream trace (" +
                                  a->paths.front() + ") is lifted into its compiled programs and always run by the engine");
    if (ours && !a->trace.empty())
      throw std::invalid_argument("whatif --trace: the ideal timeline is drawn for Megatron timer traces only, not for "
                                  "a ppstream trace (" + a->paths.front() + ")");
    const auto r = ours ? whatif::analyze_ppstream_trace(a->paths.front(), opts) : whatif::analyze_paths(a->paths, opts);
    if (!a->svg.empty()) write_file(a->svg, whatif::to_svg(r));
    if (!a->trace.empty()) write_file(a->trace, whatif::to_trace(r));
    std::cout << (a->json ? whatif::to_json(r) : whatif::to_text(r));
    exit_code = 0;
  });
}

}  // namespace ppstream::cli
