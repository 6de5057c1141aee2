// Rules `happens-before` (every buffer produced before it is consumed, per docs/semantics.md
// "Buffers and happens-before") and the ordering half of `drain` (every REDUCE_GRAD and every
// RESHARD off the compute stream happens-before OPT_STEP). Both use the rank's vector clocks.
#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ppstream/program/deps.h"
#include "verify/report.h"
#include "verify/vector_clock.h"
#include "ppstream/program/streams.h"

namespace ppstream::verify_detail {
namespace {

constexpr const char* kHb = "happens-before";

// key → the first instruction index added with it, like a std::map filled by emplace, without a
// node per key: add() everything, freeze() once (stable sort, first of each key kept), then
// find() by binary search and iterate in key order.
template <class Key>
class FirstIndex {
 public:
  void add(const Key& k, int32_t i) { v_.emplace_back(k, i); }
  void freeze() {
    std::stable_sort(v_.begin(), v_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    v_.erase(std::unique(v_.begin(), v_.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
             v_.end());
  }
  int32_t find(const Key& k) const {
    auto it = std::lower_bound(v_.begin(), v_.end(), k, [](const auto& e, const Key& x) { return e.first < x; });
    return it != v_.end() && it->first == k ? it->second : kNone;
  }
  auto begin() const { return v_.begin(); }
  auto end() const { return v_.end(); }

 private:
  std::vector<std::pair<Key, int32_t>> v_;
};

// Where the instructions of one rank are, by what they touch (first occurrence wins).
struct RankIndex {
  FirstIndex<std::tuple<OpKind, int32_t, int32_t>> compute;             // (op, mb, stage) → index
  FirstIndex<std::tuple<Role, int32_t, int32_t>> role;                   // (role, mb, stage) → first filler
  FirstIndex<std::tuple<P2PKind, int32_t, int32_t>> batch;               // (kind, mb, stage) → BATCH
  std::map<int32_t, std::vector<int32_t>> compute_of_stage;              // stage → its F/B/I/W, in order
  std::map<int32_t, std::vector<int32_t>> grads_of_stage;                // stage → its B/W (weight grads)
  std::map<int32_t, int32_t> unshard, reshard;                           // stage → first index
  std::map<int32_t, std::vector<int32_t>> reduce;                        // stage → its REDUCE_GRADs (buckets)
  std::vector<int32_t> reduces, reshards;                                // every REDUCE_GRAD / RESHARD
  int32_t opt = kNone;
  bool split = false;                                                    // the rank runs I/W

  explicit RankIndex(const Program& p) {
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      const Instr& in = p.instrs[k];
      const auto i = static_cast<int32_t>(k);
      if (is_compute(in.op)) {
        compute.add(std::tuple{in.op, in.mb.v, in.stage.v}, i);
        // Only a backward's last piece (the stage's first layers) yields the stage's input grad.
        const bool partial = in.bucket.index + 1 < in.bucket.count;
        for (Role r : {Role::FORWARD, Role::INPUT_GRAD, Role::WEIGHT_GRAD})
          if (has_role(in.op, r) && !(partial && r == Role::INPUT_GRAD)) role.add(std::tuple{r, in.mb.v, in.stage.v}, i);
        compute_of_stage[in.stage.v].push_back(i);
        if (has_role(in.op, Role::WEIGHT_GRAD)) grads_of_stage[in.stage.v].push_back(i);
        split = split || in.op == OpKind::I;
        continue;
      }
      switch (in.op) {
        case OpKind::BATCH:
          for (const P2POp& op : in.p2p) batch.add(std::tuple{op.kind, op.mb.v, op.stage.v}, i);
          break;
        case OpKind::UNSHARD: unshard.emplace(in.stage.v, i); break;
        case OpKind::RESHARD:
          reshard.emplace(in.stage.v, i);
          reshards.push_back(i);
          break;
        case OpKind::REDUCE_GRAD:
          reduce[in.stage.v].push_back(i);
          reduces.push_back(i);
          break;
        case OpKind::OPT_STEP:
          if (opt == kNone) opt = i;
          break;
        default: break;
      }
    }
    compute.freeze();
    role.freeze();
    batch.freeze();
  }
  // How a producer is named in messages: "F mb0 s1", "B mb0 s1" or (split) "I mb0 s1".
  std::string producer(Role r, int32_t mb, int32_t s) const {
    const char* op = r == Role::FORWARD ? "F" : r == Role::WEIGHT_GRAD ? (split ? "W" : "B") : (split ? "I" : "B");
    return fmt::format("{} mb{} s{}", op, mb, s);
  }
};

template <class Map, class Key>
int32_t find(const Map& m, const Key& k) {
  auto it = m.find(k);
  return it == m.end() ? kNone : it->second;
}
template <class Key>
int32_t find(const FirstIndex<Key>& m, const Key& k) {
  return m.find(k);
}

class RankChecker {
 public:
  RankChecker(const engine::Topology& t, int32_t prog, Report& rep)
      : t_(t), p_(prog), rep_(rep), prog_(t.program(prog)), idx_(prog_), clocks_(t, prog) {}

  void happens_before() {
    const World& w = t_.set->world;
    const int32_t last_stage = w.pp * w.vpp - 1;
    auto local = [&](int32_t s) { return s >= 0 && s <= last_stage && pp_rank_of_stage(Stage{s}, w) == prog_.pp_rank; };
    // activation and input grad, send side: the producing compute precedes the send.
    for (const auto& [key, j] : idx_.batch) {
      const auto& [kind, mb, s] = key;
      if (kind != P2PKind::SEND_F && kind != P2PKind::SEND_B) continue;
      const Role role = carried_by(P2POp{kind, Microbatch{mb}, Stage{s}, prog_.rank}).role;
      const char* buffer = role == Role::FORWARD ? "activation" : "input grad";
      const int32_t producer = find(idx_.role, std::tuple{role, mb, s});
      if (producer == kNone)
        rep_.add(kHb, p_, j,
                 fmt::format("{}: {} sends mb{} s{} but r{} has no {}", buffer, rep_.op(p_, j), mb, s, prog_.rank.v,
                             idx_.producer(role, mb, s)));
      else
        need(buffer, producer, j);
    }
    // receive side and same-rank inputs: every compute op's needs (program/deps.h).
    for (const auto& [key, i] : idx_.compute) {
      const auto& [op, mb, s] = key;
      for (const Need& n : needs_of(op, Microbatch{mb}, Stage{s}, last_stage + 1)) {
        if (n.recv && !local(n.stage.v))
          require(find(idx_.batch, std::tuple{*n.recv, mb, s}), i, n.buffer,
                  fmt::format("BATCH with {} mb{} s{}", to_string(*n.recv), mb, s));
        else
          require(find(idx_.role, std::tuple{n.role, n.mb.v, n.stage.v}), i, n.buffer,
                  idx_.producer(n.role, n.mb.v, n.stage.v));
      }
    }
    // unsharded params: gathered before every use, freed after every use and the reduction.
    if (t_.set->sharded()) {
      for (const auto& [s, uses] : idx_.compute_of_stage) {
        const int32_t u = find(idx_.unshard, s);
        if (u != kNone) before_all("unsharded params", u, uses);
        const int32_t r = find(idx_.reshard, s);
        if (r == kNone) continue;
        std::vector<int32_t> producers = uses;
        if (auto red = idx_.reduce.find(s); red != idx_.reduce.end())
          producers.insert(producers.end(), red->second.begin(), red->second.end());
        all_before("unsharded params", producers, r);
      }
    }
    // accumulated grads: every weight-grad op (B or W) of the stage before its reduction; with
    // buckets, every whole one and every piece of the reduction's bucket before that bucket's
    // reduction (a piece of another bucket fills other layers' gradients).
    for (const auto& [s, bs] : idx_.grads_of_stage) {
      auto reds = idx_.reduce.find(s);
      if (reds == idx_.reduce.end()) continue;
      for (const int32_t red : reds->second) {
        const Bucket b = prog_.instrs[static_cast<size_t>(red)].bucket;
        std::vector<int32_t> mine;
        for (const int32_t g : bs) {
          const Bucket gb = prog_.instrs[static_cast<size_t>(g)].bucket;
          if (gb.whole() || b.whole() || gb.index == b.index) mine.push_back(g);
        }
        all_before("accumulated grads", mine, red);
      }
    }
  }

  void drain_order() {
    if (idx_.opt == kNone) return;
    std::vector<int32_t> must = idx_.reduces;
    for (int32_t r : idx_.reshards)
      if (prog_.instrs[r].stream != streams::kCompute) must.push_back(r);
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
    const std::string sa = rep_.stream_of(p_, a);
    const std::string sb = rep_.stream_of(p_, b);
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
    if (t.skip(p)) continue;
    RankChecker c(t, p, rep);
    c.happens_before();
    c.drain_order();
  }
}

}  // namespace ppstream::verify_detail
