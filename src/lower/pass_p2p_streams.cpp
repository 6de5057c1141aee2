// Pass assign-p2p-streams: puts each BATCH on its P2P stream and makes every cross-stream
// buffer dependency an explicit event (the Ascend rule "a comm op issued from stream X waits X's
// tail" written out):
//   compute RECORD fwd_out[mb,s] / bwd_out[mb,s]   then  p2p WAIT it   before a send;
//   overlap_p2p:  p2p RECORD recv_F[mb,s] after the batch, compute WAIT it before F(mb,s);
//   otherwise:    p2p RECORD batch_done[k], compute WAIT it right away (Megatron without
//                 overlap_p2p_comm waits every request at once).
// Transports: plain = one op per batch on `p2p`; batch = one `p2p` stream; multi_stream = stream
// `p2p.E` per pipeline edge E (edge E joins PP ranks E and E+1 mod pp), chosen by the batch's
// first send (its first op if it only receives), so the stream does not depend on op order.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "passes.h"
#include "ppstream/program/deps.h"
#include "ppstream/program/streams.h"

namespace ppstream::lower {
namespace {

// The stream of a batch of `p` (multi_stream: its edge's stream, interned in p's table).
StreamId stream_for(Program& p, const std::vector<P2POp>& ops, int32_t pp, P2PTransport t) {
  if (t != P2PTransport::MULTI_STREAM) return streams::kP2P;
  const auto send = std::find_if(ops.begin(), ops.end(), [](const P2POp& op) { return is_send(op.kind); });
  const int32_t q = (send != ops.end() ? *send : ops.front()).peer.v;
  const int32_t edge = (q == (p.pp_rank + 1) % pp) ? p.pp_rank : q;
  return p.intern_stream(streams::p2p_edge(edge));
}

// The event a receive's RECORD names (its consumer's WAIT names the same), and its key.
std::string recv_event(P2PKind k, Microbatch mb, Stage consumer) {
  return mb_stage_event(k == P2PKind::RECV_F ? "recv_F" : "recv_B", mb, consumer);
}
uint64_t recv_key(P2PKind k, Microbatch mb, Stage consumer) {
  return (static_cast<uint64_t>(k) << 62) | (static_cast<uint64_t>(static_cast<uint32_t>(mb.v)) << 30) |
         (static_cast<uint64_t>(static_cast<uint32_t>(consumer.v)) & ((uint64_t{1} << 30) - 1));
}

}  // namespace

ProgramSet assign_p2p_streams(ProgramSet out, const PipelineConfig& cfg) {
  const int32_t pp = cfg.pipeline_parallel_size;
  const P2PTransport transport = cfg.pipeline_parallel_p2p_transport;
  for (Program& p : out.programs) {
    std::vector<Instr> result;
    // Receives whose compute-side WAIT goes right before their consumer (overlap_p2p), by
    // recv_key; the WAIT names the event the receive's RECORD named (recv_event).
    std::unordered_map<uint64_t, EventId> pending_recv;
    // Every event this pass names is new on the rank (the passes before it make none; a send or
    // receive op occurs once per (kind, mb, stage) and batch_done is counted), so a name is
    // appended without a lookup (hashing them made the seed's simulate at 65,536 microbatches
    // about 50 % slower). A receive's RECORD and its consumer's WAIT share the id kept under
    // recv_key. Lower.EventNamesAreUniquePerRank checks the names are unique.
    const auto event = [&p](std::string name) {
      p.event_names.push_back(std::move(name));
      return EventId{static_cast<uint32_t>(p.event_names.size() - 1)};
    };
    int batch_counter = 0;
    result.reserve(p.instrs.size() * 2);
    for (Instr& i : p.instrs) {
      if (is_compute(i.op)) {
        for (const Need& n : needs_of(i.op, i.mb, i.stage, cfg.num_stages())) {
          if (!n.recv) continue;
          const auto recv = pending_recv.find(recv_key(*n.recv, i.mb, i.stage));
          if (recv == pending_recv.end()) continue;
          result.push_back(make_event(OpKind::WAIT, streams::kCompute, recv->second));
          pending_recv.erase(recv);
        }
        result.push_back(std::move(i));
        continue;
      }
      if (i.op != OpKind::BATCH) {
        result.push_back(std::move(i));
        continue;
      }
      // Split per transport: plain posts every op on its own.
      std::vector<std::vector<P2POp>> pieces;
      if (transport == P2PTransport::PLAIN)
        for (const P2POp& op : i.p2p) pieces.push_back({op});
      else
        pieces.push_back(std::move(i.p2p));
      i.p2p.clear();
      for (auto& ops : pieces) {
        const StreamId stream = stream_for(p, ops, pp, transport);
        for (const P2POp& op : ops) {
          if (!is_send(op.kind)) continue;
          const EventId ev = event(mb_stage_event(op.kind == P2PKind::SEND_F ? "fwd_out" : "bwd_out", op.mb, op.stage));
          result.push_back(make_event(OpKind::RECORD, streams::kCompute, ev));
          result.push_back(make_event(OpKind::WAIT, stream, ev));
        }
        Instr b = i;  // the BATCH without its ops
        b.stream = stream;
        b.p2p = std::move(ops);
        result.push_back(std::move(b));
        const std::vector<P2POp>& posted = result.back().p2p;
        if (cfg.pipeline_parallel_overlap_p2p) {
          std::vector<Instr> records;  // after the batch (not pushed while `posted` is read)
          for (const P2POp& op : posted) {
            if (is_send(op.kind)) continue;
            const EventId ev = event(recv_event(op.kind, op.mb, op.stage));
            records.push_back(make_event(OpKind::RECORD, stream, ev));
            pending_recv.emplace(recv_key(op.kind, op.mb, op.stage), ev);
          }
          for (Instr& r : records) result.push_back(std::move(r));
        } else {
          const EventId ev = event(fmt::format("batch_done[{}]", batch_counter++));
          result.push_back(make_event(OpKind::RECORD, stream, ev));
          result.push_back(make_event(OpKind::WAIT, streams::kCompute, ev));
        }
      }
    }
    p.instrs = std::move(result);
  }
  return out;
}

}  // namespace ppstream::lower
