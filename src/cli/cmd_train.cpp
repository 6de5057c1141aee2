// Placeholder registration until the train subcommand lands (its issue owns this file).
#include "commands.h"

namespace ppstream::cli {
void register_train(CLI::App& /*app*/, int& /*exit_code*/) {}
}  // namespace ppstream::cli
