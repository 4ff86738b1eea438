// Fills the CPU OpTable with the float instantiations of the ops in kernels/cpu/*.h.
#include "kernels/ops.h"

#include "kernels/cpu/adams.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/crossentropy.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/encoder.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/swiglu.h"

namespace gossamer::kernels {

const OpTable& cpu_ops() {
  static const OpTable table = {
      "cpu",
      cpu::encoder_forward<float>,
      cpu::encoder_backward<float>,
      cpu::layernorm_forward<float>,
      cpu::layernorm_backward<float>,
      cpu::matmul_forward<float>,
      cpu::matmul_backward<float>,
      cpu::attention_forward<float>,
      cpu::attention_backward<float>,
      cpu::rmsnorm_forward<float>,
      cpu::rmsnorm_backward<float>,
      cpu::rope_forward<float>,
      cpu::rope_backward<float>,
      cpu::swiglu_forward<float>,
      cpu::swiglu_backward<float>,
      cpu::gelu_forward<float>,
      cpu::gelu_backward<float>,
      cpu::add<float>,
      cpu::accumulate<float>,
      cpu::scale<float>,
      cpu::sum_squares<float>,
      cpu::crossentropy_forward<float>,
      cpu::crossentropy_backward<float>,
      cpu::adamw_update<float>,
      cpu::adams_update<float>,
      cpu::adams_update_indexed<float>,
      cpu::adams_update_from_momentum<float>,
  };
  return table;
}

}  // namespace gossamer::kernels
