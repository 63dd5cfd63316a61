/*
 * kernels_ref.h — naive double-precision references for every kernel in tensor/kernels.h.
 *
 * What they are: the math of each kernel written as the plainest loops, the oracle
 * test_kernels.c checks the real kernels against. Each ref_x mirrors k_x: same argument
 * order and sizes, same float inputs (so both see exactly the same data), but every
 * output is a double array and every sum is accumulated in double.
 * Backward references accumulate (+=) like the kernels, so a test initialises the double
 * gradient with the same values as the float one.
 * What they are not: fast, threaded or FLOP-counted. They never touch the FLOP ledger,
 * never allocate, and expect the same valid sizes as the kernels.
 */
#ifndef REMAT_KERNELS_REF_H
#define REMAT_KERNELS_REF_H

#include <cblas.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <Random123/philox.h>

#include "tensor/counter_rng.h"
#include "tensor/rng.h"

/* C = alpha·op(A)·op(B) + beta·C, shapes and transposes as k_matmul. With beta = 0 the
 * old C is not read (as BLAS: a NaN there does not propagate). */
void ref_matmul(double *C, const float *A, const float *B, int M, int N, int K,
                CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB, float alpha, float beta);
/* `batch` ref_matmul calls on consecutive matrices, as k_matmul. */
void ref_matmul_batched(double *C, const float *A, const float *B, int batch, int M, int N,
                        int K, CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB, float alpha,
                        float beta);

/* out = value, everywhere. */
void ref_fill(double *out, float value, size_t n);
/* out = a + b. */
void ref_add(double *out, const float *a, const float *b, size_t n);
/* y += alpha·x. */
void ref_axpy(double *y, const float *x, float alpha, size_t n);
/* out = s·x. */
void ref_scale(double *out, const float *x, float s, size_t n);
/* out (rows,cols) = bias (cols) on every row. */
void ref_bias_broadcast(double *out, const float *bias, int rows, int cols);
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

/* out = softmax of each row of x (rows,cols), max subtracted as in the kernel; causal as
 * k_softmax_forward (masked columns of out are 0). */
void ref_softmax_forward(double *out, const float *x, int rows, int cols, bool causal);
/* dx += out ⊙ (dout − Σ_j dout_j·out_j) per row; out is the kernel's float output. Masked
 * columns of a causal dx are left unchanged. */
void ref_softmax_backward(double *dx, const float *out, const float *dout, int rows, int cols,
                          bool causal);

/* LayerNorm as k_layernorm_forward; mean and rstd (rows) are outputs. */
void ref_layernorm_forward(double *out, double *mean, double *rstd, const float *x,
                           const float *weight, const float *bias, int rows, int cols,
                           float eps);
/* Accumulates dx (rows,cols), dweight and dbias (cols). mean and rstd are the float values
 * the kernel's forward produced, as the real backward receives them. */
void ref_layernorm_backward(double *dx, double *dweight, double *dbias, const float *dout,
                            const float *x, const float *weight, const float *mean,
                            const float *rstd, int rows, int cols);

/* ---- losses ----------------------------------------------------------------------- */

/* (1/n) Σ (pred − target)², left to right. */
double ref_mse_forward(const float *pred, const float *target, size_t n);
/* dpred += dloss·(2/n)·(pred − target). */
void ref_mse_backward(double *dpred, const float *pred, const float *target, float dloss, size_t n);
/* (1/rows) Σ_r −log softmax(logits_r)[target_r] = mean of log Σ_j exp(x_j) − x_target. */
double ref_cross_entropy_forward(const float *logits, const int32_t *targets, int rows, int V);
/* dlogits += (dloss/rows)·(softmax(logits) − onehot(target)). */
void ref_cross_entropy_backward(double *dlogits, const float *logits, const int32_t *targets,
                                float dloss, int rows, int V);

/* ---- dropout ---------------------------------------------------------------------- */

/* The serial loop: for i = 0..n−1, mask[i] = pcg32_float(rng) >= p, out[i] = x[i]·mask/(1 − p).
 * Advances `rng` by n draws, like the kernel. */
void ref_dropout_forward(double *out, uint8_t *mask, const float *x, float p, Pcg32 *rng, size_t n);
/* dx += dout·mask/(1 − p). */
void ref_dropout_backward(double *dx, const float *dout, const uint8_t *mask, float p, size_t n);
/* The four 32-bit words of Philox4x32-10 for block `block` of `key` (elements
 * 4·block .. 4·block + 3), key and counter laid out as counter_rng.h says: one block at a
 * time, the layout test_counter_rng.c checks against Random123's known answers. */
static inline void ref_counter_block(const CounterKey *key, uint32_t block, uint32_t words[4])
{
    const philox4x32_key_t k = {{(uint32_t)key->seed, (uint32_t)(key->seed >> 32)}};
    const philox4x32_ctr_t c = {{block, key->op, key->micro_batch, (uint32_t)key->step}};
    const philox4x32_ctr_t r = philox4x32_R(10, c, k);
    for (int i = 0; i < 4; i++) words[i] = r.v[i];
}
/* Draw `index` of `key` as a float in [0, 1), as counter_rng.h defines it: word index mod 4
 * of Philox block index div 4, (word >> 8)·2^-24. One draw at a time, the reference the
 * counter-based keep decisions are checked against. */
static inline float ref_counter_draw(const CounterKey *key, uint64_t index)
{
    uint32_t words[4];
    ref_counter_block(key, (uint32_t)(index >> 2), words);
    return (float)(words[index & 3] >> 8) * 0x1.0p-24f;
}
/* Counter-based: mask[i] = ref_counter_draw(key, i) >= p, one element at a time. */
void ref_dropout_counter_mask(uint8_t *mask, const CounterKey *key, float p, size_t n);

/* ---- causal attention --------------------------------------------------------------- */

/* Causal attention on q, k, v (BH,T,D), the textbook way: the (T,T) scores of each head,
 * the softmax of each row over keys 0..i, dropout with mask (BH,T,T) (NULL: none; 1 keeps,
 * scaled by 1/(1 − p)), times v. out (BH,T,D); lse (BH,T) the rows' log-sum-exp (may be
 * NULL). */
void ref_attention_forward(double *out, double *lse, const float *q, const float *k, const float *v,
                           const uint8_t *mask, float p, int BH, int T, int D);
/* Its gradients: dq, dk, dv += the derivative of Σ dout ⊙ out, through the same masks. */
void ref_attention_backward(double *dq, double *dk, double *dv, const float *dout, const float *q,
                            const float *k, const float *v, const uint8_t *mask, float p, int BH, int T, int D);

/* ---- embeddings ------------------------------------------------------------------- */

/* out[b,t] = wte[ids[b,t]] + wpe[t] (wpe may be NULL). */
void ref_embedding_forward(double *out, const int32_t *ids, const float *wte, const float *wpe,
                           int B, int T, int C);
/* dwte[ids[b,t]] += dout[b,t]; dwpe[t] += dout[b,t]; either may be NULL. */
void ref_embedding_backward(double *dwte, double *dwpe, const float *dout, const int32_t *ids,
                            int B, int T, int C);

/* ---- attention heads -------------------------------------------------------------- */

/* heads[b,h,t,d] = (or += with add) rows[b,t, h·D + d], rows of `stride` channels. */
void ref_rows_to_heads(double *heads, const float *rows, int stride, int B, int T, int C, int H, bool add);
/* rows[b,t, h·D + d] = (or += with add) heads[b,h,t,d]. */
void ref_heads_to_rows(double *rows, const float *heads, int stride, int B, int T, int C, int H, bool add);

/* ---- sampling --------------------------------------------------------------------- */

/* The first index of the largest x. */
int ref_argmax(const float *x, int n);
/* The first i with u < Σ_{j ≤ i} probs[j], summed in double; the last i with probs[i] > 0
 * when the whole sum is ≤ u. */
int ref_sample_categorical(const float *probs, int n, float u);

/* ---- optimizer updates ------------------------------------------------------------ */

/* SGD as k_optim_update, on double parameters and velocity (velocity may be NULL when
 * momentum is 0). */
void ref_sgd_update(double *param, double *velocity, const float *grad, float lr, float momentum,
                    size_t n);
/* AdamW step t as k_optim_update, on double parameters and moments, written as
 * torch.optim.AdamW documents it (bias corrections divided, not multiplied). */
void ref_adamw_update(double *param, double *m, double *v, const float *grad, float lr,
                      float beta1, float beta2, float eps, float weight_decay, int t, size_t n);

#endif /* REMAT_KERNELS_REF_H */
