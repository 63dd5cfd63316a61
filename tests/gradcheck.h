/*
 * gradcheck.h — checks an op's backward against central finite differences.
 *
 * For an op out = f(x_1, ..., x_n) it builds the scalar L = Σ_j out_j · r_j with fixed
 * random weights r (so every output element matters and dL/dout = r), then compares the
 * gradient backward computes for each float input with
 *     (L(x + eps·e_i) − L(x − eps·e_i)) / (2·eps),
 * evaluating L in double from the op's float outputs with grad mode off.
 */
#ifndef REMAT_TESTS_GRADCHECK_H
#define REMAT_TESTS_GRADCHECK_H

#include "autograd/autograd.h"

/* Builds the op's output from `inputs` (it must not free them). NULL on error. */
typedef Var *(*GradcheckFn)(void *ctx, Var *const *inputs);

typedef struct GradcheckResult {
    double worst_error; /* max over elements of |analytic − numeric| / (1 + |numeric|) */
    int worst_input;    /* which input it was found in */
    size_t worst_index; /* and which element */
} GradcheckResult;

/* Runs the check for every input that requires grad. `eps` is the finite-difference step.
 * Prints one line per input with its worst error. Leaves the inputs' .grad zeroed, the
 * current tape empty, and the values unchanged. */
GradcheckResult gradcheck(const char *label, GradcheckFn fn, void *ctx, Var *const *inputs,
                          int n_inputs, double eps);

/* A leaf Var of the given shape with values uniform in [lo, hi) from a PCG32 seeded with
 * `seed`. */
Var *gradcheck_input(int ndim, const int *shape, bool requires_grad, uint64_t seed, float lo, float hi);

#endif /* REMAT_TESTS_GRADCHECK_H */
