/*
 * kernels.h — raw kernels on float arrays: the only code in remat that does arithmetic
 * on tensor data.
 *
 * What they are: plain functions on contiguous, row-major float arrays. Matmuls go to
 * OpenBLAS (cblas_sgemm); elementwise and row-wise loops use OpenMP with static schedules
 * when the work is large enough to pay for the threads.
 * What they are not: they know nothing of Tensors, graphs, gradients or the memory
 * ledger, and they never allocate. They do add their own FLOPs to the FLOP ledger
 * (flops.h), once per call; each comment says how they are counted.
 * They do not check their arguments either: they trust the caller to pass non-NULL
 * arrays of the sizes given, non-negative sizes, and the aliasing each file allows
 * (elementwise outputs may be the very same array as an input; row-wise and backward
 * outputs must not overlap an input). Validation with error messages lives one level
 * up, in autograd, where the shapes are known.
 *
 * Conventions (as llm.c):
 *   - argument order: outputs, inputs, weights, sizes; inputs are const.
 *   - gradients have a d prefix; every *_backward ACCUMULATES (dx += ...), so a caller
 *     zeroes a gradient buffer first (k_fill) when it wants a fresh one.
 *   - dimension letters: M, N, K for matmuls; rows/cols for row-wise kernels; n for a
 *     flat element count; B batch, T time, C channels, H heads, D = C/H head size and
 *     V vocabulary for the GPT's kernels.
 *
 * Deterministic: the same inputs and thread count always give bit-identical outputs
 * (static schedules; every reduction is summed in a fixed order that does not depend on
 * the thread count). That is what lets remat compare checkpoint strategies with memcmp.
 * Every kernel but the matmuls also gives the same bits on any thread count; OpenBLAS
 * does not (a 256x256x301 product differs in its last bits between 1 and 2 threads), so
 * runs to be compared must use the same thread count.
 *
 * tests/kernels_ref.h has a naive double-precision reference for each kernel, which
 * tests/test_kernels.c checks these against.
 */
#ifndef REMAT_KERNELS_H
#define REMAT_KERNELS_H

#include <cblas.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor/counter_rng.h"
#include "tensor/rng.h"

/* ---- threads ---------------------------------------------------------------------- */

/* Below these many elements a kernel's loop stays on the calling thread: opening an OpenMP
 * region costs a few microseconds. A streaming pass breaks even near 2^16 elements, a loop
 * with an exp or a tanh per element near 2^12 (measured in kernels_elementwise.c and
 * kernels_rows.c). */
#define PARALLEL_MIN_STREAM ((size_t)1 << 16)
#define PARALLEL_MIN_EXP ((size_t)1 << 12)

/* A sum over rows into each column (a bias's gradient, LayerNorm's dweight and dbias, an
 * embedding table's) gives each thread whole blocks of this many columns (128 bytes: two
 * cache lines of each row it touches) and adds the rows into them in order. */
#define COL_BLOCK 32

/* ---- matmul (kernels_matmul.c) ---------------------------------------------------- */

/* C = alpha · op(A) · op(B) + beta · C for each of `batch` products on consecutive
 * matrices (a batch of 1: one product), all row-major and contiguous: from one product to
 * the next A advances by M·K floats, B by K·N, C by M·N.
 * op(A) is (M,K): A is stored (M,K), or (K,M) when transA is CblasTrans.
 * op(B) is (K,N): B is stored (K,N), or (N,K) when transB is CblasTrans.
 * C is (M,N) and must not overlap A or B. With beta = 0 the old C is not read (as BLAS:
 * even a NaN there is overwritten). A batch of small products (attention's per-head ones)
 * is spread across threads, one per thread; large products each use all threads (the rule
 * and its measurements are in kernels_matmul.c). FLOPs: 2·batch·M·N·K (the beta and
 * alpha scalings are not counted). */
void k_matmul(float *C, const float *A, const float *B, int batch, int M, int N, int K,
              CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB, float alpha, float beta);

/* ---- elementwise (kernels_elementwise.c) ------------------------------------------ */

void k_fill(float *out, float value, size_t n);                         /* 0 FLOPs */
void k_add(float *out, const float *a, const float *b, size_t n);       /* out = a + b; n */
void k_axpy(float *y, const float *x, float alpha, size_t n);           /* y += alpha·x; 2n */
void k_scale(float *out, const float *x, float s, size_t n);            /* out = s·x; n */

/* out (rows,cols) = bias (cols) in every row: where a linear's product is then added
 * (k_matmul with beta = 1). FLOPs: rows·cols, the bias adds that product makes (counted
 * here; kernels_elementwise.c says why). */
void k_bias_broadcast(float *out, const float *bias, int rows, int cols);
/* dbias (cols) += sum over rows of dout (rows,cols). FLOPs: rows·cols. */
void k_bias_backward(float *dbias, const float *dout, int rows, int cols);

/* out = max(x, 0). FLOPs: n. */
void k_relu_forward(float *out, const float *x, size_t n);
/* dx += dout · [x > 0]. FLOPs: 2n. */
void k_relu_backward(float *dx, const float *x, const float *dout, size_t n);

/* GELU, tanh approximation (as GPT-2): out = 0.5·x·(1 + tanh(sqrt(2/pi)·(x + 0.044715·x^3))).
 * FLOPs: 9n (itemised in kernels_elementwise.c). */
void k_gelu_forward(float *out, const float *x, size_t n);
/* dx += dout · gelu'(x). FLOPs: 20n (itemised in kernels_elementwise.c). */
void k_gelu_backward(float *dx, const float *x, const float *dout, size_t n);

/* ---- row-wise (kernels_rows.c) ---------------------------------------------------- */

/* out (rows,cols) = softmax of each row of x, computed stably (max subtracted). Causal:
 * x is attention scores (BH,T,T) as rows = BH·T rows of cols = T, and row t of each (T,T)
 * block is a softmax over its columns 0..t; columns t+1..T-1 of out are exactly 0 (x there
 * is never read). FLOPs, on the kept columns only: 5·K + rows, K = rows·cols kept, or
 * rows·(T+1)/2 when causal. */
void k_softmax_forward(float *out, const float *x, int rows, int cols, bool causal);
/* Forward was out = softmax(x); dx += out ⊙ (dout − Σ_j dout_j·out_j) per row, on the kept
 * columns (a causal row's masked columns get nothing: dx there is left exactly as it
 * was). FLOPs: 5·K, K as above. */
void k_softmax_backward(float *dx, const float *out, const float *dout, int rows, int cols,
                        bool causal);

/* LayerNorm over each row of x (rows,cols):
 *   mean = Σx/cols, rstd = 1/sqrt(Σ(x−mean)²/cols + eps), out = (x−mean)·rstd·weight + bias.
 * mean and rstd (rows) are outputs, kept for the backward. FLOPs: rows·(7·cols + 5). */
void k_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                         const float *weight, const float *bias, int rows, int cols, float eps);
/* Accumulates dx (rows,cols), dweight (cols) and dbias (cols) from dout, given the
 * forward's mean and rstd. dweight and dbias are summed over rows in row order, whatever
 * the thread count. FLOPs: rows·(19·cols + 2), counted as executed (kernels_rows.c). */
void k_layernorm_backward(float *dx, float *dweight, float *dbias, const float *dout,
                          const float *x, const float *weight, const float *mean,
                          const float *rstd, int rows, int cols);

/* ---- losses (kernels_loss.c) ------------------------------------------------------ */

/* (1/n) Σ (pred − target)², summed in double in fixed blocks (thread-count independent).
 * FLOPs: 3n. */
double k_mse_forward(const float *pred, const float *target, size_t n);
/* Forward was loss = (1/n) Σ (pred − target)²; dpred += dloss·(2/n)·(pred − target).
 * FLOPs: 3n. */
void k_mse_backward(float *dpred, const float *pred, const float *target, float dloss, size_t n);

/* Softmax and cross-entropy in one: logits (rows,V), targets (rows) with every target in
 * [0, V). Returns (1/rows) Σ_r −log softmax(logits_r)[target_r], each row's term and the
 * sum over rows in double, in a fixed order (thread-count independent). The softmax
 * itself is never stored. FLOPs: rows·(4·V + 4) + 1. */
double k_cross_entropy_forward(const float *logits, const int32_t *targets, int rows, int V);
/* Forward was loss = mean_r −log softmax(logits_r)[target_r];
 * dlogits += (dloss/rows)·(softmax(logits) − onehot(target)), the softmax recomputed from
 * the logits (no scratch). FLOPs: rows·(8·V + 2) + 1. */
void k_cross_entropy_backward(float *dlogits, const float *logits, const int32_t *targets,
                              float dloss, int rows, int V);

/* ---- dropout (kernels_dropout.c) -------------------------------------------------- */

/* Inverted dropout with keep mask (1 = keep): mask[i] = pcg32_float(rng) >= p, drawing
 * exactly one number per element in element order, so `rng` ends advanced by exactly n
 * draws; out = x·mask/(1 − p). p in [0, 1). out must not overlap x. FLOPs: 2n (the
 * compare with p, the multiply). */
void k_dropout_forward(float *out, uint8_t *mask, const float *x, float p, Pcg32 *rng, size_t n);
/* Forward was out = x·mask/(1 − p); so dx += dout·mask/(1 − p). FLOPs: 2n. */
void k_dropout_backward(float *dx, const float *dout, const uint8_t *mask, float p, size_t n);

/* Inverted dropout whose keep decisions are counter-based (counter_rng.h): element i is
 * kept when draw i of `key` is >= p; out = x·keep/(1 − p). No mask is written and
 * nothing advances. n must be at most COUNTER_RNG_MAX_ELEMENTS. out must not overlap x.
 * FLOPs: 2n, as k_dropout_forward. */
void k_dropout_counter_forward(float *out, const float *x, float p, const CounterKey *key, size_t n);
/* Forward was out = x·keep/(1 − p) with keep a function of (key, i); so the keep
 * decisions are made again and dx += dout·keep/(1 − p). FLOPs: 2n BACKWARD, and the n
 * compares that remake the mask as RECOMPUTE (forward work redone). */
void k_dropout_counter_backward(float *dx, const float *dout, float p, const CounterKey *key, size_t n);

/* ---- fused causal attention (kernels_attention.c) --------------------------------- */

/* Below about this many multiply-adds (BH·T²·D) a head's work is too small to share out. */
#define ATTN_PARALLEL_MIN ((size_t)1 << 18)

/* How the tile products are computed: OpenBLAS sgemm, or remat's own vectorised loops. */
typedef enum AttnProducts { ATTN_PRODUCTS_BLAS = 0, ATTN_PRODUCTS_LOOPS } AttnProducts;

/* How the fused kernel runs: its tile products, and its tile size (query rows and keys per
 * tile, at least 1). The results depend on neither beyond float rounding; the FLOPs
 * counted depend on the tile, whose diagonal tiles compute their masked half too. */
typedef struct AttnPlan {
    AttnProducts products;
    int tile;
} AttnPlan;

/* What the ops use: sgemm, measured about twice as fast as the loops, and tiles of 64
 * (kernels_attention.c says why; bench_attention measures 32 and 128 beside it). */
#define ATTN_TILE 64
#define ATTN_PLAN_DEFAULT ((AttnPlan){.products = ATTN_PRODUCTS_BLAS, .tile = ATTN_TILE})

/* Dropout on the attention probabilities: probability p in (0, 1) and the counter key of
 * the (B,H,T,T) probabilities' elements. */
typedef struct AttnDropout {
    float p;
    CounterKey key;
} AttnDropout;

/* Floats of scratch k_attention_forward and _backward need with `plan`, on as many
 * threads as OpenMP will use (omp_get_max_threads): allocate it just before the call. */
size_t k_attention_work_floats(int T, int D, const AttnPlan *plan);

/* The FLOPs k_attention_forward counts, and into *recompute the RECOMPUTE FLOPs
 * k_attention_backward counts, with dropout or not: for a model of the step that runs
 * neither. */
uint64_t k_attention_flops(int BH, int T, int D, bool drop, const AttnPlan *plan, uint64_t *recompute);

/* out (BH,T,D) = softmax(q·kᵀ/sqrt(D) with row i seeing keys 0..i) ⊙ keep/(1 − p) · v,
 * and lse (BH,T) = the log-sum-exp of each row's scaled scores; q, k, v (BH,T,D). No (T,T)
 * matrix is made: tiles of plan->tile, an online softmax. drop: NULL for none, else keep
 * decisions from counter_rng at index (bh·T + i)·T + j. work: k_attention_work_floats(T, D,
 * plan) floats. FLOPs: the top of kernels_attention.c. */
void k_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v, int BH, int T,
                         int D, const AttnDropout *drop, const AttnPlan *plan, float *work);
/* Forward was out = a·v with a = softmax(s) ⊙ keep/(1 − p), s = q·kᵀ/sqrt(D) causal; so
 * with p recomputed from q, k and lse tile by tile: dv += aᵀ·dout; ds = p ⊙ (dp − Δ),
 * dp = (dout·vᵀ) ⊙ keep/(1 − p), Δ_i = dout_i·out_i; dq += ds·k/sqrt(D); dk += dsᵀ·q/sqrt(D).
 * Accumulates (+=) into dq, dk, dv (none may be NULL). The recomputed scores,
 * probabilities and mask count as RECOMPUTE FLOPs, the rest as the current phase's. */
void k_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                          const float *v, const float *out, const float *lse, int BH, int T, int D,
                          const AttnDropout *drop, const AttnPlan *plan, float *work);

/* ---- embeddings (kernels_embedding.c) --------------------------------------------- */

/* out (B,T,C) = wte[ids[b,t]] + wpe[t]: ids (B,T) in [0, V) index rows of the token table
 * wte (V,C); wpe (≥T,C) is the position table, or NULL for none. FLOPs: B·T·C with wpe
 * (the adds), 0 without. */
void k_embedding_forward(float *out, const int32_t *ids, const float *wte, const float *wpe,
                         int B, int T, int C);
/* Forward was out[b,t] = wte[ids[b,t]] + wpe[t]; so dwte[ids[b,t]] += dout[b,t] and
 * dwpe[t] += Σ_b dout[b,t]. Each element is summed in token order (b, then t) whatever
 * the thread count. Either gradient may be NULL (not wanted). FLOPs: B·T·C per gradient
 * computed. */
void k_embedding_backward(float *dwte, float *dwpe, const float *dout, const int32_t *ids,
                          int B, int T, int C);

/* ---- attention heads (kernels_heads.c) -------------------------------------------- */

/* Attention's two changes of layout, each the other's backward. `rows` holds, for each
 * token (b,t), `stride` channels of which C are the heads side by side: a row of qkv
 * (B,T,3C) with stride 3C, advanced by which·C for q, k or v (which = 0, 1, 2), or a row
 * of the merged output (B,T,C), stride C. `heads` is (B,H,T,D), D = C/H. With `add`, the
 * copy is added onto what is there (a backward) and costs B·T·C FLOPs; without, 0.
 *   TO_HEADS (dst heads, src rows): heads[b,h,t,d] = (or +=) rows[b,t, h·D + d]   (split; merge's backward)
 *   TO_ROWS  (dst rows, src heads): rows[b,t, h·D + d] = (or +=) heads[b,h,t,d]   (merge; split's backward)
 * The other channels of rows are left as they were. */
typedef enum HeadsWay { TO_HEADS, TO_ROWS } HeadsWay;
void k_move_heads(HeadsWay way, float *dst, const float *src, int stride, int B, int T, int C, int H, bool add);

/* ---- sampling (kernels_sample.c) -------------------------------------------------- */

/* The index of the largest of x[0..n), n ≥ 1; the first one on ties. FLOPs: n − 1. */
int k_argmax(const float *x, int n);
/* A draw from the categorical distribution probs[0..n) (non-negative, summing to 1 up to
 * rounding), given u uniform in [0, 1): the first i with u < probs[0] + ... + probs[i],
 * summed in float in index order; if rounding leaves the whole sum ≤ u, the last i with
 * probs[i] > 0. FLOPs: 2 per element scanned. */
int k_sample_categorical(const float *probs, int n, float u);

/* ---- optimizer updates (kernels_optim.c) ------------------------------------------ */

/* One parameter's part of an optimizer step: its values, its gradient, its state (AdamW:
 * the moments m and v; SGD: the velocity in m, or NULL without momentum; v unused) and
 * AdamW's decoupled weight decay for it. */
typedef struct OptimSlice {
    float *param;
    const float *grad;
    float *m, *v;
    float weight_decay;
    size_t n;
} OptimSlice;

/* What one optimizer pass runs: AdamW at step t ≥ 1 (lr, beta1, beta2, eps, and each
 * slice's weight decay), or SGD (lr, and momentum: 0 for none). */
typedef struct OptimUpdate {
    bool adamw;
    float lr, momentum;
    float beta1, beta2, eps;
    int t;
} OptimUpdate;

/* `u` over `count` slices in one pass; the elements of all slices are split evenly over
 * the threads, so many small parameters use them all.
 *   AdamW, as torch.optim.AdamW: decoupled weight decay, moments m and v updated in
 *   place, bias-corrected update. FLOPs: 16 per element (see kernels_optim.c).
 *   SGD: velocity = momentum·velocity + grad (when momentum > 0 and the slice's velocity
 *   is not NULL), param −= lr·velocity (or lr·grad). FLOPs: 2 per element, 4 with
 *   momentum. */
void k_optim_update(const OptimSlice *slices, int count, const OptimUpdate *u);

#endif /* REMAT_KERNELS_H */
