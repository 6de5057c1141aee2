// The binding groups of ppstream._core that live in their own files (module.cpp holds the rest
// and the exception types).
#pragma once

#include <pybind11/pybind11.h>

namespace ppstream::python {

// whatif (paths) and whatif_table (columns of the artifact's parquet table): bind_whatif.cpp.
void bind_whatif(pybind11::module_& m);

}  // namespace ppstream::python
