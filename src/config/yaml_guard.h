// The guard in front of yaml-cpp: every YAML text is first read by libfyaml's event parser,
// which terminates with memory bounded by the input on every input, limits nesting depth and
// reports the line and column of a syntax error. yaml-cpp 0.7 (Debian 12) is given only texts
// that pass, because on some invalid ones (a lone `,`) it loops allocating without bound and on
// deep nesting it recurses without limit. Anchors and aliases are refused: a config never needs
// them and an alias tree expands exponentially when re-dumped. Tags are refused too: yaml-cpp
// ends some of them earlier than libfyaml and then loops on the rest. Invalid UTF-8 is refused before
// libfyaml, which itself loops on a directive holding it. docs/config.md "YAML parsing".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ppstream::config_detail {

struct YamlSyntaxError {
  int line = 0;    // 1-based
  int column = 0;  // 1-based
  std::string message;
};

// nullopt when `text` is one or more well-formed YAML documents without anchors or aliases.
std::optional<YamlSyntaxError> yaml_syntax_error(std::string_view text);

}  // namespace ppstream::config_detail
