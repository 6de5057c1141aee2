// Loading trace files into one padded buffer (plain or gzip) and the small parsing helpers
// every reader shares: decimal µs → ns, error locations.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ppstream::analyze::detail {

// Reads `path` (gzip detected by its magic bytes) into one padded buffer; the only copy of the
// file held in memory. Throws TraceError naming the file.
simdjson::padded_string load_file(const std::string& path);

// "1704161511420306.491" (µs, as a JSON number's text or a string) → ns, exact to 1 ns.
// Exponent forms fall back to double. nullopt when the text is not a number.
std::optional<int64_t> parse_us_to_ns(std::string_view text);

// Integer value of a JSON number token or of a string holding one ("3"); nullopt otherwise.
std::optional<int64_t> as_int(simdjson::ondemand::value v);
// Number (or numeric string) as double; nullopt otherwise.
std::optional<double> as_double(simdjson::ondemand::value v);
// µs timestamp/duration given as number or string → ns.
std::optional<int64_t> as_us_ns(simdjson::ondemand::value v);

// simdjson errors that mean the document ends before its closing bracket (a cut file).
bool is_truncation(simdjson::error_code e);
// The error for such a file: names the end-of-file byte and, when known, the last event read.
std::string truncation_message(const std::string& path, const simdjson::padded_string& buf, const char* what,
                               std::optional<size_t> after_event);

// "file: byte 1234: " prefix for an error at `loc` inside `buf`.
std::string where(const std::string& path, const simdjson::padded_string& buf, const char* loc);

// True when `s` ends with `suffix` / starts with `prefix` / contains `needle` ignoring ASCII case.
bool ends_with(std::string_view s, std::string_view suffix);
bool istarts_with(std::string_view s, std::string_view prefix);
bool icontains(std::string_view s, std::string_view needle);

}  // namespace ppstream::analyze::detail
