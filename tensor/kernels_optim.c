/*
 * kernels_optim.c — parameter updates: SGD (with momentum) and AdamW, over all of a
 * model's parameters in one pass.
 *
 * What it is: elementwise updates of a parameter from its gradient and state. A step hands
 * every parameter over at once, as a list of slices; the elements of all slices together
 * are cut into one contiguous range per thread, so a model of many small parameters (a
 * GPT's biases and LayerNorm weights) keeps every thread busy, with one fork and join per
 * step instead of one per parameter. Each element's update depends only on that element,
 * so the result is the same whatever the thread count and however the ranges fall.
 * FLOPs go to whichever phase is current (the optimizer sets PHASE_OPTIMIZER).
 * What it is not: an optimizer. Which parameters, which state, which step: autograd/optim.c.
 */
#include "tensor/kernels.h"

#include <math.h>
#include <omp.h>

#include "tensor/flat.h"
#include "tensor/flops.h"

/* Below this many elements in all the slices together, the threads cost more than they
 * save. */
#define OPTIM_PARALLEL_MIN 32768

/* Splits the slices' concatenated elements into one contiguous range per thread, and each
 * thread updates the parts [from, from + n) of the slices its range covers, as `u` says.
 * AdamW (Loshchilov & Hutter 2019), as PyTorch's torch.optim.AdamW, step t ≥ 1:
 *   param -= lr·weight_decay·param                 decoupled weight decay
 *   m = beta1·m + (1 − beta1)·grad                 first moment
 *   v = beta2·v + (1 − beta2)·grad²                second moment
 *   param -= lr · (m / (1 − beta1^t)) / (sqrt(v / (1 − beta2^t)) + eps)
 * FLOPs per element: decay 2, m 3, v 4, update 7 (two corrections, sqrt, add, divide,
 * multiply, subtract): 16. SGD (PyTorch's form, dampening 0):
 *   velocity = momentum·velocity + grad     (skipped without momentum)
 *   param   -= lr · velocity
 * FLOPs per element: 2, and 2 more where there is a velocity. */
void k_optim_update(const OptimSlice *slices, int count, const OptimUpdate *u)
{
    /* AdamW's bias corrections 1 / (1 − beta^t), once per step */
    const float correction1 = u->adamw ? 1.0f / (1.0f - powf(u->beta1, (float)u->t)) : 0.0f;
    const float correction2 = u->adamw ? 1.0f / (1.0f - powf(u->beta2, (float)u->t)) : 0.0f;
    size_t total = 0, with_momentum = 0;
    for (int s = 0; s < count; s++) {
        total += slices[s].n;
        with_momentum += u->momentum != 0.0f && slices[s].m ? slices[s].n : 0;
    }
#pragma omp parallel if (total >= OPTIM_PARALLEL_MIN)
    {
        const size_t threads = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
        const size_t begin = total * t / threads, end = total * (t + 1) / threads;
        size_t first = 0; /* slice s's first element in the concatenation */
        for (int s = 0; s < count && first < end; first += slices[s].n, s++) {
            size_t from;
            const size_t n = flat_overlap(begin, end, first, slices[s].n, &from), to = from + n;
            float *restrict param = slices[s].param, *restrict m = slices[s].m, *restrict v = slices[s].v;
            const float *restrict grad = slices[s].grad;
            const float lr = u->lr, momentum = u->momentum;
            if (u->adamw) {
                const float decay = slices[s].weight_decay, beta1 = u->beta1, beta2 = u->beta2, eps = u->eps;
                for (size_t i = from; i < to; i++) {
                    float g = grad[i];
                    float p = param[i] - lr * decay * param[i];
                    float mi = beta1 * m[i] + (1.0f - beta1) * g;
                    float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
                    m[i] = mi;
                    v[i] = vi;
                    param[i] = p - lr * (mi * correction1) / (sqrtf(vi * correction2) + eps);
                }
            } else if (momentum == 0.0f || !m) {
                for (size_t i = from; i < to; i++) param[i] -= lr * grad[i];
            } else {
                for (size_t i = from; i < to; i++) {
                    m[i] = momentum * m[i] + grad[i]; /* m is the velocity */
                    param[i] -= lr * m[i];
                }
            }
        }
    }
    flops_add(u->adamw ? 16 * (uint64_t)total : 2 * (uint64_t)total + 2 * (uint64_t)with_momentum);
}
