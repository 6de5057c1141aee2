// The small parsing helpers every reader shares: decimal µs → ns, numbers from JSON values,
// the truncation error, name matching. (Files are read in chunks: json_stream.h.)
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ppstream::analyze::detail {

// Why parse_us_to_ns gives no value: the text is not a number (an optional sign, digits with at
// most one point, an optional exponent), or it is one beyond int64 ns (|value| ≥ 9.2e15 µs).
enum class UsFault { NOT_A_NUMBER, OUT_OF_RANGE };
// "1704161511420306.491" (µs, as a JSON number's text or a string) → ns, exact to 1 ns.
// Exponent forms fall back to double. nullopt when the text is not a number or out of range;
// then *why (when given) says which: one grammar for the value and for its error message.
std::optional<int64_t> parse_us_to_ns(std::string_view text, UsFault* why = nullptr);

// Integer value of a JSON number token or of a string holding one ("3"); nullopt otherwise.
std::optional<int64_t> as_int(simdjson::ondemand::value v);
// Number (or numeric string) as double; nullopt otherwise.
std::optional<double> as_double(simdjson::ondemand::value v);
// The text of a number token or of a string's contents; nullopt for any other type.
std::optional<std::string_view> scalar_text(simdjson::ondemand::value v);
// µs timestamp/duration given as number or string → ns (parse_us_to_ns of scalar_text).
std::optional<int64_t> as_us_ns(simdjson::ondemand::value v);

// The error for a file that ends inside the JSON document: names the end-of-file byte
// (`end_offset`, decompressed) and, when `events_read` > 0, the last complete event.
std::string truncation_message(const std::string& path, uint64_t end_offset, size_t events_read);

// True when `s` ends with `suffix` / starts with `prefix` / contains `needle` ignoring ASCII case.
bool ends_with(std::string_view s, std::string_view suffix);
bool istarts_with(std::string_view s, std::string_view prefix);
bool icontains(std::string_view s, std::string_view needle);

}  // namespace ppstream::analyze::detail
