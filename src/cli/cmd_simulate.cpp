// `ppstream simulate CONFIG`: run the configuration's step through the engine with the config's
// cost and straggler models (ascend-mindspore profile) and report metrics; optionally a
// Chrome/Perfetto trace, an SVG pipeline diagram, a cluster-wide run and straggler trials.
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <iostream>
#include <limits>

#include "commands.h"
#include "config_args.h"
#include "output_path.h"
#include "ppstream/sim/simulate.h"

namespace ppstream::cli {

void register_simulate(CLI::App& app, int& exit_code) {
  struct Args {
    ConfigArgs config;
    std::string trace, svg;
    bool json = false, cluster = false, quiet = false, trace_every_rank = false;
    std::string platform = "ascend-mindspore";
    std::string cluster_engine = "replica";
    int32_t trials = 1;
    int32_t threads = 0;
    std::optional<int64_t> seed;  // signed so that CLI11 rejects "-1" instead of wrapping it to 2^64 - 1
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("simulate", "simulate one training step: timeline, waits, bubble, reduction overlap");
  args->config.add_to(cmd, true);
  // ConfigArgs registers --reduce-grad (inline | async); simulate also takes `both`.
  cmd->get_option("--reduce-grad")->description("reduction placement: inline | async | both (side by side)");
  cmd->add_option("--trace", args->trace, "write a Chrome/Perfetto trace (with both: OUT.inline.json, OUT.async.json)")
      ->check(output_file());
  cmd->add_flag("--trace-every-rank", args->trace_every_rank,
                "with --cluster: draw every rank of the world in the trace (default: replica 0), as `ppstream whatif` needs");
  cmd->add_option("--svg", args->svg, "write an SVG pipeline diagram (both policies stacked)")->check(output_file());
  cmd->add_flag("--json", args->json, "print the metrics JSON instead of the table");
  cmd->add_flag("--cluster", args->cluster, "simulate every DP replica of the world (rank = pp_rank*dp + dp_index)");
  CLI::Option* engine = cmd->add_option("--cluster-engine", args->cluster_engine,
                  "with --cluster: replica (default: every replica from replica 0's tape where it can, the same output) "
                  "or expanded (the expanded world's engine run, the check) (docs/simulate.md \"Replica vector\")")
      ->check(CLI::IsMember({"replica", "expanded"}));
  cmd->add_option("--trials", args->trials, "seeded straggler draws; prints p50/p90/p99 and the mean of the step time")->check(CLI::Range(1, std::numeric_limits<int32_t>::max()));
  cmd->add_option("--threads", args->threads, "worker threads for the trials (0: one per hardware thread); results do not depend on it")
      ->check(CLI::Range(0, 4096));
  // Checked on the text: CLI11 clamps an integer past 2^63 - 1 to it (18446744073709551615 ran as 2^63 - 1).
  cmd->add_option("--seed", args->seed, "straggler seed (overrides straggler.seed; 0 to 2^63 - 1)")
      ->check(CLI::Validator(
          [](std::string& v) {
            uint64_t n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec == std::errc() && end == v.data() + v.size() && n <= sim::kMaxSeed) return std::string();
            return v + ": expected " + sim::kSeedRange;
          },
          "SEED", "seed range"));
  cmd->add_flag("--quiet", args->quiet, "no progress bar");
  cmd->add_option("--platform", args->platform,
                  "engine profile: ascend-mindspore (MindSpore on Ascend as the runtime sets it up), "
                  "ascend-mindspore-one-comm-stream (what MS_DEV_RUNTIME_CONF multi_stream:true would cost) or "
                  "cpu-serial, cpu-mccl (cpu-serial with MCCL's eager sends) (docs/semantics.md)");
  cmd->callback([args, engine, &exit_code] {
    // `both` is ours: keep it away from the config override, which knows inline | async only.
    ConfigArgs ca = args->config;
    std::string policy = ca.reduce_grad;
    if (policy == "both") ca.reduce_grad.clear();
    // Options that mean something in cluster mode only: given without it, refused (not ignored).
    sim::check_cluster_only(args->cluster, args->trace_every_rank, engine->count() > 0 ? args->cluster_engine : "");
    sim::SimOptions o;
    o.policies = sim::parse_policies(policy);
    const auto platform = parse_platform(args->platform);
    if (!platform)
      throw std::invalid_argument("simulate --platform " + args->platform + ": expected " + platform_names());
    o.platform = *platform;
    const PipelineConfig cfg = ca.load();
    o.cluster = args->cluster;
    o.trials = args->trials;
    o.threads = args->threads;
    if (args->seed) o.seed = static_cast<uint64_t>(*args->seed);
    o.trace_path = args->trace;
    o.trace_every_rank = args->trace_every_rank;
    o.replica_vector = args->cluster_engine == "replica";
    // Asked for by name: say when the expanded engine ran instead (the output is the same).
    if (engine->count() > 0 && o.replica_vector) o.note = [](const std::string& line) { std::cerr << line << "\n"; };
    o.svg_path = args->svg;
    if (!ca.path.empty()) o.inputs.push_back(ca.path);
    const bool bar = !args->quiet && (args->trials > 1 || args->cluster) && isatty(fileno(stderr));
    if (bar)
      o.progress = [](int64_t done, int64_t total, const std::string& what) {
        constexpr int kWidth = 30;
        const auto filled = static_cast<int>(kWidth * done / std::max<int64_t>(total, 1));
        std::cerr << "\rsimulate [" << std::string(static_cast<size_t>(filled), '#')
                  << std::string(static_cast<size_t>(kWidth - filled), '.') << "] " << done << "/" << total << " runs ("
                  << what << ")" << std::flush;
        if (done == total) std::cerr << "\n";
      };
    const sim::SimReport report = [&] {
      try {
        return sim::simulate(cfg, o);
      } catch (const sim::CostOverflow& e) {
        // Name where each key was set: the CONFIG file or the --set that overrode it.
        std::string where;
        for (const std::string& k : e.keys) where += (where.empty() ? "" : ", ") + k + " from " + ca.origin_of(k);
        throw std::invalid_argument(std::string(e.what()) + (where.empty() ? "" : " (" + where + ")"));
      }
    }();
    std::cout << (args->json ? sim::report_json(report) + "\n" : sim::report_table(report));
    exit_code = 0;
  });
}

}  // namespace ppstream::cli
