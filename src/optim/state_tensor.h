// StateTensor: one named piece of optimizer state as a checkpoint sees it: its element type and
// how it relates to the ranks (its scope). The checkpoint code (run/checkpoint.cpp) gathers
// and restores state by these two properties alone, so a new method declares its state and
// gets world-size-independent checkpoints, or a clear error where they are impossible.
// Invariant: `data` points at `numel` elements of `dtype` owned by the optimizer, in `memory`; a
// SHARDED tensor is either whole (numel == total, no layout) or this rank's pieces of a ShardLayout
// packed back to back (numel == layout->size(rank)), and the ranks' pieces tile [0, total).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/enum_names.h"
#include "core/memory_ops.h"
#include "optim/shard_layout.h"

namespace gossamer::optim {

enum class StateDType { STATE_DTYPE_F32, STATE_DTYPE_BF16, STATE_DTYPE_I32, STATE_DTYPE_U8 };
size_t state_dtype_size(StateDType dtype);

enum class StateScope {
  // A flat tensor of `total` elements in a world-size-independent layout (usually the
  // parameter layout); this rank holds its pieces of `layout` (or all of it). Saved whole;
  // loads at any world size and any bucket size, each rank taking its pieces.
  STATE_SCOPE_SHARDED,
  // This rank's own tensor (sizes may differ between ranks). Saved per rank; restored only at
  // the world size it was saved at, with an error naming the tensor at any other.
  STATE_SCOPE_PER_RANK,
  // One row of `numel` elements per rank whose rows only matter through their sum (e.g.
  // error-feedback residuals). At the saved world size each rank gets its row back; at another,
  // rank 0 gets the sum of the saved rows and the other ranks zeros. F32 only.
  STATE_SCOPE_SUMMED_ROWS,
};

struct StateTensor {
  std::string name;
  StateDType dtype = StateDType::STATE_DTYPE_F32;
  void* data = nullptr;
  size_t numel = 0;
  size_t total = 0;  // SHARDED: elements of the whole tensor
  StateScope scope = StateScope::STATE_SCOPE_SHARDED;
  // SHARDED and not whole: the layout whose pieces of `rank` this tensor packs.
  std::shared_ptr<const ShardLayout> layout;
  int rank = 0;
  // A tensor added after files were written without it: a file lacking it leaves the values
  // the optimizer initialised (it must say in state_loaded() what that means).
  bool optional = false;
  // Where `data` lives (nullptr: host memory). Device state is read back and written through
  // these functions by the checkpoint code.
  const MemoryOps* memory = nullptr;

  template <class T>
  static constexpr StateDType dtype_of() {
    if constexpr (std::is_same_v<T, float>) return StateDType::STATE_DTYPE_F32;
    if constexpr (std::is_same_v<T, int32_t>) return StateDType::STATE_DTYPE_I32;
    if constexpr (std::is_same_v<T, uint8_t>) return StateDType::STATE_DTYPE_U8;
    static_assert(
        std::is_same_v<T, float> || std::is_same_v<T, int32_t> || std::is_same_v<T, uint8_t>,
        "state tensors hold float, int32_t or uint8_t (bf16: give the dtype)");
  }
  // A flat tensor of own.total elements of which this rank holds `own` (its pieces, packed;
  // or all of it when own is whole).
  template <class T>
  static StateTensor sharded(std::string name, T* data, const OwnedShard& own) {
    return {std::move(name), dtype_of<T>(), data,
            own.size,        own.total,     StateScope::STATE_SCOPE_SHARDED,
            own.layout,      own.rank,      false};
  }
  // The same whole tensor on every rank.
  template <class T>
  static StateTensor replicated(std::string name, T* data, size_t numel) {
    return {std::move(name),
            dtype_of<T>(),
            data,
            numel,
            numel,
            StateScope::STATE_SCOPE_SHARDED,
            nullptr,
            0,
            false};
  }
  template <class T>
  static StateTensor per_rank(std::string name, T* data, size_t numel) {
    return {std::move(name),
            dtype_of<T>(),
            data,
            numel,
            0,
            StateScope::STATE_SCOPE_PER_RANK,
            nullptr,
            0,
            false};
  }
  static StateTensor summed_rows(std::string name, float* data, size_t numel) {
    return {std::move(name),
            StateDType::STATE_DTYPE_F32,
            data,
            numel,
            0,
            StateScope::STATE_SCOPE_SUMMED_ROWS,
            nullptr,
            0,
            false};
  }
  size_t bytes() const { return numel * state_dtype_size(dtype); }
  bool on_host() const { return memory == nullptr || memory->host_accessible; }
  // The same tensor, its data in `where` (an op table's memory).
  StateTensor in(const MemoryOps& where) && {
    memory = &where;
    return std::move(*this);
  }
};

}  // namespace gossamer::optim

namespace gossamer {
template <>
struct EnumNames<optim::StateDType> {
  static constexpr std::pair<optim::StateDType, std::string_view> values[] = {
      {optim::StateDType::STATE_DTYPE_F32, "F32"},
      {optim::StateDType::STATE_DTYPE_BF16, "BF16"},
      {optim::StateDType::STATE_DTYPE_I32, "I32"},
      {optim::StateDType::STATE_DTYPE_U8, "U8"}};
};
template <>
struct EnumNames<optim::StateScope> {
  static constexpr std::pair<optim::StateScope, std::string_view> values[] = {
      {optim::StateScope::STATE_SCOPE_SHARDED, "sharded"},
      {optim::StateScope::STATE_SCOPE_PER_RANK, "per_rank"},
      {optim::StateScope::STATE_SCOPE_SUMMED_ROWS, "summed_rows"}};
};
}  // namespace gossamer
