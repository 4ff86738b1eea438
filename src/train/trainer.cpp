// run_training (see trainer.h): the run's communicators (run/run_communicators.h), the device
// and its op table, the memory check, then one TrainingRun
// (training_run.h). A failure on one rank aborts the others rather than leaving them waiting.
#include "train/trainer.h"

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/launch_env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/memory_usage.h"
#include "run/device_ops.h"
#include "run/run_communicators.h"
#include "train/interrupt.h"
#include "train/memory_check.h"
#include "train/training_run.h"

namespace gossamer::train {

int run_training(run::RunConfig config, const TrainStart& start) {
  interrupt_install();  // first: every thread created from here on inherits the mask
  config.parallel.validate();
  GOSSAMER_CHECK(config.parallel.ranks == 0 || start.control_comm,
                 "parallel.ranks = %d: ranks in one process start through `gossamer train` "
                 "(train/inprocess_ranks.h)",
                 config.parallel.ranks);
  GOSSAMER_CHECK(!config.parallel.sim.enabled() || start.control_comm,
                 "parallel.sim.network = %s: simulated time runs with the ranks in one process "
                 "(`gossamer train --ranks N` or parallel.ranks), not under a launcher",
                 std::string(enum_name(config.parallel.sim.network)).c_str());
  const bool cuda = config.kernels.device == kernels::cpu::KernelsDevice::KERNELS_DEVICE_CUDA;
  run::RunCommunicators comms(config, start.control_comm ? start.control_comm() : nullptr);
  log_set_rank(comms.control().rank());
  try {
    const int world = comms.control().size();
    config.validate(world);
    const bool on_gpu = start.ops ? !start.ops->memory->host_accessible : cuda;
    const bool device_buffers = world > 1 && on_gpu;
    comms.check_compression(device_buffers);  // a configuration error before the GPU is chosen
    const run::GpuClaim gpu(on_gpu);
    const kernels::OpTable& ops =
        start.ops ? *start.ops
                  : run::ops_for_run(config.kernels, world, comms.control().local_rank());
    comms.attach_buffers(device_buffers, start.buffer_comm);
    // Before anything large is allocated: a run that cannot fit is refused with the numbers.
    check_run_fits_in_memory(config, world, comm::ranks_on_this_node(world), ops,
                             start.host_memory ? *start.host_memory : available_host_memory());
    TrainingRun run(comms.control(), comms.buffers(), ops, std::move(config), start);
    return run.run();
  } catch (const CollectiveError&) {
    throw;  // every rank stops here together; the communicator shuts down normally
  } catch (const Error& e) {
    // One rank failing must not leave the others waiting in a collective.
    comm::Communicator* control = comms.control_if_alive();
    if (control && control->size() > 1) control->abort(1, e.what());
    throw;
  }
}

}  // namespace gossamer::train
