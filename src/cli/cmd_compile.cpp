// Placeholder registration until the compile subcommand lands.
#include "commands.h"

namespace ppstream::cli {
void register_compile(CLI::App& /*app*/, int& /*exit_code*/) {}
}  // namespace ppstream::cli
