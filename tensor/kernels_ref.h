/*
 * kernels_ref.h — naive double-precision references for every kernel in kernels.h.
 *
 * What they are: the math of each kernel written as the plainest loops, for the tests and
 * benches to check the real kernels against before timing anything. Each ref_x mirrors
 * k_x: same argument order and sizes, same float inputs (so both see exactly the same
 * data), but every output is a double array and every sum is accumulated in double.
 * Backward references accumulate (+=) like the kernels, so a test initialises the double
 * gradient with the same values as the float one.
 * What they are not: fast, threaded or FLOP-counted. They never touch the FLOP ledger,
 * never allocate, and expect the same valid sizes as the kernels.
 */
#ifndef REMAT_KERNELS_REF_H
#define REMAT_KERNELS_REF_H

#include <cblas.h>
#include <stddef.h>

/* C = alpha·op(A)·op(B) + beta·C, shapes and transposes as k_matmul. With beta = 0 the
 * old C is not read (as BLAS: a NaN there does not propagate). */
void ref_matmul(double *C, const float *A, const float *B, int M, int N, int K,
                CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB, float alpha, float beta);
/* `batch` ref_matmul calls on consecutive matrices, as k_matmul_batched. */
void ref_matmul_batched(double *C, const float *A, const float *B, int batch, int M, int N,
                        int K, CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB, float alpha,
                        float beta);

/* out = value, everywhere. */
void ref_fill(double *out, float value, size_t n);
/* out = x. */
void ref_copy(double *out, const float *x, size_t n);
/* out = a + b. */
void ref_add(double *out, const float *a, const float *b, size_t n);
/* y += alpha·x. */
void ref_axpy(double *y, const float *x, float alpha, size_t n);
/* out = s·x. */
void ref_scale(double *out, const float *x, float s, size_t n);
/* out (rows,cols) += bias (cols) on every row. */
void ref_bias_add(double *out, const float *bias, int rows, int cols);
/* dbias (cols) += Σ over rows of dout (rows,cols). */
void ref_bias_backward(double *dbias, const float *dout, int rows, int cols);
/* out = max(x, 0). */
void ref_relu_forward(double *out, const float *x, size_t n);
/* dx += dout·[x > 0]. */
void ref_relu_backward(double *dx, const float *x, const float *dout, size_t n);
/* out = 0.5·x·(1 + tanh(sqrt(2/pi)·(x + 0.044715·x³))). */
void ref_gelu_forward(double *out, const float *x, size_t n);
/* dx += dout·gelu'(x), the derivative written out independently of the kernel's form. */
void ref_gelu_backward(double *dx, const float *x, const float *dout, size_t n);

/* out = softmax of each row of x (rows,cols), max subtracted as in the kernel. */
void ref_softmax_forward(double *out, const float *x, int rows, int cols);
/* dx += out ⊙ (dout − Σ_j dout_j·out_j) per row; out is the kernel's float output. */
void ref_softmax_backward(double *dx, const float *out, const float *dout, int rows, int cols);
/* Causal softmax on (BH,T,T); masked columns of out are 0. */
void ref_causal_softmax_forward(double *out, const float *x, int BH, int T);
/* Masked columns of dx are left unchanged. */
void ref_causal_softmax_backward(double *dx, const float *out, const float *dout, int BH, int T);

/* LayerNorm as k_layernorm_forward; mean and rstd (rows) are outputs. */
void ref_layernorm_forward(double *out, double *mean, double *rstd, const float *x,
                           const float *weight, const float *bias, int rows, int cols,
                           float eps);
/* Accumulates dx (rows,cols), dweight and dbias (cols). mean and rstd are the float values
 * the kernel's forward produced, as the real backward receives them. */
void ref_layernorm_backward(double *dx, double *dweight, double *dbias, const float *dout,
                            const float *x, const float *weight, const float *mean,
                            const float *rstd, int rows, int cols);

/* out (rows) = Σ_j x[r,j]. */
void ref_row_sum(double *out, const float *x, int rows, int cols);
/* out (rows) = max_j x[r,j], for cols ≥ 1. */
void ref_row_max(double *out, const float *x, int rows, int cols);
/* Σ x, left to right. */
double ref_sum(const float *x, size_t n);

#endif /* REMAT_KERNELS_REF_H */
