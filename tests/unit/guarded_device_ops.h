// A "guarded device" op table, for testing on the CPU the code paths that run with buffers in
// device memory (kernels.device = cuda): the CPU ops, and a memory that says it is not host
// memory and enforces it both ways. Its allocations are mapped PROT_NONE except while an op or
// one of the memory's own functions (zero, upload, download) runs, so host code that reads or
// writes device memory directly, instead of through an op or a copy, faults at the first touch
// (the SIGSEGV handler names the address and exits with kHostTouchExitCode); and every pointer
// an op or a copy is given where device memory belongs must lie in an allocation (a host
// pointer there exits with the same code). Results are the CPU table's, bit for bit. Not
// caught: a touch from another thread while an op runs (every region is open then), and a
// system call on device memory (EFAULT, no signal). Test code; header-only; single-threaded
// callers (ops may use OpenMP inside).
#pragma once

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "core/error.h"
#include "core/memory_ops.h"
#include "kernels/ops.h"

namespace gossamer::testing {

inline constexpr int kHostTouchExitCode = 86;

namespace guarded_detail {

struct Region {
  uintptr_t begin = 0;
  size_t bytes = 0;  // mapped (whole pages); 0: free slot
};
inline constexpr size_t kMaxRegions = 1024;
inline Region g_regions[kMaxRegions];
inline std::mutex g_mutex;
inline int g_open = 0;  // ops or memory functions running (the regions are readable then)
// Every region lies in one reserved range, handed out in address order and never reused, so
// that opening and closing them all is one mprotect of [g_arena, g_arena + g_used) rather than
// one per region (which was half the time of the device tests). Freed regions give their pages
// back (MADV_DONTNEED) and stay in the range, unreadable outside ops.
inline constexpr size_t kArenaBytes = size_t(1) << 38;  // 256 GiB of address space, not memory
inline uintptr_t g_arena = 0;
inline size_t g_used = 0;

inline size_t page_rounded(size_t bytes) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return (std::max<size_t>(bytes, 1) + page - 1) / page * page;
}

inline void protect(void* p, size_t bytes, int prot) {
  if (mprotect(p, bytes, prot) != 0) {
    std::fprintf(stderr, "guarded device memory: mprotect failed: %s\n", std::strerror(errno));
    std::abort();  // an unguarded region would let the test pass unchecked
  }
}

inline void protect_all(int prot) {
  if (g_used) protect(reinterpret_cast<void*>(g_arena), g_used, prot);
}

// Whether p lies in a region (or one past its end: an empty range at the end of a buffer).
inline bool in_region(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const Region& r : g_regions)
    if (r.bytes && a >= r.begin && a <= r.begin + r.bytes) return true;
  return false;
}

// An op or a copy given host memory where device memory belongs: on a GPU that is an illegal
// address, so the test fails here too.
inline void require_device(const void* p, const char* what) {
  if (p == nullptr || in_region(p)) return;
  std::fprintf(stderr, "guarded device memory: %s was given host memory at %p\n", what, p);
  std::fflush(stderr);
  _exit(kHostTouchExitCode);
}

// The regions are readable and writable while one of these lives.
class Open {
 public:
  Open() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_open++ == 0) protect_all(PROT_READ | PROT_WRITE);
  }
  ~Open() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (--g_open == 0) protect_all(PROT_NONE);
  }
  Open(const Open&) = delete;
  Open& operator=(const Open&) = delete;
};

inline void on_segv(int sig, siginfo_t* info, void*) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
  for (const Region& r : g_regions) {
    if (r.bytes && a >= r.begin && a < r.begin + r.bytes) {
      char msg[160];
      const int n = snprintf(msg, sizeof msg,
                             "host code touched guarded device memory at %p (offset %zu of a "
                             "buffer of %zu bytes)\n",
                             info->si_addr, size_t(a - r.begin), r.bytes);
      if (n > 0) (void)!write(2, msg, size_t(n));
      _exit(kHostTouchExitCode);
    }
  }
  signal(sig, SIG_DFL);  // another fault: the default action when it repeats
}

inline void install_handler() {
  static const bool installed = [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
    return true;
  }();
  (void)installed;
}

inline void* alloc(size_t bytes) {
  install_handler();
  const size_t mapped = page_rounded(bytes);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_arena == 0) {  // reserved PROT_NONE: fresh pages read as zero once opened
    void* a =
        mmap(nullptr, kArenaBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED) fail("guarded device memory: cannot reserve %zu bytes", kArenaBytes);
    g_arena = reinterpret_cast<uintptr_t>(a);
  }
  if (mapped > kArenaBytes - g_used)
    fail("guarded device memory: the test process allocated more than %zu bytes in all",
         kArenaBytes);
  for (Region& r : g_regions) {
    if (r.bytes) continue;
    r.begin = g_arena + g_used;
    r.bytes = mapped;
    g_used += mapped;
    void* p = reinterpret_cast<void*>(r.begin);
    if (g_open > 0) protect(p, mapped, PROT_READ | PROT_WRITE);  // inside an op: open as well
    return p;
  }
  fail("guarded device memory: more than %zu buffers", kMaxRegions);
}

inline void release(void* p, size_t) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Region& r : g_regions) {
    if (r.bytes && r.begin == reinterpret_cast<uintptr_t>(p)) {
      madvise(p, r.bytes, MADV_DONTNEED);  // the memory goes back; the addresses stay unused
      r = Region{};
      return;
    }
  }
}

inline void zero(void* p, size_t bytes) {
  require_device(p, "zero");
  Open open;
  std::memset(p, 0, bytes);
}
inline void upload(void* dst, const void* src, size_t bytes) {
  require_device(dst, "upload (destination)");
  Open open;
  std::memcpy(dst, src, bytes);
}
inline void download(void* dst, const void* src, size_t bytes) {
  require_device(src, "download (source)");
  Open open;
  std::memcpy(dst, src, bytes);
}
inline void copy(void* dst, const void* src, size_t bytes) {
  require_device(dst, "copy (destination)");
  require_device(src, "copy (source)");
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  if (bytes > 0 && d < s + bytes && s < d + bytes) {  // undefined for cudaMemcpyAsync
    std::fprintf(stderr, "guarded device memory: copy of overlapping ranges\n");
    std::fflush(stderr);
    _exit(kHostTouchExitCode);
  }
  Open open;
  std::memcpy(dst, src, bytes);
}

// Every pointer argument of an op must be device memory (or null); values pass.
template <class T>
void require_device_arg(const T& arg, const char* op) {
  if constexpr (std::is_pointer_v<T>) require_device(arg, op);
}

// An entry of the CPU table, called with the regions open.
template <auto Entry, class Fn>
struct Guarded;
template <auto Entry, class R, class... A>
struct Guarded<Entry, R (*)(A...)> {
  static R call(A... a) {
    (require_device_arg(a, "an op"), ...);
    Open open;
    return (kernels::cpu_ops().*Entry)(a...);
  }
};

}  // namespace guarded_detail

inline const MemoryOps kGuardedDeviceMemory{
    .backend = "guarded-device",
    .host_accessible = false,
    .alloc = guarded_detail::alloc,
    .free = guarded_detail::release,
    .zero = guarded_detail::zero,
    .upload = guarded_detail::upload,
    .download = guarded_detail::download,
    .copy = guarded_detail::copy,
};

// Every entry wraps the CPU op; the table is complete (checked by the caller with
// kernels::first_unset_op).
inline const kernels::OpTable& guarded_device_ops() {
  static const kernels::OpTable table = [] {
    kernels::OpTable t{};
    t.backend = "cpu";
    t.memory = &kGuardedDeviceMemory;
#define GOSSAMER_GUARD(name) \
  t.name = guarded_detail::Guarded<&kernels::OpTable::name, decltype(kernels::OpTable::name)>::call
    GOSSAMER_GUARD(encoder_forward);
    GOSSAMER_GUARD(encoder_backward);
    GOSSAMER_GUARD(layernorm_forward);
    GOSSAMER_GUARD(layernorm_backward);
    GOSSAMER_GUARD(matmul_forward);
    GOSSAMER_GUARD(matmul_backward);
    GOSSAMER_GUARD(matmul_bf16_forward);
    GOSSAMER_GUARD(matmul_bf16_backward);
    GOSSAMER_GUARD(matmul_bf16_scratch_bytes);
    GOSSAMER_GUARD(attention_forward);
    GOSSAMER_GUARD(attention_backward);
    GOSSAMER_GUARD(attention_saved_size);
    GOSSAMER_GUARD(attention_scratch_size);
    GOSSAMER_GUARD(rmsnorm_forward);
    GOSSAMER_GUARD(rmsnorm_backward);
    GOSSAMER_GUARD(rope_forward);
    GOSSAMER_GUARD(rope_backward);
    GOSSAMER_GUARD(swiglu_forward);
    GOSSAMER_GUARD(swiglu_backward);
    GOSSAMER_GUARD(gelu_forward);
    GOSSAMER_GUARD(gelu_backward);
    GOSSAMER_GUARD(add);
    GOSSAMER_GUARD(accumulate);
    GOSSAMER_GUARD(scale);
    GOSSAMER_GUARD(axpy);
    GOSSAMER_GUARD(axpby);
    GOSSAMER_GUARD(sum_squares);
    GOSSAMER_GUARD(sum_squares_to);
    GOSSAMER_GUARD(accumulate_sum_squares);
    GOSSAMER_GUARD(sum);
    GOSSAMER_GUARD(to_bf16);
    GOSSAMER_GUARD(from_bf16);
    GOSSAMER_GUARD(crossentropy_forward);
    GOSSAMER_GUARD(crossentropy_backward);
    GOSSAMER_GUARD(crossentropy_forward_backward);
    GOSSAMER_GUARD(adamw_update);
    GOSSAMER_GUARD(adamw_update_blocks);
    GOSSAMER_GUARD(adams_update);
    GOSSAMER_GUARD(adams_update_indexed);
    GOSSAMER_GUARD(adams_update_from_momentum);
    GOSSAMER_GUARD(nesterov_outer);
    GOSSAMER_GUARD(gather);
    GOSSAMER_GUARD(scatter);
    GOSSAMER_GUARD(scale_at);
    GOSSAMER_GUARD(mask_score);
    GOSSAMER_GUARD(age_bonus);
    GOSSAMER_GUARD(top_k_indices);
    GOSSAMER_GUARD(accumulate_blocks);
    GOSSAMER_GUARD(zero_blocks);
    GOSSAMER_GUARD(block_l1_norms);
    GOSSAMER_GUARD(increment_clamped);
    GOSSAMER_GUARD(assign_at);
    GOSSAMER_GUARD(copy_runs);
    GOSSAMER_GUARD(accumulate_runs);
#undef GOSSAMER_GUARD
    return t;
  }();
  return table;
}

}  // namespace gossamer::testing
