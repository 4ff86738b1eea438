// Implementation of mpi_runtime.h. The bf16 operators widen to fp32, combine, and round back to
// nearest-even, so a sum of bf16-exact values whose partial sums are bf16-exact is exact in any
// reduction order; max and min are exact. NaN propagates through max and min.
#include "comm/mpi_runtime.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "comm/mpi_transport_defaults.h"
#include "core/bf16.h"
#include "core/error.h"
#include "core/log.h"

namespace gossamer::comm {

namespace {

void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}

void bf16_max(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = bf16_to_float(a[i]), y = bf16_to_float(b[i]);
    if (std::isnan(x) || x > y) b[i] = a[i];
  }
}

void bf16_min(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = bf16_to_float(a[i]), y = bf16_to_float(b[i]);
    if (std::isnan(x) || x < y) b[i] = a[i];
  }
}

struct Registry {
  std::mutex mutex;
  std::weak_ptr<MpiRuntime> live;
  bool finalized_here = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::shared_ptr<MpiRuntime> MpiRuntime::acquire() {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  if (auto rt = reg.live.lock()) return rt;
  int finalized = 0;
  MPI_Finalized(&finalized);
  GOSSAMER_CHECK(!finalized && !reg.finalized_here,
                 "comm: MPI was already finalized in this process (by an earlier communicator); "
                 "MPI cannot start twice, so keep one communicator alive for the whole run");
  std::shared_ptr<MpiRuntime> rt(new MpiRuntime());
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (!initialized) {
    rt->transport_defaults_ = apply_mpi_transport_defaults();
    mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
              "comm: MPI_Init_thread");
    rt->initialized_here_ = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rt->initialized_here_) MPI_Finalize(), reg.finalized_here = true;
    fail(
        "comm: the MPI library provides thread level %d, but the mpi backend needs "
        "MPI_THREAD_MULTIPLE (%d): its worker thread calls MPI while the main thread runs; use "
        "an MPI built with thread support (Open MPI: --enable-mpi-thread-multiple)",
        provided, MPI_THREAD_MULTIPLE);
  }
  mpi_check(MPI_Op_create(bf16_sum, 1, &rt->bf16_ops_[0]), "comm: MPI_Op_create (bf16 sum)");
  mpi_check(MPI_Op_create(bf16_max, 1, &rt->bf16_ops_[1]), "comm: MPI_Op_create (bf16 max)");
  mpi_check(MPI_Op_create(bf16_min, 1, &rt->bf16_ops_[2]), "comm: MPI_Op_create (bf16 min)");
  reg.live = rt;
  return rt;
}

MpiRuntime::~MpiRuntime() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Op& op : bf16_ops_)
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
  if (initialized_here_) {
    // Under the registry lock so that a concurrent acquire() sees the finalization.
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    MPI_Finalize();
    reg.finalized_here = true;
  }
}

MPI_Op MpiRuntime::op(ReduceOp op, DType dtype) const {
  if (dtype == DType::BF16) return bf16_ops_[int(op)];
  switch (op) {
    case ReduceOp::SUM:
      return MPI_SUM;
    case ReduceOp::MAX:
      return MPI_MAX;
    case ReduceOp::MIN:
      return MPI_MIN;
  }
  fail("comm: unknown reduce op %d", int(op));
}

MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return MPI_FLOAT;
    case DType::BF16:
      return MPI_UINT16_T;
    case DType::I32:
      return MPI_INT32_T;
    case DType::I64:
      return MPI_INT64_T;
    case DType::U8:
      return MPI_UINT8_T;
  }
  fail("comm: unknown dtype %d", int(dtype));
}

std::string mpi_error_string(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return strprintf("MPI error %d", code);
  return std::string(buf, size_t(len));
}

void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) fail("%s: %s", what, mpi_error_string(rc).c_str());
}

void mpi_abort_job(MPI_Comm comm, int rank, int exit_code, const std::string& message) {
  log_error("%s", message.c_str());
  std::fflush(nullptr);
  if (rank != 0)
    std::this_thread::sleep_for(std::chrono::duration<double>(kAbortGraceForRankZeroSeconds));
  MPI_Abort(comm, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; in case it does
}

}  // namespace gossamer::comm
