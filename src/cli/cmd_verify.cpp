// Placeholder registration until the verify subcommand lands.
#include "commands.h"

namespace ppstream::cli {
void register_verify(CLI::App& /*app*/, int& /*exit_code*/) {}
}  // namespace ppstream::cli
