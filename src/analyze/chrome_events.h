// The one streaming scanner of Chrome trace JSON (chunked reading, simdjson on-demand per event): hands each event, with
// the args keys the producers' mappers asked for, to a sink. It knows the Chrome trace format only; which keys,
// categories and top-level values matter is each producer's mapper's business (ScanSpec, built in mappers.h).
// Views are valid during the callback.
#pragma once

#include <simdjson.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

// How many string and integer args slots an event carries (mappers.h numbers them).
inline constexpr size_t kArgSlots = 16;

// One args key a mapper reads and the slot of RawArgs it fills.
struct ArgKey {
  enum Type : uint8_t { STRING, INT };
  std::string_view key;  // as written in the trace, e.g. "Stream Id"
  Type type = STRING;
  uint8_t slot = 0;      // < kArgSlots; several keys may fill one slot (spellings of one field)
};

struct RawArgs;

// What the mappers ask of the scan; every other args key and top-level value is skipped unparsed.
struct ScanSpec {
  std::vector<ArgKey> args;
  // Host categories no mapper maps: their events are dropped as soon as name and category are
  // known, args unparsed, except names starting with one of `kept_prefixes` (step markers,
  // kept without args) and `link_categories` events carrying `link` (only that key is parsed).
  std::vector<std::string_view> host_categories, kept_prefixes, link_categories;
  std::optional<ArgKey> link;
  std::vector<std::string_view> top_keys;  // top-level values handed over as JSON text
  // Try read_flat_event (event_fast_path.h) on every event before the full parse: for files made
  // of flat events (Megatron timer traces), where it replaces simdjson; off for the others, whose
  // device events (nested args, long names) it would mostly read in part and then hand over.
  bool flat_events = false;
  // Hand events of every "ph" (none included, ph 0) to the sink, not only complete ("X") and
  // metadata ("M") ones: for a reader that must refuse an event claiming to be its own with the
  // wrong "ph" (Megatron timer ops, docs/whatif.md "Input") instead of never seeing it.
  bool every_phase = false;
  // INT args keys (of `args`) whose presence brings an event of any "ph" (none included) to the
  // sink, as every_phase does for all: for a reader that must refuse an event claiming to be
  // its own with the wrong "ph" (analyze: a Megatron timer op's args.step / args.seq_id) while
  // the other events of its "ph" (Kineto's flows, instants) stay dropped unparsed.
  std::vector<std::string_view> claim_keys;

  // Whether an event of this text may give one of claim_keys: the key's quoted spelling or an
  // escape ('\\') in it (a cheap test on the text before any parse).
  bool may_claim(std::string_view text) const {
    if (claim_keys.empty()) return false;
    if (text.find('\\') != std::string_view::npos) return true;
    for (std::string_view k : claim_keys) {
      for (size_t at = text.find(k); at != std::string_view::npos; at = text.find(k, at + 1))
        if (at > 0 && text[at - 1] == '"' && at + k.size() < text.size() && text[at + k.size()] == '"') return true;
    }
    return false;
  }
  // Whether `a` gives one of claim_keys (whatever its value).
  bool claimed(const RawArgs& a) const;

  // The first of `args` with this key (as the full parse matches them), nullptr when none; by
  // the index index_args() builds, else by a linear search.
  const ArgKey* find_arg(std::string_view key) const {
    if (arg_index_.empty()) {
      for (const ArgKey& k : args)
        if (k.key == key) return &k;
      return nullptr;
    }
    for (uint8_t i : arg_index_[bucket(key)])
      if (args[i].key == key) return &args[i];
    return nullptr;
  }
  // Builds find_arg's index (call once `args` is complete; more than 256 keys stay unindexed:
  // find_arg then searches them all).
  void index_args() {
    arg_index_.clear();
    if (args.size() > 256) return;
    arg_index_.assign(64, {});
    for (size_t i = 0; i < args.size(); ++i) arg_index_[bucket(args[i].key)].push_back(static_cast<uint8_t>(i));
  }

 private:
  static size_t bucket(std::string_view key) {
    return key.empty() ? 0 : (key.size() * 7 + static_cast<unsigned char>(key.front()) + static_cast<unsigned char>(key.back())) & 63;
  }
  std::vector<std::vector<uint8_t>> arg_index_;  // bucket → indices into args, in order
};

struct RawArgs {
  std::array<std::string_view, kArgSlots> str{};
  std::array<std::optional<int64_t>, kArgSlots> num{};
  std::string_view meta_name;  // args.name: what a "M" (metadata) event names
  // Bit i: an INT key of slot i was given, whatever its value (num[i] is empty when the value
  // is no integer): a reader tells a malformed value from an absent key.
  uint32_t num_given = 0;
  bool given(size_t slot) const { return (num_given >> slot) & 1u; }
};

inline bool ScanSpec::claimed(const RawArgs& a) const {
  for (std::string_view k : claim_keys)
    if (const ArgKey* arg = find_arg(k); arg && arg->type == ArgKey::INT && a.given(arg->slot)) return true;
  return false;
}

struct RawEvent {
  size_t index = 0;     // position in traceEvents
  size_t offset = 0;    // byte offset of the event in the (decompressed) file
  char ph = 0;
  std::string_view name, cat;
  std::optional<int64_t> pid, tid;
  std::optional<int64_t> ts_ns, dur_ns;
  RawArgs args;
  bool args_null = false;  // "args": null (a reader says so rather than "args.X missing")
};

// A top-level value named in ScanSpec::top_keys (it may come before or after traceEvents).
struct TopValue {
  std::string key, json;  // the key and the value's JSON text
  uint64_t offset = 0;    // byte offset of the value in the (decompressed) file
};

// Scans every event of the file at `path` (plain or gzip), reading it in bounded chunks and
// parsing one event at a time (docs/analyze.md "Memory"); only complete ("X") and metadata ("M")
// events reach `sink` (every one with `spec.every_phase`), those of `spec.host_categories` as the
// spec says; top-level values named in `spec.top_keys` reach `top_sink` as they are read. Returns
// how many events the file holds (those the sink never saw included). Throws TraceError with
// file, event index and byte offset, and for a top-level key given twice (a second
// "traceEvents" would hold every event twice).
size_t scan_chrome(const std::string& path, const ScanSpec& spec, const std::function<void(const RawEvent&)>& sink,
                 const std::function<void(const TopValue&)>& top_sink);

// Parses a top-level value as an object and hands it to `read`; a value that is not an object is
// ignored. Throws TraceError naming the file, byte and key when the JSON is malformed.
void read_top_object(const std::string& path, const TopValue& value,
                     const std::function<void(simdjson::ondemand::object)>& read);

}  // namespace ppstream::analyze::detail
