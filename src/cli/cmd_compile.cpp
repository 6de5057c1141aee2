// `ppstream compile CONFIG`: lower a configuration to per-rank stream programs, verify them
// (after every pass, then under the requested platforms) and print them as text or JSON.
#include <iostream>
#include <limits>
#include <optional>

#include "commands.h"
#include "config_args.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"

namespace ppstream::cli {

void register_compile(CLI::App& app, int& exit_code) {
  struct Args {
    ConfigArgs config;
    std::optional<int32_t> rank;  // none: every rank
    std::string format = "text";
    std::string platforms = "all";
    bool expanded = false;
    bool passes = false;
    bool dump = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("compile", "compile a configuration to verified stream programs");
  args->config.add_to(cmd, false);
  cmd->add_option("--rank", args->rank, "print only this rank's program")->check(CLI::Range(0, std::numeric_limits<int32_t>::max()));
  cmd->add_option("--format", args->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--platform", args->platforms, "verify under: strict,ascend-mindspore,cpu-serial or all");
  cmd->add_flag("--expanded", args->expanded, "one program per DP rank (rank = pp_rank*dp + dp_index)");
  cmd->add_flag("--passes", args->passes, "print the pass list and exit");
  cmd->add_flag("--dump-after-each", args->dump, "print the programs after every pass");
  cmd->callback([args, &exit_code] {
    const PipelineConfig cfg = args->config.load();
    if (args->passes) {
      for (const Pass& p : lowering_pipeline(cfg)) std::cout << p.name << "\n";
      if (args->expanded) std::cout << "expand-world\n";
      return;
    }
    const World world = cfg.world(args->expanded);
    const int64_t ranks = args->expanded ? int64_t{world.pp} * world.dp() : world.pp;
    if (args->rank && *args->rank >= ranks)
      throw std::invalid_argument("--rank " + std::to_string(*args->rank) + ": no such rank; this configuration has ranks 0.." +
                                  std::to_string(ranks - 1) + (args->expanded ? "" : " (add --expanded for every DP rank)"));
    LowerOptions lo;
    lo.expanded = args->expanded;
    if (args->dump)
      lo.dump = [only = args->rank](const std::string& pass, const ProgramSet& set) {
        std::cout << "# after pass " << pass << "\n" << (only ? to_text(set, Rank{*only}) : to_text(set)) << "\n";
      };
    const ProgramSet set = compile(cfg, lo);
    VerifyOptions vo;
    vo.platforms = parse_platform_list(args->platforms);
    const auto violations = verify(set, vo);
    for (const Violation& v : violations) std::cerr << v.to_string() << "\n";
    if (!violations.empty()) {
      exit_code = 1;
      return;
    }
    if (args->rank) {
      const Rank r{*args->rank};
      bool found = false;
      for (const Program& p : set.programs) found = found || p.rank == r;
      if (!found) throw std::invalid_argument("--rank " + std::to_string(*args->rank) + ": no such rank in the program set");
      if (args->format == "json") {
        ProgramSet one = set;
        std::erase_if(one.programs, [&](const Program& p) { return p.rank != r; });
        std::cout << to_json(one, 1) << "\n";
      } else {
        std::cout << to_text(set, r);
      }
      return;
    }
    std::cout << (args->format == "json" ? to_json(set, 1) + "\n" : to_text(set));
  });
}

}  // namespace ppstream::cli
