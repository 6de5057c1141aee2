// `ppstream analyze PATH... [--json] [--step N]` and `ppstream diff BASELINE OPTIMIZED [--json]`.
#include <iostream>
#include <memory>
#include <optional>

#include "commands.h"
#include "ppstream/analyze/analyze.h"

namespace ppstream::cli {

void register_analyze(CLI::App& app, int& exit_code) {
  struct AnalyzeArgs {
    std::vector<std::string> paths;
    bool json = false;
    std::optional<int64_t> step;
  };
  auto a = std::make_shared<AnalyzeArgs>();
  auto* cmd = app.add_subcommand("analyze", "Metrics, stream waits, overlap and PP wait chains of traces "
                                            "(ppstream, PyTorch Kineto, Ascend profiler)");
  cmd->add_option("paths", a->paths, "trace files (.json, .json.gz, .csv) or profiler directories")->required();
  cmd->add_flag("--json", a->json, "print the result as JSON");
  cmd->add_option("--step", a->step, "analyze only this profiler step (needs step markers)");
  cmd->callback([a, &exit_code]() {
    analyze::AnalyzeOptions opts;
    opts.step = a->step;
    auto r = analyze::analyze_paths(a->paths, opts);
    if (a->json) {
      r.write_json(std::cout);
      std::cout << "\n";
    } else {
      std::cout << r.to_text();
    }
    exit_code = 0;
  });

  struct DiffArgs {
    std::string baseline, optimized;
    bool json = false;
  };
  auto d = std::make_shared<DiffArgs>();
  auto* dc = app.add_subcommand("diff", "Every analyze metric per rank and stage, baseline vs optimized");
  dc->add_option("baseline", d->baseline, "baseline trace file or directory")->required();
  dc->add_option("optimized", d->optimized, "optimized trace file or directory")->required();
  dc->add_flag("--json", d->json, "print the result as JSON");
  dc->callback([d, &exit_code]() {
    auto r = analyze::diff_paths({d->baseline}, {d->optimized});
    std::cout << (d->json ? r.to_json() + "\n" : r.to_text());
    exit_code = 0;
  });
}

}  // namespace ppstream::cli
