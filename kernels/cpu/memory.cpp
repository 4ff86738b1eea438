// Implementation of memory.h.
#include "kernels/cpu/memory.h"

#include <cstring>

#include "core/buffer.h"

namespace gossamer::kernels::cpu {

namespace {

void zero(void* p, size_t bytes) {
  if (bytes) std::memset(p, 0, bytes);
}
void copy(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

}  // namespace

extern const MemoryOps kMemory{.backend = "cpu",
                               .host_accessible = true,
                               .alloc = host_alloc,
                               .free = host_free,
                               .zero = zero,
                               .upload = copy,
                               .download = copy,
                               .copy = copy};

}  // namespace gossamer::kernels::cpu
