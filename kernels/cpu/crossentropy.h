// Fused softmax + cross-entropy over a padded vocabulary. Only the first V of Vp columns
// are real tokens; padded columns get probability 0 and gradient 0.
//   forward:  probs[i,:V] = softmax(logits[i,:V]), probs[i,V:] = 0;
//             losses[i] = -log probs[i, targets[i]]                      (both assigned)
//             probs may alias logits (in place).
//   backward: dlogits[i,j] = scale * (probs[i,j] - [j == targets[i]]) for j < V, 0 for j >= V
//             (assigned; dlogits may alias probs). scale is dloss/dlosses[i], e.g. 1/(B*T).
//   forward_backward: losses as forward, dlogits as backward of forward's probs, in one call
//             without the probs (assigned; dlogits may alias logits): the two ops' bits, one
//             pass over each row fewer. For training, where the loss's gradient is known.
// Targets must lie in [0, V); the caller validates them.
#pragma once

#include <cstdint>

namespace gossamer::kernels::cpu {

template <class T>
void crossentropy_forward(T* losses,               // (N)
                          T* probs,                // (N,Vp)
                          const T* logits,         // (N,Vp)
                          const int32_t* targets,  // (N)
                          int N, int V, int Vp);

template <class T>
void crossentropy_backward(T* dlogits,              // (N,Vp)
                           const T* probs,          // (N,Vp)
                           const int32_t* targets,  // (N)
                           T scale, int N, int V, int Vp);

template <class T>
void crossentropy_forward_backward(T* losses,               // (N)
                                   T* dlogits,              // (N,Vp)
                                   const T* logits,         // (N,Vp)
                                   const int32_t* targets,  // (N)
                                   T scale, int N, int V, int Vp);

}  // namespace gossamer::kernels::cpu
