// Placeholder registration until the simulate subcommand lands (its issue owns this file).
#include "commands.h"

namespace ppstream::cli {
void register_simulate(CLI::App& /*app*/, int& /*exit_code*/) {}
}  // namespace ppstream::cli
