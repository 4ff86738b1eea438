// The operand type of the model's matrix products (kernels.matmul_dtype): fp32, or bf16 with
// fp32 accumulation (the matmul_bf16 ops of kernels/ops.h). Master weights, gradients,
// activations and optimizer state are fp32 in both.
#pragma once

#include <string_view>
#include <utility>

#include "core/enum_names.h"

namespace gossamer::kernels {

enum class MatmulDtype { MATMUL_DTYPE_FP32, MATMUL_DTYPE_BF16 };

}  // namespace gossamer::kernels

namespace gossamer {
template <>
struct EnumNames<kernels::MatmulDtype> {
  static constexpr std::pair<kernels::MatmulDtype, std::string_view> values[] = {
      {kernels::MatmulDtype::MATMUL_DTYPE_FP32, "fp32"},
      {kernels::MatmulDtype::MATMUL_DTYPE_BF16, "bf16"}};
};
}  // namespace gossamer
