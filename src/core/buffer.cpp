// Implementation of host_alloc/host_free: aligned_alloc + madvise(MADV_HUGEPAGE) + touch.
#include "core/buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace gossamer {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

void* host_alloc(size_t bytes) {
  size_t align = bytes >= kHugePage ? kHugePage : 64;
  size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p) fail("out of host memory allocating %zu bytes", bytes);
  if (bytes >= kHugePage) madvise(p, rounded, MADV_HUGEPAGE);
  std::memset(p, 0, rounded);
  return p;
}

void host_free(void* p, size_t) {
  std::free(p);
}

}  // namespace gossamer
