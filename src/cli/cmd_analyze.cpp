// Placeholder registration until the analyze subcommand lands (its issue owns this file).
#include "commands.h"

namespace ppstream::cli {
void register_analyze(CLI::App& /*app*/, int& /*exit_code*/) {}
}  // namespace ppstream::cli
