// yaml_syntax_error: one pass of libfyaml's event parser over the text (see yaml_guard.h).
#include "config/yaml_guard.h"

#include <algorithm>
#include <memory>
#include <string>

#include <libfyaml.h>

namespace ppstream::config_detail {
namespace {

struct DiagDeleter {
  void operator()(fy_diag* d) const { fy_diag_destroy(d); }
};
struct ParserDeleter {
  void operator()(fy_parser* p) const { fy_parser_destroy(p); }
};

// The first error collected by `diag`, if any.
std::optional<YamlSyntaxError> first_error(fy_diag* diag) {
  void* it = nullptr;
  if (fy_diag_error* e = fy_diag_errors_iterate(diag, &it))
    return YamlSyntaxError{e->line, e->column, e->msg ? e->msg : "invalid YAML"};  // 1-based already
  return std::nullopt;
}

// Offset of the first byte that is a C0 control other than tab, LF, CR (a NUL ends libfyaml's
// input early, and yaml-cpp then loops on what follows: "\0,"), a CR not followed by LF (a line
// break to libfyaml but not to yaml-cpp, which then loops on a ',' it sees as a flow entry), or does not start or continue a
// well-formed UTF-8 sequence (no overlongs, surrogates or code points above U+10FFFF), or npos.
size_t first_invalid_utf8(std::string_view t) {
  const auto* b = reinterpret_cast<const unsigned char*>(t.data());
  for (size_t i = 0; i < t.size();) {
    const unsigned c = b[i];
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return i;  // YAML forbids C0 controls (NUL: see below)
    if (c == '\r' && (i + 1 == t.size() || b[i + 1] != '\n')) return i;  // lone CR: the two libraries disagree
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > t.size() || (n == 2 && c < 0xC2)) return i;
    for (size_t k = 1; k < n; ++k)
      if ((b[i + k] & 0xC0) != 0x80) return i;
    if (n == 3 && ((c == 0xE0 && b[i + 1] < 0xA0) || (c == 0xED && b[i + 1] >= 0xA0))) return i;
    if (n == 4 && ((c == 0xF0 && b[i + 1] < 0x90) || c > 0xF4 || (c == 0xF4 && b[i + 1] >= 0x90))) return i;
    i += n;
  }
  return std::string_view::npos;
}

}  // namespace

std::optional<YamlSyntaxError> yaml_syntax_error(std::string_view text) {
  // YAML is UTF-8 here; libfyaml 0.7.12 loops forever on a directive holding invalid UTF-8
  // ("%\xff"), so bad bytes are refused before it sees them.
  if (const size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    const std::string_view head = text.substr(0, bad);
    const size_t nl = head.rfind('\n');
    const int line = 1 + static_cast<int>(std::count(head.begin(), head.end(), '\n'));
    const int column = 1 + static_cast<int>(nl == std::string_view::npos ? bad : bad - nl - 1);
    return YamlSyntaxError{line, column,
                           (static_cast<unsigned char>(text[bad]) < 0x20 ? "a control character (byte "
                                                                         : "invalid UTF-8 (byte ") +
                               std::to_string(bad) + ")"};
  }
  fy_diag_cfg dcfg;
  fy_diag_cfg_default(&dcfg);
  dcfg.fp = nullptr;
  dcfg.colorize = false;
  std::unique_ptr<fy_diag, DiagDeleter> diag(fy_diag_create(&dcfg));
  if (!diag) return YamlSyntaxError{1, 1, "cannot start the YAML parser (out of memory)"};
  fy_diag_set_collect_errors(diag.get(), true);
  fy_parse_cfg cfg{};
  cfg.flags = FYPCF_QUIET;  // depth limit on (the default)
  cfg.diag = diag.get();
  std::unique_ptr<fy_parser, ParserDeleter> parser(fy_parser_create(&cfg));
  if (!parser || fy_parser_set_string(parser.get(), text.data(), text.size()) != 0)
    return YamlSyntaxError{1, 1, "cannot start the YAML parser (out of memory)"};
  while (fy_event* ev = fy_parser_parse(parser.get())) {
    std::optional<YamlSyntaxError> alias;
    fy_token* anchor = ev->type == FYET_SCALAR           ? ev->scalar.anchor
                       : ev->type == FYET_SEQUENCE_START ? ev->sequence_start.anchor
                       : ev->type == FYET_MAPPING_START  ? ev->mapping_start.anchor
                                                         : nullptr;
    fy_token* tag = ev->type == FYET_SCALAR           ? ev->scalar.tag
                    : ev->type == FYET_SEQUENCE_START ? ev->sequence_start.tag
                    : ev->type == FYET_MAPPING_START  ? ev->mapping_start.tag
                                                      : nullptr;
    if (tag) {  // yaml-cpp 0.7 ends some tags earlier than libfyaml ("!a,b") and then loops on the rest
      const fy_mark* m = fy_token_start_mark(tag);
      alias = YamlSyntaxError{m ? m->line + 1 : 1, m ? m->column + 1 : 1, "tags (!name) are not supported in ppstream YAML"};
    } else if (ev->type == FYET_ALIAS || anchor) {
      const fy_mark* m = anchor ? fy_token_start_mark(anchor) : fy_event_start_mark(ev);  // marks are 0-based
      alias = YamlSyntaxError{m ? m->line + 1 : 1, m ? m->column + 1 : 1,
                              ev->type == FYET_ALIAS ? "aliases (*name) are not supported in ppstream YAML"
                                                     : "anchors (&name) are not supported in ppstream YAML"};
    }
    fy_parser_event_free(parser.get(), ev);
    if (alias) return alias;
  }
  if (fy_parser_get_stream_error(parser.get())) {
    if (auto e = first_error(diag.get())) return e;
    return YamlSyntaxError{1, 1, "invalid YAML"};
  }
  return std::nullopt;
}

}  // namespace ppstream::config_detail
