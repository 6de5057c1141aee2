// ppstream._core.whatif and whatif_table: the straggler what-if (docs/whatif.md) of trace files,
// or of the artifact's parquet table handed over as numpy columns (python/ppstream/whatif.py
// reads the parquet with pyarrow). Both return the JSON text of `ppstream whatif --json`.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cerrno>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "ppstream/analyze/readers.h"
#include "ppstream/analyze/timer_table.h"
#include "ppstream/whatif/whatif.h"

namespace py = pybind11;

namespace ppstream::python {
namespace {

// The options both entries share. progress: None / False (none), True (a count on stderr, as the
// CLI prints it), or a callable(done, total) called after each simulation.
whatif::WhatIfOptions options(const py::object& steps_arg, const py::object& agg_arg, const py::object& reduce_grad_arg,
                              const py::object& progress) {
  const std::string agg = str_arg("whatif", "agg", agg_arg);
  const std::string reduce_grad = str_arg("whatif", "reduce_grad", reduce_grad_arg, "");
  if (agg != "mean" && agg != "median") throw py::value_error("whatif: agg '" + agg + "': expected mean or median");
  whatif::WhatIfOptions o;
  std::optional<std::pair<int32_t, int32_t>> steps;  // steps: None or (first, last), each an int32
  if (!steps_arg.is_none()) {
    if (!py::isinstance<py::tuple>(steps_arg) && !py::isinstance<py::list>(steps_arg))
      throw py::type_error("whatif: steps: expected None, an int or (first, last), not " + type_name(steps_arg));
    const auto seq = py::reinterpret_borrow<py::sequence>(steps_arg);
    if (seq.size() != 2) throw py::value_error("whatif: steps: expected (first, last), two ints");
    steps.emplace(int_arg<int32_t>("whatif", "steps", seq[0], 0), int_arg<int32_t>("whatif", "steps", seq[1], 0));
  }
  if (steps && steps->first > steps->second)
    throw py::value_error("whatif: steps (" + std::to_string(steps->first) + ", " + std::to_string(steps->second) +
                          "): expected (first, last) with first <= last");
  o.steps = steps;
  o.agg = agg == "median" ? whatif::Agg::MEDIAN : whatif::Agg::MEAN;
  if (!reduce_grad.empty()) {
    if (reduce_grad != "inline" && reduce_grad != "async")
      throw py::value_error("whatif: reduce_grad '" + reduce_grad + "': expected 'inline', 'async' or None");
    o.reduce_grad = parse_reduce_policy(reduce_grad);
  }
  if (progress.is_none() || (py::isinstance<py::bool_>(progress) && !progress.cast<bool>())) return o;
  if (py::isinstance<py::bool_>(progress)) {
    o.progress = [](int64_t done, int64_t total) {
      py::gil_scoped_acquire gil;
      py::print("\rwhatif: simulation", done, "/", total, py::arg("end") = done == total ? "\n" : "",
                py::arg("file") = py::module_::import("sys").attr("stderr"), py::arg("flush") = true);
    };
  } else if (PyCallable_Check(progress.ptr())) {
    o.progress = [progress](int64_t done, int64_t total) {
      py::gil_scoped_acquire gil;
      progress(done, total);
    };
  } else {
    throw py::type_error("whatif: progress: expected None, a bool or a callable(done, total)");
  }
  return o;
}

// svg= / trace= must not be a file the what-if reads (it would be overwritten after the run):
// refused before the analysis, as the CLI does (src/cli/output_path.h).
void check_not_an_input(const char* arg, const std::string& out, const std::vector<std::string>& paths) {
  if (const auto in = analyze::input_named_by(out, paths))
    throw py::value_error("whatif: " + std::string(arg) + "=" + out + ": is " + *in +
                          ", which the what-if reads; write to another file");
}

// svg= and trace= not one file either (the trace would overwrite the SVG).
void check_outputs_differ(const std::string& svg, const std::string& trace) {
  if (svg.empty() || trace.empty()) return;
  if (const auto twice = analyze::same_output({{"svg=", svg}, {"trace=", trace}}))
    throw py::value_error("whatif: " + *twice + "; write them to different files");
}

std::string finish(const whatif::WhatIfResult& r, const std::string& svg, const std::string& trace) {
  const auto write = [](const std::string& path, const std::string& text) {
    errno = 0;
    std::ofstream f(path);
    if (!f || !(f << text)) {  // OSError (errno, its text, the path), as Python's open() raises
      if (errno == 0) errno = EIO;
      PyErr_SetFromErrnoWithFilename(PyExc_OSError, path.c_str());
      throw py::error_already_set();
    }
  };
  if (!svg.empty()) write(svg, whatif::to_svg(r));
  if (!trace.empty()) write(trace, whatif::to_trace(r));
  return whatif::to_json(r);
}

// A column of `table` as a span over its numpy array (kept alive in `keep`); the dtype must be T's.
template <class T>
std::span<const T> column(const py::dict& table, const char* name, const std::string& source, std::vector<py::array>& keep) {
  if (!table.contains(name)) throw py::value_error("whatif_table: " + source + ": no column '" + std::string(name) + "'");
  py::object v = table[name];
  if (!py::isinstance<py::array>(v) || !py::reinterpret_borrow<py::array>(v).dtype().is(py::dtype::of<T>()))
    throw py::type_error("whatif_table: " + source + ": column '" + std::string(name) + "': expected a numpy array of " +
                         std::string(py::str(py::dtype::of<T>())));
  auto a = py::array_t<T, py::array::c_style>::ensure(v);
  if (!a || a.ndim() != 1)
    throw py::value_error("whatif_table: " + source + ": column '" + std::string(name) + "': expected one dimension");
  keep.push_back(a);
  return {a.data(), static_cast<size_t>(a.size())};
}

analyze::TimerColumns columns_of(const py::dict& t, std::vector<py::array>& keep) {
  analyze::TimerColumns c;
  c.source = t.contains("source") ? py::str(t["source"]).cast<std::string>() : std::string("<table>");
  c.dp_rank = column<int64_t>(t, "dp_rank", c.source, keep);
  c.stage = column<int64_t>(t, "stage", c.source, keep);
  c.step = column<int64_t>(t, "step", c.source, keep);
  c.seq_id = column<int64_t>(t, "seq_id", c.source, keep);
  c.mc = column<int64_t>(t, "mc", c.source, keep);
  c.mb_id = column<int64_t>(t, "mb_id", c.source, keep);
  c.optype = column<int32_t>(t, "optype", c.source, keep);
  c.start_s = column<double>(t, "start_ts", c.source, keep);
  c.duration_s = column<double>(t, "duration", c.source, keep);
  if (!t.contains("optype_names")) throw py::value_error("whatif_table: " + c.source + ": no 'optype_names'");
  c.optype_names = t["optype_names"].cast<std::vector<std::string>>();
  return c;
}

}  // namespace

void bind_whatif(py::module_& m) {
  m.def(
      "whatif",
      [](const py::object& paths_obj, const py::object& steps, const py::object& agg, const py::object& svg_arg,
         const py::object& trace_arg, const py::object& progress, const py::object& reduce_grad) {
        const std::vector<std::string> paths = paths_arg("whatif", "paths", paths_obj);
        const std::string svg = path_arg("whatif", "svg", svg_arg, true), trace = path_arg("whatif", "trace", trace_arg, true);
        const whatif::WhatIfOptions o = options(steps, agg, reduce_grad, progress);
        check_not_an_input("svg", svg, paths);
        check_not_an_input("trace", trace, paths);
        check_outputs_differ(svg, trace);
        // One ppstream trace (a file, a replay directory, a train run directory): the stream-program path.
        const bool ours = whatif::ppstream_trace_of(paths).has_value();
        if (ours && !trace.empty())
          throw py::value_error("whatif: trace=: the ideal timeline is drawn for Megatron timer traces only, not for a "
                                "ppstream trace (" + paths.front() + ")");
        whatif::WhatIfResult r;
        {
          py::gil_scoped_release release;
          r = ours ? whatif::analyze_ppstream_trace(paths.front(), o) : whatif::analyze_paths(paths, o);
        }
        return finish(r, svg, trace);
      },
      py::arg("paths"), py::arg("steps") = py::none(), py::arg("agg") = "mean", py::arg("svg") = "",
      py::arg("trace") = "", py::arg("progress") = py::none(), py::arg("reduce_grad") = "",
      "The what-if of trace files (docs/whatif.md): returns the JSON (str) of `ppstream whatif --json`.\n"
      "ppstream.whatif (python/ppstream/whatif.py) is the documented entry; this one takes the same\n"
      "arguments, reduce_grad '' for none, progress None | bool | callable(done, total).");
  m.def(
      "whatif_table",
      [](const std::vector<py::dict>& tables, const py::object& steps, const py::object& agg, const py::object& svg_arg,
         const py::object& trace_arg, const py::object& progress, const py::object& reduce_grad) {
        const std::string svg = path_arg("whatif", "svg", svg_arg, true), trace = path_arg("whatif", "trace", trace_arg, true);
        const whatif::WhatIfOptions o = options(steps, agg, reduce_grad, progress);
        check_outputs_differ(svg, trace);
        if (tables.empty()) throw py::value_error("whatif_table: no table");
        std::vector<py::array> keep;
        std::vector<analyze::TimerColumns> cols;
        for (const py::dict& t : tables) cols.push_back(columns_of(t, keep));
        whatif::WhatIfResult r;
        {
          py::gil_scoped_release release;
          analyze::TimerTrace tt;
          for (const analyze::TimerColumns& c : cols) add_timer_columns(c, tt);
          r = whatif::analyze(tt, o);
        }
        return finish(r, svg, trace);
      },
      py::arg("tables"), py::arg("steps") = py::none(), py::arg("agg") = "mean", py::arg("svg") = "",
      py::arg("trace") = "", py::arg("progress") = py::none(), py::arg("reduce_grad") = "",
      "The what-if of the artifact's parquet tables given as columns (analyze/timer_table.h): each table a\n"
      "dict with 'source' (str), int64 arrays dp_rank, stage, step, seq_id, mc, mb_id, an int32 array\n"
      "optype indexing the list 'optype_names', float64 arrays start_ts and duration (seconds). The rows\n"
      "become the timer ops the timeline reader makes; returns the JSON (str) of `ppstream whatif --json`.\n"
      "Raises TraceError (ValueError) naming source, row and column; LiftError as whatif.");
}

}  // namespace ppstream::python
