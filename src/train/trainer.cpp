// run_training (see trainer.h): the control communicator, the device and its op table, the
// buffers' communicator and the compression wrapper, the memory check, then one TrainingRun
// (training_run.h). A failure on one rank aborts the others rather than leaving them waiting.
#include "train/trainer.h"

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/launch_env.h"
#include "comm/zip/zip_communicator.h"
#include "core/error.h"
#include "core/log.h"
#include "core/memory_usage.h"
#include "train/device_ops.h"
#include "train/interrupt.h"
#include "train/memory_check.h"
#include "train/training_run.h"

namespace gossamer::train {

int run_training(RunConfig config, const TrainStart& start) {
  interrupt_install();  // first: every thread created from here on inherits the mask
  config.parallel.validate();
  const bool cuda = config.kernels.device == kernels::cpu::KernelsDevice::KERNELS_DEVICE_CUDA;
  // The control communicator, on host memory: losses, flags, norms and checkpoint state, and
  // on the CPU the gradients and weights too. With kernels.device = cuda, parallel.backend =
  // "nccl" names the buffers' backend, and the host values take what a launcher implies (mpi);
  // any other backend is asked of both (choose_backend refuses mpi for the buffers).
  const bool nccl_for_buffers = cuda && config.parallel.backend == comm::Backend::BACKEND_NCCL;
  std::unique_ptr<comm::Communicator> comm = comm::make_communicator(
      nccl_for_buffers ? comm::Backend::BACKEND_AUTO : config.parallel.backend,
      comm::BufferLocation::BUFFER_LOCATION_HOST);
  log_set_rank(comm->rank());
  comm->set_timeout(config.parallel.timeout_s);
  std::unique_ptr<comm::Communicator> buffers;  // device memory at several ranks only
  try {
    config.validate(comm->size());
    const bool device_buffers =
        comm->size() > 1 && (start.ops ? !start.ops->memory->host_accessible : cuda);
    // Before the GPU is chosen: a configuration error comes first.
    GOSSAMER_CHECK(
        !device_buffers || config.parallel.compression == comm::zip::Compression::COMPRESSION_OFF,
        "parallel.compression = %s: the codec runs on host buffers, and with "
        "kernels.device = cuda at several ranks the gradients live in GPU memory (its "
        "kernels are not written: docs/CUDA.md); set it to off",
        std::string(enum_name(config.parallel.compression)).c_str());
    const GpuClaim gpu(start.ops ? !start.ops->memory->host_accessible : cuda);
    const kernels::OpTable& ops =
        start.ops ? *start.ops : ops_for_run(config.kernels, comm->size(), comm->local_rank());
    if (device_buffers) {
      buffers = start.buffer_comm ? start.buffer_comm(*comm)
                                  : make_buffer_communicator(config.parallel.backend);
      buffers->set_timeout(config.parallel.timeout_s);
    } else {
      if (nccl_for_buffers)
        log_info("parallel.backend = nccl: one rank, no buffer leaves this GPU (no NCCL)");
      comm = comm::zip::wrap_with_compression(std::move(comm), config.parallel.zip_options());
      comm->set_timeout(config.parallel.timeout_s);
    }
    // Before anything large is allocated: a run that cannot fit is refused with the numbers.
    check_run_fits_in_memory(config, comm->size(), comm::ranks_on_this_node(comm->size()), ops,
                             available_host_memory());
    TrainingRun run(*comm, buffers ? *buffers : *comm, ops, std::move(config), start);
    return run.run();
  } catch (const CollectiveError&) {
    throw;  // every rank stops here together; the communicator shuts down normally
  } catch (const Error& e) {
    // One rank failing must not leave the others waiting in a collective.
    // (comm is null when the compression wrapper failed while taking it over.)
    if (comm && comm->size() > 1) comm->abort(1, e.what());
    throw;
  }
}

}  // namespace gossamer::train
