// Small readers for the simulator's YAML sections: every error names the section, key, line
// (within the section text) and the value, and says what was expected.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "ppstream/config/config.h"

namespace ppstream::sim::yaml {

// Throws ConfigError "config: <section>.<key>=<value> (line N): expected <what>".
[[noreturn]] void fail(const std::string& section, const std::string& key, const YAML::Node& node,
                       const std::string& expected);
// Parses the section text; an empty or null section gives an empty map.
YAML::Node load_section(const std::string& section, const std::string& text);
// Rejects keys outside `allowed` with a did-you-mean.
void check_keys(const std::string& section, const YAML::Node& map, const std::vector<std::string>& allowed);
double number(const std::string& section, const std::string& key, const YAML::Node& node, double min_value);
// `expected` (when given) words the range in the error instead of "an integer >= MIN".
int64_t integer(const std::string& section, const std::string& key, const YAML::Node& node, int64_t min_value,
                const char* expected = nullptr);
std::string text(const std::string& section, const std::string& key, const YAML::Node& node);
bool boolean(const std::string& section, const std::string& key, const YAML::Node& node);

}  // namespace ppstream::sim::yaml
