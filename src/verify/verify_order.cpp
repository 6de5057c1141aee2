// Rules `happens-before` (every buffer produced before it is consumed, per docs/semantics.md
// "Buffers and happens-before") and the ordering half of `drain` (every REDUCE_GRAD and every
// RESHARD off the compute stream happens-before OPT_STEP). Both use the rank's vector clocks.
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "verify/report.h"
#include "verify/vector_clock.h"

namespace ppstream::verify_detail {
namespace {

constexpr const char* kHb = "happens-before";

// Where the instructions of one rank are, by what they touch (first occurrence wins).
struct RankIndex {
  std::map<std::pair<int32_t, int32_t>, int32_t> f, b;                   // (mb, stage) → index
  std::map<std::tuple<P2PKind, int32_t, int32_t>, int32_t> batch;        // (kind, mb, stage) → BATCH
  std::map<int32_t, std::vector<int32_t>> compute_of_stage;              // stage → its F/B, in order
  std::map<int32_t, std::vector<int32_t>> b_of_stage;                    // stage → its B
  std::map<int32_t, int32_t> unshard, reshard, reduce;                   // stage → first index
  std::vector<int32_t> reduces, reshards;                                // every REDUCE_GRAD / RESHARD
  int32_t opt = kNone;

  explicit RankIndex(const Program& p) {
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      const Instr& in = p.instrs[k];
      const auto i = static_cast<int32_t>(k);
      switch (in.op) {
        case OpKind::F:
          f.emplace(std::pair{in.mb.v, in.stage.v}, i);
          compute_of_stage[in.stage.v].push_back(i);
          break;
        case OpKind::B:
          b.emplace(std::pair{in.mb.v, in.stage.v}, i);
          compute_of_stage[in.stage.v].push_back(i);
          b_of_stage[in.stage.v].push_back(i);
          break;
        case OpKind::BATCH:
          for (const P2POp& op : in.p2p) batch.emplace(std::tuple{op.kind, op.mb.v, op.stage.v}, i);
          break;
        case OpKind::UNSHARD: unshard.emplace(in.stage.v, i); break;
        case OpKind::RESHARD:
          reshard.emplace(in.stage.v, i);
          reshards.push_back(i);
          break;
        case OpKind::REDUCE_GRAD:
          reduce.emplace(in.stage.v, i);
          reduces.push_back(i);
          break;
        case OpKind::OPT_STEP:
          if (opt == kNone) opt = i;
          break;
        case OpKind::RECORD:
        case OpKind::WAIT: break;
      }
    }
  }
};

template <class Map, class Key>
int32_t find(const Map& m, const Key& k) {
  auto it = m.find(k);
  return it == m.end() ? kNone : it->second;
}

class RankChecker {
 public:
  RankChecker(const engine::Topology& t, int32_t prog, Report& rep)
      : t_(t), p_(prog), rep_(rep), prog_(t.program(prog)), idx_(prog_), clocks_(t, prog) {}

  void happens_before() {
    const World& w = t_.set->world;
    const int32_t last_stage = w.pp * w.vpp - 1;
    auto local = [&](int32_t s) { return s >= 0 && pp_rank_of_stage(Stage{s}, w.pp) == prog_.pp_rank; };
    // activation and input grad, send side: the producing compute precedes the send.
    for (const auto& [key, j] : idx_.batch) {
      const auto& [kind, mb, s] = key;
      if (kind != P2PKind::SEND_F && kind != P2PKind::SEND_B) continue;
      const bool fwd = kind == P2PKind::SEND_F;
      const char* buffer = fwd ? "activation" : "input grad";
      const int32_t producer = find(fwd ? idx_.f : idx_.b, std::pair{mb, s});
      if (producer == kNone)
        rep_.add(kHb, p_, j,
                 fmt::format("{}: {} sends mb{} s{} but r{} has no {} mb{} s{}", buffer, rep_.op(p_, j), mb, s,
                             prog_.rank.v, fwd ? "F" : "B", mb, s));
      else
        need(buffer, producer, j);
    }
    // activation, receive side: F(mb,s) needs its input from the previous stage.
    for (const auto& [key, i] : idx_.f) {
      const auto [mb, s] = key;
      if (s == 0) continue;
      if (local(s - 1)) {
        require(find(idx_.f, std::pair{mb, s - 1}), i, "activation", fmt::format("F mb{} s{}", mb, s - 1));
      } else {
        require(find(idx_.batch, std::tuple{P2PKind::RECV_F, mb, s}), i, "activation",
                fmt::format("BATCH with RECV_F mb{} s{}", mb, s));
      }
    }
    for (const auto& [key, i] : idx_.b) {
      const auto [mb, s] = key;
      // input grad, receive side: B(mb,s) needs the output grad of the next stage.
      if (s < last_stage) {
        if (local(s + 1))
          require(find(idx_.b, std::pair{mb, s + 1}), i, "input grad", fmt::format("B mb{} s{}", mb, s + 1));
        else
          require(find(idx_.batch, std::tuple{P2PKind::RECV_B, mb, s}), i, "input grad",
                  fmt::format("BATCH with RECV_B mb{} s{}", mb, s));
      }
      // stash: the forward's saved activations.
      require(find(idx_.f, std::pair{mb, s}), i, "stash", fmt::format("F mb{} s{}", mb, s));
    }
    // unsharded params: gathered before every use, freed after every use and the reduction.
    if (t_.set->sharded()) {
      for (const auto& [s, uses] : idx_.compute_of_stage) {
        const int32_t u = find(idx_.unshard, s);
        if (u != kNone) before_all("unsharded params", u, uses);
        const int32_t r = find(idx_.reshard, s);
        if (r == kNone) continue;
        std::vector<int32_t> producers = uses;
        if (const int32_t red = find(idx_.reduce, s); red != kNone) producers.push_back(red);
        all_before("unsharded params", producers, r);
      }
    }
    // accumulated grads: every backward of the stage before its reduction.
    for (const auto& [s, bs] : idx_.b_of_stage)
      if (const int32_t red = find(idx_.reduce, s); red != kNone) all_before("accumulated grads", bs, red);
  }

  void drain_order() {
    if (idx_.opt == kNone) return;
    std::vector<int32_t> must = idx_.reduces;
    for (int32_t r : idx_.reshards)
      if (prog_.instrs[r].stream != "compute") must.push_back(r);
    for (int32_t x : must)
      if (!clocks_.hb(x, idx_.opt))
        rep_.add("drain", p_, idx_.opt,
                 fmt::format("{} does not happen-before {}: {}", rep_.local(p_, x), rep_.op(p_, idx_.opt),
                             why(x, idx_.opt)));
  }

 private:
  const engine::Topology& t_;
  int32_t p_;
  Report& rep_;
  const Program& prog_;
  RankIndex idx_;
  RankClocks clocks_;

  std::string why(int32_t a, int32_t b) const {
    const std::string& sa = prog_.instrs[a].stream;
    const std::string& sb = prog_.instrs[b].stream;
    if (sa == sb) return fmt::format("it comes later on {}", sa);
    return fmt::format("no RECORD/WAIT chain leads from {} to {} between them", sa, sb);
  }

  void need(const char* buffer, int32_t a, int32_t b) {
    if (clocks_.hb(a, b)) return;
    rep_.add(kHb, p_, b,
             fmt::format("{}: {} does not happen-before {}: {}", buffer, rep_.local(p_, a), rep_.op(p_, b), why(a, b)));
  }

  // Producer `a` (described by `what` when missing) must happen-before consumer b.
  void require(int32_t a, int32_t b, const char* buffer, const std::string& what) {
    if (a == kNone) {
      if (!rep_.complete()) return;  // a later pass inserts the producer
      rep_.add(kHb, p_, b, fmt::format("{}: {} has no {} on r{}", buffer, rep_.op(p_, b), what, prog_.rank.v));
      return;
    }
    need(buffer, a, b);
  }

  // `a` before every one of `bs`: one violation at the first offender, counting the rest.
  void before_all(const char* buffer, int32_t a, const std::vector<int32_t>& bs) {
    int32_t first = kNone, more = 0;
    for (int32_t b : bs)
      if (!clocks_.hb(a, b)) {
        if (first == kNone)
          first = b;
        else
          ++more;
      }
    if (first == kNone) return;
    rep_.add(kHb, p_, first,
             fmt::format("{}: {} does not happen-before {}{}: {}", buffer, rep_.local(p_, a), rep_.op(p_, first),
                         more ? fmt::format(" (nor {} more uses of s{})", more, prog_.instrs[a].stage.v) : "",
                         why(a, first)));
  }

  // Every one of `as` before b: one violation at b naming the first offender.
  void all_before(const char* buffer, const std::vector<int32_t>& as, int32_t b) {
    int32_t first = kNone, more = 0;
    for (int32_t a : as)
      if (!clocks_.hb(a, b)) {
        if (first == kNone)
          first = a;
        else
          ++more;
      }
    if (first == kNone) return;
    rep_.add(kHb, p_, b,
             fmt::format("{}: {}{} does not happen-before {}: {}", buffer, rep_.local(p_, first),
                         more ? fmt::format(" (and {} more)", more) : "", rep_.op(p_, b), why(first, b)));
  }
};

}  // namespace

void check_happens_before(const engine::Topology& t, Report& rep) {
  for (int32_t p = 0; p < t.programs(); ++p) {
    RankChecker c(t, p, rep);
    c.happens_before();
    c.drain_order();
  }
}

}  // namespace ppstream::verify_detail
