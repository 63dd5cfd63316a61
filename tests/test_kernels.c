/*
 * test_kernels.c — every raw kernel (kernels.h) against its naive double-precision
 * reference (kernels_ref.h), plus what the kernels promise beyond the math: backward
 * kernels accumulate, the causal mask is exact, results are bit-identical run to run and
 * (for everything but the BLAS matmuls) across thread counts, and each call adds its
 * documented FLOP count to the ledger.
 *
 * What it is not: a test of argument checking. The kernels trust their caller (kernels.h);
 * errors are autograd's job and tested there.
 *
 * Inputs come from a small local xorshift32 generator, so this test depends on nothing but
 * the kernels, and every run sees the same numbers. Sizes are odd (37x53 and the like) so
 * that no loop ends on a vector or lane boundary by luck, and the determinism tests use
 * arrays large enough to take the kernels' threaded paths.
 *
 * Tolerances. float32 rounds each operation to a relative 2^-24 (FLT_EPSILON is 2^-23).
 * A result that comes out of a few operations is compared with a small multiple of
 * FLT_EPSILON. A sum of n terms of size up to s has partial sums of size ~sqrt(n)·s and
 * makes n roundings of random sign, which add up to ~sqrt(n)·FLT_EPSILON·sqrt(n)·s; those
 * are compared with 4·FLT_EPSILON·n·s (the same random-walk estimate with a 4x margin).
 * assert_close prints the worst difference per array, as llm.c's test does, and fails the
 * test when it is over the tolerance. Run under ctest with OMP_NUM_THREADS=2.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/expf_inline.h"
#include "tensor/flops.h"
#include "tensor/kernels.h"
#include "tests/kernels_ref.h"

/* ---- helpers ---------------------------------------------------------------------- */

static uint32_t xorshift_state;

/* Restarts the generator, so each test's inputs do not depend on which tests ran before. */
static void seed(uint32_t s) { xorshift_state = s ? s : 1u; }

/* Marsaglia's xorshift32: plenty for test inputs, and nothing to link. */
static uint32_t xorshift32(void)
{
    uint32_t x = xorshift_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return xorshift_state = x;
}

/* A uniform float in [lo, hi), from 24 random bits. */
static float uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)(xorshift32() >> 8) * (1.0f / 16777216.0f);
}

/* A new array of n uniform floats in [lo, hi); the caller frees it. */
static float *random_floats(size_t n, float lo, float hi)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) p[i] = uniform(lo, hi);
    return p;
}

/* A new zeroed float array; the caller frees it. */
static float *zero_floats(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof *p);
    assert_non_null(p);
    return p;
}

/* A new double array holding the same values as x (for a reference to accumulate onto);
 * the caller frees it. */
static double *to_double(const float *x, size_t n)
{
    double *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) p[i] = x[i];
    return p;
}

/* A new copy of x; the caller frees it. */
static float *copy_floats(const float *x, size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    memcpy(p, x, n * sizeof *p);
    return p;
}

/* Fails unless |got − want| ≤ tol·max(1, |want|) everywhere: an absolute tolerance for
 * values up to 1 and a relative one above. Prints the worst difference either way. */
static void assert_close(const char *what, const float *got, const double *want, size_t n,
                         double tol)
{
    double worst = 0.0;
    size_t worst_at = 0, first_bad = n;
    for (size_t i = 0; i < n; i++) {
        double diff = fabs((double)got[i] - want[i]);
        if (diff > worst || isnan(diff)) {
            worst = diff;
            worst_at = i;
        }
        if (!(diff <= tol * fmax(1.0, fabs(want[i]))) && first_bad == n) first_bad = i;
    }
    print_message("  %-28s worst |diff| %.3g at %zu (tol %.3g)\n", what, worst, worst_at, tol);
    if (first_bad < n)
        fail_msg("%s: element %zu is %.9g, reference %.9g (tol %.3g)", what, first_bad,
                 (double)got[first_bad], want[first_bad], tol);
}

/* The sum tolerance of the file comment: n terms of size up to s. */
static double sum_tol(double n, double s) { return 4.0 * FLT_EPSILON * n * s; }

/* A gradient buffer for testing a backward kernel three ways at once:
 *   got   starts as `init` (random, nonzero) and is what the kernel accumulates onto;
 *   want  starts as `init` too, in double, for the reference to accumulate onto;
 *   fresh starts at zero, for the kernel run again to show what one call adds.
 * grad_check then compares got with want, and checks got = init + fresh (the kernel
 * added to the gradient rather than overwriting it), up to the rounding of that add. */
typedef struct Grad {
    size_t n;
    float *init, *got, *fresh;
    double *want;
} Grad;

static Grad grad_create(size_t n)
{
    Grad g = {.n = n};
    g.init = random_floats(n, -1.0f, 1.0f);
    g.got = copy_floats(g.init, n);
    g.fresh = zero_floats(n);
    g.want = to_double(g.init, n);
    return g;
}

static void grad_check(const char *what, const Grad *g, double tol)
{
    assert_close(what, g->got, g->want, g->n, tol);
    for (size_t i = 0; i < g->n; i++) {
        double sum = (double)g->init[i] + (double)g->fresh[i];
        double one_rounding = FLT_EPSILON * fabs(sum);
        if (!(fabs((double)g->got[i] - sum) <= one_rounding))
            fail_msg("%s does not accumulate: element %zu is %.9g, init + fresh is %.9g", what,
                     i, (double)g->got[i], sum);
    }
}

/* As grad_check, for kernels that add each term straight into the gradient (a scatter:
 * several terms may land on the same element, so they cannot be summed first). Then
 * init joins the sum at its start, not its end: got and init + fresh are the same terms
 * added in another order, equal up to the sum tolerance `sum_tol` rather than one
 * rounding. */
static void grad_check_scatter(const char *what, const Grad *g, double tol, double sum_tol)
{
    assert_close(what, g->got, g->want, g->n, tol);
    for (size_t i = 0; i < g->n; i++) {
        double sum = (double)g->init[i] + (double)g->fresh[i];
        if (!(fabs((double)g->got[i] - sum) <= sum_tol * fmax(1.0, fabs(sum))))
            fail_msg("%s does not accumulate: element %zu is %.9g, init + fresh is %.9g", what,
                     i, (double)g->got[i], sum);
    }
}

static void grad_free(Grad *g)
{
    free(g->init);
    free(g->got);
    free(g->fresh);
    free(g->want);
}

/* Fails unless the FLOP ledger holds exactly `want` FLOPs, then clears it. */
static void expect_flops(const char *what, uint64_t want)
{
    uint64_t got = flops_total();
    if (got != want)
        fail_msg("%s counted %llu FLOPs, its formula says %llu", what, (unsigned long long)got,
                 (unsigned long long)want);
    flops_reset();
}

/* ---- matmul ----------------------------------------------------------------------- */

static const CBLAS_TRANSPOSE TRANSPOSES[2] = {CblasNoTrans, CblasTrans};

/* One k_matmul against ref_matmul, from the same random C. Inputs in [-1, 1), so each
 * product term is at most 1: the K-term dot product gets the sum tolerance, scaled by
 * |alpha|, plus a few roundings of beta·C. */
static void check_matmul(int M, int N, int K, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb,
                         float alpha, float beta)
{
    float *A = random_floats((size_t)M * K, -1.0f, 1.0f);
    float *B = random_floats((size_t)K * N, -1.0f, 1.0f);
    float *C = random_floats((size_t)M * N, -1.0f, 1.0f);
    double *C_ref = to_double(C, (size_t)M * N);

    k_matmul(C, A, B, 1, M, N, K, ta, tb, alpha, beta);
    ref_matmul(C_ref, A, B, M, N, K, ta, tb, alpha, beta);

    char what[64];
    snprintf(what, sizeof what, "matmul %s%s a=%g b=%g", ta == CblasTrans ? "T" : "N",
             tb == CblasTrans ? "T" : "N", (double)alpha, (double)beta);
    double tol = sum_tol(K, fabs(alpha)) + 4.0 * FLT_EPSILON * fabs(beta);
    assert_close(what, C, C_ref, (size_t)M * N, tol);
    free(A);
    free(B);
    free(C);
    free(C_ref);
}

static void test_matmul_all_transposes_match_reference(void **state)
{
    (void)state;
    seed(1);
    static const float alphas[3] = {1.0f, 0.5f, -2.0f}, betas[3] = {0.0f, 1.0f, -1.5f};
    for (int ia = 0; ia < 2; ia++)
        for (int ib = 0; ib < 2; ib++)
            for (int s = 0; s < 3; s++)
                check_matmul(37, 53, 29, TRANSPOSES[ia], TRANSPOSES[ib], alphas[s], betas[s]);
}

static void test_matmul_beta_zero_ignores_old_c(void **state)
{
    (void)state;
    seed(2);
    enum { M = 5, N = 7, K = 3 };
    float *A = random_floats(M * K, -1.0f, 1.0f), *B = random_floats(K * N, -1.0f, 1.0f);
    float C[M * N];
    double C_ref[M * N];
    for (int i = 0; i < M * N; i++) C[i] = NAN;
    k_matmul(C, A, B, 1, M, N, K, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
    ref_matmul(C_ref, A, B, M, N, K, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
    assert_close("matmul over NaN, beta=0", C, C_ref, M * N, sum_tol(K, 1.0));
    free(A);
    free(B);
}

static void test_matmul_empty_k_scales_c(void **state)
{
    (void)state;
    /* K = 0: op(A)·op(B) is an (M,N) matrix of zeros, so C = beta·C. */
    float A[1] = {0}, B[1] = {0}, C[6] = {1, 2, 3, 4, 5, 6};
    k_matmul(C, A, B, 1, 2, 3, 0, CblasNoTrans, CblasNoTrans, 1.0f, 0.5f);
    for (int i = 0; i < 6; i++) assert_true(C[i] == 0.5f * (float)(i + 1));
}

/* Batched products on both of k_matmul's paths: small ones (spread across
 * threads, one product each) and large ones (a serial loop of threaded sgemm calls). */
static void check_matmul_batched(int batch, int M, int N, int K, CBLAS_TRANSPOSE ta,
                                 CBLAS_TRANSPOSE tb)
{
    size_t a_n = (size_t)batch * M * K, b_n = (size_t)batch * K * N, c_n = (size_t)batch * M * N;
    float *A = random_floats(a_n, -1.0f, 1.0f), *B = random_floats(b_n, -1.0f, 1.0f);
    float *C = random_floats(c_n, -1.0f, 1.0f);
    double *C_ref = to_double(C, c_n);
    k_matmul(C, A, B, batch, M, N, K, ta, tb, 0.5f, 1.0f);
    ref_matmul_batched(C_ref, A, B, batch, M, N, K, ta, tb, 0.5f, 1.0f);
    char what[64];
    snprintf(what, sizeof what, "batched %dx(%d,%d,%d) %s%s", batch, M, N, K,
             ta == CblasTrans ? "T" : "N", tb == CblasTrans ? "T" : "N");
    assert_close(what, C, C_ref, c_n, sum_tol(K, 0.5) + 4.0 * FLT_EPSILON);
    free(A);
    free(B);
    free(C);
    free(C_ref);
}

static void test_matmul_batched_matches_reference(void **state)
{
    (void)state;
    seed(3);
    for (int ia = 0; ia < 2; ia++)
        for (int ib = 0; ib < 2; ib++) check_matmul_batched(5, 37, 53, 29, TRANSPOSES[ia], TRANSPOSES[ib]);
    /* 2·512·512·300 FLOPs per product is over the across-threads limit: the serial path. */
    check_matmul_batched(2, 512, 512, 300, CblasNoTrans, CblasTrans);
}

/* ---- elementwise ------------------------------------------------------------------ */

enum { EW_N = 1000003 }; /* odd, and large enough for the threaded paths */

static void test_fill_matches_reference(void **state)
{
    (void)state;
    seed(4);
    float *x = random_floats(EW_N, -1.0f, 1.0f), *out = zero_floats(EW_N);
    double *want = to_double(out, EW_N);
    k_fill(out, 0.25f, EW_N);
    ref_fill(want, 0.25f, EW_N);
    assert_close("fill", out, want, EW_N, 0.0);
    free(x);
    free(out);
    free(want);
}

static void test_add_axpy_scale_match_reference(void **state)
{
    (void)state;
    seed(5);
    float *a = random_floats(EW_N, -1.0f, 1.0f), *b = random_floats(EW_N, -1.0f, 1.0f);
    float *out = zero_floats(EW_N);
    double *want = to_double(out, EW_N);
    /* One rounding of a result of size up to 2 (add), or of size up to 1 (scale). */
    k_add(out, a, b, EW_N);
    ref_add(want, a, b, EW_N);
    assert_close("add", out, want, EW_N, FLT_EPSILON);
    k_scale(out, a, -0.75f, EW_N);
    ref_scale(want, a, -0.75f, EW_N);
    assert_close("scale", out, want, EW_N, FLT_EPSILON);
    /* axpy onto b: two roundings (the product and the sum). */
    double *y_ref = to_double(b, EW_N);
    k_axpy(b, a, 1.5f, EW_N);
    ref_axpy(y_ref, a, 1.5f, EW_N);
    assert_close("axpy", b, y_ref, EW_N, 2.0 * FLT_EPSILON);
    free(a);
    free(b);
    free(out);
    free(want);
    free(y_ref);
}

static void test_add_in_place_matches_out_of_place(void **state)
{
    (void)state;
    seed(6);
    float *a = random_floats(EW_N, -1.0f, 1.0f), *b = random_floats(EW_N, -1.0f, 1.0f);
    float *out = zero_floats(EW_N);
    k_add(out, a, b, EW_N);
    k_add(a, a, b, EW_N); /* kernels_elementwise.c allows an output to be an input */
    assert_memory_equal(a, out, EW_N * sizeof *a);
    free(a);
    free(b);
    free(out);
}

static void test_bias_broadcast_and_backward_match_reference(void **state)
{
    (void)state;
    seed(7);
    enum { ROWS = 301, COLS = 253 }; /* COLS not a multiple of the column block */
    size_t n = (size_t)ROWS * COLS;
    float *out = random_floats(n, -1.0f, 1.0f), *bias = random_floats(COLS, -1.0f, 1.0f);
    double *out_ref = to_double(out, n);
    k_bias_broadcast(out, bias, ROWS, COLS);
    ref_bias_broadcast(out_ref, bias, ROWS, COLS);
    assert_close("bias_broadcast", out, out_ref, n, 0.0); /* a copy: exact */

    /* Backward: ROWS terms of size up to 1 per column. */
    float *dout = random_floats(n, -1.0f, 1.0f);
    Grad dbias = grad_create(COLS);
    k_bias_backward(dbias.got, dout, ROWS, COLS);
    k_bias_backward(dbias.fresh, dout, ROWS, COLS);
    ref_bias_backward(dbias.want, dout, ROWS, COLS);
    grad_check("bias_backward", &dbias, sum_tol(ROWS, 1.0));
    free(out);
    free(bias);
    free(out_ref);
    free(dout);
    grad_free(&dbias);
}

static void test_relu_forward_backward_match_reference(void **state)
{
    (void)state;
    seed(8);
    float *x = random_floats(EW_N, -1.0f, 1.0f), *dout = random_floats(EW_N, -1.0f, 1.0f);
    for (size_t i = 0; i < EW_N; i += 1000) x[i] = 0.0f; /* the kink: no gradient at 0 */
    float *out = zero_floats(EW_N);
    double *out_ref = to_double(out, EW_N);
    k_relu_forward(out, x, EW_N);
    ref_relu_forward(out_ref, x, EW_N);
    assert_close("relu_forward", out, out_ref, EW_N, 0.0); /* a select: exact */

    Grad dx = grad_create(EW_N);
    k_relu_backward(dx.got, x, dout, EW_N);
    k_relu_backward(dx.fresh, x, dout, EW_N);
    ref_relu_backward(dx.want, x, dout, EW_N);
    grad_check("relu_backward", &dx, FLT_EPSILON); /* one rounding of the += */
    for (size_t i = 0; i < EW_N; i += 1000) assert_true(dx.fresh[i] == 0.0f);
    free(x);
    free(dout);
    free(out);
    free(out_ref);
    grad_free(&dx);
}

static void test_gelu_forward_backward_match_reference(void **state)
{
    (void)state;
    seed(9);
    /* [-6, 6) covers both tails, where tanh saturates, and the curved middle. */
    float *x = random_floats(EW_N, -6.0f, 6.0f), *dout = random_floats(EW_N, -1.0f, 1.0f);
    float *out = zero_floats(EW_N);
    double *out_ref = to_double(out, EW_N);
    k_gelu_forward(out, x, EW_N);
    ref_gelu_forward(out_ref, x, EW_N);
    /* tanh's argument u (|u| < 13) comes out of 5 float roundings, so it is off by up to
     * ~5·FLT_EPSILON/2·|u|; tanh passes that on scaled by sech²(u) ≤ 1, and 0.5·x (≤ 3)
     * scales it again, with tanhf's own ≤ 2 ulp: 64·FLT_EPSILON covers it with margin. */
    assert_close("gelu_forward", out, out_ref, EW_N, 64.0 * FLT_EPSILON);

    Grad dx = grad_create(EW_N);
    k_gelu_backward(dx.got, x, dout, EW_N);
    k_gelu_backward(dx.fresh, x, dout, EW_N);
    ref_gelu_backward(dx.want, x, dout, EW_N);
    /* The same argument error, now through sech² (and 1 − tanh² loses the last bits of
     * sech² near saturation, where it is tiny anyway): the same tolerance. */
    grad_check("gelu_backward", &dx, 64.0 * FLT_EPSILON);
    free(x);
    free(dout);
    free(out);
    free(out_ref);
    grad_free(&dx);
}

/* ---- row-wise --------------------------------------------------------------------- */

/* Softmax outputs are at most 1. Each is exp(x − max)/Σ: exp's argument carries a rounding
 * of up to |x − max|·FLT_EPSILON/2 (here |x − max| < 8), and the row sum the sum tolerance
 * relative to its size; 16·FLT_EPSILON·sqrt(cols) covers both. */
static double softmax_tol(int cols) { return 16.0 * FLT_EPSILON * sqrt((double)cols); }

/* The row-wise kernels are checked at two sizes: a small odd one, on the calling thread,
 * and one past the kernels' thresholds, on the threads (row lengths 53 and 257 both end in
 * a partial group of LANES). */
enum { SMALL_ROWS = 37, SMALL_COLS = 53, BIG_ROWS = 300, BIG_COLS = 257 };

static void check_softmax(int rows, int cols)
{
    size_t n = (size_t)rows * cols;
    float *x = random_floats(n, -4.0f, 4.0f), *dout = random_floats(n, -1.0f, 1.0f);
    for (int j = 0; j < cols; j++) x[j] += 1000.0f; /* row 0: expf(x) alone would overflow */
    float *out = zero_floats(n);
    double *out_ref = to_double(out, n);
    k_softmax_forward(out, x, rows, cols, false);
    ref_softmax_forward(out_ref, x, rows, cols, false);
    assert_close("softmax_forward", out, out_ref, n, softmax_tol(cols));

    /* dx = out·(dout − Σ dout·out), where Σ dout·out is a weighted mean of dout (the
     * weights out sum to 1): the same relative error as the forward's row sum. */
    Grad dx = grad_create(n);
    k_softmax_backward(dx.got, out, dout, rows, cols, false);
    k_softmax_backward(dx.fresh, out, dout, rows, cols, false);
    ref_softmax_backward(dx.want, out, dout, rows, cols, false);
    grad_check("softmax_backward", &dx, softmax_tol(cols));
    free(x);
    free(dout);
    free(out);
    free(out_ref);
    grad_free(&dx);
}

static void test_softmax_forward_backward_match_reference(void **state)
{
    (void)state;
    seed(10);
    check_softmax(SMALL_ROWS, SMALL_COLS);
    check_softmax(BIG_ROWS, BIG_COLS);
}

static void check_causal_softmax(int BH, int T)
{
    size_t n = (size_t)BH * T * T;
    float *x = random_floats(n, -4.0f, 4.0f), *dout = random_floats(n, -1.0f, 1.0f);
    float *out = zero_floats(n);
    for (size_t r = 0; r < (size_t)BH * T; r++) {
        int t = (int)(r % T);
        for (int j = t + 1; j < T; j++) {
            x[r * T + j] = NAN;   /* masked inputs must never be read */
            out[r * T + j] = NAN; /* and masked outputs must be written */
        }
    }
    double *out_ref = to_double(out, n);
    k_softmax_forward(out, x, BH * T, T, true);
    ref_softmax_forward(out_ref, x, BH * T, T, true);
    assert_close("causal_softmax_forward", out, out_ref, n, softmax_tol(T));

    Grad dx = grad_create(n);
    k_softmax_backward(dx.got, out, dout, BH * T, T, true);
    k_softmax_backward(dx.fresh, out, dout, BH * T, T, true);
    ref_softmax_backward(dx.want, out, dout, BH * T, T, true);
    grad_check("causal_softmax_backward", &dx, softmax_tol(T));

    /* Masked columns: out exactly +0, and dx exactly what it was (dout there is random). */
    for (size_t r = 0; r < (size_t)BH * T; r++) {
        int t = (int)(r % T);
        for (int j = t + 1; j < T; j++) {
            size_t i = r * T + j;
            assert_true(out[i] == 0.0f && !signbit(out[i]));
            assert_memory_equal(&dx.got[i], &dx.init[i], sizeof(float));
            assert_true(dx.fresh[i] == 0.0f);
        }
    }
    free(x);
    free(dout);
    free(out);
    free(out_ref);
    grad_free(&dx);
}

static void test_causal_softmax_masks_exactly(void **state)
{
    (void)state;
    seed(11);
    check_causal_softmax(3, 37);
    check_causal_softmax(4, 101);
}

static void check_layernorm(int rows, int cols)
{
    size_t n = (size_t)rows * cols;
    float *x = random_floats(n, 1.0f, 5.0f); /* mean ~3: centring matters */
    float *weight = random_floats(cols, 0.5f, 1.5f), *bias = random_floats(cols, -1.0f, 1.0f);
    float *dout = random_floats(n, -1.0f, 1.0f);
    float *out = zero_floats(n), *mean = zero_floats(rows), *rstd = zero_floats(rows);
    double *out_ref = to_double(out, n), *mean_ref = to_double(mean, rows);
    double *rstd_ref = to_double(rstd, rows);
    const float eps = 1e-5f;
    k_layernorm_forward(out, mean, rstd, x, weight, bias, rows, cols, eps);
    ref_layernorm_forward(out_ref, mean_ref, rstd_ref, x, weight, bias, rows, cols, eps);
    /* mean and variance are means of cols terms: a sum's error relative to its size,
     * ~FLT_EPSILON·sqrt(cols) (random walk), divided by cols like the sum. Centring and
     * scaling by rstd·weight (~1) pass that relative error on to out; 16x margin. */
    double tol = 16.0 * FLT_EPSILON * sqrt((double)cols);
    assert_close("layernorm_forward out", out, out_ref, n, tol);
    assert_close("layernorm_forward mean", mean, mean_ref, rows, tol);
    assert_close("layernorm_forward rstd", rstd, rstd_ref, rows, tol);

    Grad dx = grad_create(n), dweight = grad_create(cols), dbias = grad_create(cols);
    k_layernorm_backward(dx.got, dweight.got, dbias.got, dout, x, weight, mean, rstd, rows, cols);
    k_layernorm_backward(dx.fresh, dweight.fresh, dbias.fresh, dout, x, weight, mean, rstd,
                         rows, cols);
    ref_layernorm_backward(dx.want, dweight.want, dbias.want, dout, x, weight, mean, rstd,
                           rows, cols);
    /* dx: two means over the row, as in the forward. dweight, dbias: sums of rows terms up
     * to ~2 (dout·norm) and 1 (dout). */
    grad_check("layernorm_backward dx", &dx, tol);
    grad_check("layernorm_backward dweight", &dweight, sum_tol(rows, 2.0));
    grad_check("layernorm_backward dbias", &dbias, sum_tol(rows, 1.0));
    free(x);
    free(weight);
    free(bias);
    free(dout);
    free(out);
    free(mean);
    free(rstd);
    free(out_ref);
    free(mean_ref);
    free(rstd_ref);
    grad_free(&dx);
    grad_free(&dweight);
    grad_free(&dbias);
}

static void test_layernorm_forward_backward_match_reference(void **state)
{
    (void)state;
    seed(12);
    check_layernorm(SMALL_ROWS, SMALL_COLS);
    check_layernorm(BIG_ROWS, BIG_COLS);
}

/* ---- losses ----------------------------------------------------------------------- */

static void test_mse_forward_backward_match_reference(void **state)
{
    (void)state;
    seed(16);
    const size_t sizes[2] = {1013, EW_N}; /* one partial block; many blocks, threaded */
    for (int s = 0; s < 2; s++) {
        size_t n = sizes[s];
        float *pred = random_floats(n, -1.0f, 1.0f), *target = random_floats(n, -1.0f, 1.0f);
        /* The kernel sums in double in another order than the reference: the textbook bound
         * n·DBL_EPSILON on the sum of n terms, relative to the mean (all terms ≥ 0). */
        double got = k_mse_forward(pred, target, n), want = ref_mse_forward(pred, target, n);
        double tol = (double)n * DBL_EPSILON * want;
        print_message("  %-28s |diff| %.3g (tol %.3g)\n", "mse_forward", fabs(got - want), tol);
        assert_true(fabs(got - want) <= tol);

        /* Backward: dloss·2/n rounded once, then a multiply and the +=: a few roundings of
         * values up to ~1 (dloss is chosen so the gradient is not tiny next to init). */
        Grad dpred = grad_create(n);
        const float dloss = 0.25f * (float)n;
        k_mse_backward(dpred.got, pred, target, dloss, n);
        k_mse_backward(dpred.fresh, pred, target, dloss, n);
        ref_mse_backward(dpred.want, pred, target, dloss, n);
        grad_check("mse_backward", &dpred, 4.0 * FLT_EPSILON);
        free(pred);
        free(target);
        grad_free(&dpred);
    }
}

/* Random targets in [0, V). */
static int32_t *random_ids(size_t n, int V)
{
    int32_t *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) p[i] = (int32_t)(xorshift32() % (uint32_t)V);
    return p;
}

static void check_cross_entropy(int rows, int V)
{
    size_t n = (size_t)rows * V;
    float *logits = random_floats(n, -4.0f, 4.0f);
    for (int j = 0; j < V; j++) logits[j] += 1000.0f; /* row 0: expf(x) alone would overflow */
    int32_t *targets = random_ids((size_t)rows, V);
    /* Each row's loss is log Σ exp(x − max) + max − x_t. The argument x − max (|.| < 8)
     * rounds by up to 8·FLT_EPSILON/2, expf adds an ulp, and the double sum and log add
     * nothing visible: every row is off by a few 1e-7 at most, and so is their mean.
     * 16·FLT_EPSILON leaves a margin of about 3. */
    double got = k_cross_entropy_forward(logits, targets, rows, V);
    double want = ref_cross_entropy_forward(logits, targets, rows, V);
    double tol = 16.0 * FLT_EPSILON * fmax(1.0, fabs(want));
    print_message("  %-28s |diff| %.3g (tol %.3g)\n", "cross_entropy_forward", fabs(got - want), tol);
    assert_true(fabs(got - want) <= tol);

    /* dloss = 0.75·rows makes each row's gradient 0.75·(softmax − onehot): of size ~1 at
     * the target. The softmax carries the forward's relative error; 16·FLT_EPSILON. */
    Grad dx = grad_create(n);
    const float dloss = 0.75f * (float)rows;
    k_cross_entropy_backward(dx.got, logits, targets, dloss, rows, V);
    k_cross_entropy_backward(dx.fresh, logits, targets, dloss, rows, V);
    ref_cross_entropy_backward(dx.want, logits, targets, dloss, rows, V);
    grad_check("cross_entropy_backward", &dx, 16.0 * FLT_EPSILON);
    free(logits);
    free(targets);
    grad_free(&dx);
}

static void test_cross_entropy_forward_backward_match_reference(void **state)
{
    (void)state;
    seed(17);
    check_cross_entropy(SMALL_ROWS, SMALL_COLS);
    check_cross_entropy(BIG_ROWS, BIG_COLS);
}

static void test_cross_entropy_of_uniform_logits_is_log_v(void **state)
{
    (void)state;
    /* Equal logits: every exp(x − max) is exactly 1, the sum exactly V, and each row's
     * loss is log(V) + (max − x_t) = log(V) exactly in double, even at 500, where exp(x)
     * alone would overflow float. Only the mean over rows rounds: a sum of 5 terms and a
     * division, a few DBL_EPSILON. */
    enum { ROWS = 5, V = 256 };
    float *logits = malloc(ROWS * V * sizeof *logits);
    assert_non_null(logits);
    int32_t targets[ROWS] = {0, 255, 7, 7, 100};
    for (int i = 0; i < ROWS * V; i++) logits[i] = 500.0f;
    double loss = k_cross_entropy_forward(logits, targets, ROWS, V);
    print_message("  %-28s %.17g, log(256) = %.17g\n", "uniform logits", loss, log((double)V));
    assert_true(fabs(loss - log((double)V)) <= 8.0 * DBL_EPSILON * log((double)V));
    free(logits);
}

/* ---- dropout ---------------------------------------------------------------------- */

static void check_dropout(size_t n, float p)
{
    float *x = random_floats(n, -1.0f, 1.0f), *dout = random_floats(n, -1.0f, 1.0f);
    float *out = zero_floats(n);
    double *out_ref = to_double(out, n);
    uint8_t *mask = malloc(n), *mask_ref = malloc(n);
    assert_non_null(mask);
    assert_non_null(mask_ref);
    Pcg32 rng, rng_ref, advanced;
    pcg32_seed(&rng, 42, 3);
    rng_ref = advanced = rng;
    pcg32_advance(&advanced, n);

    k_dropout_forward(out, mask, x, p, &rng, n);
    ref_dropout_forward(out_ref, mask_ref, x, p, &rng_ref, n);
    /* The same draws, element for element, as the serial loop; and the caller's generator
     * ends exactly n draws on. */
    assert_memory_equal(mask, mask_ref, n);
    assert_memory_equal(&rng, &rng_ref, sizeof rng);
    assert_memory_equal(&rng, &advanced, sizeof rng);
    /* x·(1/(1 − p)): the scale rounded once, the product once. */
    assert_close("dropout_forward", out, out_ref, n, 2.0 * FLT_EPSILON);
    for (size_t i = 0; i < n; i++)
        if (!mask[i]) assert_true(out[i] == 0.0f);

    Grad dx = grad_create(n);
    k_dropout_backward(dx.got, dout, mask, p, n);
    k_dropout_backward(dx.fresh, dout, mask, p, n);
    ref_dropout_backward(dx.want, dout, mask, p, n);
    grad_check("dropout_backward", &dx, 3.0 * FLT_EPSILON); /* scale, product, += */
    for (size_t i = 0; i < n; i++)
        if (!mask[i]) assert_true(dx.fresh[i] == 0.0f);
    free(x);
    free(dout);
    free(out);
    free(out_ref);
    free(mask);
    free(mask_ref);
    grad_free(&dx);
}

/* Counter-based: the keep decisions of the reference's element-by-element draws, the
 * output x·(1/(1 − p)) where kept, the backward's regenerated mask the forward's. */
static void check_dropout_counter(size_t n, float p)
{
    const CounterKey key = {.seed = 1234, .step = 5, .micro_batch = 0, .op = 3};
    float *x = random_floats(n, -1.0f, 1.0f), *dout = random_floats(n, -1.0f, 1.0f);
    float *out = zero_floats(n);
    uint8_t *mask = malloc(n);
    assert_non_null(mask);
    ref_dropout_counter_mask(mask, &key, p, n);
    k_dropout_counter_forward(out, x, p, &key, n);
    const float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++)
        if (out[i] != (mask[i] ? x[i] * scale : 0.0f)) fail_msg("dropout_counter_forward: element %zu", i);
    Grad dx = grad_create(n);
    k_dropout_counter_backward(dx.got, dout, p, &key, n);
    k_dropout_counter_backward(dx.fresh, dout, p, &key, n);
    ref_dropout_backward(dx.want, dout, mask, p, n);
    grad_check("dropout_counter_backward", &dx, 3.0 * FLT_EPSILON); /* scale, product, += */
    free(x);
    free(dout);
    free(out);
    free(mask);
    grad_free(&dx);
}

static void test_dropout_counter_matches_single_draws(void **state)
{
    (void)state;
    seed(19);
    check_dropout_counter(1001, 0.5f);        /* less than one block, one thread */
    check_dropout_counter(3 * 4096 + 5, 0.1f); /* whole blocks and a partial one, threaded */
    check_dropout_counter(5000, 0.0f);        /* p = 0 keeps everything */
}

static void test_dropout_matches_the_serial_loop(void **state)
{
    (void)state;
    seed(18);
    check_dropout(1000, 0.5f);            /* less than one block of draws, one thread */
    check_dropout(3 * 4096 + 5, 0.1f);    /* whole blocks (drawn as interleaved chains) and a partial one, threaded */
    check_dropout(EW_N, 0.3f);            /* many blocks */
    check_dropout(5000, 0.0f);            /* p = 0 keeps everything and still draws n */
}

/* ---- fused causal attention ------------------------------------------------------- */

/* The fused kernel against the textbook attention in double, forward (out and lse) and
 * backward, with the tile products of `how`; with p > 0, both drop the same elements
 * (the reference's mask made element by element from the kernel's key). Returns the worst
 * error relative to max(1, |reference|) over out, dq, dk and dv. The tolerance is the sum
 * tolerance of T + D terms of size up to 1 (q, k, v, dout in [−1, 1], probabilities ≤ 1). */
static double check_attention(int BH, int T, int D, float p, const AttnPlan *plan)
{
    const size_t n = (size_t)BH * T * D, nn = (size_t)BH * T * T;
    float *q = random_floats(n, -1.0f, 1.0f), *k = random_floats(n, -1.0f, 1.0f);
    float *v = random_floats(n, -1.0f, 1.0f), *dout = random_floats(n, -1.0f, 1.0f);
    float *out = zero_floats(n), *lse = zero_floats((size_t)BH * T);
    double *out_ref = to_double(out, n), *lse_ref = to_double(lse, (size_t)BH * T);
    float *work = zero_floats(k_attention_work_floats(T, D, plan));
    const AttnDropout drop = {.p = p, .key = {.seed = 11, .step = 2, .micro_batch = 0, .op = 4}};
    uint8_t *mask = p > 0.0f ? malloc(nn) : NULL;
    if (mask) ref_dropout_counter_mask(mask, &drop.key, p, nn);

    k_attention_forward(out, lse, q, k, v, BH, T, D, mask ? &drop : NULL, plan, work);
    ref_attention_forward(out_ref, lse_ref, q, k, v, mask, p, BH, T, D);
    const double tol = sum_tol(T + D, 1.0) * (mask ? 1.0 / (1.0 - p) : 1.0);
    char what[64];
    snprintf(what, sizeof what, "attention T=%d D=%d%s %s tile %d", T, D, mask ? " drop" : "",
             plan->products == ATTN_PRODUCTS_BLAS ? "blas" : "loops", plan->tile);
    assert_close(what, out, out_ref, n, tol);
    assert_close("  lse", lse, lse_ref, (size_t)BH * T, tol);

    Grad dq = grad_create(n), dk = grad_create(n), dv = grad_create(n);
    k_attention_backward(dq.got, dk.got, dv.got, dout, q, k, v, out, lse, BH, T, D, mask ? &drop : NULL, plan, work);
    k_attention_backward(dq.fresh, dk.fresh, dv.fresh, dout, q, k, v, out, lse, BH, T, D, mask ? &drop : NULL, plan, work);
    ref_attention_backward(dq.want, dk.want, dv.want, dout, q, k, v, mask, p, BH, T, D);
    double worst = 0.0;
    const Grad *grads[] = {&dq, &dk, &dv};
    const char *names[] = {"  dq", "  dk", "  dv"};
    for (int g = 0; g < 3; g++) {
        grad_check_scatter(names[g], grads[g], tol, sum_tol(T, 1.0));
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(grads[g]->got[i] - grads[g]->want[i]) / fmax(1.0, fabs(grads[g]->want[i])));
    }
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(out[i] - out_ref[i]) / fmax(1.0, fabs(out_ref[i])));
    free(q), free(k), free(v), free(dout), free(out), free(lse), free(out_ref), free(lse_ref), free(work), free(mask);
    grad_free(&dq), grad_free(&dk), grad_free(&dv);
    return worst;
}

/* Lengths that are and are not multiples of the tile, one row to many tiles; with and
 * without dropout; BLAS and loops at the default tile, and BLAS at the tiles
 * bench_attention measures and at one that divides nothing here. */
static void test_fused_attention_matches_the_textbook(void **state)
{
    (void)state;
    seed(21);
    const struct { int BH, T, D; } cases[] = {{3, 1, 8}, {2, 7, 16}, {2, 64, 32}, {2, 129, 64}, {1, 1000, 32}};
    const AttnPlan plans[] = {{ATTN_PRODUCTS_BLAS, ATTN_TILE}, {ATTN_PRODUCTS_LOOPS, ATTN_TILE},
                              {ATTN_PRODUCTS_BLAS, 32}, {ATTN_PRODUCTS_BLAS, 128}, {ATTN_PRODUCTS_BLAS, 5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t h = 0; h < sizeof plans / sizeof plans[0]; h++)
            for (int d = 0; d < 2; d++) {
                const double worst = check_attention(cases[c].BH, cases[c].T, cases[c].D, d ? 0.2f : 0.0f, &plans[h]);
                print_message("  worst relative error %.3g\n", worst);
            }
}

/* FLOPs as kernels_attention.c states them, counted here tile by tile for T = 129: with
 * the default tile of 64 (three tiles, the last of one row) and with tiles of 50 (50, 50
 * and 29 rows). */
static void test_fused_attention_counts_its_flops(void **state)
{
    (void)state;
    enum { BH = 2, T = 129, D = 16 };
    seed(22);
    const size_t n = (size_t)BH * T * D;
    float *q = random_floats(n, -1.0f, 1.0f), *k = random_floats(n, -1.0f, 1.0f), *v = random_floats(n, -1.0f, 1.0f);
    float *out = zero_floats(n), *lse = zero_floats((size_t)BH * T), *dq = zero_floats(n), *dk = zero_floats(n), *dv = zero_floats(n);
    const AttnDropout drop = {.p = 0.1f, .key = {.seed = 1, .op = 1}};
    const struct { int tile, rows[3]; } tilings[] = {{ATTN_TILE, {ATTN_TILE, ATTN_TILE, 1}}, {50, {50, 50, 29}}};
    for (int t = 0; t < 2; t++) {
        const int TILE = tilings[t].tile, *rows = tilings[t].rows;
        const AttnPlan plan = {ATTN_PRODUCTS_BLAS, TILE};
        float *work = zero_floats(k_attention_work_floats(T, D, &plan));
        for (int d = 0; d < 2; d++) {
            uint64_t fwd = 0, bwd = 0, rec = 0;
            for (int qt = 0; qt < 3; qt++) {
                for (int kt = 0; kt <= qt; kt++) {
                    uint64_t kept = 0;
                    for (int r = 0; r < rows[qt]; r++) {
                        const int i = qt * TILE + r, last = kt * TILE + rows[kt] - 1;
                        kept += (uint64_t)((i < last ? i : last) - kt * TILE + 1);
                    }
                    const uint64_t tile = (uint64_t)rows[qt] * rows[kt] * D;
                    fwd += 4 * tile + (uint64_t)rows[qt] * (D + 3) + (4 + 2 * d) * kept;
                    bwd += 8 * tile + (2 + d) * kept;
                    rec += 2 * tile + (2 + 2 * d) * kept;
                }
                fwd += (uint64_t)rows[qt] * (D + 2);
            }
            bwd += 2 * (uint64_t)T * D;
            flops_reset();
            k_attention_forward(out, lse, q, k, v, BH, T, D, d ? &drop : NULL, &plan, work);
            expect_flops("k_attention_forward", BH * fwd);
            flops_set_phase(PHASE_BACKWARD);
            k_attention_backward(dq, dk, dv, out, q, k, v, out, lse, BH, T, D, d ? &drop : NULL, &plan, work);
            assert_int_equal(flops_get(PHASE_RECOMPUTE), BH * rec);
            assert_int_equal(flops_get(PHASE_BACKWARD), BH * bwd);
            flops_reset();
        }
        free(work);
    }
    free(q), free(k), free(v), free(out), free(lse), free(dq), free(dk), free(dv);
}

/* ---- embeddings ------------------------------------------------------------------- */

static void check_embedding(int B, int T, int C, int V, int with_positions)
{
    size_t n = (size_t)B * T * C;
    int32_t *ids = random_ids((size_t)B * T, V); /* V small: ids repeat, rows collide */
    float *wte = random_floats((size_t)V * C, -1.0f, 1.0f);
    float *wpe = with_positions ? random_floats((size_t)T * C, -1.0f, 1.0f) : NULL;
    float *out = zero_floats(n), *dout = random_floats(n, -1.0f, 1.0f);
    double *out_ref = to_double(out, n);
    k_embedding_forward(out, ids, wte, wpe, B, T, C);
    ref_embedding_forward(out_ref, ids, wte, wpe, B, T, C);
    assert_close("embedding_forward", out, out_ref, n, FLT_EPSILON); /* one add */

    /* dwte's rows gather up to B·T tokens, dwpe's B tokens, each of size up to 1. */
    Grad dwte = grad_create((size_t)V * C), dwpe = grad_create((size_t)T * C);
    float *dwpe_got = with_positions ? dwpe.got : NULL, *dwpe_fresh = with_positions ? dwpe.fresh : NULL;
    double *dwpe_want = with_positions ? dwpe.want : NULL;
    k_embedding_backward(dwte.got, dwpe_got, dout, ids, B, T, C);
    k_embedding_backward(dwte.fresh, dwpe_fresh, dout, ids, B, T, C);
    ref_embedding_backward(dwte.want, dwpe_want, dout, ids, B, T, C);
    grad_check_scatter("embedding_backward dwte", &dwte, sum_tol(B * T, 1.0), sum_tol(B * T + 1, 1.0));
    grad_check_scatter("embedding_backward dwpe", &dwpe, sum_tol(B, 1.0), sum_tol(B + 1, 1.0));
    free(ids);
    free(wte);
    free(wpe);
    free(out);
    free(dout);
    free(out_ref);
    grad_free(&dwte);
    grad_free(&dwpe);
}

static void test_embedding_forward_backward_match_reference(void **state)
{
    (void)state;
    seed(19);
    check_embedding(3, 7, 53, 5, 1);
    check_embedding(3, 7, 53, 5, 0);     /* no position table: dwpe untouched */
    check_embedding(8, 64, 257, 11, 1);  /* threaded, a partial column block */
}

/* ---- attention heads -------------------------------------------------------------- */

static void check_heads(int B, int T, int C, int H)
{
    size_t n = (size_t)B * T * C;
    float *qkv = random_floats(3 * n, -1.0f, 1.0f), *heads = zero_floats(n);
    float *dheads = random_floats(n, -1.0f, 1.0f);
    double *heads_ref = to_double(heads, n);
    for (int which = 0; which < 3; which++) {
        k_move_heads(TO_HEADS, heads, qkv + which * C, 3 * C, B, T, C, H, false);
        ref_rows_to_heads(heads_ref, qkv + which * C, 3 * C, B, T, C, H, false);
        assert_close("split_heads_forward", heads, heads_ref, n, 0.0); /* a copy: exact */
        /* Backward adds into one part of dqkv and leaves the other two as they were. */
        Grad dqkv = grad_create(3 * n);
        k_move_heads(TO_ROWS, dqkv.got + which * C, dheads, 3 * C, B, T, C, H, true);
        k_move_heads(TO_ROWS, dqkv.fresh + which * C, dheads, 3 * C, B, T, C, H, true);
        ref_heads_to_rows(dqkv.want + which * C, dheads, 3 * C, B, T, C, H, true);
        grad_check("split_heads_backward", &dqkv, FLT_EPSILON);
        grad_free(&dqkv);
    }
    /* Merging the heads of q gives back exactly the q part of every row of qkv. */
    float *merged = zero_floats(n);
    double *merged_ref = to_double(merged, n);
    k_move_heads(TO_HEADS, heads, qkv, 3 * C, B, T, C, H, false);
    k_move_heads(TO_ROWS, merged, heads, C, B, T, C, H, false);
    ref_heads_to_rows(merged_ref, heads, C, B, T, C, H, false);
    assert_close("merge_heads_forward", merged, merged_ref, n, 0.0);
    for (size_t r = 0; r < (size_t)B * T; r++)
        assert_memory_equal(merged + r * C, qkv + r * 3 * C, (size_t)C * sizeof(float));
    Grad dy = grad_create(n);
    k_move_heads(TO_HEADS, dy.got, dheads, C, B, T, C, H, true);
    k_move_heads(TO_HEADS, dy.fresh, dheads, C, B, T, C, H, true);
    ref_rows_to_heads(dy.want, dheads, C, B, T, C, H, true);
    grad_check("merge_heads_backward", &dy, FLT_EPSILON);
    free(qkv);
    free(heads);
    free(dheads);
    free(heads_ref);
    free(merged);
    free(merged_ref);
    grad_free(&dy);
}

static void test_split_merge_heads_match_reference(void **state)
{
    (void)state;
    seed(20);
    check_heads(3, 5, 12, 3);
    check_heads(4, 64, 256, 4); /* 2^16 elements per part: threaded */
}

/* ---- sampling --------------------------------------------------------------------- */

static void test_argmax_and_sampling_match_reference(void **state)
{
    (void)state;
    seed(22);
    enum { V = 257, DRAWS = 20000 };
    float *x = random_floats(V, -4.0f, 4.0f), *probs = zero_floats(V);
    x[100] = x[200] = 5.0f; /* a tie for the maximum: the first one wins */
    assert_int_equal(k_argmax(x, V), 100);
    assert_int_equal(ref_argmax(x, V), 100);

    /* Draws against the reference, which sums the probabilities in double. The two agree
     * except where u falls between the float and the double cumulative sum at a boundary,
     * which can only happen within the sum tolerance of that boundary. */
    k_softmax_forward(probs, x, 1, V, false);
    int mismatches = 0;
    for (int i = 0; i < DRAWS; i++) {
        float u = uniform(0.0f, 1.0f);
        int got = k_sample_categorical(probs, V, u), want = ref_sample_categorical(probs, V, u);
        if (got == want) continue;
        mismatches++;
        double boundary = 0.0;
        for (int j = 0; j <= (got < want ? got : want); j++) boundary += probs[j];
        if (!(fabs((double)u - boundary) <= sum_tol(V, 1.0)))
            fail_msg("draw %d: u = %.9g gives %d, reference %d, %.3g from the boundary", i,
                     (double)u, got, want, fabs((double)u - boundary));
    }
    print_message("  %-28s %d of %d draws differ, all at a boundary\n", "sample_categorical",
                  mismatches, DRAWS);

    /* The draw lands where the mass is: token 1 has half of it. */
    const float three[5] = {0.25f, 0.5f, 0.249f, 0.0f, 0.0f}; /* sums to 0.999 */
    assert_int_equal(k_sample_categorical(three, 5, 0.0f), 0);
    assert_int_equal(k_sample_categorical(three, 5, 0.25f), 1);
    assert_int_equal(k_sample_categorical(three, 5, 0.7499f), 1);
    assert_int_equal(k_sample_categorical(three, 5, 0.75f), 2);
    /* u above the (rounded) total: the last token with any mass, never a zero one. */
    assert_int_equal(k_sample_categorical(three, 5, 0.9995f), 2);
    assert_int_equal(ref_sample_categorical(three, 5, 0.9995f), 2);
    free(x);
    free(probs);
}

/* ---- expf_inline ------------------------------------------------------------------ */

/* expf_inline gives glibc's expf to the bit: it was checked on all 2^32 floats once; here
 * on every 16411th bit pattern (about 260,000, both signs, every exponent), every 997th
 * in [−32, 0] (about a million: where a softmax's x − max falls) and on the edges of its
 * ranges; a few seconds even under the sanitizers. Only where glibc uses its FMA variant,
 * which is the one copied. */
static void test_expf_inline_gives_libm_bits(void **state)
{
    (void)state;
    if (!__builtin_cpu_supports("fma") || !__builtin_cpu_supports("avx2")) skip();
    const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 88.7228317f,
                           nextafterf(88.7228317f, INFINITY), -103.278923f, nextafterf(-103.278923f, 0.0f),
                           nextafterf(-103.278923f, -INFINITY), -103.972076f, nextafterf(-103.972076f, -INFINITY),
                           -87.3365f, 88.0f, -88.0f, 0.5f, -1.0f};
    size_t wrong = 0;
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        const float want = expf(edges[i]), got = expf_inline(edges[i]);
        if (isnan(want) ? !isnan(got) : memcmp(&want, &got, sizeof got) != 0) {
            print_message("expf_inline(%a) = %a, expf gives %a\n", (double)edges[i], (double)got, (double)want);
            wrong++;
        }
    }
    const uint64_t sparse = (uint64_t)1 << 32, minus_32 = 0xc2000000u; /* −32.0f's bits */
    for (uint64_t u = 0; u < sparse + (minus_32 - 0x80000000u); u += u < sparse ? 16411 : 997) {
        const uint32_t bits = u < sparse ? (uint32_t)u : (uint32_t)(0x80000000u + (u - sparse));
        float x;
        memcpy(&x, &bits, sizeof x);
        const float want = expf(x), got = expf_inline(x);
        if (isnan(want) ? !isnan(got) : memcmp(&want, &got, sizeof got) != 0) {
            if (wrong < 5) print_message("expf_inline(%a) = %a, expf gives %a\n", (double)x, (double)got, (double)want);
            wrong++;
        }
    }
    assert_int_equal(wrong, 0);
}

/* ---- optimizer updates ------------------------------------------------------------ */


/* The optimizer kernels on one slice, as the tests call them. */
static void sgd_update(float *param, float *velocity, const float *grad, float lr, float momentum, size_t n)
{
    k_optim_update(&(OptimSlice){.param = param, .grad = grad, .m = velocity, .n = n}, 1,
                   &(OptimUpdate){.lr = lr, .momentum = momentum});
}

static void adamw_update(float *param, float *m, float *v, const float *grad, float lr, float beta1,
                         float beta2, float eps, float weight_decay, int t, size_t n)
{
    const OptimSlice slice = {.param = param, .grad = grad, .m = m, .v = v, .weight_decay = weight_decay, .n = n};
    k_optim_update(&slice, 1, &(OptimUpdate){.adamw = true, .lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .t = t});
}

static void test_sgd_adamw_updates_match_reference(void **state)
{
    (void)state;
    seed(21);
    const size_t n = EW_N;
    float *grad = random_floats(n, -1.0f, 1.0f);
    float *param = random_floats(n, -1.0f, 1.0f), *state0 = random_floats(n, -1.0f, 1.0f);
    float *state1 = random_floats(n, 0.0f, 1.0f); /* AdamW's v is never negative */
    double *param_ref = to_double(param, n), *state0_ref = to_double(state0, n);
    double *state1_ref = to_double(state1, n);

    /* Plain SGD: param −= lr·grad, two roundings. */
    sgd_update(param, NULL, grad, 0.1f, 0.0f, n);
    ref_sgd_update(param_ref, NULL, grad, 0.1f, 0.0f, n);
    assert_close("sgd_update", param, param_ref, n, 2.0 * FLT_EPSILON);

    /* With momentum: the velocity's two roundings carry into the parameter's. The
     * references restart from the kernel's float values, so errors do not pile up. */
    for (size_t i = 0; i < n; i++) param_ref[i] = param[i];
    sgd_update(param, state0, grad, 0.1f, 0.9f, n);
    ref_sgd_update(param_ref, state0_ref, grad, 0.1f, 0.9f, n);
    assert_close("sgd_update velocity", state0, state0_ref, n, 2.0 * FLT_EPSILON);
    assert_close("sgd_update momentum", param, param_ref, n, 4.0 * FLT_EPSILON);

    /* AdamW at steps 1 and 7. m and v take two or three roundings each; the update
     * lr·m̂/(sqrt(v̂) + eps) about ten in all (each ≤ FLT_EPSILON/2 relative), on a step
     * of size up to lr·|m̂|/sqrt(v̂); with lr = 1e-2 that stays below the parameter's size,
     * so 16·FLT_EPSILON relative to max(1, |param|) bounds them all. */
    const int steps[2] = {1, 7};
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; i < n; i++) {
            param_ref[i] = param[i];
            state0_ref[i] = state0[i];
            state1_ref[i] = state1[i];
        }
        adamw_update(param, state0, state1, grad, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, steps[s], n);
        ref_adamw_update(param_ref, state0_ref, state1_ref, grad, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f,
                         steps[s], n);
        assert_close("adamw_update m", state0, state0_ref, n, 4.0 * FLT_EPSILON);
        assert_close("adamw_update v", state1, state1_ref, n, 4.0 * FLT_EPSILON);
        assert_close("adamw_update param", param, param_ref, n, 16.0 * FLT_EPSILON);
    }
    free(grad);
    free(param);
    free(state0);
    free(state1);
    free(param_ref);
    free(state0_ref);
    free(state1_ref);
}

/* AdamW's loop is compiled vectorised (tensor/CMakeLists.txt: -fno-math-errno); this file
 * is not, so the loop below is the plain scalar float formula, one element at a time, in
 * kernels_optim.c's order. The vector square root and divide are correctly rounded, as the
 * scalar ones: the two must agree to the bit, over a length with a vector tail. */
static void test_adamw_vectorised_gives_the_scalar_bits(void **state)
{
    (void)state;
    seed(23);
    const size_t n = 4099;
    const float lr = 3e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, decay = 0.1f;
    float *grad = random_floats(n, -1.0f, 1.0f);
    float *param = random_floats(n, -1.0f, 1.0f), *m = random_floats(n, -1.0f, 1.0f);
    float *v = random_floats(n, 0.0f, 1.0f);
    float *param_s = malloc(n * sizeof *param_s), *m_s = malloc(n * sizeof *m_s), *v_s = malloc(n * sizeof *v_s);
    assert_non_null(param_s);
    assert_non_null(m_s);
    assert_non_null(v_s);
    memcpy(param_s, param, n * sizeof *param);
    memcpy(m_s, m, n * sizeof *m);
    memcpy(v_s, v, n * sizeof *v);
    for (int t = 1; t <= 3; t++) {
        adamw_update(param, m, v, grad, lr, beta1, beta2, eps, decay, t, n);
        const float c1 = 1.0f / (1.0f - powf(beta1, (float)t)), c2 = 1.0f / (1.0f - powf(beta2, (float)t));
        for (size_t i = 0; i < n; i++) {
            const float p = param_s[i] - lr * decay * param_s[i];
            m_s[i] = beta1 * m_s[i] + (1.0f - beta1) * grad[i];
            v_s[i] = beta2 * v_s[i] + (1.0f - beta2) * grad[i] * grad[i];
            param_s[i] = p - lr * (m_s[i] * c1) / (sqrtf(v_s[i] * c2) + eps);
        }
        assert_memory_equal(m, m_s, n * sizeof *m);
        assert_memory_equal(v, v_s, n * sizeof *v);
        assert_memory_equal(param, param_s, n * sizeof *param);
    }
    free(grad);
    free(param);
    free(m);
    free(v);
    free(param_s);
    free(m_s);
    free(v_s);
}

/* One pass over many slices of uneven sizes, split over 2 threads wherever the ranges
 * fall, gives the same bits as one call per slice on 1 thread: each element's update is
 * its own. One slice has no velocity (SGD without momentum there) and no weight decay. */
static void test_optimizer_slices_update_as_one_call_per_slice(void **state)
{
    (void)state;
    enum { N_SLICES = 7 };
    static const size_t sizes[N_SLICES] = {1, 3, 30001, 17, 40003, 5, 64};
    size_t total = 0;
    for (int s = 0; s < N_SLICES; s++) total += sizes[s];
    seed(22);
    float *grad = random_floats(total, -1.0f, 1.0f);
    float *init[3] = {random_floats(total, -1.0f, 1.0f), random_floats(total, -1.0f, 1.0f),
                      random_floats(total, 0.0f, 1.0f)}; /* param, m, v (never negative) */
    float *fused[3], *alone[3];
    for (int a = 0; a < 3; a++) {
        fused[a] = zero_floats(total);
        alone[a] = zero_floats(total);
    }
    for (int adamw = 0; adamw < 2; adamw++) {
        for (int a = 0; a < 3; a++) {
            memcpy(fused[a], init[a], total * sizeof *init[a]);
            memcpy(alone[a], init[a], total * sizeof *init[a]);
        }
        OptimSlice slices[N_SLICES];
        size_t first = 0;
        for (int s = 0; s < N_SLICES; s++) {
            const bool plain = s == 3;
            slices[s] = (OptimSlice){fused[0] + first, grad + first, plain && !adamw ? NULL : fused[1] + first,
                                     fused[2] + first, plain ? 0.0f : 0.1f, sizes[s]};
            first += sizes[s];
        }
        omp_set_num_threads(2);
        flops_reset();
        const OptimUpdate u = adamw ? (OptimUpdate){.adamw = true, .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f,
                                                    .eps = 1e-8f, .t = 3}
                                    : (OptimUpdate){.lr = 0.1f, .momentum = 0.9f};
        k_optim_update(slices, N_SLICES, &u);
        expect_flops(adamw ? "k_optim_update, adamw" : "k_optim_update, sgd",
                     adamw ? 16 * total : 4 * total - 2 * sizes[3]);
        omp_set_num_threads(1);
        first = 0;
        for (int s = 0; s < N_SLICES; s++) {
            const bool plain = s == 3;
            if (adamw)
                adamw_update(alone[0] + first, alone[1] + first, alone[2] + first, grad + first, 1e-2f, 0.9f,
                               0.999f, 1e-8f, plain ? 0.0f : 0.1f, 3, sizes[s]);
            else sgd_update(alone[0] + first, plain ? NULL : alone[1] + first, grad + first, 0.1f, 0.9f, sizes[s]);
            first += sizes[s];
        }
        omp_set_num_threads(2);
        for (int a = 0; a < 3; a++) assert_memory_equal(fused[a], alone[a], total * sizeof *fused[a]);
        /* and something changed: the test could fail */
        assert_true(memcmp(fused[0], init[0], total * sizeof *init[0]) != 0);
    }
    for (int a = 0; a < 3; a++) {
        free(init[a]);
        free(fused[a]);
        free(alone[a]);
    }
    free(grad);
}

/* ---- determinism ------------------------------------------------------------------ */

/* One set of inputs and one output area shared by every kernel in the determinism tests,
 * built once by the group setup. The arrays are large enough (DET_N elements) for every
 * kernel to take its threaded path. */
enum {
    DET_ROWS = 512,
    DET_COLS = 301,
    DET_N = DET_ROWS * DET_COLS,
    DET_BH = 4, /* causal softmax on (DET_BH, DET_T, DET_T), inside a */
    DET_T = 128,
    /* The GPT's kernels see a as a batch of DET_B sequences of DET_T tokens of DET_COLS
     * channels (DET_B·DET_T = DET_ROWS), in DET_H heads of 43, over a vocabulary of DET_V
     * (ids, and cross-entropy targets, are in [0, DET_V)). */
    DET_B = DET_ROWS / DET_T,
    DET_H = 7,
    DET_V = 50,
    DET_MAIN = 3 * DET_N, /* the main output: room for a (B,T,3C) gradient */
    DET_OUT = DET_MAIN + 2 * DET_COLS + 2 * DET_ROWS + DET_N / 4, /* two of each size, a mask */
};

typedef struct Work {
    float *a, *b;         /* (DET_ROWS, DET_COLS) inputs, uniform in [-1, 1) */
    float *qkv;           /* (DET_ROWS, 3·DET_COLS), uniform in [-1, 1) */
    int32_t *ids;         /* (DET_ROWS) in [0, DET_V) */
    float *weight, *bias; /* (DET_COLS) */
    float *mean, *rstd;   /* (DET_ROWS), from a LayerNorm forward of a */
    Pcg32 rng;            /* every dropout run starts from this state */
    float *out_init;      /* DET_OUT random floats: every run starts its outputs from these */
    float *out;           /* DET_OUT floats where the kernels write */
    double sum;           /* k_cross_entropy_forward's result */
} Work;

static float *out_cols_a(Work *w) { return w->out + DET_MAIN; }
static float *out_cols_b(Work *w) { return w->out + DET_MAIN + DET_COLS; }
static float *out_rows_a(Work *w) { return w->out + DET_MAIN + 2 * DET_COLS; }
static float *out_rows_b(Work *w) { return w->out + DET_MAIN + 2 * DET_COLS + DET_ROWS; }
static uint8_t *out_mask(Work *w) { return (uint8_t *)(w->out + DET_MAIN + 2 * DET_COLS + 2 * DET_ROWS); }

static void run_fill(Work *w) { k_fill(w->out, 0.5f, DET_N); }
static void run_add(Work *w) { k_add(w->out, w->a, w->b, DET_N); }
static void run_axpy(Work *w) { k_axpy(w->out, w->a, 0.3f, DET_N); }
static void run_scale(Work *w) { k_scale(w->out, w->a, 0.3f, DET_N); }
static void run_bias_broadcast(Work *w) { k_bias_broadcast(w->out, w->bias, DET_ROWS, DET_COLS); }
static void run_bias_backward(Work *w) { k_bias_backward(out_cols_a(w), w->a, DET_ROWS, DET_COLS); }
static void run_relu_forward(Work *w) { k_relu_forward(w->out, w->a, DET_N); }
static void run_relu_backward(Work *w) { k_relu_backward(w->out, w->a, w->b, DET_N); }
static void run_gelu_forward(Work *w) { k_gelu_forward(w->out, w->a, DET_N); }
static void run_gelu_backward(Work *w) { k_gelu_backward(w->out, w->a, w->b, DET_N); }
static void run_softmax_forward(Work *w) { k_softmax_forward(w->out, w->a, DET_ROWS, DET_COLS, false); }
static void run_softmax_backward(Work *w)
{
    k_softmax_backward(w->out, w->a, w->b, DET_ROWS, DET_COLS, false);
}
static void run_causal_forward(Work *w) { k_softmax_forward(w->out, w->a, DET_BH * DET_T, DET_T, true); }
static void run_causal_backward(Work *w)
{
    k_softmax_backward(w->out, w->a, w->b, DET_BH * DET_T, DET_T, true);
}
static void run_layernorm_forward(Work *w)
{
    k_layernorm_forward(w->out, out_rows_a(w), out_rows_b(w), w->a, w->weight, w->bias,
                        DET_ROWS, DET_COLS, 1e-5f);
}
static void run_layernorm_backward(Work *w)
{
    k_layernorm_backward(w->out, out_cols_a(w), out_cols_b(w), w->b, w->a, w->weight, w->mean,
                         w->rstd, DET_ROWS, DET_COLS);
}
static void run_matmul(Work *w)
{
    /* (256, DET_COLS)·(DET_COLS, 256), B stored transposed as (256, DET_COLS) */
    k_matmul(w->out, w->a, w->b, 1, 256, 256, DET_COLS, CblasNoTrans, CblasTrans, 1.0f, 1.0f);
}
static void run_matmul_batched(Work *w)
{
    k_matmul(w->out, w->a, w->b, 16, 64, 64, 64, CblasNoTrans, CblasTrans, 1.0f, 0.0f);
}

static void run_cross_entropy_forward(Work *w)
{
    w->sum = k_cross_entropy_forward(w->a, w->ids, DET_ROWS, DET_COLS);
}
static void run_cross_entropy_backward(Work *w)
{
    k_cross_entropy_backward(w->out, w->a, w->ids, 3.0f, DET_ROWS, DET_COLS);
}
static void run_dropout_forward(Work *w)
{
    Pcg32 rng = w->rng;
    k_dropout_forward(w->out, out_mask(w), w->a, 0.2f, &rng, DET_N);
}
static void run_dropout_counter_forward(Work *w)
{
    const CounterKey key = {.seed = 9, .step = 2, .op = 4};
    k_dropout_counter_forward(w->out, w->a, 0.2f, &key, DET_N);
}
static void run_dropout_counter_backward(Work *w)
{
    const CounterKey key = {.seed = 9, .step = 2, .op = 4};
    k_dropout_counter_backward(w->out, w->a, 0.2f, &key, DET_N);
}
/* Fused attention on 8 heads of 200 tokens of 32: q from a, k from b, v from a's second
 * part; with dropout, so the counter's masks are inside too. Past ATTN_PARALLEL_MIN. */
enum { DET_ATT_BH = 8, DET_ATT_T = 200, DET_ATT_D = 32, DET_ATT_N = DET_ATT_BH * DET_ATT_T * DET_ATT_D };
static const AttnDropout DET_ATT_DROP = {.p = 0.1f, .key = {.seed = 3, .op = 2}};
static const AttnPlan DET_ATT_PLAN = {.products = ATTN_PRODUCTS_BLAS, .tile = ATTN_TILE};
static void run_attention_forward(Work *w)
{
    float *work = zero_floats(k_attention_work_floats(DET_ATT_T, DET_ATT_D, &DET_ATT_PLAN));
    k_attention_forward(w->out, w->out + DET_ATT_N, w->a, w->b, w->a + DET_ATT_N, DET_ATT_BH, DET_ATT_T, DET_ATT_D,
                        &DET_ATT_DROP, &DET_ATT_PLAN, work);
    free(work);
}
static void run_attention_backward(Work *w)
{
    float *work = zero_floats(k_attention_work_floats(DET_ATT_T, DET_ATT_D, &DET_ATT_PLAN));
    float *o = zero_floats(DET_ATT_N), *lse = zero_floats(DET_ATT_BH * DET_ATT_T);
    k_attention_forward(o, lse, w->a, w->b, w->a + DET_ATT_N, DET_ATT_BH, DET_ATT_T, DET_ATT_D, &DET_ATT_DROP,
                        &DET_ATT_PLAN, work);
    k_attention_backward(w->out, w->out + DET_ATT_N, w->out + 2 * DET_ATT_N, w->b + DET_ATT_N, w->a, w->b,
                         w->a + DET_ATT_N, o, lse, DET_ATT_BH, DET_ATT_T, DET_ATT_D, &DET_ATT_DROP, &DET_ATT_PLAN,
                         work);
    free(work), free(o), free(lse);
}
static void run_dropout_backward(Work *w)
{
    k_dropout_backward(w->out, w->a, (const uint8_t *)w->b, 0.2f, DET_N); /* b's bytes as a mask */
}
static void run_embedding_forward(Work *w)
{
    /* a's first DET_V rows as the token table, b's first DET_T rows as the positions */
    k_embedding_forward(w->out, w->ids, w->a, w->b, DET_B, DET_T, DET_COLS);
}
static void run_embedding_backward(Work *w)
{
    float *dwte = w->out, *dwpe = w->out + DET_V * DET_COLS;
    k_embedding_backward(dwte, dwpe, w->a, w->ids, DET_B, DET_T, DET_COLS);
}
static void run_split_heads_forward(Work *w)
{
    k_move_heads(TO_HEADS, w->out, w->qkv + DET_COLS, 3 * DET_COLS, DET_B, DET_T, DET_COLS, DET_H, false);
}
static void run_split_heads_backward(Work *w)
{
    k_move_heads(TO_ROWS, w->out + 2 * DET_COLS, w->a, 3 * DET_COLS, DET_B, DET_T, DET_COLS, DET_H, true);
}
static void run_merge_heads_forward(Work *w)
{
    k_move_heads(TO_ROWS, w->out, w->a, DET_COLS, DET_B, DET_T, DET_COLS, DET_H, false);
}
static void run_merge_heads_backward(Work *w)
{
    k_move_heads(TO_HEADS, w->out, w->a, DET_COLS, DET_B, DET_T, DET_COLS, DET_H, true);
}
static void run_argmax(Work *w) { w->sum = k_argmax(w->a, DET_N); }
static void run_sample_categorical(Work *w) { w->sum = k_sample_categorical(w->weight, DET_COLS, 0.7f); }
static void run_mse_forward(Work *w) { w->sum = k_mse_forward(w->a, w->b, DET_N); }
static void run_mse_backward(Work *w) { k_mse_backward(w->out, w->a, w->b, 5.0f, DET_N); }
static void run_sgd_update(Work *w)
{
    sgd_update(w->out, w->out + DET_N, w->a, 0.1f, 0.9f, DET_N);
}
static void run_adamw_update(Work *w)
{
    /* v must not be negative: b's magnitudes, in the last third of the main output */
    float *v = w->out + 2 * DET_N;
    for (size_t i = 0; i < DET_N; i++) v[i] = fabsf(w->b[i]);
    adamw_update(w->out, w->out + DET_N, v, w->a, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 3, DET_N);
}

typedef struct KernelCase {
    const char *name;
    void (*run)(Work *w);
    int any_thread_count; /* claimed bit-identical for every thread count */
} KernelCase;

/* Every kernel. The matmuls are not claimed thread-count independent: how OpenBLAS splits
 * a product over threads is its business. */
static const KernelCase CASES[] = {
    {"k_fill", run_fill, 1},
    {"k_add", run_add, 1},
    {"k_axpy", run_axpy, 1},
    {"k_scale", run_scale, 1},
    {"k_bias_broadcast", run_bias_broadcast, 1},
    {"k_bias_backward", run_bias_backward, 1},
    {"k_relu_forward", run_relu_forward, 1},
    {"k_relu_backward", run_relu_backward, 1},
    {"k_gelu_forward", run_gelu_forward, 1},
    {"k_gelu_backward", run_gelu_backward, 1},
    {"k_softmax_forward", run_softmax_forward, 1},
    {"k_softmax_backward", run_softmax_backward, 1},
    {"k_softmax_forward causal", run_causal_forward, 1},
    {"k_softmax_backward causal", run_causal_backward, 1},
    {"k_layernorm_forward", run_layernorm_forward, 1},
    {"k_layernorm_backward", run_layernorm_backward, 1},
    {"k_cross_entropy_forward", run_cross_entropy_forward, 1},
    {"k_cross_entropy_backward", run_cross_entropy_backward, 1},
    {"k_dropout_forward", run_dropout_forward, 1},
    {"k_dropout_backward", run_dropout_backward, 1},
    {"k_attention_forward", run_attention_forward, 1},
    {"k_attention_backward", run_attention_backward, 1},
    {"k_dropout_counter_forward", run_dropout_counter_forward, 1},
    {"k_dropout_counter_backward", run_dropout_counter_backward, 1},
    {"k_embedding_forward", run_embedding_forward, 1},
    {"k_embedding_backward", run_embedding_backward, 1},
    {"k_move_heads TO_HEADS split", run_split_heads_forward, 1},
    {"k_move_heads TO_ROWS split backward", run_split_heads_backward, 1},
    {"k_move_heads TO_ROWS merge", run_merge_heads_forward, 1},
    {"k_move_heads TO_HEADS merge backward", run_merge_heads_backward, 1},
    {"k_argmax", run_argmax, 1},
    {"k_sample_categorical", run_sample_categorical, 1},
    {"k_mse_forward", run_mse_forward, 1},
    {"k_mse_backward", run_mse_backward, 1},
    {"k_optim_update sgd", run_sgd_update, 1},
    {"k_optim_update adamw", run_adamw_update, 1},
    {"k_matmul", run_matmul, 0},
    {"k_matmul batch of 16", run_matmul_batched, 0},
};
enum { N_CASES = sizeof CASES / sizeof CASES[0] };

/* Runs one kernel from the fixed starting outputs on `threads` threads; copies all of its
 * outputs to `snapshot` (DET_OUT floats) and returns a loss's result, if any, in *sum. */
static void run_case(Work *w, const KernelCase *c, int threads, float *snapshot, double *sum)
{
    omp_set_num_threads(threads);
    memcpy(w->out, w->out_init, DET_OUT * sizeof *w->out);
    w->sum = 0.0;
    c->run(w);
    memcpy(snapshot, w->out, DET_OUT * sizeof *w->out);
    *sum = w->sum;
    omp_set_num_threads(2);
}

/* Fails, naming the kernel, unless two runs' outputs are bit-identical. */
static void assert_same_bits(const char *name, const char *how, const float *first,
                             const float *second, double sum_first, double sum_second)
{
    if (memcmp(first, second, DET_OUT * sizeof *first) != 0 ||
        memcmp(&sum_first, &sum_second, sizeof sum_first) != 0)
        fail_msg("%s: outputs differ between %s", name, how);
}

static void test_kernels_deterministic_run_to_run(void **state)
{
    Work *w = *state;
    float *first = zero_floats(DET_OUT), *second = zero_floats(DET_OUT);
    for (int i = 0; i < N_CASES; i++) {
        double sum_first, sum_second;
        run_case(w, &CASES[i], 2, first, &sum_first);
        run_case(w, &CASES[i], 2, second, &sum_second);
        assert_same_bits(CASES[i].name, "two runs on 2 threads", first, second, sum_first,
                         sum_second);
    }
    free(first);
    free(second);
}

static void test_kernels_same_on_one_and_two_threads(void **state)
{
    Work *w = *state;
    float *one = zero_floats(DET_OUT), *two = zero_floats(DET_OUT);
    for (int i = 0; i < N_CASES; i++) {
        if (!CASES[i].any_thread_count) continue;
        double sum_one, sum_two;
        run_case(w, &CASES[i], 1, one, &sum_one);
        run_case(w, &CASES[i], 2, two, &sum_two);
        assert_same_bits(CASES[i].name, "1 and 2 threads", one, two, sum_one, sum_two);
    }
    free(one);
    free(two);
}

/* ---- FLOP counts ------------------------------------------------------------------ */

static void test_kernels_count_documented_flops(void **state)
{
    (void)state;
    seed(14);
    enum { R = 7, C = 5, N = R * C, BH = 2, T = 6, M = 3, NN = 4, K = 5, BATCH = 3 };
    float *a = random_floats(256, -1.0f, 1.0f), *b = random_floats(256, -1.0f, 1.0f);
    float *w = random_floats(C, 0.5f, 1.5f), *out = zero_floats(256);
    float *c1 = zero_floats(C), *c2 = zero_floats(C), *r1 = zero_floats(R);
    float *r2 = zero_floats(R);
    const uint64_t kept = (uint64_t)BH * T * (T + 1) / 2; /* causal softmax's kept entries */

    flops_reset();
    k_matmul(out, a, b, 1, M, NN, K, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
    expect_flops("k_matmul", 2 * M * NN * K);
    k_matmul(out, a, b, BATCH, M, NN, K, CblasTrans, CblasNoTrans, 1.0f, 0.0f);
    expect_flops("k_matmul batch", 2 * BATCH * M * NN * K);
    k_fill(out, 1.0f, N);
    expect_flops("k_fill", 0);
    k_add(out, a, b, N);
    expect_flops("k_add", N);
    k_axpy(out, a, 2.0f, N);
    expect_flops("k_axpy", 2 * N);
    k_scale(out, a, 2.0f, N);
    expect_flops("k_scale", N);
    k_bias_broadcast(out, w, R, C);
    expect_flops("k_bias_broadcast", R * C);
    k_bias_backward(c1, a, R, C);
    expect_flops("k_bias_backward", R * C);
    k_relu_forward(out, a, N);
    expect_flops("k_relu_forward", N);
    k_relu_backward(out, a, b, N);
    expect_flops("k_relu_backward", 2 * N);
    k_gelu_forward(out, a, N);
    expect_flops("k_gelu_forward", 9 * N);
    k_gelu_backward(out, a, b, N);
    expect_flops("k_gelu_backward", 20 * N);
    k_softmax_forward(out, a, R, C, false);
    expect_flops("k_softmax_forward", R * (5 * C + 1));
    k_softmax_backward(out, a, b, R, C, false);
    expect_flops("k_softmax_backward", 5 * R * C);
    k_softmax_forward(out, a, BH * T, T, true);
    expect_flops("k_softmax_forward causal", 5 * kept + BH * T);
    k_softmax_backward(out, a, b, BH * T, T, true);
    expect_flops("k_softmax_backward causal", 5 * kept);
    k_layernorm_forward(out, r1, r2, a, w, b, R, C, 1e-5f);
    expect_flops("k_layernorm_forward", R * (7 * C + 5));
    k_layernorm_backward(out, c1, c2, b, a, w, r1, r2, R, C);
    expect_flops("k_layernorm_backward", R * (19 * C + 2));

    int32_t ids[R] = {0, 4, 1, 4, 2, 3, 0}; /* targets in [0, C), ids in [0, R) */
    (void)k_cross_entropy_forward(a, ids, R, C);
    expect_flops("k_cross_entropy_forward", R * (4 * C + 4) + 1);
    k_cross_entropy_backward(out, a, ids, 1.0f, R, C);
    expect_flops("k_cross_entropy_backward", R * (8 * C + 2) + 1);
    Pcg32 rng;
    pcg32_seed(&rng, 1, 1);
    uint8_t mask[N];
    k_dropout_forward(out, mask, a, 0.5f, &rng, N);
    expect_flops("k_dropout_forward", 2 * N);
    k_dropout_backward(out, a, mask, 0.5f, N);
    expect_flops("k_dropout_backward", 2 * N);
    const CounterKey key = {.seed = 1, .step = 1, .op = 1};
    k_dropout_counter_forward(out, a, 0.5f, &key, N);
    expect_flops("k_dropout_counter_forward", 2 * N);
    flops_set_phase(PHASE_BACKWARD);
    k_dropout_counter_backward(out, a, 0.5f, &key, N);
    assert_int_equal(flops_get(PHASE_RECOMPUTE), N); /* the mask's compares, made again */
    expect_flops("k_dropout_counter_backward", 3 * N);
    /* embeddings of BATCH·T tokens of C channels, tables a (R,C) and b (T,C) */
    k_embedding_forward(out, ids, a, b, 1, R, C);
    expect_flops("k_embedding_forward", R * C);
    k_embedding_forward(out, ids, a, NULL, 1, R, C);
    expect_flops("k_embedding_forward without positions", 0);
    k_embedding_backward(out, out + R * C, a, ids, 1, R, C);
    expect_flops("k_embedding_backward", 2 * R * C);
    k_embedding_backward(out, NULL, a, ids, 1, R, C);
    expect_flops("k_embedding_backward without positions", R * C);
    /* heads: (1,T,3·4) split into 2 heads of 2 */
    k_move_heads(TO_HEADS, out, a + 4, 12, 1, T, 4, 2, false);
    expect_flops("k_move_heads TO_HEADS", 0);
    k_move_heads(TO_ROWS, out + 4, a, 12, 1, T, 4, 2, true);
    expect_flops("k_move_heads TO_ROWS, adding", T * 4);
    k_move_heads(TO_ROWS, out, a, 4, 1, T, 4, 2, false);
    expect_flops("k_move_heads TO_ROWS", 0);
    k_move_heads(TO_HEADS, out, a, 4, 1, T, 4, 2, true);
    expect_flops("k_move_heads TO_HEADS, adding", T * 4);
    (void)k_argmax(a, N);
    expect_flops("k_argmax", N - 1);
    const float probs[4] = {0.25f, 0.25f, 0.25f, 0.25f};
    assert_int_equal(k_sample_categorical(probs, 4, 0.6f), 2); /* scans 3 elements */
    expect_flops("k_sample_categorical", 2 * 3);
    (void)k_mse_forward(a, b, N);
    expect_flops("k_mse_forward", 3 * N);
    k_mse_backward(out, a, b, 1.0f, N);
    expect_flops("k_mse_backward", 3 * N);
    sgd_update(out, NULL, a, 0.1f, 0.0f, N);
    expect_flops("k_optim_update, sgd", 2 * N);
    sgd_update(out, c1, a, 0.1f, 0.9f, C);
    expect_flops("k_optim_update, sgd with momentum", 4 * C);
    float v[N];
    for (int i = 0; i < N; i++) v[i] = fabsf(b[i]);
    adamw_update(out, c1, v, a, 0.1f, 0.9f, 0.999f, 1e-8f, 0.0f, 1, C);
    expect_flops("k_optim_update, adamw", 16 * C);

    /* The count goes to the current phase, whatever it is. */
    Phase previous = flops_set_phase(PHASE_RECOMPUTE);
    k_add(out, a, b, N);
    assert_int_equal(flops_get(PHASE_RECOMPUTE), N);
    assert_int_equal(flops_get(PHASE_FORWARD), 0);
    flops_set_phase(previous);
    flops_reset();

    free(a);
    free(b);
    free(w);
    free(out);
    free(c1);
    free(c2);
    free(r1);
    free(r2);
}

/* ---- main ------------------------------------------------------------------------- */

static int group_setup(void **state)
{
    omp_set_num_threads(2);
    flops_reset();
    Work *w = calloc(1, sizeof *w);
    if (!w) return -1;
    seed(15);
    w->a = random_floats(DET_N, -1.0f, 1.0f);
    w->b = random_floats(DET_N, -1.0f, 1.0f);
    w->qkv = random_floats(3 * (size_t)DET_N, -1.0f, 1.0f);
    w->ids = random_ids(DET_ROWS, DET_V);
    pcg32_seed(&w->rng, 15, 1);
    w->weight = random_floats(DET_COLS, 0.5f, 1.5f);
    w->bias = random_floats(DET_COLS, -1.0f, 1.0f);
    w->out_init = random_floats(DET_OUT, -1.0f, 1.0f);
    w->out = zero_floats(DET_OUT);
    w->mean = zero_floats(DET_ROWS);
    w->rstd = zero_floats(DET_ROWS);
    k_layernorm_forward(w->out, w->mean, w->rstd, w->a, w->weight, w->bias, DET_ROWS, DET_COLS,
                        1e-5f);
    flops_reset();
    *state = w;
    return 0;
}

static int group_teardown(void **state)
{
    Work *w = *state;
    free(w->a);
    free(w->b);
    free(w->qkv);
    free(w->ids);
    free(w->weight);
    free(w->bias);
    free(w->out_init);
    free(w->out);
    free(w->mean);
    free(w->rstd);
    free(w);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_all_transposes_match_reference),
        cmocka_unit_test(test_matmul_beta_zero_ignores_old_c),
        cmocka_unit_test(test_matmul_empty_k_scales_c),
        cmocka_unit_test(test_matmul_batched_matches_reference),
        cmocka_unit_test(test_fill_matches_reference),
        cmocka_unit_test(test_add_axpy_scale_match_reference),
        cmocka_unit_test(test_add_in_place_matches_out_of_place),
        cmocka_unit_test(test_bias_broadcast_and_backward_match_reference),
        cmocka_unit_test(test_relu_forward_backward_match_reference),
        cmocka_unit_test(test_gelu_forward_backward_match_reference),
        cmocka_unit_test(test_softmax_forward_backward_match_reference),
        cmocka_unit_test(test_causal_softmax_masks_exactly),
        cmocka_unit_test(test_layernorm_forward_backward_match_reference),
        cmocka_unit_test(test_mse_forward_backward_match_reference),
        cmocka_unit_test(test_cross_entropy_forward_backward_match_reference),
        cmocka_unit_test(test_cross_entropy_of_uniform_logits_is_log_v),
        cmocka_unit_test(test_dropout_matches_the_serial_loop),
        cmocka_unit_test(test_fused_attention_matches_the_textbook),
        cmocka_unit_test(test_fused_attention_counts_its_flops),
        cmocka_unit_test(test_dropout_counter_matches_single_draws),
        cmocka_unit_test(test_embedding_forward_backward_match_reference),
        cmocka_unit_test(test_split_merge_heads_match_reference),
        cmocka_unit_test(test_argmax_and_sampling_match_reference),
        cmocka_unit_test(test_expf_inline_gives_libm_bits),
        cmocka_unit_test(test_sgd_adamw_updates_match_reference),
        cmocka_unit_test(test_adamw_vectorised_gives_the_scalar_bits),
        cmocka_unit_test(test_optimizer_slices_update_as_one_call_per_slice),
        cmocka_unit_test(test_kernels_deterministic_run_to_run),
        cmocka_unit_test(test_kernels_same_on_one_and_two_threads),
        cmocka_unit_test(test_kernels_count_documented_flops),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
