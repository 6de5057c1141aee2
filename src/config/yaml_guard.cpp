// yaml_syntax_error: one pass of libfyaml's event parser over the text (see yaml_guard.h).
#include "config/yaml_guard.h"

#include <memory>

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

}  // namespace

std::optional<YamlSyntaxError> yaml_syntax_error(std::string_view text) {
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
    if (ev->type == FYET_ALIAS || anchor) {
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
