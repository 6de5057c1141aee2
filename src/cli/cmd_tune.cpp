// `ppstream tune CONFIG`: search the plan space for the lowest p99 (or p50, mean) step time
// under the config's straggler model, within a memory budget (docs/tune.md); --apply writes the
// best plan as a config file that simulate, replay and train read unchanged.
// `ppstream tune --from-trace PATH...`: the same search over variants of the traces' config, on
// the measured job's costs and observed tails (docs/tune.md "From a trace").
#include <fmt/format.h>
#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include "commands.h"
#include "config_args.h"
#include "output_path.h"
#include "ppstream/tune/tune.h"

namespace ppstream::cli {
namespace {

namespace fs = std::filesystem;

// The best plan's YAML as --apply writes it at `out`. A config with a train: section imports
// train.model / train.data / train.eval_data (MODULE:FUNCTION) from its own directory, or from
// train.module_dir relative to it (docs/config.md "train:"): written into another directory, the
// plan names that directory as train.module_dir, absolute, so the factories are the same files.
std::string applied_yaml(const std::string& yaml, const std::string& source, const std::string& out) {
  PipelineConfig c = load_config_text(yaml, "tune's best plan");
  const auto train = c.extra_sections.find("train");
  if (train == c.extra_sections.end()) return yaml;
  const fs::path from = fs::weakly_canonical(fs::absolute(source.empty() ? fs::path("x") : fs::path(source))).parent_path();
  fs::path modules = from;
  const YAML::Node section = YAML::Load(train->second);
  if (section.IsMap() && section["module_dir"] && section["module_dir"].IsScalar() && !section["module_dir"].Scalar().empty())
    modules = fs::weakly_canonical(from / section["module_dir"].Scalar());
  if (modules == fs::weakly_canonical(fs::absolute(fs::path(out))).parent_path()) return yaml;
  apply_override(c, "train.module_dir", YAML::Dump(YAML::Node(modules.string())));
  return to_yaml(c);
}

}  // namespace

void register_tune(CLI::App& app, int& exit_code) {
  struct Args {
    ConfigArgs config;
    std::string objective = "p99";
    int32_t trials = 200;
    std::optional<std::string> memory_budget;
    std::optional<double> budget_s;
    std::vector<std::string> space;
    bool json = false, progress = false, quiet = false;
    std::string apply;
    int32_t show = 5;
    std::vector<std::string> traces;
    uint64_t trace_seed = 0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("tune", "search schedule and reduction placement for the lowest p99 step time within a memory budget");
  args->config.add_to(cmd, false);
  cmd->add_option("--from-trace", args->traces,
                  "ppstream traces of one job (simulate --trace T.json with T.json.config.yaml, replay --trace DIR): "
                  "plans are variants of their config, costed and tailed by the measured job");
  CLI::Option* seed = cmd->add_option("--trace-seed", args->trace_seed, "--from-trace: seed of each trial's draw of a measured step per rank");
  cmd->add_option("--objective", args->objective, "p99 | p50 | mean of the step time over the trials");
  cmd->add_option("--trials", args->trials, "straggler trials of a fully evaluated plan (the same draws for every plan)")
      ->check(CLI::Range(1, std::numeric_limits<int32_t>::max()));
  cmd->add_option("--memory-budget", args->memory_budget,
                  "peak bytes any rank may hold (sim memory model), e.g. 85899345920, 80GiB, 80GB; plans over it are dropped");
  cmd->add_option("--space", args->space, "KEY=V1,V2 axes of the plan space (replace the default space)");
  cmd->add_option("--budget-s", args->budget_s, "wall-clock budget in seconds; stops with the best plans so far");
  cmd->add_option("--show", args->show, "plans listed")->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", args->json, "print the search JSON instead of the table");
  cmd->add_option("--apply", args->apply, "write the best plan as a config file");
  cmd->add_flag("--progress", args->progress, "draw the progress bar on stderr even when it is not a terminal");
  cmd->add_flag("--quiet", args->quiet, "no progress bar");
  cmd->callback([args, seed, &exit_code] {
    const bool from_trace = !args->traces.empty();
    if (from_trace && (!args->config.path.empty() || !args->config.sets.empty() || !args->config.reduce_grad.empty()))
      throw std::invalid_argument("tune --from-trace: the plans are variants of the traces' own config; give no CONFIG, "
                                  "--set or --reduce-grad (use --space for the keys to vary)");
    if (!from_trace && seed->count() > 0)
      throw std::invalid_argument("tune --trace-seed: only with --from-trace (a config's trials draw from its straggler: seed)");
    if (!from_trace && args->config.path.empty() && args->config.sets.empty())
      throw std::invalid_argument("tune: give a CONFIG file, or --from-trace PATH...");
    // --apply's target, before the search (which can take minutes): not a file the search reads
    // (writing it would replace the user's config, comments and all, or a trace's config), and a
    // path a file can be written at.
    const auto check_apply = [&](const std::vector<std::string>& inputs) {
      if (!args->apply.empty()) check_output_path("tune --apply", args->apply, inputs, "the search");
    };
    std::vector<std::string> inputs = args->traces;
    if (!from_trace) inputs.push_back(args->config.path);
    for (const std::string& t : args->traces) inputs.push_back(t + ".config.yaml");
    check_apply(inputs);
    std::optional<tune::TraceJob> job;
    if (from_trace) {
      job = tune::lift_traces(args->traces);
      check_apply({job->config_path});
    }
    const PipelineConfig cfg = from_trace ? job->config : args->config.load();
    tune::TuneOptions o;
    o.trace_seed = args->trace_seed;
    const auto objective = tune::parse_objective(args->objective);
    if (!objective) throw std::invalid_argument("tune --objective " + args->objective + ": expected p99, p50 or mean");
    o.objective = *objective;
    o.trials = args->trials;
    if (args->memory_budget) o.memory_budget_bytes = tune::parse_memory_budget(*args->memory_budget);
    o.budget_s = args->budget_s;
    o.show = args->show;
    for (const std::string& s : args->space) o.space.push_back(tune::parse_dimension(s, cfg));
    if (!args->quiet && (args->progress || isatty(fileno(stderr))))
      o.progress = [](int64_t done, int64_t planned, const std::string& what) {
        constexpr int kWidth = 30;
        const int64_t total = std::max(planned, done);
        const auto filled = static_cast<int>(kWidth * done / std::max<int64_t>(total, 1));
        std::cerr << "\rtune [" << std::string(static_cast<size_t>(filled), '#')
                  << std::string(static_cast<size_t>(kWidth - filled), '.') << "] " << done << "/" << total << " runs ("
                  << what.substr(0, 60) << ")\033[K" << std::flush;
      };
    const tune::TuneReport r = job ? tune::tune(*job, o) : tune::tune(cfg, o);
    if (o.progress) std::cerr << "\n";
    // The report first: a search with nothing to apply still says what it found (and why).
    std::cout << (args->json ? tune::tune_json(r) + "\n" : tune::tune_table(r)) << std::flush;
    if (!args->apply.empty()) {
      if (r.plans.empty())
        throw std::invalid_argument(
            r.evaluated > 0 ? std::string("tune --apply: no plan within the memory budget to write (the report above lists the search)")
                    : r.stopped_by_budget ? "tune --apply: no plan in the space was scored before --budget-s ran out"
                                          : fmt::format("tune --apply: no plan in the space was scored ({} point{}, {} verified; the "
                                                        "report above says why they were set aside)",
                                                        r.candidates, r.candidates == 1 ? "" : "s", r.verified));
      std::ofstream f(args->apply);
      if (!f) throw std::invalid_argument("tune --apply: cannot write " + args->apply);
      const tune::PlanResult& best = r.plans.front();
      f << "# written by ppstream tune: " << best.label << " (" << tune::to_string(r.objective) << " "
        << fmt::format("{:.3f}", best.score_ms) << " ms"
        << (r.objective == tune::Objective::P99 ? std::string() : fmt::format(", p99 {:.3f} ms", best.p99_ms)) << " over " << best.trials
        << " trials: `ppstream simulate THIS.yaml --trials " << best.trials << "` reproduces them)\n"
        << applied_yaml(best.yaml, job ? job->config_path : args->config.path, args->apply);
      if (!f) throw std::invalid_argument("tune --apply: error writing " + args->apply);
    }
    exit_code = 0;
  });
}

}  // namespace ppstream::cli
