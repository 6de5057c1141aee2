// Small JSON side files (communication.json, communication_matrix.json, profiler_metadata.json)
// read whole with nlohmann::json; errors name the file and byte.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace ppstream::analyze::detail {

// Throws TraceError "file: byte N: malformed JSON: …".
nlohmann::json parse_json_file(const std::string& path);
// nlohmann's what() without its "[json.exception.…] " id.
std::string without_json_id(const char* what);

}  // namespace ppstream::analyze::detail
