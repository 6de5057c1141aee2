#include "run_app.h"

#include <cstdlib>
#include <exception>
#include <iostream>
#include <regex>
#include <string>

namespace ppstream::cli {
namespace {

// An option's value type as CLI11 names it ("INT", "UINT", "FLOAT", "TEXT"), without validators.
std::string base_type(const CLI::Option& o) {
  const std::string t = o.get_type_name();
  return t.substr(0, t.find(':'));
}

bool is_integer(const std::string& v) { return std::regex_match(v, std::regex("[-+]?[0-9]+")); }
bool is_number(const std::string& v) {
  char* end = nullptr;
  (void)std::strtod(v.c_str(), &end);
  return !v.empty() && end == v.c_str() + v.size();
}

// Every command's unsigned integer options refuse a negative value (CLI11 parses "-1" into an
// unsigned type as 2^64-1): one validator on each, added before the parse.
void refuse_negative_unsigned(CLI::App& app) {
  for (CLI::Option* o : app.get_options())
    if (base_type(*o) == "UINT")
      o->check(CLI::Validator(
          [](std::string& v) { return !v.empty() && v[0] == '-' ? std::string("expected an integer >= 0") : std::string(); },
          "", "non-negative"));
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_negative_unsigned(*sub);
}

// The command path ("tune") and the option a CLI11 conversion or validation error names.
const CLI::Option* find_option(const CLI::App& app, const std::string& name, std::string& where) {
  for (const CLI::Option* o : app.get_options())
    if (o->check_name(name)) {
      where = app.get_name();
      return o;
    }
  // The command given (simulate and tune both have --trials, say).
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return a->parsed(); }))
    if (const CLI::Option* o = find_option(*sub, name, where)) return o;
  return nullptr;
}

// A value that is not of its option's type, worded for every command in one place: "tune
// --trials abc: expected an integer" (CLI11: "Value abc not in range 1 to 2147483647", "Could not
// convert: --budget-s = abc"). Empty when the error is about something else (a range, say).
std::string type_message(const CLI::App& app, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::ConversionError*>(&e) == nullptr && dynamic_cast<const CLI::ValidationError*>(&e) == nullptr)
    return {};
  std::smatch m;
  const std::string what = e.what();
  if (!std::regex_search(what, m, std::regex("--[A-Za-z0-9][A-Za-z0-9_-]*"))) return {};
  std::string where;
  const CLI::Option* o = find_option(app, m.str(), where);
  if (o == nullptr) return {};
  const std::string type = base_type(*o);
  const bool integer = type == "INT" || type == "UINT";
  if (!integer && type != "FLOAT") return {};
  for (const std::string& v : o->results()) {
    if (integer ? is_integer(v) : is_number(v)) continue;
    return (where.empty() ? std::string() : where + " ") + m.str() + " " + v + ": expected " +
           (integer ? type == "UINT" ? "an integer >= 0" : "an integer" : "a number");
  }
  return {};
}

}  // namespace

int run_app(CLI::App& app, int argc, char** argv, const int& exit_code) {
  refuse_negative_unsigned(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (const std::string typed = type_message(app, e); !typed.empty()) {
      std::cerr << "ppstream: " << typed << "\n";
      return 2;
    }
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::exception& e) {
    std::cerr << "ppstream: " << e.what() << "\n";
    return 2;
  }
  return exit_code;
}

}  // namespace ppstream::cli
