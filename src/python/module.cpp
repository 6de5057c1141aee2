// ppstream._core: the engine for Python. Programs cross the boundary as their JSON form
// (include/ppstream/program/format.h), so Python never re-implements the IR.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <exception>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppstream/analyze/analyze.h"
#include "bindings.h"
#include "ppstream/whatif/whatif.h"
#include <nlohmann/json.hpp>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/deps.h"
#include "ppstream/program/format.h"
#include "ppstream/sim/overlap_check.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/verify/verify.h"

namespace py = pybind11;
using namespace ppstream;

namespace {

// Python's overrides, like the CLI's --set, go through apply_overrides: applied together, then
// validated once (pipeline_parallel_size and the layer strings can change together).
void apply_all(PipelineConfig& cfg, const std::map<std::string, std::string>& overrides) {
  if (!overrides.empty()) apply_overrides(cfg, {overrides.begin(), overrides.end()});
}

std::string compile_config(PipelineConfig cfg, const std::map<std::string, std::string>& overrides, bool expanded,
                           const std::string& platform) {
  apply_all(cfg, overrides);
  LowerOptions lo;
  lo.expanded = expanded;
  const ProgramSet set = compile(cfg, lo);
  VerifyOptions vo;
  vo.platforms = parse_platform_list(platform);
  require_verified(set, vo, "verify");
  return to_json(set);
}

// compile, load_config and compile_text: config → verified programs
void bind_compile(py::module_& m) {
  m.def(
      "compile",
      [](const py::object& path, const py::object& expanded, const py::object& platform, const py::object& overrides) {
        return compile_config(load_config_file(python::path_arg("compile", "config_path", path)),
                              python::overrides_arg("compile", overrides), python::bool_arg("compile", "expanded", expanded),
                              python::str_arg("compile", "platform", platform));
      },
      py::arg("config_path"), py::arg("expanded") = true, py::arg("platform") = "cpu-serial",
      py::arg("overrides") = py::dict(),
      "Compile the YAML config at config_path to the ProgramSet JSON (str), verified under `platform`\n"
      "('strict', 'ascend-mindspore', 'cpu-serial', comma list or 'all'). expanded=True gives one program\n"
      "per DP rank. Raises ConfigError (ValueError) for a bad config, VerifyError (RuntimeError) listing violations.");
  m.def(
      "load_config",
      [](const py::object& path, const py::object& overrides) {
        PipelineConfig cfg = load_config_file(python::path_arg("load_config", "config_path", path));
        apply_all(cfg, python::overrides_arg("load_config", overrides));
        nlohmann::json j;
        j["pipeline_parallel_size"] = cfg.pipeline_parallel_size;
        j["pipeline_parallel_interleave_num"] = cfg.pipeline_parallel_interleave_num;
        j["micro_batch_num"] = cfg.micro_batch_num;
        j["stage_layers"] = nlohmann::json::array();
        for (const LayerRange& l : cfg.stage_layers) j["stage_layers"].push_back({l.first, l.last});
        j["mode"] = to_string(cfg.mode);
        j["shard_size"] = cfg.shard_size;
        j["replicate_size"] = cfg.replicate_size;
        j["reduce_grad"] = to_string(cfg.reduce_grad);
        j["reduce_buckets"] = cfg.reduce_buckets;
        j["extra_sections"] = cfg.extra_sections;
        return j.dump();
      },
      py::arg("config_path"), py::arg("overrides") = py::dict(),
      "Load and validate a config (the same loader and rules as compile); returns JSON (str) with the\n"
      "pipeline fields, stage_layers[s] = [first, last] (inclusive) per global virtual stage, and the\n"
      "extra sections (model:, train:, cost:, ...) as YAML text. Raises ConfigError naming file:line/key.");
  m.def(
      "config_yaml",
      [](const py::object& path, const py::object& overrides, const std::map<std::string, std::string>& sections) {
        PipelineConfig cfg = load_config_file(python::path_arg("config_yaml", "config_path", path));
        apply_all(cfg, python::overrides_arg("config_yaml", overrides));
        for (const auto& [name, text] : sections) cfg.extra_sections[name] = text;
        return to_yaml(cfg);
      },
      py::arg("config_path"), py::arg("overrides") = py::dict(),
      py::arg("sections") = std::map<std::string, std::string>{},
      "The config at config_path with `overrides` applied, written back as YAML (str, to_yaml: the\n"
      "loader's keys, load_config gives back the same fields), its extra sections replaced by\n"
      "`sections` (name -> YAML or JSON text). What `ppstream train` writes as RUN_DIR/config.yaml.\n"
      "Raises ConfigError like load_config.");
  m.def(
      "compile_text",
      [](const py::object& yaml, const py::object& expanded, const py::object& platform, const py::object& overrides) {
        return compile_config(load_config_text(python::str_arg("compile_text", "yaml_text", yaml), "<text>"),
                              python::overrides_arg("compile_text", overrides),
                              python::bool_arg("compile_text", "expanded", expanded),
                              python::str_arg("compile_text", "platform", platform));
      },
      py::arg("yaml_text"), py::arg("expanded") = true, py::arg("platform") = "cpu-serial",
      py::arg("overrides") = py::dict(), "As compile(), from YAML text.");
  m.def(
      "platform_profiles",
      [] {
        std::vector<std::string> out;
        const std::string names = platform_names();  // "strict, ascend-mindspore, ..."
        for (size_t start = 0; start < names.size();) {
          const size_t sep = names.find(", ", start);
          out.push_back(names.substr(start, sep == std::string::npos ? std::string::npos : sep - start));
          start = sep == std::string::npos ? names.size() : sep + 2;
        }
        return out;
      },
      "The engine's platform profile names (list[str], src/engine/platform.cpp): what `platform` takes,\n"
      "besides comma lists and 'all'. A Python Platform's `profile` must be one of them.");
}

// verify and verify_text: programs → violation messages
void bind_verify(py::module_& m) {
  m.def(
      "verify",
      [](const py::object& programs_json, const py::object& platform) {
        VerifyOptions vo;
        vo.platforms = parse_platform_list(python::str_arg("verify", "platform", platform));
        std::vector<std::string> out;
        for (const Violation& v : verify(parse_json(python::str_arg("verify", "programs_json", programs_json)), vo))
          out.push_back(v.to_string());
        return out;
      },
      py::arg("programs_json"), py::arg("platform") = "all",
      "Verify a ProgramSet JSON; returns the violation messages (empty list: verified).");
  m.def(
      "verify_text",
      [](const py::object& text, const py::object& platform) {
        VerifyOptions vo;
        vo.platforms = parse_platform_list(python::str_arg("verify_text", "platform", platform));
        std::vector<std::string> out;
        for (const Violation& v : verify(parse_program_set(python::str_arg("verify_text", "programs_text", text)), vo))
          out.push_back(v.to_string());
        return out;
      },
      py::arg("programs_text"), py::arg("platform") = "all", "Verify programs in canonical text form.");
}

// simulate, analyze and diff: config or traces → metrics JSON (whatif: bind_whatif.cpp)
void bind_sim_analyze(py::module_& m) {
  // The one overrides rule (args.cpp) for the Python side's own entry points (Pipeline).
  m.def(
      "_overrides_arg",
      [](const std::string& fn, const py::object& overrides) { return python::overrides_arg(fn, overrides); },
      py::arg("fn"), py::arg("overrides"),
      "overrides= checked as docs/python.md says (None or a dict of str key -> str / int / float value) and\n"
      "returned as {key: str}; TypeError naming `fn`, the key or the value otherwise.");
  m.def(
      "simulate",
      [](const py::object& path_o, const py::object& reduce_grad_o, const py::object& cluster_o,
         const py::object& trials_o, const py::object& seed_o, const py::object& trace_o,
         const py::object& svg_o, const py::object& overrides_o, const py::object& platform_o,
         const py::object& trace_every_rank_o, const py::object& cluster_engine_o, const py::object& threads_o) {
        const std::string path = python::path_arg("simulate", "config_path", path_o);
        const std::string reduce_grad = python::str_arg("simulate", "reduce_grad", reduce_grad_o, "");
        const bool cluster = python::bool_arg("simulate", "cluster", cluster_o);
        const auto trials = python::int_arg<int32_t>("simulate", "trials", trials_o, 1);
        std::optional<uint64_t> seed;
        if (!seed_o.is_none()) seed = python::int_arg<uint64_t>("simulate", "seed", seed_o, 0, sim::kMaxSeed);
        const std::string trace = python::path_arg("simulate", "trace", trace_o, true);
        const std::string svg = python::path_arg("simulate", "svg", svg_o, true);
        const auto overrides = python::overrides_arg("simulate", overrides_o);
        const std::string platform = python::str_arg("simulate", "platform", platform_o);
        const bool every_rank = python::bool_arg("simulate", "trace_every_rank", trace_every_rank_o);
        const std::string cluster_engine = python::str_arg("simulate", "cluster_engine", cluster_engine_o, "");
        const auto threads = python::int_arg<int32_t>("simulate", "threads", threads_o, 0, 4096);
        PipelineConfig cfg = load_config_file(path);
        apply_all(cfg, overrides);
        try {
          return sim::simulate_json(cfg, reduce_grad, cluster, trials, seed, trace, svg, platform, {path}, every_rank,
                                    cluster_engine, threads);
        } catch (const sim::WriteError& e) {  // OSError (errno, its text, the path), as open() raises
          errno = e.error();
          PyErr_SetFromErrnoWithFilename(PyExc_OSError, e.path().c_str());
          throw py::error_already_set();
        }
      },
      py::arg("config_path"), py::arg("reduce_grad") = "", py::arg("cluster") = false, py::arg("trials") = 1,
      py::arg("seed") = py::none(), py::arg("trace") = "", py::arg("svg") = "", py::arg("overrides") = py::dict(),
      py::arg("platform") = "ascend-mindspore", py::arg("trace_every_rank") = false,
      py::arg("cluster_engine") = py::none(), py::arg("threads") = 0,
      "Simulate one training step (docs/simulate.md): reduce_grad 'inline' | 'async' | 'both' | '' or None (the\n"
      "config's); cluster=True runs every DP replica of the world; trials>1 draws stragglers per seed;\n"
      "platform: the engine profile (ascend-mindspore, ascend-mindspore-one-comm-stream, cpu-serial).\n"
      "Writes a Chrome trace / SVG when paths are given (OSError if it cannot); trace_every_rank=True (with\n"
      "cluster=True) draws every rank in the trace, as ppstream.whatif needs; cluster_engine 'replica' |\n"
      "'expanded' (None: replica; with cluster=True only, as trace_every_rank) and threads (0: one per hardware\n"
      "thread) as --cluster-engine and --threads. Returns the metrics JSON\n"
      "(str, times in ms). Argument types: docs/python.md.");
  m.def(
      "analyze",
      [](const py::object& paths, const py::object& step) {
        analyze::AnalyzeOptions o;
        if (!step.is_none()) o.step = python::int_arg<int64_t>("analyze", "step", step);
        return analyze::analyze_paths(python::paths_arg("analyze", "paths", paths), o).to_json();
      },
      py::arg("paths"), py::arg("step") = py::none(),
      "Analyze traces (Ascend profiler directories, Kineto JSON[.gz], ppstream traces): paths a path or a\n"
      "list of paths (str, bytes, os.PathLike); returns the metrics JSON (str) of `ppstream analyze --json`\n"
      "(docs/analyze.md). Raises ValueError naming the file and offset for malformed input.");
  m.def(
      "diff",
      [](const py::object& baseline, const py::object& optimized) {
        return analyze::diff_paths(python::paths_arg("diff", "baseline", baseline),
                                   python::paths_arg("diff", "optimized", optimized))
            .to_json();
      },
      py::arg("baseline"), py::arg("optimized"),
      "Metric-by-metric comparison (JSON str) of two trace sets, each a path or a list of paths.");
}

// to_text, to_json and dp_group: program forms and the HSDP group formula
void bind_formats(py::module_& m) {
  m.def(
      "overlap_never_slower",
      [](int32_t max_pp, int32_t max_vpp, int32_t max_microbatches, double tolerance) {
        GridOptions o;
        o.max_pp = max_pp;
        o.max_vpp = max_vpp;
        o.max_microbatches = max_microbatches;
        sim::OverlapCheck res;
        {
          py::gil_scoped_release release;
          res = sim::check_overlap_never_slower(o, tolerance);
        }
        py::dict d;
        d["configs"] = res.configs;
        d["comparisons"] = res.comparisons;
        d["regressions"] = res.regressions;
        return d;
      },
      py::arg("max_pp") = 8, py::arg("max_vpp") = 4, py::arg("max_microbatches") = 32, py::arg("tolerance") = 0.005,
      "The overlap-never-slower check (include/ppstream/sim/overlap_check.h) over the verify grid\n"
      "(defaults: the whole `ppstream verify --grid`): {'configs', 'comparisons', 'regressions'}.");
  m.def(
      "to_text",
      [](const py::object& programs_json) {
        return to_text(parse_json(python::str_arg("to_text", "programs_json", programs_json)));
      },
      py::arg("programs_json"), "Canonical text form of a ProgramSet JSON.");
  m.def(
      "to_json",
      [](const py::object& programs_text) {
        return to_json(parse_program_set(python::str_arg("to_json", "programs_text", programs_text)));
      },
      py::arg("programs_text"), "JSON form of programs given as canonical text.");
  m.def(
      "dp_group",
      [](const std::string& kind, int32_t rank, int32_t pp, int32_t shard, int32_t replicate) {
        if (kind != "shard" && kind != "replicate")
          throw py::value_error("dp_group: kind '" + kind + "': expected 'shard' or 'replicate'");
        const World w{pp, 1, shard, replicate, true};
        if (pp < 1 || shard < 1 || replicate < 1 || rank < 0 || rank >= pp * w.dp())
          throw py::value_error("dp_group: rank " + std::to_string(rank) + " outside a world of pp=" + std::to_string(pp) +
                                " x shard=" + std::to_string(shard) + " x replicate=" + std::to_string(replicate));
        const GroupKind k = kind == "shard" ? GroupKind::SHARD : GroupKind::REPLICATE;
        std::vector<int32_t> out;
        for (Rank r : w.group_members(k, w.group_of(k, rank))) out.push_back(r.v);
        return out;
      },
      py::arg("kind"), py::arg("rank"), py::arg("pp"), py::arg("shard"), py::arg("replicate"),
      "Global ranks (list[int], rank order) of `rank`'s 'shard' or 'replicate' group in an expanded\n"
      "world of pp x shard x replicate ranks: the engine's one HSDP group formula (World::group_members).\n"
      "Raises ValueError for an unknown kind or a rank outside the world.");
}

// The dependency model (program/deps.h) for the Python executor: one rule for C++ and Python.
OpKind op_arg(const std::string& fn, const std::string& op) {
  const auto k = parse_op_kind(op);
  if (!k) throw py::value_error(fn + ": op '" + op + "': expected an instruction kind as programs print it (F, B, I, W, BATCH, ...)");
  return *k;
}

P2PKind p2p_arg(const std::string& fn, const std::string& kind) {
  const auto k = parse_p2p_kind(kind);
  if (!k) throw py::value_error(fn + ": kind '" + kind + "': expected SEND_F, RECV_F, SEND_B or RECV_B");
  return *k;
}

void check_stage(const std::string& fn, int32_t mb, int32_t stage, int32_t num_stages) {
  if (num_stages < 1 || stage < 0 || stage >= num_stages || mb < 0)
    throw py::value_error(fn + ": mb" + std::to_string(mb) + " s" + std::to_string(stage) + " of " +
                          std::to_string(num_stages) + " stages: expected num_stages >= 1, 0 <= stage < num_stages, mb >= 0");
}

py::object optional_name(std::optional<P2PKind> k) { return k ? py::object(py::str(to_string(*k))) : py::object(py::none()); }

py::list role_names(RoleMask m) {
  py::list out;
  for (Role r : {Role::FORWARD, Role::INPUT_GRAD, Role::WEIGHT_GRAD})
    if (m & role_bit(r)) out.append(to_string(r));
  return out;
}

// roles_of, needs_of, send_of, carried_by, mirror_of and stage_backwards
void bind_deps(py::module_& m) {
  m.def(
      "roles_of", [](const std::string& op) { return role_names(roles_of(op_arg("roles_of", op))); }, py::arg("op"),
      "What compute op `op` ('F', 'B', 'I', 'W') fills: list of 'FORWARD' | 'INPUT_GRAD' | 'WEIGHT_GRAD'\n"
      "(empty for non-compute ops). Raises ValueError for an unknown op.");
  m.def(
      "needs_of",
      [](const std::string& op, int32_t mb, int32_t stage, int32_t num_stages) {
        const OpKind k = op_arg("needs_of", op);
        check_stage("needs_of", mb, stage, num_stages);
        py::list out;
        for (const Need& n : needs_of(k, Microbatch{mb}, Stage{stage}, num_stages)) {
          py::dict d;
          d["buffer"] = n.buffer;
          d["role"] = to_string(n.role);
          d["mb"] = n.mb.v;
          d["stage"] = n.stage.v;
          d["recv"] = optional_name(n.recv);
          out.append(d);
        }
        return out;
      },
      py::arg("op"), py::arg("mb"), py::arg("stage"), py::arg("num_stages"),
      "The inputs compute op `op` of (mb, stage) needs, in a pipeline of num_stages virtual stages:\n"
      "list of {'buffer': 'activation' | 'input grad' | 'stash' | 'dX stash', 'role': the producer's role,\n"
      "'mb', 'stage': the producer's, 'recv': 'RECV_F' | 'RECV_B' when it comes from a neighbouring stage\n"
      "(possibly on another rank), None for the stage's own stash}. E.g. F mb3 s2 of 4 needs\n"
      "FORWARD of (3, 1) by RECV_F. Raises ValueError for an unknown op or a stage outside [0, num_stages).");
  m.def(
      "send_of",
      [](const std::string& op, int32_t stage, int32_t num_stages) {
        const OpKind k = op_arg("send_of", op);
        check_stage("send_of", 0, stage, num_stages);
        return optional_name(send_of(k, Stage{stage}, num_stages));
      },
      py::arg("op"), py::arg("stage"), py::arg("num_stages"),
      "The send carrying op's output to the neighbouring stage: 'SEND_F' (F, stage < last), 'SEND_B'\n"
      "(B / I, stage > 0) or None. Raises ValueError like needs_of.");
  m.def(
      "carried_by",
      [](const std::string& kind, int32_t mb, int32_t stage) {
        const Transfer t = carried_by(P2POp{p2p_arg("carried_by", kind), Microbatch{mb}, Stage{stage}, Rank{0}});
        if (mb < 0 || t.producer.v < 0)
          throw py::value_error("carried_by: " + kind + " mb" + std::to_string(mb) + " s" + std::to_string(stage) +
                                ": expected mb >= 0 and a producer stage >= 0 (RECV_F needs stage >= 1)");
        py::dict d;
        d["role"] = to_string(t.role);
        d["mb"] = t.mb.v;
        d["stage"] = t.producer.v;
        return d;
      },
      py::arg("kind"), py::arg("mb"), py::arg("stage"),
      "What the P2P op `kind mb stage` (stage: the local one, as in programs) carries, named alike on\n"
      "both ends: {'role', 'mb', 'stage': the producer's}. SEND_F/RECV_F carry FORWARD of (mb, s) /\n"
      "(mb, s-1), SEND_B/RECV_B INPUT_GRAD of (mb, s) / (mb, s+1). Raises ValueError for an unknown kind,\n"
      "mb < 0 or a negative producer stage.");
  m.def(
      "mirror_of",
      [](const std::string& kind, int32_t mb, int32_t stage, int32_t peer, int32_t self) {
        const P2POp o = mirror_of(P2POp{p2p_arg("mirror_of", kind), Microbatch{mb}, Stage{stage}, Rank{peer}}, Rank{self});
        py::dict d;
        d["kind"] = to_string(o.kind);
        d["mb"] = o.mb.v;
        d["stage"] = o.stage.v;
        d["peer"] = o.peer.v;
        return d;
      },
      py::arg("kind"), py::arg("mb"), py::arg("stage"), py::arg("peer"), py::arg("self"),
      "The op matching `kind mb stage <->peer` on rank `self`'s peer, as written there: {'kind', 'mb',\n"
      "'stage', 'peer' (= self)}; SEND_F mb s ->q pairs with RECV_F mb s+1 <-self. Raises ValueError for\n"
      "an unknown kind.");
  m.def(
      "stage_backwards",
      [](const std::string& programs_json, int32_t rank) {
        const ProgramSet set = parse_json(programs_json);
        const auto it = std::find_if(set.programs.begin(), set.programs.end(),
                                     [&](const Program& p) { return p.rank.v == rank; });
        if (it == set.programs.end())
          throw py::value_error("stage_backwards: rank " + std::to_string(rank) + " has no program in the set");
        py::list out;
        for (const StageBackward& sb : stage_backwards(*it)) {
          py::dict d;
          d["stage"] = sb.stage.v;
          d["last_weight_grad"] = sb.last_weight_grad;
          d["last_input_grad"] = sb.last_input_grad;
          d["send"] = sb.send ? py::object(py::int_(*sb.send)) : py::object(py::none());
          out.append(d);
        }
        return out;
      },
      py::arg("programs_json"), py::arg("rank"),
      "Each local stage's last backward on `rank` (the reduction's anchors), in stage order: list of\n"
      "{'stage', 'last_weight_grad': index of the last op filling WEIGHT_GRAD, 'last_input_grad': of the\n"
      "last filling INPUT_GRAD, 'send': of the first BATCH holding that op's SEND_B, or None (stage 0)}.\n"
      "Indices into the program's instrs. Raises ParseError for bad JSON, ValueError for a missing rank.");
}

// The Python exception types of the C++ errors below (set once, at import).
PyObject* g_config_error = nullptr;
PyObject* g_trace_error = nullptr;
PyObject* g_lift_error = nullptr;

// The C++ option checks the CLI shares name its flags ("--reduce-grad X: expected …"); raised
// through the Python API an error names the Python argument instead ("reduce_grad X: …"): one
// rewrite of the flags that are Python arguments, not a second copy of every message.
std::string python_spelling(std::string msg) {
  // Advice to re-run a command: its Python call (whatif's lifting of a trace missing ranks).
  static const std::pair<std::string_view, std::string_view> kCommands[] = {
      {"`ppstream simulate --cluster --trace-every-rank`",
       "`ppstream.simulate(config_path, cluster=True, trace_every_rank=True, trace=...)`"}};
  for (const auto& [command, call] : kCommands)
    for (size_t at = msg.find(command); at != std::string::npos; at = msg.find(command, at + call.size()))
      msg.replace(at, command.size(), call);
  static const std::pair<std::string_view, std::string_view> kFlags[] = {
      {"--reduce-grad", "reduce_grad"}, {"--trials", "trials"}, {"--steps", "steps"}, {"--step", "step"},
      {"--seed", "seed"}, {"--agg", "agg"}, {"--platform", "platform"}, {"--set", "overrides"},
      {"--trace-every-rank", "trace_every_rank=True"}, {"--cluster-engine", "cluster_engine"},
      {"--cluster", "cluster=True"}, {"--threads", "threads"}};
  for (const auto& [flag, arg] : kFlags)
    for (size_t at = msg.find(flag); at != std::string::npos; at = msg.find(flag, at)) {
      const size_t end = at + flag.size();
      if (end < msg.size() && (std::isalnum(static_cast<unsigned char>(msg[end])) || msg[end] == '-')) {
        at = end;  // a longer flag (--steps for --step)
        continue;
      }
      msg.replace(at, flag.size(), arg);
      at += arg.size();
    }
  return msg;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "ppstream engine: compile pipeline x HSDP configurations to verified stream programs";
  g_config_error = py::register_exception<ConfigError>(m, "ConfigError", PyExc_ValueError).ptr();
  py::register_exception<ParseError>(m, "ParseError", PyExc_ValueError);
  g_trace_error = py::register_exception<analyze::TraceError>(m, "TraceError", PyExc_ValueError).ptr();
  py::register_exception<VerifyError>(m, "VerifyError", PyExc_RuntimeError);
  g_lift_error = py::register_exception<whatif::LiftError>(m, "LiftError", PyExc_ValueError).ptr();
  py::register_exception_translator([](std::exception_ptr p) {  // registered last: tried first
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConfigError& e) {
      PyErr_SetString(g_config_error, python_spelling(e.what()).c_str());
    } catch (const analyze::TraceError& e) {
      PyErr_SetString(g_trace_error, python_spelling(e.what()).c_str());
    } catch (const whatif::LiftError& e) {
      PyErr_SetString(g_lift_error, python_spelling(e.what()).c_str());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, python_spelling(e.what()).c_str());
    }
  });
  bind_compile(m);
  bind_verify(m);
  bind_sim_analyze(m);
  bind_formats(m);
  bind_deps(m);
  python::bind_whatif(m);
}
