#include "run_app.h"

#include <exception>
#include <iostream>

namespace ppstream::cli {

int run_app(CLI::App& app, int argc, char** argv, const int& exit_code) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::exception& e) {
    std::cerr << "ppstream: " << e.what() << "\n";
    return 2;
  }
  return exit_code;
}

}  // namespace ppstream::cli
