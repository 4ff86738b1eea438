// HostBuffer<T>: an owned, 64-byte aligned array allocated once and reused.
// Invariant: the memory is zero-filled (touched) at construction, so first-touch page
// faults happen at start-up and never inside a training step; buffers of 2 MiB and
// more are advised to use transparent huge pages. Move-only (RAII).
// Buffer<T>: the same in a backend's memory (core/memory_ops.h: host memory for the CPU
// backend, GPU memory for CUDA), for the buffers ops read and write; its data() is a host
// pointer only when memory().host_accessible. Its memory's free must not throw (it runs in
// the destructor and in the noexcept move).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "core/memory_ops.h"

namespace gossamer {

void* host_alloc(size_t bytes);  // aligned, huge-page advised, zero-filled; throws on failure
void host_free(void* p, size_t bytes);
// Gives the whole pages inside [p, p + bytes) of a host_alloc'd buffer back to the system: they
// read as zero and use memory again only once written (the partial pages at the ends stay).
// Returns the bytes released.
size_t host_release_pages(void* p, size_t bytes);

template <class T>
class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(size_t n)
      : n_(n), p_(n ? static_cast<T*>(host_alloc(n * sizeof(T))) : nullptr) {}
  ~HostBuffer() { release(); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  HostBuffer(HostBuffer&& o) noexcept : n_(o.n_), p_(o.p_) { o.n_ = 0, o.p_ = nullptr; }
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    if (this != &o) {
      release();
      n_ = o.n_, p_ = o.p_;
      o.n_ = 0, o.p_ = nullptr;
    }
    return *this;
  }

  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  std::span<T> span() { return {p_, n_}; }
  std::span<const T> span() const { return {p_, n_}; }

 private:
  void release() {
    if (p_) host_free(p_, n_ * sizeof(T));
    p_ = nullptr;
    n_ = 0;
  }
  size_t n_ = 0;
  T* p_ = nullptr;
};

template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(size_t n, const MemoryOps& memory)
      : memory_(&memory), n_(n), p_(n ? static_cast<T*>(memory.alloc(n * sizeof(T))) : nullptr) {}
  ~Buffer() { release(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept : memory_(o.memory_), n_(o.n_), p_(o.p_) { o.n_ = 0, o.p_ = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      memory_ = o.memory_, n_ = o.n_, p_ = o.p_;
      o.n_ = 0, o.p_ = nullptr;
    }
    return *this;
  }

  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  // Device pointers when !memory().host_accessible.
  std::span<T> span() { return {p_, n_}; }
  std::span<const T> span() const { return {p_, n_}; }
  const MemoryOps& memory() const { return *memory_; }

  void zero() {
    if (p_) memory_->zero(p_, n_ * sizeof(T));
  }
  // Copies n elements at offset from / to host memory (complete on return); a range outside
  // the buffer throws gossamer::Error.
  void upload(const T* host, size_t n, size_t offset = 0) {
    check_range(n, offset);
    if (n) memory_->upload(p_ + offset, host, n * sizeof(T));
  }
  void download(T* host, size_t n, size_t offset = 0) const {
    check_range(n, offset);
    if (n) memory_->download(host, p_ + offset, n * sizeof(T));
  }

 private:
  void release() {
    if (p_) memory_->free(p_, n_ * sizeof(T));
    p_ = nullptr;
    n_ = 0;
  }
  void check_range(size_t n, size_t offset) const {
    if (offset > n_ || n > n_ - offset)
      fail("buffer: copy of %zu elements at %zu outside a buffer of %zu", n, offset, n_);
  }
  const MemoryOps* memory_ = nullptr;
  size_t n_ = 0;
  T* p_ = nullptr;
};

}  // namespace gossamer
