// JSON form of program sets (schema in format.h), for tools and the Python runtime. Every
// instruction carries its canonical text line so trace slices join back to it. The reader
// validates strictly and names the JSON path of the first bad value.
#include <algorithm>
#include <initializer_list>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "ppstream/program/format.h"
#include "ppstream/program/name_index.h"

namespace ppstream {
namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

constexpr const char* kFormat = "ppstream.programs/1";

ojson p2p_to_json(const P2POp& op) {
  ojson j;
  j["kind"] = to_string(op.kind);
  j["mb"] = op.mb.v;
  j["stage"] = op.stage.v;
  j["peer"] = op.peer.v;
  return j;
}

// "bucket": [index, count] for a piece of a bucketed stage; absent for the whole stage.
void bucket_to_json(ojson& j, const Instr& i) {
  if (i.bucket.whole()) return;
  ojson b = ojson::array();
  b.push_back(i.bucket.index);
  b.push_back(i.bucket.count);
  j["bucket"] = std::move(b);
}

ojson instr_to_json(const Program& p, const Instr& i) {
  ojson j;
  j["stream"] = p.stream_name(i.stream);
  j["op"] = to_string(i.op);
  switch (i.op) {
    case OpKind::F:
    case OpKind::B:
    case OpKind::I:
    case OpKind::W:
      j["mb"] = i.mb.v;
      j["stage"] = i.stage.v;
      bucket_to_json(j, i);
      break;
    case OpKind::BATCH: {
      ojson ops = ojson::array();
      for (const P2POp& op : i.p2p) ops.push_back(p2p_to_json(op));
      j["p2p"] = std::move(ops);
      break;
    }
    case OpKind::RECORD:
    case OpKind::WAIT:
      j["event"] = p.event_name(i.event);
      break;
    case OpKind::UNSHARD:
    case OpKind::RESHARD:
    case OpKind::REDUCE_GRAD:
      j["stage"] = i.stage.v;
      bucket_to_json(j, i);
      break;
    case OpKind::OPT_STEP:
      break;
    case OpKind::COLLECTIVE: {
      const Collective& c = p.collective(i.coll);
      j["coll"] = to_string(c.op);
      j["group"] = c.group;
      j["first"] = c.first.v;
      j["stride"] = c.stride;
      j["count"] = c.count;
      break;
    }
  }
  j["text"] = to_line(p, i);
  return j;
}

std::string join_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// Strict reader: each accessor takes the JSON path of the value for its error messages.
class Reader {
 public:
  explicit Reader(const std::string& origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string& path, const std::string& expected, const json* got) const {
    std::string shown = "nothing";
    if (got) {
      shown = got->dump();
      if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
    }
    throw ParseError(origin_ + ": " + (path.empty() ? "(root)" : path) + ": expected " + expected + ", got " + shown);
  }

  void expect_object(const json& j, const std::string& path, std::initializer_list<const char*> keys) const {
    if (!j.is_object()) fail(path, "an object", &j);
    for (const auto& item : j.items()) {
      const std::string& k = item.key();  // not a structured binding: clang 14 cannot capture one
      const json& v = item.value();
      if (std::find_if(keys.begin(), keys.end(), [&](const char* a) { return k == a; }) == keys.end()) {
        std::string allowed;
        for (const char* a : keys) allowed += std::string(allowed.empty() ? "" : ", ") + a;
        fail(join_path(path, k), "no such key here (allowed: " + allowed + ")", &v);
      }
    }
  }
  const json& member(const json& obj, const char* key, const std::string& path) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(join_path(path, key), "a value (required key)", nullptr);
    return *it;
  }
  int32_t get_int(const json& obj, const char* key, const std::string& path, int32_t min) const {
    const json& v = member(obj, key, path);
    std::string p = join_path(path, key);
    std::string what = "an integer >= " + std::to_string(min);
    if (v.is_number_unsigned()) {
      auto x = v.get<uint64_t>();
      if (x > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) || x < static_cast<uint64_t>(min))
        fail(p, what, &v);
      return static_cast<int32_t>(x);
    }
    if (v.is_number_integer()) {  // negative
      auto x = v.get<int64_t>();
      if (x < min || x > std::numeric_limits<int32_t>::max()) fail(p, what, &v);
      return static_cast<int32_t>(x);
    }
    fail(p, what, &v);
  }
  std::string get_string(const json& obj, const char* key, const std::string& path) const {
    const json& v = member(obj, key, path);
    if (!v.is_string()) fail(join_path(path, key), "a string", &v);
    return v.get<std::string>();
  }

 private:
  const std::string& origin_;
};

P2POp read_p2p(const Reader& rd, const json& j, const std::string& path) {
  rd.expect_object(j, path, {"kind", "mb", "stage", "peer"});
  P2POp op;
  std::string kind = rd.get_string(j, "kind", path);
  auto k = parse_p2p_kind(kind);
  if (!k) rd.fail(path + ".kind", "one of SEND_F, RECV_F, SEND_B, RECV_B", &j.at("kind"));
  op.kind = *k;
  op.mb = Microbatch{rd.get_int(j, "mb", path, 0)};
  op.stage = Stage{rd.get_int(j, "stage", path, 0)};
  op.peer = Rank{rd.get_int(j, "peer", path, 0)};
  return op;
}

// The indexes of a program's name tables while it is read.
// The optional "bucket": [index, count] of B, W, REDUCE_GRAD (0 <= index < count, count >= 2).
Bucket read_bucket(const Reader& rd, const json& j, const std::string& path) {
  auto it = j.find("bucket");
  if (it == j.end()) return Bucket{};
  const json& b = *it;
  const char* what = "[index, count] with 0 <= index < count and count >= 2";
  if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer())
    rd.fail(path + ".bucket", what, &b);
  const auto index = b[0].get<int64_t>(), count = b[1].get<int64_t>();
  if (count < 2 || count > std::numeric_limits<int32_t>::max() || index < 0 || index >= count)
    rd.fail(path + ".bucket", what, &b);
  return Bucket{static_cast<int32_t>(index), static_cast<int32_t>(count)};
}

struct NameIndexes {
  NameIndex<StreamId> streams;
  NameIndex<EventId> events;
};

// Reads one instruction of `prog` (its names interned in prog's tables through `names`).
Instr read_instr(const Reader& rd, const json& j, const std::string& path, Program& prog, NameIndexes& names) {
  if (!j.is_object()) rd.fail(path, "an object", &j);
  Instr in;
  std::string op = rd.get_string(j, "op", path);
  auto kind = parse_op_kind(op);
  if (!kind)
    rd.fail(path + ".op", "one of F, B, I, W, BATCH, RECORD, WAIT, UNSHARD, RESHARD, REDUCE_GRAD, OPT_STEP, COLLECTIVE",
            &j.at("op"));
  in.op = *kind;
  const std::string stream = rd.get_string(j, "stream", path);
  if (!is_valid_stream_name(stream))
    rd.fail(path + ".stream", "a stream name [a-z][a-z0-9_.]*", &j.at("stream"));
  in.stream = names.streams.intern(prog.stream_names, stream);
  switch (in.op) {
    case OpKind::F:
    case OpKind::B:
    case OpKind::I:
    case OpKind::W:
      if (in.op == OpKind::B || in.op == OpKind::W)
        rd.expect_object(j, path, {"stream", "op", "mb", "stage", "bucket", "text"});
      else
        rd.expect_object(j, path, {"stream", "op", "mb", "stage", "text"});
      in.mb = Microbatch{rd.get_int(j, "mb", path, 0)};
      in.stage = Stage{rd.get_int(j, "stage", path, 0)};
      in.bucket = read_bucket(rd, j, path);
      break;
    case OpKind::BATCH: {
      rd.expect_object(j, path, {"stream", "op", "p2p", "text"});
      const json& ops = rd.member(j, "p2p", path);
      std::string p = path + ".p2p";
      if (!ops.is_array() || ops.empty()) rd.fail(p, "a non-empty array of P2P ops", &ops);
      for (size_t k = 0; k < ops.size(); ++k)
        in.p2p.push_back(read_p2p(rd, ops[k], p + "[" + std::to_string(k) + "]"));
      break;
    }
    case OpKind::RECORD:
    case OpKind::WAIT: {
      rd.expect_object(j, path, {"stream", "op", "event", "text"});
      const std::string event = rd.get_string(j, "event", path);
      if (!is_valid_event_name(event))
        rd.fail(path + ".event", "an event name (printable, no spaces or ;{})", &j.at("event"));
      in.event = names.events.intern(prog.event_names, event);
      break;
    }
    case OpKind::UNSHARD:
    case OpKind::RESHARD:
    case OpKind::REDUCE_GRAD:
      if (in.op == OpKind::REDUCE_GRAD)
        rd.expect_object(j, path, {"stream", "op", "stage", "bucket", "text"});
      else
        rd.expect_object(j, path, {"stream", "op", "stage", "text"});
      in.stage = Stage{rd.get_int(j, "stage", path, 0)};
      in.bucket = read_bucket(rd, j, path);
      break;
    case OpKind::OPT_STEP:
      rd.expect_object(j, path, {"stream", "op", "text"});
      break;
    case OpKind::COLLECTIVE: {
      rd.expect_object(j, path, {"stream", "op", "coll", "group", "first", "stride", "count", "text"});
      Collective c;
      const std::string coll = rd.get_string(j, "coll", path);
      auto k = parse_collective_type(coll);
      if (!k) rd.fail(path + ".coll", "one of ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER", &j.at("coll"));
      c.op = *k;
      c.group = rd.get_string(j, "group", path);
      if (!is_valid_stream_name(c.group)) rd.fail(path + ".group", "a group name [a-z][a-z0-9_.]*", &j.at("group"));
      c.first = Rank{rd.get_int(j, "first", path, 0)};
      c.count = rd.get_int(j, "count", path, 1);
      c.stride = rd.get_int(j, "stride", path, 1);
      if (int64_t{c.first.v} + int64_t{c.count - 1} * c.stride > std::numeric_limits<int32_t>::max())
        rd.fail(path + ".count", "a member range whose last rank fits in int32", &j.at("count"));
      if (c.count == 1 && c.stride != 1) rd.fail(path + ".stride", "1 for a group of one member", &j.at("stride"));
      in.coll = prog.intern_collective(c);
      break;
    }
  }
  if (j.contains("text")) {
    std::string canonical = to_line(prog, in);
    const json& t = j.at("text");
    if (!t.is_string() || t.get<std::string>() != canonical)
      rd.fail(path + ".text", "\"" + canonical + "\" (the instruction's canonical text)", &t);
  }
  return in;
}

// SAX handler that builds the DOM (nlohmann's own builder) but keeps the byte offset of a
// failure: nlohmann reports a number overflow (`1e999`) as out_of_range.406 with no position.
class LocatingSax : public nlohmann::json_sax<json> {
 public:
  explicit LocatingSax(json& root) : dom_(root, /*allow_exceptions=*/false) {}
  bool null() override { return dom_.null(); }
  bool boolean(bool v) override { return dom_.boolean(v); }
  bool number_integer(number_integer_t v) override { return dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) override { return dom_.number_float(v, s); }
  bool string(string_t& v) override { return dom_.string(v); }
  bool binary(binary_t& v) override { return dom_.binary(v); }
  bool start_object(std::size_t n) override { return dom_.start_object(n); }
  bool key(string_t& v) override { return dom_.key(v); }
  bool end_object() override { return dom_.end_object(); }
  bool start_array(std::size_t n) override { return dom_.start_array(n); }
  bool end_array() override { return dom_.end_array(); }
  bool parse_error(std::size_t byte, const std::string& token, const nlohmann::detail::exception& e) override {
    byte_ = byte;
    token_ = token.size() > 40 ? token.substr(0, 37) + "..." : token;
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 3: ...": keep the text after
    // the bracketed id, which says what was expected.
    std::string what = e.what();
    if (auto close = what.find("] "); close != std::string::npos) what.erase(0, close + 2);
    message_ = e.id == 406 ? "number out of range (finite double expected)" : what;
    return false;
  }
  [[noreturn]] void fail(const std::string& origin) const {
    throw ParseError(origin + ": byte " + std::to_string(byte_) + ": malformed JSON at '" + token_ + "': " + message_);
  }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::size_t byte_ = 0;
  std::string token_, message_;
};

ProgramSet read_program_set(const json& root, const std::string& origin) {
  Reader rd(origin);
  const std::string top;  // the root's path is empty: errors read "world.pp", "programs[2]…"
  rd.expect_object(root, top, {"format", "world", "mode", "policy", "programs"});
  const json& fmt = rd.member(root, "format", top);
  if (fmt != kFormat) rd.fail("format", std::string("\"") + kFormat + "\"", &fmt);

  ProgramSet set;
  const json& wj = rd.member(root, "world", top);
  rd.expect_object(wj, "world", {"pp", "vpp", "shard", "replicate", "expanded", "placement"});
  set.world.pp = rd.get_int(wj, "pp", "world", 1);
  set.world.vpp = rd.get_int(wj, "vpp", "world", 1);
  set.world.shard = rd.get_int(wj, "shard", "world", 1);
  set.world.replicate = rd.get_int(wj, "replicate", "world", 1);
  if (wj.contains("placement")) {  // optional; absent = loop
    const auto pl = parse_placement(rd.get_string(wj, "placement", "world"));
    if (!pl) rd.fail("world.placement", "\"loop\" or \"v\"", &wj.at("placement"));
    set.world.placement = *pl;
  }
  if (auto e = world_size_error(set.world)) throw ParseError(origin + ": world: " + *e);
  const json& exp = rd.member(wj, "expanded", "world");
  if (!exp.is_boolean()) rd.fail("world.expanded", "true or false", &exp);
  set.world.expanded = exp.get<bool>();

  auto mode = parse_dp_mode(rd.get_string(root, "mode", top));
  if (!mode) rd.fail("mode", "one of none, fsdp, hsdp", &root.at("mode"));
  set.mode = *mode;
  auto policy = parse_reduce_policy(rd.get_string(root, "policy", top));
  if (!policy) rd.fail("policy", "one of none, inline, async", &root.at("policy"));
  if ((*policy == ReducePolicy::NONE) != (set.mode == DPMode::NONE))
    rd.fail("policy", set.mode == DPMode::NONE ? "\"none\" with mode none" : "inline or async with a DP mode",
            &root.at("policy"));
  set.policy = *policy;

  const json& programs = rd.member(root, "programs", top);
  if (!programs.is_array()) rd.fail("programs", "an array", &programs);
  for (size_t k = 0; k < programs.size(); ++k) {
    std::string path = "programs[" + std::to_string(k) + "]";
    const json& pj = programs[k];
    rd.expect_object(pj, path, {"rank", "pp_rank", "instrs"});
    Program p;
    p.rank = Rank{rd.get_int(pj, "rank", path, 0)};
    if (!set.programs.empty() && set.programs.back().rank >= p.rank)
      rd.fail(path + ".rank", "a rank above r" + std::to_string(set.programs.back().rank.v) +
                                  " (programs sorted by rank, one per rank)", &pj.at("rank"));
    int32_t expected_pp = pp_rank_of(p.rank, set.world);
    p.pp_rank = rd.get_int(pj, "pp_rank", path, 0);
    if (p.pp_rank != expected_pp)
      rd.fail(path + ".pp_rank", std::to_string(expected_pp) + " (derived from rank and world)",
              &pj.at("pp_rank"));
    const json& instrs = rd.member(pj, "instrs", path);
    if (!instrs.is_array()) rd.fail(path + ".instrs", "an array", &instrs);
    p.instrs.reserve(instrs.size());
    NameIndexes names;
    for (size_t i = 0; i < instrs.size(); ++i) {
      Instr in = read_instr(rd, instrs[i], path + ".instrs[" + std::to_string(i) + "]", p, names);
      p.instrs.push_back(std::move(in));
    }
    set.programs.push_back(std::move(p));
  }
  return set;
}

}  // namespace

std::string to_json(const ProgramSet& set, int indent) {
  ojson j;
  j["format"] = kFormat;
  const World& w = set.world;
  j["world"] = ojson{{"pp", w.pp}, {"vpp", w.vpp}, {"shard", w.shard}, {"replicate", w.replicate},
                     {"expanded", w.expanded}};
  if (w.placement != Placement::LOOP) j["world"]["placement"] = to_string(w.placement);
  j["mode"] = to_string(set.mode);
  j["policy"] = to_string(set.policy);
  ojson programs = ojson::array();
  for (const Program& p : set.programs) {
    ojson instrs = ojson::array();
    for (const Instr& i : p.instrs) instrs.push_back(instr_to_json(p, i));
    ojson pj;
    pj["rank"] = p.rank.v;
    pj["pp_rank"] = p.pp_rank;
    pj["instrs"] = std::move(instrs);
    programs.push_back(std::move(pj));
  }
  j["programs"] = std::move(programs);
  return j.dump(indent);
}

ProgramSet parse_json(const std::string& json_text, const std::string& origin) {
  json root;
  LocatingSax sax(root);
  if (!json::sax_parse(json_text, &sax)) sax.fail(origin);
  try {
    return read_program_set(root, origin);
  } catch (const json::exception& e) {  // a reader bug, never expected: still name the file
    throw ParseError(origin + ": unexpected JSON value (" + e.what() + ")");
  }
}

}  // namespace ppstream
