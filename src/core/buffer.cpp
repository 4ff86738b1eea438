// Implementation of host_alloc/host_free: aligned_alloc + madvise(MADV_HUGEPAGE) + touch;
// host_release_pages: madvise(MADV_DONTNEED) on the whole pages of a range.
#include "core/buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
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

size_t host_release_pages(void* p, size_t bytes) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) / page * page;
  if (end <= begin) return 0;
  // Not huge pages again: khugepaged would merge the range back into 2 MiB pages.
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_NOHUGEPAGE);
  if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED) != 0)
    fail("madvise(MADV_DONTNEED) of %zu bytes failed", size_t(end - begin));
  return end - begin;
}

void host_free(void* p, size_t) {
  std::free(p);
}

}  // namespace gossamer
