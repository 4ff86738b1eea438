// Small helpers shared by the mpi backend's files (mpi_communicator.cpp, mpi_operations.cpp).
#pragma once

#include <cstddef>

namespace gossamer::comm::mpi_detail {

inline constexpr int kTag = 0;  // our own duplicated communicator: no other traffic to tell apart

inline char* at(void* p, size_t i, size_t size) {
  return static_cast<char*>(p) + i * size;
}
inline const char* at(const void* p, size_t i, size_t size) {
  return static_cast<const char*>(p) + i * size;
}

}  // namespace gossamer::comm::mpi_detail
