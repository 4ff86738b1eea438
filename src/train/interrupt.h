// SIGINT/SIGTERM/SIGHUP handling for training: the first signal sets a flag that the training
// loop polls between steps and an evaluation polls between its batches (finish the step or
// abandon the evaluation, write a checkpoint, exit with status 128+signal: 130 for SIGINT, 143
// for SIGTERM, 129 for SIGHUP, which an ssh disconnect sends); a second signal ends the process
// at once with status 128+signal (the previous checkpoint is complete on disk: checkpoints are
// renamed into place only when fully written). SIGPIPE is ignored, so a closed log pipe does
// not end the training.
// Invariant: the signals are blocked in every compute thread and received by one dedicated
// thread with sigwait(), so a signal never interrupts a kernel (oneDNN's JIT code corrupted
// the heap when a handler ran on top of it). interrupt_install() must therefore run before
// any other thread is created (OpenMP, oneDNN, OpenBLAS), so all of them inherit the mask.
#pragma once

#include <cstdint>

namespace gossamer::train {

void interrupt_install();
bool interrupt_requested();
int interrupt_signal();                      // the signal received (0 if none)
const char* interrupt_signal_name(int sig);  // "SIGTERM", ...

// Multi-rank jobs: after the first signal, a process still running `seconds` later (a peer
// died, so the clean stop hangs in a collective) prints "rank R: ... during step N" and exits
// with status 128+signal. seconds <= 0: no limit (the single-process default).
void interrupt_set_grace(double seconds, int rank);
// The step in progress, for that message.
void interrupt_note_step(int64_t step);

}  // namespace gossamer::train
