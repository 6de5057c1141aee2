// The verifier: proves a ProgramSet safe before anything runs it. It runs the engine under
// the requested platform (deadlock) and the static checks listed below, collects every
// violation, and reports each with rank, instruction index, stream, rule and canonical text.
//
// Rules (name used in messages):
//   deadlock           every instruction completes under the platform's semantics
//   p2p-fifo           per channel, the k-th send matches the k-th recv (kind, mb, stage)
//   batch-shape        the ops a batch exchanges with one peer sit in one mirrored batch there
//   collective-order   every member of a group issues the same sequence of collectives
//   event              each event recorded once; every WAIT after its RECORD in program order
//   happens-before     buffers (activation, input grad, stash, unsharded params, grads) ordered
//   reduce-once        each managed stage: exactly one REDUCE_GRAD per step, or with buckets
//                      one per bucket 0..k-1 (one k per stage: they cover its layers once)
//   bucket-cover       a split backward's pieces are buckets 0..k-1 once each, in order, with
//                      the k of the stage's reductions (each bucket's reduction after its piece:
//                      happens-before, accumulated grads)
//   reshard-once       each sharded stage: exactly one UNSHARD and one RESHARD per step
//   send-before-reduce (async) no reduction wait on compute before the stage's last SEND_B batch
//   drain              every REDUCE_GRAD happens-before OPT_STEP; exactly one OPT_STEP per rank
//   structure          the set can be run at all (sorted ranks, known peers, pp_rank, groups);
//                      when violated, the deadlock rule is not checked
// docs/verify.md lists each rule with an example message.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ppstream/engine/engine.h"
#include "ppstream/program/ir.h"

namespace ppstream {

struct Violation {
  std::string rule;
  Rank rank;
  int32_t index = -1;       // instruction index in the rank's program, -1 if rank-level
  std::string stream;
  std::string message;      // includes the offending instruction(s) in canonical text
  std::string after_pass;   // VerifyOptions::after_pass, printed by to_string when non-empty
  std::string to_string() const;  // "verify: r3 #17 reduce: [event] WAIT ... (after pass X)"
};

struct VerifyOptions {
  std::vector<PlatformKind> platforms = {PlatformKind::STRICT};  // deadlock-checked under each
  std::string after_pass;  // named in messages when verifying after a lowering pass
  // false while lowering is still in progress: skips reduce-once, reshard-once and drain,
  // which only a finished program can satisfy.
  bool complete = true;
};

std::vector<Violation> verify(const ProgramSet& set, const VerifyOptions& opts = {});

// The one error for "these programs do not verify": what() is
// "<context>: N violation(s):\n  <Violation::to_string()>…"; violations() keeps them for callers
// that report them another way. Python sees it as ppstream.VerifyError (a RuntimeError).
class VerifyError : public std::runtime_error {
 public:
  VerifyError(std::string_view context, std::vector<Violation> violations);
  const std::vector<Violation>& violations() const { return violations_; }

 private:
  std::vector<Violation> violations_;
};

// verify(), throwing VerifyError with `context` (e.g. "simulate: the async programs") when any
// rule is violated. Every path that runs or emits programs goes through this.
void require_verified(const ProgramSet& set, const VerifyOptions& opts, std::string_view context);

}  // namespace ppstream
