/*
 * kernels_optim.c — parameter updates: SGD (with momentum) and AdamW.
 *
 * Elementwise over a parameter and its gradient and state, OpenMP over elements; each
 * element's update depends only on that element, so the result is the same whatever the
 * thread count. FLOPs go to whichever phase is current (the optimizer sets
 * PHASE_OPTIMIZER).
 */
#include "tensor/kernels.h"

#include <math.h>

#include "tensor/flops.h"

/* Below this many elements the threads cost more than they save. */
#define OPTIM_PARALLEL_MIN 32768

/* SGD with optional momentum (PyTorch's form, dampening 0):
 *   velocity = momentum·velocity + grad     (skipped when momentum is 0: velocity may be NULL)
 *   param   -= lr · velocity
 * FLOPs: 2 per element without momentum (multiply, subtract), 4 with. */
void k_sgd_update(float *param, float *velocity, const float *grad, float lr, float momentum, size_t n)
{
    if (momentum == 0.0f || !velocity) {
#pragma omp parallel for schedule(static) if (n >= OPTIM_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++) param[i] -= lr * grad[i];
        flops_add(2 * (uint64_t)n);
        return;
    }
#pragma omp parallel for schedule(static) if (n >= OPTIM_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) {
        velocity[i] = momentum * velocity[i] + grad[i];
        param[i] -= lr * velocity[i];
    }
    flops_add(4 * (uint64_t)n);
}

/* AdamW (Loshchilov & Hutter 2019), as PyTorch's torch.optim.AdamW, step t ≥ 1:
 *   param -= lr·weight_decay·param                 decoupled weight decay
 *   m = beta1·m + (1 − beta1)·grad                 first moment
 *   v = beta2·v + (1 − beta2)·grad²                second moment
 *   param -= lr · (m / (1 − beta1^t)) / (sqrt(v / (1 − beta2^t)) + eps)
 * The bias corrections are computed once per call, not per element.
 * FLOPs per element: decay 2, m 3, v 4, update 7 (two corrections, sqrt, add, divide,
 * multiply, subtract): 16. */
void k_adamw_update(float *param, float *m, float *v, const float *grad, float lr, float beta1,
                    float beta2, float eps, float weight_decay, int t, size_t n)
{
    const float correction1 = 1.0f / (1.0f - powf(beta1, (float)t));
    const float correction2 = 1.0f / (1.0f - powf(beta2, (float)t));
#pragma omp parallel for schedule(static) if (n >= OPTIM_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        float p = param[i] - lr * weight_decay * param[i];
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        param[i] = p - lr * (mi * correction1) / (sqrtf(vi * correction2) + eps);
    }
    flops_add(16 * (uint64_t)n);
}
