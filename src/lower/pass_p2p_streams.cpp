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
#include <map>
#include <tuple>

#include "passes.h"
#include "ppstream/program/deps.h"

namespace ppstream::lower {
namespace {

std::string stream_for(const std::vector<P2POp>& ops, int32_t rank, int32_t pp, P2PTransport t) {
  if (t != P2PTransport::MULTI_STREAM) return "p2p";
  const auto send = std::find_if(ops.begin(), ops.end(), [](const P2POp& op) { return is_send(op.kind); });
  const int32_t q = (send != ops.end() ? *send : ops.front()).peer.v;
  const int32_t edge = (q == (rank + 1) % pp) ? rank : q;
  return fmt::format("p2p.{}", edge);
}

const char* recv_event_prefix(P2PKind k) { return k == P2PKind::RECV_F ? "recv_F" : "recv_B"; }

}  // namespace

ProgramSet assign_p2p_streams(ProgramSet out, const PipelineConfig& cfg) {
  const int32_t pp = cfg.pipeline_parallel_size;
  const P2PTransport transport = cfg.pipeline_parallel_p2p_transport;
  for (Program& p : out.programs) {
    std::vector<Instr> result;
    // Receives whose compute-side WAIT goes right before their consumer (overlap_p2p).
    std::map<std::tuple<P2PKind, int32_t, int32_t>, std::string> pending_recv;  // (kind, mb, consumer stage)
    int batch_counter = 0;
    result.reserve(p.instrs.size() * 2);
    for (Instr& i : p.instrs) {
      if (is_compute(i.op)) {
        for (const Need& n : needs_of(i.op, i.mb, i.stage, cfg.num_stages())) {
          if (!n.recv) continue;
          auto it = pending_recv.find({*n.recv, i.mb.v, i.stage.v});
          if (it == pending_recv.end()) continue;
          result.push_back(make_event(OpKind::WAIT, "compute", it->second));
          pending_recv.erase(it);
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
        pieces.push_back(i.p2p);
      for (const auto& ops : pieces) {
        const std::string stream = stream_for(ops, p.pp_rank, pp, transport);
        for (const P2POp& op : ops) {
          if (!is_send(op.kind)) continue;
          const std::string ev = mb_stage_event(op.kind == P2PKind::SEND_F ? "fwd_out" : "bwd_out", op.mb, op.stage);
          result.push_back(make_event(OpKind::RECORD, "compute", ev));
          result.push_back(make_event(OpKind::WAIT, stream, ev));
        }
        Instr b = i;
        b.stream = stream;
        b.p2p = ops;
        result.push_back(std::move(b));
        if (cfg.pipeline_parallel_overlap_p2p) {
          for (const P2POp& op : ops) {
            if (is_send(op.kind)) continue;
            const std::string ev = mb_stage_event(recv_event_prefix(op.kind), op.mb, op.stage);
            result.push_back(make_event(OpKind::RECORD, stream, ev));
            pending_recv[{op.kind, op.mb.v, op.stage.v}] = ev;
          }
        } else {
          const std::string ev = fmt::format("batch_done[{}]", batch_counter++);
          result.push_back(make_event(OpKind::RECORD, stream, ev));
          result.push_back(make_event(OpKind::WAIT, "compute", ev));
        }
      }
    }
    p.instrs = std::move(result);
  }
  return out;
}

}  // namespace ppstream::lower
