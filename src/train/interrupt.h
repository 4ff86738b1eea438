// SIGINT/SIGTERM handling for training: the first signal sets a flag that the training loop
// polls between steps (finish the step, write a checkpoint, exit 130); a second signal
// terminates immediately (the previous checkpoint is complete on disk: checkpoints are renamed
// into place only when fully written).
#pragma once

namespace gossamer::train {

void interrupt_install();
bool interrupt_requested();
int interrupt_signal();  // the signal received (0 if none)

}  // namespace gossamer::train
