// Fault injection for the failure tests (never set in normal use): the environment variable
// GOSSAMER_FAULT="KIND:RANK:STEP" makes rank RANK misbehave at step STEP (1-based):
//   nan   its loss gradient is scaled by NaN, so all its local gradients are NaN;
//   hang  it stops before the optimizer step and sleeps (peers then hit parallel.timeout_s);
//   exit  it exits at once with status 9, as if killed;
//   delay (written delay:RANK:STEP:MS[:COUNT]) it sleeps MS milliseconds before the step, and
//         before each of the COUNT - 1 steps after it (COUNT 0: every step from STEP on) in
//         which it computes a gradient: a rank that is slow, not dead (for the decentralised
//         methods' tests and studies).
// Invariant: without the variable every query returns false; a malformed value is an error.
#pragma once

#include <cstdint>
#include <string>

namespace gossamer::train {

struct FaultPlan {
  std::string kind;  // "" = none
  int rank = -1;
  int64_t step = -1;
  int64_t delay_ms = 0;  // delay only
  int64_t count = 1;     // delay only: steps from `step` on (0: to the end)
  bool at(const char* k, int r, int64_t s) const { return kind == k && rank == r && step == s; }
  bool delays(int r, int64_t s) const {
    return kind == "delay" && rank == r && s >= step && (count == 0 || s < step + count);
  }
};

// Parses a GOSSAMER_FAULT value (throws gossamer::Error naming it when malformed).
FaultPlan parse_fault_plan(const std::string& value);
// Parses GOSSAMER_FAULT (logs a warning when a fault is armed).
FaultPlan fault_plan_from_env();

}  // namespace gossamer::train
