// The binding groups of ppstream._core that live in their own files (module.cpp holds the rest
// and the exception types).
#pragma once

#include <pybind11/pybind11.h>

#include <limits>
#include <string>

namespace ppstream::python {

// whatif (paths) and whatif_table (columns of the artifact's parquet table): bind_whatif.cpp.
void bind_whatif(pybind11::module_& m);

// The integer argument `name` of `fn`, taken as a Python object so that a value out of T's range
// is a ValueError naming the argument and the range (pybind11 would raise its signature
// TypeError): TypeError when `v` is not an int (a bool neither), ValueError outside [lo, hi].
template <class T>
T int_arg(const std::string& fn, const std::string& name, const pybind11::handle& v,
          T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) {
  namespace py = pybind11;
  if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr()))
    throw py::type_error(fn + ": " + name + ": expected an int, not " +
                         std::string(py::str(py::type::handle_of(v).attr("__name__"))));
  const auto i = py::reinterpret_borrow<py::int_>(v);
  if (i < py::int_(lo) || i > py::int_(hi))
    throw py::value_error(fn + ": " + name + " " + std::string(py::str(i)) + ": expected an integer in [" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return i.cast<T>();
}

}  // namespace ppstream::python
