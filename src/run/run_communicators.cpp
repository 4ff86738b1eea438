// RunCommunicators (see run_communicators.h).
#include "run/run_communicators.h"

#include <string>

#include "comm/zip/zip_communicator.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "core/log.h"
#include "run/device_ops.h"

namespace gossamer::run {

RunCommunicators::RunCommunicators(const RunConfig& config,
                                   std::unique_ptr<comm::Communicator> control)
    : parallel_(config.parallel) {
  const bool cuda = config.kernels.device == kernels::cpu::KernelsDevice::KERNELS_DEVICE_CUDA;
  nccl_for_buffers_ = cuda && parallel_.backend == comm::Backend::BACKEND_NCCL;
  control_ = control ? std::move(control)
                     : comm::make_communicator(
                           nccl_for_buffers_ ? comm::Backend::BACKEND_AUTO : parallel_.backend,
                           comm::BufferLocation::BUFFER_LOCATION_HOST);
  control_->set_timeout(parallel_.timeout_s);
}

void RunCommunicators::check_compression(bool device_buffers) const {
  GOSSAMER_CHECK(
      !device_buffers || parallel_.compression == comm::zip::Compression::COMPRESSION_OFF,
      "parallel.compression = %s: the codec runs on host buffers, and with kernels.device = "
      "cuda at several ranks the gradients live in GPU memory (its kernels are not written: "
      "docs/CUDA.md); set it to off",
      std::string(enum_name(parallel_.compression)).c_str());
}

void RunCommunicators::attach_buffers(bool device_buffers, const BufferFactory& factory) {
  if (device_buffers) {
    buffers_ = factory ? factory(*control_) : make_buffer_communicator(parallel_.backend);
    buffers_->set_timeout(parallel_.timeout_s);
    return;
  }
  if (nccl_for_buffers_)
    log_info("parallel.backend = nccl: one rank, no buffer leaves this GPU (no NCCL)");
  control_ = comm::zip::wrap_with_compression(std::move(control_), parallel_.zip_options());
  control_->set_timeout(parallel_.timeout_s);
}

}  // namespace gossamer::run
