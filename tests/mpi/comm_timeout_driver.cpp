// Driver for tests/mpi/test_comm_timeout.sh: the last rank never joins the collective (it
// sleeps, or in mode "stop" it joins one all_reduce at "step 6" and then stops itself with
// SIGSTOP), so the others' Work::wait() / barrier() must end the job after the timeout with
// kExitPeerFailure and the documented message naming the absent rank. Mode "every_rank_fails":
// every rank ends the job through Communicator::abort with the same error, rank 0 a second
// after the others, and rank 0's message must still be printed. Usage:
// comm_timeout_driver all_reduce|barrier|stop|every_rank_fails TIMEOUT_S. Exits 1 if the
// collective ever returns.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "core/error.h"
#include "core/log.h"

int main(int argc, char** argv) {
  using namespace gossamer;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s all_reduce|barrier|stop|every_rank_fails TIMEOUT_S\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  try {
    auto comm = comm::make_communicator("mpi", comm::BufferLocation::BUFFER_LOCATION_HOST);
    log_set_rank(comm->rank());
    comm->set_timeout(std::atof(argv[2]));
    std::vector<float> buf(1024, 1.0f);
    if (mode == "every_rank_fails") {
      comm->barrier();
      if (comm->rank() == 0) std::this_thread::sleep_for(std::chrono::seconds(1));
      comm->abort(1, strprintf("rank %d: the same error on every rank", comm->rank()));
    }
    if (mode == "stop") {
      comm->set_context("step 6");
      comm->all_reduce(buf.data(), buf.size(), comm::DType::F32, comm::ReduceOp::SUM).wait();
      if (comm->rank() == comm->size() - 1) ::raise(SIGSTOP);  // mpirun's abort continues it
    }
    comm->set_context("step 7");
    if (comm->rank() == comm->size() - 1) {
      std::this_thread::sleep_for(std::chrono::seconds(60));  // never joins; killed by the abort
      return 1;
    }
    if (mode == "barrier")
      comm->barrier();
    else
      comm->all_reduce(buf.data(), buf.size(), comm::DType::F32, comm::ReduceOp::SUM).wait();
    std::fprintf(stderr, "rank %d: the collective returned without the last rank\n", comm->rank());
    return 1;
  } catch (const Error& e) {
    log_error("%s", e.what());
    return 1;
  }
}
