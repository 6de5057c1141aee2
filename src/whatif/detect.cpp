// Which reader a what-if input goes to (docs/whatif.md "Input"): ppstream's own trace format
// (a file whose top-level object has otherData.ppstream, a replay directory, a train run
// directory) or Megatron timer timelines. Detection parses the JSON (whitespace, key order and
// re-serialisation do not matter); it keeps no value.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "ppstream/analyze/readers.h"
#include "ppstream/analyze/trace_format.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace fs = std::filesystem;
namespace {

// SAX handler: stops (returns false) as soon as the top-level object's "otherData" object has
// the key "ppstream"; keeps nothing else.
class MetaFinder : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool found = false;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return push(true); }
  bool start_array(std::size_t) override { return push(false); }
  bool end_object() override { return pop(); }
  bool end_array() override { return pop(); }
  bool key(string_t& k) override {
    if (depth_ == 1) in_other_ = k == "otherData";
    if (depth_ == 2 && in_other_ && is_object_ && k == analyze::trace_format::kMetaKey) {
      found = true;
      return false;  // done: stop the parse
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool push(bool object) {
    ++depth_;
    if (depth_ == 1 && !object) return false;  // a top-level array: a timeline, never ours
    if (depth_ == 2) is_object_ = object;
    return true;
  }
  bool pop() {
    if (depth_ == 2) in_other_ = false;
    --depth_;
    return true;
  }
  int depth_ = 0;
  bool in_other_ = false, is_object_ = false;
};

bool is_train_run_dir(const fs::path& dir) {
  return fs::is_regular_file(dir / "run.json") && fs::is_regular_file(dir / "programs.json");
}

bool has_suffix(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Cheap first: a file with no "ppstream" string anywhere (a Megatron timeline, a gzip file) is
// not ours; read in 1 MiB chunks, never whole.
bool mentions_ppstream(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  constexpr std::string_view kNeedle = R"("ppstream")";
  std::string buf(1 << 20, '\0');
  std::string carry;
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<size_t>(f.gcount());
    if (n == 0) break;
    std::string window = carry + buf.substr(0, n);
    if (window.find(kNeedle) != std::string::npos) return true;
    carry = window.substr(window.size() >= kNeedle.size() ? window.size() - kNeedle.size() + 1 : 0);
  }
  return false;
}

}  // namespace

bool is_ppstream_trace(const std::string& path) {
  if (fs::is_directory(path)) {
    if (is_train_run_dir(path)) return true;
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().filename().string().rfind("replay.", 0) == 0 && e.path().extension() == ".json") return true;
    return false;
  }
  if (!mentions_ppstream(path)) return false;
  std::ifstream f(path, std::ios::binary);
  MetaFinder sax;
  nlohmann::json::sax_parse(f, &sax, nlohmann::json::input_format_t::json, /*strict=*/false);
  return sax.found;
}

std::optional<std::string> ppstream_trace_of(const std::vector<std::string>& paths) {
  for (const std::string& p : paths)
    if (has_suffix(p, ".parquet"))
      throw LiftError(fmt::format("whatif: {}: a parquet table (the what-if artifact's format) is read from Python: "
                                  "ppstream.whatif([...parquet paths]) with pyarrow installed (docs/whatif.md "
                                  "\"Input\"); the CLI reads Chrome JSON timelines and ppstream traces",
                                  p));
  std::vector<std::string> ours;
  for (const std::string& p : paths) {
    if (is_ppstream_trace(p)) {
      ours.push_back(p);
    } else if (fs::is_directory(p)) {
      const fs::path d(p);
      throw LiftError(fmt::format("whatif: {}: not a run directory: no {} (`ppstream train --out DIR` writes run.json "
                                  "and programs.json), nor a `replay --trace` directory (no replay.POLICY.rankN.json)",
                                  p, fs::is_regular_file(d / "run.json") ? "programs.json" : "run.json"));
    }
  }
  if (ours.empty()) return std::nullopt;
  if (const auto twice = analyze::repeated_path(paths))
    throw LiftError(fmt::format("whatif: {} is given twice; one ppstream trace at a time (a file, a replay directory "
                                "or a train run directory)",
                                *twice));
  if (paths.size() > 1)
    throw LiftError(fmt::format("whatif: {} inputs, {} of them ppstream traces ({}): one ppstream trace at a time (a "
                                "file, a replay directory or a train run directory); several paths are the files of "
                                "one Megatron job",
                                paths.size(), ours.size(), fmt::join(ours, ", ")));
  return ours.front();
}

}  // namespace ppstream::whatif
