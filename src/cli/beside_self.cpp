#include "beside_self.h"

#include <unistd.h>

#include <filesystem>

namespace ppstream::cli {

std::optional<std::string> beside_self(const std::string& name) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  return (self.parent_path() / name).string();
}

void exec_argv(const std::vector<std::string>& argv, bool search_path) {
  std::vector<char*> cargs;
  for (const std::string& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
  cargs.push_back(nullptr);
  if (search_path) {
    execvp(cargs[0], cargs.data());
  } else {
    execv(cargs[0], cargs.data());
  }
}

}  // namespace ppstream::cli
