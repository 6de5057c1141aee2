// libFuzzer entry point for one target, chosen at build time by PPSTREAM_FUZZ_TARGET (CMake
// builds one binary per name in fuzz/targets.h). A violated property aborts with its text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bad = ppstream::fuzz::run_target(PPSTREAM_FUZZ_TARGET,
                                              std::string_view(reinterpret_cast<const char*>(data), size));
  if (bad) {
    std::fprintf(stderr, "property violated (%s): %s\n", PPSTREAM_FUZZ_TARGET, bad->c_str());
    std::abort();
  }
  return 0;
}
