// The communicators of one run, chosen from its `parallel` and `kernels` sections, beside the
// device choice (device_ops.h). The control communicator lives on host memory: losses, flags,
// norms and checkpoint state, and on the CPU the gradients and weights too, behind the
// compression decorator when parallel.compression asks for it. With GPU buffers at several
// ranks a second communicator moves them (NCCL); compression is refused there, naming the key.
// Invariant: buffers() is the control communicator unless GPU buffers cross ranks.
#pragma once

#include <functional>
#include <memory>

#include "comm/communicator.h"
#include "run/run_config.h"

namespace gossamer::run {

class RunCommunicators {
 public:
  using BufferFactory =
      std::function<std::unique_ptr<comm::Communicator>(comm::Communicator& control)>;

  // The control communicator: `control` when given (ranks in one process), else
  // parallel.backend, except that with kernels.device = cuda "nccl" names the buffers' backend
  // and the host values take what a launcher implies.
  explicit RunCommunicators(const RunConfig& config,
                            std::unique_ptr<comm::Communicator> control = nullptr);

  // After the config is validated for the world size and before the GPU is chosen: refuses
  // parallel.compression when the buffers live in device memory at several ranks.
  void check_compression(bool device_buffers) const;

  // After check_compression and the ops: the buffers' communicator (`factory`, or NCCL when
  // null) for device buffers at several ranks; else the compression decorator around the
  // control one.
  void attach_buffers(bool device_buffers, const BufferFactory& factory);

  comm::Communicator& control() { return *control_; }
  comm::Communicator& buffers() { return buffers_ ? *buffers_ : *control_; }
  // Null only when the compression decorator failed while taking the control one over.
  comm::Communicator* control_if_alive() { return control_.get(); }

 private:
  const optim::ParallelConfig parallel_;  // a copy: the run config moves on to the run
  bool nccl_for_buffers_ = false;
  std::unique_ptr<comm::Communicator> control_;
  std::unique_ptr<comm::Communicator> buffers_;
};

}  // namespace gossamer::run
