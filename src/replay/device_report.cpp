// The hang report of one rank: every stream that has not drained, with the instruction it is
// stuck on (canonical text, index), and what it waits for — an event, the peers of unmatched
// P2P ops, a collective's group, or an instruction the host never issued.
#include <fmt/format.h>

#include <algorithm>

#include "ppstream/program/format.h"
#include "replay/device.h"

namespace ppstream::replay {
namespace {

std::string members(const std::vector<int32_t>& ranks) {
  std::string s;
  for (int32_t r : ranks) s += (s.empty() ? "r" : ",r") + std::to_string(r);
  return s;
}

}  // namespace

std::string Device::report() const {
  std::string out;
  // Only jobs the progress thread still holds are alive for sure (a finished one may be gone).
  const std::vector<const Job*> live = progress_.outstanding();
  const auto alive = [&](const Job* j) { return j && std::find(live.begin(), live.end(), j) != live.end(); };
  for (size_t s = 0; s < streams_.size(); ++s) {
    const Stream& st = *streams_[s];
    const auto done = static_cast<size_t>(st.done.load());
    const auto& list = plan_.stream_instrs[s];
    if (done >= list.size()) continue;
    const int32_t cur = st.current.load();
    const int32_t k = cur >= 0 ? cur : list[done];
    const Instr& in = prog_.instrs[static_cast<size_t>(k)];
    const Job* seen = st.job.load();
    const Job* job = alive(seen) ? seen : nullptr;
    std::string why;
    if (cur < 0) {
      why = "not issued by the host";
    } else if (in.op == OpKind::WAIT) {
      why = "event " + prog_.event_name(in.event) + " not recorded";
    } else if (job && !job->coll) {
      std::string peers;
      for (size_t j = 0; j < job->p2p.size(); ++j)
        if (job->done.size() < (j + 1) * kMpiPerP2P || !job->done[j * kMpiPerP2P] || !job->done[j * kMpiPerP2P + 2])
          peers += fmt::format("{}{} peer r{}", peers.empty() ? "" : ", ", to_text(in.p2p[j]), in.p2p[j].peer.v);
      why = "unmatched: " + peers;
    } else if (job) {  // alive, collective
      why = fmt::format("collective with {} not complete",
                        members(job->coll->comm == kShardComm ? plan_.shard_members : plan_.replicate_members));
    } else {
      why = "running";
    }
    out += fmt::format("replay: unfinished r{} stream {} #{} {}: {}\n", prog_.rank.v, plan_.streams[s], k, to_text(prog_, in), why);
  }
  return out;
}

}  // namespace ppstream::replay
