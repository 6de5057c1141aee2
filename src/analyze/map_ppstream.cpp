// Field map of ppstream's own trace format (docs/analyze.md, trace_format.h).
#include <fmt/format.h>

#include <limits>

#include "json_input.h"
#include "mappers.h"
#include "ppstream/analyze/trace_format.h"
#include "ppstream/program/format.h"

namespace ppstream::analyze::detail {
namespace tf = ppstream::analyze::trace_format;
namespace ond = simdjson::ondemand;

namespace {

void read_meta(ond::object meta, PPStreamMeta& top) {
  top.present = true;
  for (auto field : meta) {
    std::string_view key = field.unescaped_key();
    ond::value v = field.value();
    std::string_view text;
    if (key == tf::kMetaVersion) {
      top.version = as_int(v).value_or(0);
    } else if (key == tf::kMetaProducer) {
      top.producer = v.get_string().get(text) ? std::string() : std::string(text);
    } else if (key == tf::kMetaClock) {
      top.clock = v.get_string().get(text) ? std::string() : std::string(text);
    } else if (key == tf::kMetaMetrics) {
      ond::object m;
      std::string_view raw;
      if (!v.get_object().get(m) && !m.raw_json().get(raw)) top.metrics_json = std::string(raw);
    } else if (key == tf::kMetaRanks) {
      ond::object ranks;
      if (v.get_object().get(ranks)) continue;
      for (auto r : ranks) {
        std::string_view rk = r.unescaped_key();
        int64_t rank = 0;
        try {
          rank = std::stoll(std::string(rk));
        } catch (const std::exception&) {
          continue;
        }
        ond::object info;
        if (r.value().get_object().get(info)) continue;
        for (auto f : info) {
          if (f.unescaped_key().value_unsafe() == tf::kMetaPPRank) {
            if (auto pp = as_int(f.value())) top.pp_ranks.emplace_back(rank, static_cast<int32_t>(*pp));
          }
        }
      }
    }
  }
}

// Our communication slices by their instruction's op (canonical text, program/format.h): UNSHARD
// all-gathers, REDUCE_GRAD reduces (CollectiveOp::REDUCE), a COLLECTIVE is its op type. A name that is no instruction line
// (hand-written traces) says nothing: OTHER.
CollectiveOp op_of_instr(std::string_view text) {
  try {
    const Program p = parse_instr_line(std::string(text));
    switch (p.instrs.front().op) {
      case OpKind::UNSHARD: return CollectiveOp::ALL_GATHER;
      case OpKind::REDUCE_GRAD: return CollectiveOp::REDUCE;
      case OpKind::COLLECTIVE:
        switch (p.collective(p.instrs.front().coll).op) {
          case CollectiveType::ALL_REDUCE: return CollectiveOp::ALL_REDUCE;
          case CollectiveType::ALL_GATHER: return CollectiveOp::ALL_GATHER;
          case CollectiveType::REDUCE_SCATTER: return CollectiveOp::REDUCE_SCATTER;
        }
        return CollectiveOp::OTHER;
      default: return CollectiveOp::OTHER;
    }
  } catch (const ParseError&) {
    return CollectiveOp::OTHER;
  }
}

}  // namespace

void add_ppstream_scan(ScanSpec& spec) {
  spec.args.insert(spec.args.end(), {arg_key(tf::kArgKind, StrArg::KIND), arg_key(tf::kArgGroup, StrArg::GROUP),
                                     arg_key(tf::kArgEvent, StrArg::EVENT), arg_key(tf::kArgBytes, IntArg::BYTES),
                                     arg_key(tf::kArgStep, IntArg::STEP)});
  spec.top_keys.insert(spec.top_keys.end(), {"otherData", "metadata"});  // either holds kMetaKey
}

void read_ppstream_top(const std::string& path, const TopValue& value, PPStreamMeta& meta) {
  if (value.key != "otherData" && value.key != "metadata") return;
  read_top_object(path, value, [&](ond::object obj) {
    for (auto f : obj) {
      const std::string_view k = f.unescaped_key();  // throws on malformed JSON
      ond::object inner;
      if (k == tf::kMetaKey && !f.value().get_object().get(inner)) read_meta(inner, meta);
    }
  });
}

std::optional<Draft> map_ppstream(const std::string& path, const RawEvent& ev) {
  const std::string_view kind_text = arg(ev, StrArg::KIND);
  if (ev.ph != 'X' || kind_text.empty()) return std::nullopt;
  if (!ev.pid || !ev.tid) {
    throw TraceError(fmt::format("{}: byte {}: event #{} '{}': expected integer \"pid\" (rank) and "
                                 "\"tid\" (stream)",
                                 path, ev.offset, ev.index, ev.name));
  }
  if (*ev.pid < 0 || *ev.pid > std::numeric_limits<int32_t>::max()) {  // pid is the rank: an int32 id
    throw TraceError(fmt::format("{}: byte {}: event #{} '{}': \"pid\" {} is not a rank; expected 0..{}", path,
                                 ev.offset, ev.index, ev.name, *ev.pid, std::numeric_limits<int32_t>::max()));
  }
  Draft d;
  d.stream_id = *ev.tid;
  d.stream_name = fmt::format("tid {}", *ev.tid);
  if (kind_text == tf::kStepKind) {
    if (!arg(ev, IntArg::STEP)) {
      throw TraceError(fmt::format("{}: byte {}: event #{} '{}': a step marker needs an integer "
                                   "args.step",
                                   path, ev.offset, ev.index, ev.name));
    }
    d.step = arg(ev, IntArg::STEP);
    return d;
  }
  auto kind = parse_slice_kind(kind_text);
  if (!kind) {
    throw TraceError(fmt::format("{}: byte {}: event #{} '{}': args.kind '{}' is not one of compute, "
                                 "p2p, collective, stream_wait, host, memory, step",
                                 path, ev.offset, ev.index, ev.name, kind_text));
  }
  d.kind = *kind;
  if (d.kind == SliceKind::COLLECTIVE) d.op = op_of_instr(ev.name);
  d.group = std::string(arg(ev, StrArg::GROUP));
  d.event = arg(ev, StrArg::EVENT);
  const auto bytes = arg(ev, IntArg::BYTES);
  d.bytes = bytes && *bytes > 0 ? static_cast<uint64_t>(*bytes) : 0;
  if (d.kind == SliceKind::P2P) {
    try {
      d.p2p = tf::parse_batch_parts(ev.name);
    } catch (const TraceError& e) {
      throw TraceError(fmt::format("{}: byte {}: event #{}: {}", path, ev.offset, ev.index, e.what()));
    }
  }
  return d;
}

}  // namespace ppstream::analyze::detail
