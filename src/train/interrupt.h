// SIGINT/SIGTERM handling for training: the first signal sets a flag that the training loop
// polls between steps (finish the step, write a checkpoint, exit 130); a second signal ends
// the process at once with status 128+signal (the previous checkpoint is complete on disk:
// checkpoints are renamed into place only when fully written).
// Invariant: the signals are blocked in every compute thread and received by one dedicated
// thread with sigwait(), so a signal never interrupts a kernel (oneDNN's JIT code corrupted
// the heap when a handler ran on top of it). interrupt_install() must therefore run before
// any other thread is created (OpenMP, oneDNN, OpenBLAS), so all of them inherit the mask.
#pragma once

namespace gossamer::train {

void interrupt_install();
bool interrupt_requested();
int interrupt_signal();  // the signal received (0 if none)

}  // namespace gossamer::train
