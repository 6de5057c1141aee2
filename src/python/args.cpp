// The argument rules every ppstream._core entry shares (bindings.h; docs/python.md "Arguments").
#include <cstring>
#include <string>

#include "bindings.h"

namespace py = pybind11;

namespace ppstream::python {

std::string type_name(const py::handle& v) { return py::str(py::type::handle_of(v).attr("__name__")); }

bool is_bool(const py::handle& v) {
  if (PyBool_Check(v.ptr())) return true;
  const char* t = Py_TYPE(v.ptr())->tp_name;  // numpy 1.x names it numpy.bool_, 2.x numpy.bool
  return std::strcmp(t, "numpy.bool_") == 0 || std::strcmp(t, "numpy.bool") == 0;
}

py::int_ index_of(const py::handle& v) {
  auto i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
  if (!i) throw py::error_already_set();
  return i;
}

std::string str_arg(const std::string& fn, const std::string& name, const py::handle& v, const char* none) {
  if (none && v.is_none()) return none;
  if (!PyUnicode_Check(v.ptr()))
    throw py::type_error(fn + ": " + name + ": expected a str" + (none ? " or None" : "") + ", not " + type_name(v));
  return v.cast<std::string>();
}

bool bool_arg(const std::string& fn, const std::string& name, const py::handle& v) {
  if (!is_bool(v)) throw py::type_error(fn + ": " + name + ": expected True or False, not " + type_name(v));
  return PyObject_IsTrue(v.ptr()) == 1;
}

namespace {

bool is_path(const py::handle& v) {
  return PyUnicode_Check(v.ptr()) || PyBytes_Check(v.ptr()) || py::hasattr(py::type::handle_of(v), "__fspath__");
}

}  // namespace

std::string path_arg(const std::string& fn, const std::string& name, const py::handle& v, bool none_ok) {
  if (none_ok && v.is_none()) return {};
  if (!is_path(v))
    throw py::type_error(fn + ": " + name + ": expected a path (str, bytes or os.PathLike)" +
                         (none_ok ? " or None" : "") + ", not " + type_name(v));
  auto fs = py::reinterpret_steal<py::object>(PyOS_FSPath(v.ptr()));  // str or bytes
  if (!fs) throw py::error_already_set();
  // The file system's bytes: os.fsencode of a str (surrogateescape keeps undecodable names).
  auto bytes = PyBytes_Check(fs.ptr()) ? fs : py::reinterpret_steal<py::object>(PyUnicode_EncodeFSDefault(fs.ptr()));
  if (!bytes) throw py::error_already_set();
  std::string out(PyBytes_AS_STRING(bytes.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(bytes.ptr())));
  if (out.find('\0') != std::string::npos) throw py::value_error(fn + ": " + name + ": embedded null byte in the path");
  return out;
}

std::vector<std::string> paths_arg(const std::string& fn, const std::string& name, const py::handle& v) {
  if (is_path(v)) return {path_arg(fn, name, v)};
  if (!py::isinstance<py::iterable>(v))
    throw py::type_error(fn + ": " + name + ": expected a path (str, bytes or os.PathLike) or a list of paths, not " +
                         type_name(v));
  std::vector<std::string> out;
  for (const py::handle item : v) out.push_back(path_arg(fn, name + "[" + std::to_string(out.size()) + "]", item));
  return out;
}

std::map<std::string, std::string> overrides_arg(const std::string& fn, const py::handle& v) {
  std::map<std::string, std::string> out;
  if (v.is_none()) return out;
  if (!PyDict_Check(v.ptr()))
    throw py::type_error(fn + ": overrides: expected a dict of config key (str) -> value, not " + type_name(v));
  for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(v)) {
    if (!PyUnicode_Check(key.ptr()))
      throw py::type_error(fn + ": overrides: key " + std::string(py::repr(key)) + ": expected a str (a config key), not " +
                           type_name(key));
    const std::string k = key.cast<std::string>();
    if (PyUnicode_Check(value.ptr())) {
      out[k] = value.cast<std::string>();
    } else if (!is_bool(value) && PyIndex_Check(value.ptr())) {
      out[k] = py::str(index_of(value));  // 8, not an IntEnum's name
    } else if (PyFloat_Check(value.ptr())) {
      out[k] = py::str(py::float_(py::reinterpret_borrow<py::object>(value)));
    } else {
      throw py::type_error(fn + ": overrides['" + k + "']: expected a str, int or float (the value as --set takes it), not " +
                           type_name(value));
    }
  }
  return out;
}

}  // namespace ppstream::python
