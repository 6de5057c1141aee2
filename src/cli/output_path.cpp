#include "output_path.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "ppstream/analyze/readers.h"

namespace fs = std::filesystem;

namespace ppstream::cli {

void check_output_path(const std::string& flag, const std::string& path, const std::vector<std::string>& inputs,
                       const std::string& reader) {
  const fs::path out(path);
  std::error_code ec;
  if (fs::is_directory(out, ec)) throw std::invalid_argument(flag + " " + path + ": is a directory; give the file to write");
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  if (!fs::is_directory(dir, ec)) throw std::invalid_argument(flag + " " + path + ": no directory " + dir.string());
  if (access(dir.c_str(), W_OK) != 0)
    throw std::invalid_argument(flag + " " + path + ": cannot write in " + dir.string() + ": " + std::strerror(errno));
  const bool exists = fs::exists(out, ec);
  if (exists && access(out.c_str(), W_OK) != 0)
    throw std::invalid_argument(flag + " " + path + ": cannot write: " + std::strerror(errno));
  if (const auto in = analyze::input_named_by(path, inputs))
    throw std::invalid_argument(flag + " " + path + ": is " + *in + ", which " + reader + " reads; write to another file");
}

CLI::Validator output_file() {
  return CLI::Validator([](std::string& v) { return v.empty() ? std::string("expected a file to write, not ''") : std::string(); },
                        "FILE", "output file");
}

}  // namespace ppstream::cli
