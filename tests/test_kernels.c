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

#include "flops.h"
#include "kernels.h"
#include "kernels_ref.h"

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

/* A new array of n floats of random sign and magnitudes spread over 2^-20..2^20. Uniform
 * floats in [-1, 1) are all multiples of 2^-23, so a double sum of them is exact in any
 * order and could not tell two orders apart; these make every double addition round. */
static float *wide_floats(size_t n)
{
    float *p = random_floats(n, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) p[i] = ldexpf(p[i], (int)(xorshift32() % 41) - 20);
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

    k_matmul(C, A, B, M, N, K, ta, tb, alpha, beta);
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
    k_matmul(C, A, B, M, N, K, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
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
    k_matmul(C, A, B, 2, 3, 0, CblasNoTrans, CblasNoTrans, 1.0f, 0.5f);
    for (int i = 0; i < 6; i++) assert_true(C[i] == 0.5f * (float)(i + 1));
}

/* Batched products on both of k_matmul_batched's paths: small ones (spread across
 * threads, one product each) and large ones (a serial loop of threaded sgemm calls). */
static void check_matmul_batched(int batch, int M, int N, int K, CBLAS_TRANSPOSE ta,
                                 CBLAS_TRANSPOSE tb)
{
    size_t a_n = (size_t)batch * M * K, b_n = (size_t)batch * K * N, c_n = (size_t)batch * M * N;
    float *A = random_floats(a_n, -1.0f, 1.0f), *B = random_floats(b_n, -1.0f, 1.0f);
    float *C = random_floats(c_n, -1.0f, 1.0f);
    double *C_ref = to_double(C, c_n);
    k_matmul_batched(C, A, B, batch, M, N, K, ta, tb, 0.5f, 1.0f);
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

static void test_fill_copy_match_reference(void **state)
{
    (void)state;
    seed(4);
    float *x = random_floats(EW_N, -1.0f, 1.0f), *out = zero_floats(EW_N);
    double *want = to_double(out, EW_N);
    k_fill(out, 0.25f, EW_N);
    ref_fill(want, 0.25f, EW_N);
    assert_close("fill", out, want, EW_N, 0.0);
    k_copy(out, x, EW_N);
    ref_copy(want, x, EW_N);
    assert_close("copy", out, want, EW_N, 0.0);
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

static void test_bias_add_and_backward_match_reference(void **state)
{
    (void)state;
    seed(7);
    enum { ROWS = 301, COLS = 253 }; /* COLS not a multiple of the column block */
    size_t n = (size_t)ROWS * COLS;
    float *out = random_floats(n, -1.0f, 1.0f), *bias = random_floats(COLS, -1.0f, 1.0f);
    double *out_ref = to_double(out, n);
    k_bias_add(out, bias, ROWS, COLS);
    ref_bias_add(out_ref, bias, ROWS, COLS);
    assert_close("bias_add", out, out_ref, n, FLT_EPSILON);

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
    k_softmax_forward(out, x, rows, cols);
    ref_softmax_forward(out_ref, x, rows, cols);
    assert_close("softmax_forward", out, out_ref, n, softmax_tol(cols));

    /* dx = out·(dout − Σ dout·out), where Σ dout·out is a weighted mean of dout (the
     * weights out sum to 1): the same relative error as the forward's row sum. */
    Grad dx = grad_create(n);
    k_softmax_backward(dx.got, out, dout, rows, cols);
    k_softmax_backward(dx.fresh, out, dout, rows, cols);
    ref_softmax_backward(dx.want, out, dout, rows, cols);
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
    k_causal_softmax_forward(out, x, BH, T);
    ref_causal_softmax_forward(out_ref, x, BH, T);
    assert_close("causal_softmax_forward", out, out_ref, n, softmax_tol(T));

    Grad dx = grad_create(n);
    k_causal_softmax_backward(dx.got, out, dout, BH, T);
    k_causal_softmax_backward(dx.fresh, out, dout, BH, T);
    ref_causal_softmax_backward(dx.want, out, dout, BH, T);
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

static void check_row_reductions(int rows, int cols)
{
    size_t n = (size_t)rows * cols;
    float *x = random_floats(n, -1.0f, 1.0f), *out = zero_floats(rows);
    double *want = to_double(out, rows);
    k_row_sum(out, x, rows, cols);
    ref_row_sum(want, x, rows, cols);
    assert_close("row_sum", out, want, rows, sum_tol(cols, 1.0));
    k_row_max(out, x, rows, cols);
    ref_row_max(want, x, rows, cols);
    assert_close("row_max", out, want, rows, 0.0); /* compares only: exact */
    free(x);
    free(out);
    free(want);
}

static void test_row_reductions_and_sum_match_reference(void **state)
{
    (void)state;
    seed(13);
    check_row_reductions(SMALL_ROWS, SMALL_COLS);
    check_row_reductions(BIG_ROWS, BIG_COLS);

    /* Uniform floats in [-1, 1) are multiples of 2^-23 (see wide_floats), so any double
     * sum of a few million of them is exact: k_sum must equal ref_sum exactly. */
    size_t big = 2 * 256 * 4096 + 123; /* 2 of k_sum's groups of blocks and a partial block */
    float *u = random_floats(big, -1.0f, 1.0f);
    assert_true(k_sum(u, big) == ref_sum(u, big));
    free(u);

    /* k_sum sums in double, in another order than ref_sum. Any order of n additions is
     * within (n − 1)·DBL_EPSILON/2·Σ|x| of the exact sum (the textbook bound), so the two
     * are within twice that. */
    float *y = wide_floats(big);
    double abs_sum = 0.0;
    for (size_t i = 0; i < big; i++) abs_sum += fabs((double)y[i]);
    double got = k_sum(y, big), ref = ref_sum(y, big);
    double tol = (double)big * DBL_EPSILON * abs_sum;
    print_message("  %-28s |diff| %.3g (tol %.3g)\n", "k_sum", fabs(got - ref), tol);
    assert_true(fabs(got - ref) <= tol);
    free(y);
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
    DET_OUT = DET_N + 2 * DET_COLS + 2 * DET_ROWS, /* the main output, two of each size */
};

typedef struct Work {
    float *a, *b;         /* (DET_ROWS, DET_COLS) inputs, uniform in [-1, 1) */
    float *wide;          /* DET_N floats from wide_floats, for k_sum */
    float *weight, *bias; /* (DET_COLS) */
    float *mean, *rstd;   /* (DET_ROWS), from a LayerNorm forward of a */
    float *out_init;      /* DET_OUT random floats: every run starts its outputs from these */
    float *out;           /* DET_OUT floats where the kernels write */
    double sum;           /* k_sum's result */
} Work;

static float *out_cols_a(Work *w) { return w->out + DET_N; }
static float *out_cols_b(Work *w) { return w->out + DET_N + DET_COLS; }
static float *out_rows_a(Work *w) { return w->out + DET_N + 2 * DET_COLS; }
static float *out_rows_b(Work *w) { return w->out + DET_N + 2 * DET_COLS + DET_ROWS; }

static void run_fill(Work *w) { k_fill(w->out, 0.5f, DET_N); }
static void run_copy(Work *w) { k_copy(w->out, w->a, DET_N); }
static void run_add(Work *w) { k_add(w->out, w->a, w->b, DET_N); }
static void run_axpy(Work *w) { k_axpy(w->out, w->a, 0.3f, DET_N); }
static void run_scale(Work *w) { k_scale(w->out, w->a, 0.3f, DET_N); }
static void run_bias_add(Work *w) { k_bias_add(w->out, w->bias, DET_ROWS, DET_COLS); }
static void run_bias_backward(Work *w) { k_bias_backward(out_cols_a(w), w->a, DET_ROWS, DET_COLS); }
static void run_relu_forward(Work *w) { k_relu_forward(w->out, w->a, DET_N); }
static void run_relu_backward(Work *w) { k_relu_backward(w->out, w->a, w->b, DET_N); }
static void run_gelu_forward(Work *w) { k_gelu_forward(w->out, w->a, DET_N); }
static void run_gelu_backward(Work *w) { k_gelu_backward(w->out, w->a, w->b, DET_N); }
static void run_softmax_forward(Work *w) { k_softmax_forward(w->out, w->a, DET_ROWS, DET_COLS); }
static void run_softmax_backward(Work *w)
{
    k_softmax_backward(w->out, w->a, w->b, DET_ROWS, DET_COLS);
}
static void run_causal_forward(Work *w) { k_causal_softmax_forward(w->out, w->a, DET_BH, DET_T); }
static void run_causal_backward(Work *w)
{
    k_causal_softmax_backward(w->out, w->a, w->b, DET_BH, DET_T);
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
static void run_row_sum(Work *w) { k_row_sum(out_rows_a(w), w->a, DET_ROWS, DET_COLS); }
static void run_row_max(Work *w) { k_row_max(out_rows_a(w), w->a, DET_ROWS, DET_COLS); }
static void run_sum(Work *w) { w->sum = k_sum(w->wide, DET_N); }
static void run_matmul(Work *w)
{
    /* (256, DET_COLS)·(DET_COLS, 256), B stored transposed as (256, DET_COLS) */
    k_matmul(w->out, w->a, w->b, 256, 256, DET_COLS, CblasNoTrans, CblasTrans, 1.0f, 1.0f);
}
static void run_matmul_batched(Work *w)
{
    k_matmul_batched(w->out, w->a, w->b, 16, 64, 64, 64, CblasNoTrans, CblasTrans, 1.0f, 0.0f);
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
    {"k_copy", run_copy, 1},
    {"k_add", run_add, 1},
    {"k_axpy", run_axpy, 1},
    {"k_scale", run_scale, 1},
    {"k_bias_add", run_bias_add, 1},
    {"k_bias_backward", run_bias_backward, 1},
    {"k_relu_forward", run_relu_forward, 1},
    {"k_relu_backward", run_relu_backward, 1},
    {"k_gelu_forward", run_gelu_forward, 1},
    {"k_gelu_backward", run_gelu_backward, 1},
    {"k_softmax_forward", run_softmax_forward, 1},
    {"k_softmax_backward", run_softmax_backward, 1},
    {"k_causal_softmax_forward", run_causal_forward, 1},
    {"k_causal_softmax_backward", run_causal_backward, 1},
    {"k_layernorm_forward", run_layernorm_forward, 1},
    {"k_layernorm_backward", run_layernorm_backward, 1},
    {"k_row_sum", run_row_sum, 1},
    {"k_row_max", run_row_max, 1},
    {"k_sum", run_sum, 1},
    {"k_matmul", run_matmul, 0},
    {"k_matmul_batched", run_matmul_batched, 0},
};
enum { N_CASES = sizeof CASES / sizeof CASES[0] };

/* Runs one kernel from the fixed starting outputs on `threads` threads; copies all of its
 * outputs to `snapshot` (DET_OUT floats) and returns k_sum's result, if any, in *sum. */
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
    k_matmul(out, a, b, M, NN, K, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
    expect_flops("k_matmul", 2 * M * NN * K);
    k_matmul_batched(out, a, b, BATCH, M, NN, K, CblasTrans, CblasNoTrans, 1.0f, 0.0f);
    expect_flops("k_matmul_batched", 2 * BATCH * M * NN * K);
    k_fill(out, 1.0f, N);
    expect_flops("k_fill", 0);
    k_copy(out, a, N);
    expect_flops("k_copy", 0);
    k_add(out, a, b, N);
    expect_flops("k_add", N);
    k_axpy(out, a, 2.0f, N);
    expect_flops("k_axpy", 2 * N);
    k_scale(out, a, 2.0f, N);
    expect_flops("k_scale", N);
    k_bias_add(out, w, R, C);
    expect_flops("k_bias_add", R * C);
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
    k_softmax_forward(out, a, R, C);
    expect_flops("k_softmax_forward", R * (5 * C + 1));
    k_softmax_backward(out, a, b, R, C);
    expect_flops("k_softmax_backward", 5 * R * C);
    k_causal_softmax_forward(out, a, BH, T);
    expect_flops("k_causal_softmax_forward", 5 * kept + BH * T);
    k_causal_softmax_backward(out, a, b, BH, T);
    expect_flops("k_causal_softmax_backward", 5 * kept);
    k_layernorm_forward(out, r1, r2, a, w, b, R, C, 1e-5f);
    expect_flops("k_layernorm_forward", R * (7 * C + 5));
    k_layernorm_backward(out, c1, c2, b, a, w, r1, r2, R, C);
    expect_flops("k_layernorm_backward", R * (19 * C + 2));
    k_row_sum(r1, a, R, C);
    expect_flops("k_row_sum", R * C);
    k_row_max(r1, a, R, C);
    expect_flops("k_row_max", R * C);
    (void)k_sum(a, N);
    expect_flops("k_sum", N);

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
    w->wide = wide_floats(DET_N);
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
    free(w->wide);
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
        cmocka_unit_test(test_fill_copy_match_reference),
        cmocka_unit_test(test_add_axpy_scale_match_reference),
        cmocka_unit_test(test_add_in_place_matches_out_of_place),
        cmocka_unit_test(test_bias_add_and_backward_match_reference),
        cmocka_unit_test(test_relu_forward_backward_match_reference),
        cmocka_unit_test(test_gelu_forward_backward_match_reference),
        cmocka_unit_test(test_softmax_forward_backward_match_reference),
        cmocka_unit_test(test_causal_softmax_masks_exactly),
        cmocka_unit_test(test_layernorm_forward_backward_match_reference),
        cmocka_unit_test(test_row_reductions_and_sum_match_reference),
        cmocka_unit_test(test_kernels_deterministic_run_to_run),
        cmocka_unit_test(test_kernels_same_on_one_and_two_threads),
        cmocka_unit_test(test_kernels_count_documented_flops),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
