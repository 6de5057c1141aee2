// Errors under the `cost:` and `straggler:` sections name FILE:LINE like the top-level keys do
// (PipelineConfig::extra_where, sim::trial_setup); a key set by --set stays unlocated.
#include <gtest/gtest.h>

#include <string>

#include "../analyze/util.h"
#include "ppstream/config/config.h"
#include "ppstream/sim/trials.h"

namespace ppstream {
namespace {
using analyze::testing::temp_dir;
using analyze::testing::write_file;

std::string setup_error(const PipelineConfig& cfg) {
  try {
    sim::trial_setup(cfg, cfg.world(true));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(ConfigSectionWhere, CostAndStragglerErrorsNameFileAndLine) {
  const std::string base = "pipeline_parallel_size: 2\nmicro_batch_num: 4\nnum_layers: 4\n";
  const auto dir = temp_dir("section_where");
  const std::string cost = write_file(dir / "cost.yaml", base + "cost:\n  forward_ms_per_layer: 1\n  forward_ms_per_layr: 2\n");
  EXPECT_EQ(setup_error(load_config_file(cost)).find("config: " + cost + ":6: cost.forward_ms_per_layr: unknown key"), 0u)
      << setup_error(load_config_file(cost));
  const std::string strag = write_file(dir / "strag.yaml", base + "straggler:\n  sed: 3\n");
  EXPECT_EQ(setup_error(load_config_file(strag)).find("config: " + strag + ":5: straggler.sed"), 0u)
      << setup_error(load_config_file(strag));
  // Set on the command line: no line of the file to name.
  PipelineConfig c = load_config_file(cost);
  apply_override(c, "cost.forward_ms_per_layr", "3");
  EXPECT_EQ(setup_error(c).find(cost + ":6"), std::string::npos) << setup_error(c);
}

}  // namespace
}  // namespace ppstream
