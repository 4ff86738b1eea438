// CUDA versions of kernels/cpu/crossentropy.h: fused softmax + cross-entropy over a padded
// vocabulary (the first V of Vp columns are real tokens).
//   forward:  probs[i,:V] = softmax(logits[i,:V]), probs[i,V:] = 0,
//             losses[i] = log(sum) - (logits[i,target] - max)        (assigned; probs may alias
//             logits, the target's logit is read before the row is overwritten)
//   backward: dlogits[i,j] = scale (probs[i,j] - [j == target]) for j < V, 0 for j >= V
//             (assigned; dlogits may alias probs)
//   forward_backward: losses as forward, dlogits as backward of forward's probs, in one kernel
//             (assigned; dlogits may alias logits): the two kernels' arithmetic, without the
//             probs' round trip through memory
// One block per row: max and sum by a block reduction in a fixed order (deterministic).
// Targets (device memory) must lie in [0, V); the caller validates them on the host.
// Device pointers, cuda_context's stream().
#pragma once

#include <cstdint>

namespace gossamer::kernels::cuda {

void crossentropy_forward(float* losses, float* probs, const float* logits, const int32_t* targets,
                          int N, int V, int Vp);
void crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets, float scale,
                           int N, int V, int Vp);
void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                   const int32_t* targets, float scale, int N, int V, int Vp);

}  // namespace gossamer::kernels::cuda
