// Hardening regressions for YAML input: texts on which yaml-cpp 0.7 loops without bound, recurses
// without limit or expands aliases are refused by the libfyaml guard with FILE:LINE:COLUMN.
#include <gtest/gtest.h>

#include <string>

#include "config/yaml_guard.h"
#include "ppstream/config/config.h"

namespace ppstream {
namespace {

std::string load_error(const std::string& yaml) {
  try {
    load_config_text(yaml, "t.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(HardenYaml, LoneFlowIndicatorIsALocatedError) {
  // Was: 12-14 GB allocated and no end (yaml-cpp's document loop on a stray ',').
  EXPECT_EQ(load_error(","), "config: t.yaml:1:1: invalid YAML: did not find expected node content");
  EXPECT_EQ(load_error("pipeline_parallel_size: 4\n{,}\n").rfind("config: t.yaml:2:", 0), 0u) << load_error("{,}");
}

TEST(HardenYaml, DeepNestingIsRefusedNotRecursed) {
  const std::string deep = "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  const std::string e = load_error(deep);
  EXPECT_EQ(e.rfind("config: t.yaml:1:", 0), 0u) << e;
  EXPECT_NE(e.find("invalid YAML"), std::string::npos) << e;
}

TEST(HardenYaml, AnchorsAndAliasesAreRefused) {
  // Located at the anchor's name (libfyaml's token mark).
  EXPECT_EQ(load_error("pipeline_parallel_size: &p 4\nmicro_batch_num: *p\n"),
            "config: t.yaml:1:26: invalid YAML: anchors (&name) are not supported in ppstream YAML");
}

TEST(HardenYaml, OverrideValueIsGuarded) {
  PipelineConfig cfg = load_config_text("pipeline_parallel_size: 2\nnum_layers: 4\nmicro_batch_num: 4\n", "t.yaml");
  try {
    apply_overrides(cfg, {{"micro_batch_num", ","}});
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config: micro_batch_num=,: not a YAML value (column 1: did not find expected node content)");
  }
}

// Long fuzz run of set_override: a section key with empty parts and non-UTF-8 bytes was written
// into the section's YAML text; the next override of that section made yaml-cpp throw
// "bad file" unlocated. Keys are now checked as dot-separated names.
TEST(HardenYaml, OverrideSectionKeyMustBeNames) {
  PipelineConfig cfg = load_config_text("pipeline_parallel_size: 2\nnum_layers: 4\nmicro_batch_num: 4\n", "t.yaml");
  for (const std::string& key : {std::string("model..x"), std::string("model.a\xff\x01"), std::string("model.")}) {
    try {
      apply_overrides(cfg, {{key, "4"}});
      FAIL() << "accepted " << key;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("expected dot-separated names of letters, digits, '_' or '-'"), std::string::npos) << what;
    }
  }
  try {
    apply_overrides(cfg, {{"model.a\xff\x01", "4"}});
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'model.a\\xff\\x01'"), std::string::npos) << e.what();
  }
  apply_overrides(cfg, {{"model.hidden_size", "64"}, {"model.moe.top-k", "2"}});
  EXPECT_NE(cfg.extra_sections.at("model").find("top-k: 2"), std::string::npos) << cfg.extra_sections.at("model");
}

TEST(HardenYaml, GuardAcceptsWellFormedText) {
  EXPECT_EQ(config_detail::yaml_syntax_error("a: 1\nb: [1, 2]\nc: {d: x}\n"), std::nullopt);
  EXPECT_EQ(config_detail::yaml_syntax_error(""), std::nullopt);
}

}  // namespace
}  // namespace ppstream

namespace ppstream {
namespace {

TEST(HardenYaml, InvalidUtf8IsRefusedBeforeLibfyaml) {
  // libfyaml 0.7.12 loops forever on a directive holding invalid UTF-8 (found by set_override).
  const auto e = config_detail::yaml_syntax_error("a: 1\n%\xff" "d\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->line, 2);
  EXPECT_EQ(e->column, 2);
  EXPECT_EQ(e->message, "invalid UTF-8 (byte 6)");
  EXPECT_EQ(config_detail::yaml_syntax_error("a: \xc3\xa9\n"), std::nullopt);  // é is fine
}

TEST(HardenYaml, RuleAboutUnwrittenKeysNamesTheFile) {
  // Was "config: no layers given: ..." for a file that never wrote a layer key (fuzz regression).
  const std::string e = load_error("# layers forgotten\nmicro_batch_num: 4\n");
  EXPECT_EQ(e.rfind("config: t.yaml", 0), 0u) << e;
}

}  // namespace
}  // namespace ppstream
