// The binding groups of ppstream._core that live in their own files (module.cpp holds the rest
// and the exception types), and the argument rules every entry shares (args.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <limits>
#include <map>
#include <string>
#include <vector>

namespace ppstream::python {

// whatif (paths) and whatif_table (columns of the artifact's parquet table): bind_whatif.cpp.
void bind_whatif(pybind11::module_& m);

// The arguments of the entries are taken as Python objects and checked here (docs/python.md
// "Arguments"), so that a wrong type is a TypeError naming the entry `fn` and the argument `name`
// and what it expects, not pybind11's whole-signature TypeError.

// The name of v's type ("int", "float", "PosixPath").
std::string type_name(const pybind11::handle& v);
// True for Python's bool and numpy's bool_ (both have __index__; neither is taken for an int).
bool is_bool(const pybind11::handle& v);

// operator.index(v) (v has __index__).
pybind11::int_ index_of(const pybind11::handle& v);

// The integer argument `name` of `fn`: an int or any object with __index__ (numpy integers),
// Python's rule for an integer; a bool (True is an int to Python) and a float are a TypeError. A
// value outside [lo, hi] is a ValueError naming the argument and the range (pybind11 would raise
// its signature TypeError).
template <class T>
T int_arg(const std::string& fn, const std::string& name, const pybind11::handle& v,
          T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) {
  namespace py = pybind11;
  if (is_bool(v) || !PyIndex_Check(v.ptr()))
    throw py::type_error(fn + ": " + name + ": expected an int, not " + type_name(v));
  const py::int_ i = index_of(v);
  if (i < py::int_(lo) || i > py::int_(hi))
    throw py::value_error(fn + ": " + name + " " + std::string(py::str(i)) + ": expected an integer in [" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return i.cast<T>();
}

// A str; `none` (when not null) is what None stands for, else None is a TypeError too.
std::string str_arg(const std::string& fn, const std::string& name, const pybind11::handle& v,
                    const char* none = nullptr);
// True or False (or a numpy bool_); an int is a TypeError (cluster=1 is not a flag).
bool bool_arg(const std::string& fn, const std::string& name, const pybind11::handle& v);
// A path: str, bytes or os.PathLike (os.fspath, bytes decoded as os.fsdecode does); with
// `none_ok`, None is "" (no path). A str or bytes holding a NUL byte is a ValueError.
std::string path_arg(const std::string& fn, const std::string& name, const pybind11::handle& v, bool none_ok = false);
// A list of paths: one path (a str, bytes or os.PathLike: one file or directory, as torch.load or
// pandas take one) or any iterable of paths; an item of another type names its index.
std::vector<std::string> paths_arg(const std::string& fn, const std::string& name, const pybind11::handle& v);
// overrides=: None (none) or a dict of config key (str) -> value (str, or an int or float,
// written as str() writes it; a bool is refused: YAML spells it true / false).
std::map<std::string, std::string> overrides_arg(const std::string& fn, const pybind11::handle& v);

}  // namespace ppstream::python
