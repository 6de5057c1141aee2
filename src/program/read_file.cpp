// read_program_file: the one place a program file is opened (CLI `verify --programs`), so that
// a missing file, a directory or a read error names the path instead of a stream exception.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ppstream/program/format.h"

namespace ppstream {

ProgramSet read_program_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ParseError(path + ": cannot read: it is a directory; expected a program file (.txt canonical text or .json)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ParseError(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ParseError(path + ": cannot read: " + std::strerror(errno));
  return path.ends_with(".json") ? parse_json(text.str(), path) : parse_program_set(text.str(), path);
}

}  // namespace ppstream
