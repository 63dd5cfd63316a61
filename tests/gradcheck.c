/*
 * gradcheck.c — finite-difference gradient checks for the autograd tests (see gradcheck.h).
 */
#include "tests/gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensor/rng.h"

Var *gradcheck_input(int ndim, const int *shape, bool requires_grad, uint64_t seed, float lo, float hi)
{
    Tensor *t = tensor_create(requires_grad ? MEM_PARAM : MEM_ACT, DTYPE_F32, ndim, shape);
    if (!t) return NULL;
    Pcg32 rng;
    pcg32_seed(&rng, seed, 7);
    for (size_t i = 0; i < t->numel; i++) t->f32[i] = lo + (hi - lo) * pcg32_float(&rng);
    return var_create(t, requires_grad, NULL);
}

/* L = Σ out_j · r_j for the current input values, with grad mode off. */
static double weighted_sum(GradcheckFn fn, void *ctx, Var *const *inputs, const float *r)
{
    bool was = grad_set_enabled(false);
    Var *out = fn(ctx, inputs);
    grad_set_enabled(was);
    if (!out) {
        fprintf(stderr, "gradcheck: forward failed: %s\n", remat_last_error());
        abort();
    }
    double sum = 0.0;
    for (size_t j = 0; j < out->value->numel; j++) sum += (double)out->value->f32[j] * (double)r[j];
    var_free(out);
    return sum;
}

GradcheckResult gradcheck(const char *label, GradcheckFn fn, void *ctx, Var *const *inputs,
                          int n_inputs, double eps)
{
    GradcheckResult result = {0.0, -1, 0};
    Var *out = fn(ctx, inputs);
    if (!out) {
        fprintf(stderr, "gradcheck %s: forward failed: %s\n", label, remat_last_error());
        abort();
    }
    Tensor *r = tensor_create(MEM_ACT, DTYPE_F32, out->value->ndim, out->value->shape);
    Pcg32 rng;
    pcg32_seed(&rng, 1234, 5);
    for (size_t j = 0; j < r->numel; j++) r->f32[j] = 2.0f * pcg32_float(&rng) - 1.0f;
    for (int i = 0; i < n_inputs; i++) var_zero_grad(inputs[i]);
    if (backward_from(out, r) != REMAT_OK) {
        fprintf(stderr, "gradcheck %s: backward failed: %s\n", label, remat_last_error());
        abort();
    }
    var_free(out);
    tape_reset();

    for (int i = 0; i < n_inputs; i++) {
        Var *in = inputs[i];
        if (!in->requires_grad || in->value->dtype != DTYPE_F32) continue;
        double worst = 0.0;
        for (size_t k = 0; k < in->value->numel; k++) {
            float *x = &in->value->f32[k];
            const float saved = *x;
            /* The step actually taken is what float can represent, not exactly eps. */
            const float up = (float)(saved + eps), down = (float)(saved - eps);
            *x = up;
            double plus = weighted_sum(fn, ctx, inputs, r->f32);
            *x = down;
            double minus = weighted_sum(fn, ctx, inputs, r->f32);
            *x = saved;
            double numeric = (plus - minus) / ((double)up - (double)down);
            double analytic = in->grad ? in->grad->f32[k] : 0.0;
            double err = fabs(analytic - numeric) / (1.0 + fabs(numeric));
            if (err > worst) worst = err;
            if (err > result.worst_error) {
                result.worst_error = err;
                result.worst_input = i;
                result.worst_index = k;
            }
        }
        printf("  gradcheck %-22s input %d (%zu elements): worst error %.2e\n", label, i,
               in->value->numel, worst);
        var_zero_grad(in);
    }
    tensor_free(r);
    return result;
}
