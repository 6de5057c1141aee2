// `ppstream verify CONFIG` (one configuration, every rule, under the requested platforms) and
// `ppstream verify --grid` (every configuration of the grid; prints a count).
#include <chrono>
#include <iostream>

#include "commands.h"
#include "config_args.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/format.h"
#include "ppstream/grid/grid.h"
#include "ppstream/verify/verify.h"

namespace ppstream::cli {

void register_verify(CLI::App& app, int& exit_code) {
  struct Args {
    ConfigArgs config;
    std::string platforms = "all";
    std::string programs;  // verify a program file (text or JSON) instead of compiling
    bool grid = false;
    bool expanded = false;
    int max_pp = 8, max_vpp = 4, max_mb = 32;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("verify", "verify the programs of a configuration (or the whole grid)");
  args->config.add_to(cmd, false);
  cmd->add_option("--platform", args->platforms, "strict,ascend-mindspore,cpu-serial or all");
  cmd->add_option("--programs", args->programs, "verify this program file (.txt canonical text or .json)");
  cmd->add_flag("--grid", args->grid, "verify every configuration of the grid (PP 1-8, VPP 1-4, ...)");
  cmd->add_flag("--expanded", args->expanded, "build every DP rank");
  cmd->add_option("--max-pp", args->max_pp, "grid: largest PP size");
  cmd->add_option("--max-vpp", args->max_vpp, "grid: largest VPP size");
  cmd->add_option("--max-microbatches", args->max_mb, "grid: largest microbatch count");
  cmd->callback([args, cmd, &exit_code] {
    // Each mode reads its own inputs; anything given for another mode would be silently ignored.
    const ConfigArgs& ca = args->config;
    const bool config_given = !ca.path.empty() || !ca.sets.empty() || !ca.reduce_grad.empty();
    if (args->grid && (config_given || !args->programs.empty()))
      throw std::invalid_argument("verify --grid builds its own configurations; drop CONFIG, --set, --reduce-grad and --programs");
    if (!args->programs.empty() && (config_given || args->expanded))
      throw std::invalid_argument("verify --programs " + args->programs +
                                  " verifies the file as written; drop CONFIG, --set, --reduce-grad and --expanded");
    const bool max_given = cmd->count("--max-pp") + cmd->count("--max-vpp") + cmd->count("--max-microbatches") > 0;
    if (!args->grid && max_given)
      throw std::invalid_argument("verify: --max-pp, --max-vpp and --max-microbatches only apply with --grid");
    if (args->grid) {
      GridOptions go;
      go.max_pp = args->max_pp;
      go.max_vpp = args->max_vpp;
      go.max_microbatches = args->max_mb;
      go.expanded = args->expanded;
      go.platforms = parse_platform_list(args->platforms);
      const auto t0 = std::chrono::steady_clock::now();
      const GridResult r = verify_grid(go);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (const std::string& f : r.failures) std::cerr << "FAIL " << f << "\n";
      std::cout << "grid: " << r.configs - static_cast<int64_t>(r.failures.size()) << "/" << r.configs
                << " configurations verified (" << r.programs_verified << " rank programs, " << r.instructions
                << " instructions) in " << secs << " s\n";
      exit_code = r.failures.empty() ? 0 : 1;
      return;
    }
    ProgramSet set;
    if (!args->programs.empty()) {
      set = read_program_file(args->programs);
    } else {
      LowerOptions lo;
      lo.expanded = args->expanded;
      lo.verify_each_pass = false;  // report every violation of the final programs below
      set = compile(args->config.load(), lo);
    }
    VerifyOptions vo;
    vo.platforms = parse_platform_list(args->platforms);
    const auto violations = verify(set, vo);
    for (const Violation& v : violations) std::cout << v.to_string() << "\n";
    size_t instrs = 0;
    for (const Program& p : set.programs) instrs += p.instrs.size();
    if (violations.empty())
      std::cout << "verify: ok (" << set.programs.size() << " rank programs, " << instrs << " instructions, platforms "
                << args->platforms << ")\n";
    else
      std::cout << "verify: " << violations.size() << " violation(s)\n";
    exit_code = violations.empty() ? 0 : 1;
  });
}

}  // namespace ppstream::cli
