/*
 * kernels_attention.c — fused causal attention: softmax(q·kᵀ/√D + causal mask)·v, with
 * dropout on the probabilities, without ever holding a (T,T) matrix (see kernels.h).
 *
 * What it is: FlashAttention's algorithm (Dao et al. 2022, and FlashAttention-2's loop
 * order) for one CPU. For each (batch·head, tile of query rows) the forward walks the key
 * tiles left to right up to the diagonal, keeping for each query row a running maximum m,
 * a running sum l of exp(s − m) and an accumulator of Σ exp(s − m)·v; when a new tile
 * raises the maximum, what was accumulated is rescaled by exp(m_old − m_new) (the
 * "online softmax", Milakov and Gimelshein 2018). At the end out = acc / l, and the one
 * float per row the backward needs is kept: lse = m + log l, the log-sum-exp of the row.
 *
 * The backward recomputes each tile's probabilities from q, k and lse:
 * p_ij = exp(s_ij − lse_i), exact softmax values with no second pass. With Δ_i = dout_i·out_i
 * (which equals Σ_j p_ij·dp_ij even with dropout, since out_i = Σ_j a_ij v_j):
 *     a = p ⊙ keep/(1 − p_drop)           (the dropped probabilities the forward used)
 *     dv_j += Σ_i a_ij dout_i
 *     da_ij = dout_i · v_j,  dp_ij = da_ij ⊙ keep/(1 − p_drop)
 *     ds_ij = p_ij (dp_ij − Δ_i)          (softmax's backward, row by row)
 *     dq_i += scale · Σ_j ds_ij k_j,  dk_j += scale · Σ_i ds_ij q_i
 * Dropout's keep decisions come from the counter-based generator (counter_rng.h) at the
 * element index the (B,H,T,T) tensor would have, ((bh·T) + i)·T + j, so an unfused
 * attention dropping out its (B,H,T,T) probabilities with the same key drops the same ones.
 *
 * Tiles: plan->tile query rows by as many keys (AttnPlan). With tiles of 64 and D = 64 a
 * tile of q, k, v or out is 16 KiB and the scores another 16 KiB: a tile step touches
 * about 80 KiB, well inside the 512 KiB L2 of each core here (lscpu: AMD EPYC, family 25,
 * AVX2 and no AVX-512; its 32 KiB L1 data cache holds one operand). The same size for
 * rows and keys keeps every row of a diagonal tile with at least one key (its own), so
 * the running maximum is never −∞.
 *
 * The tile products are either OpenBLAS sgemm calls (one thread each: inside the
 * parallel region OpenBLAS does not spawn threads) or plain loops that gcc vectorises
 * (`omp simd`), chosen by AttnProducts. bench_attention measured sgemm faster here: a
 * forward and backward at B = 4, H = 4, D = 64 took 165 ms against 748 ms with the loops
 * at T = 512, 1436 against 2612 ms at T = 1024 and 3023 against 6041 ms at T = 2048
 * (medians of 7, 2 threads, on a 2-core machine busy with other work: the ranges are in
 * docs/MEASUREMENTS.md, section 4), so the ops use sgemm (ATTN_PLAN_DEFAULT).
 *
 * Threads and determinism. The forward takes (batch·head, query tile) pairs, the backward
 * whole batch·heads — dk and dv of a head collect from every query tile, and one thread
 * per head adds them in a fixed order with no atomics. Within a pair everything runs in a
 * fixed order on one thread, so the results are bit-identical on any thread count.
 *
 * FLOPs (counted as executed for products, per kept element for the rest; a "kept"
 * element is (i, j) with j ≤ i; rows·cols is a computed tile's size, which includes the
 * masked half of diagonal tiles):
 *   forward    per tile 4·rows·cols·D (q·kᵀ and p·v) + rows·(D + 3) (the rescale);
 *              per kept element 4 (max, subtract, exp, add) + 2 with dropout;
 *              per row D + 2 (out = acc/l, lse)
 *   backward   per tile 8·rows·cols·D (dv, da, dq, dk) as BACKWARD and 2·rows·cols·D
 *              (q·kᵀ again) as RECOMPUTE; per kept element 2 BACKWARD (ds) + 1 with
 *              dropout (dp), and 2 RECOMPUTE (p again) + 2 with dropout (the mask and a);
 *              per row 2·D BACKWARD (Δ)
 *
 * Aliasing: no output may overlap an input.
 */
#include "tensor/kernels.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "tensor/expf_inline.h"
#include "tensor/flops.h"

/* ---- tile products ---------------------------------------------------------------------- */

/* C (M,N) = alpha · op(A) · op(B) + beta · C (beta 0 or 1), as cblas_sgemm on row-major matrices with leading
 * dimensions lda, ldb, ldc: op(A) (M,K) is A (M,K) or, transposed, A (K,M); op(B) (K,N) is B (K,N) or, transposed,
 * B (N,K). The loops do the products used here: with B transposed (A not), a dot product per element of C; else
 * they add alpha·op(A)[i,k]·B[k,:] onto row i of C for k in order. Inline, so that gcc may specialise the loops to
 * each call's transposes and beta, which every call gives as constants. */
static inline void product(AttnProducts how, CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB, int M, int N, int K,
                           float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (how == ATTN_PRODUCTS_BLAS) {
        cblas_sgemm(CblasRowMajor, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    } else if (transB == CblasTrans) {
        for (int i = 0; i < M; i++) {
            const float *a = A + (size_t)i * lda;
            for (int j = 0; j < N; j++) {
                const float *b = B + (size_t)j * ldb;
                float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                for (int k = 0; k < K; k++) dot += a[k] * b[k];
                float *c = &C[(size_t)i * ldc + j];
                *c = beta == 0.0f ? alpha * dot : alpha * dot + beta * *c;
            }
        }
    } else {
        if (beta == 0.0f)
            for (int i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof *C);
        for (int k = 0; k < K; k++) {
            const float *b = B + (size_t)k * ldb;
            for (int i = 0; i < M; i++) {
                const float a = alpha * (transA == CblasNoTrans ? A[(size_t)i * lda + k] : A[(size_t)k * lda + i]);
                float *c = C + (size_t)i * ldc;
#pragma omp simd
                for (int j = 0; j < N; j++) c[j] += a * b[j];
            }
        }
    }
}

/* ---- shared pieces ---------------------------------------------------------------------- */

/* Tiles of `tile` over T (the last one shorter). */
static int tiles_of(int T, int tile) { return (T + tile - 1) / tile; }
static int tile_len(int T, int t, int tile) { return T - t * tile < tile ? T - t * tile : tile; }

/* How many of a tile's `cols` keys from j0 query row i sees (keys j0 .. i): at least 1,
 * since a query tile meets only key tiles that do not start after it. */
static int kept_keys(int i, int j0, int cols) { return i - j0 + 1 < cols ? i - j0 + 1 : cols; }

/* What one head's computed tiles (query tile qt against key tiles 0..qt) add up to, for
 * the FLOP counts: the products' elements Σ rows·cols (diagonal tiles whole), the query
 * rows Σ rows over the tiles, and the kept elements (i, j ≤ i). */
typedef struct TileSums {
    uint64_t cells, rows, kept;
} TileSums;

static TileSums tile_sums(int T, int tile)
{
    TileSums sum = {0};
    for (int qt = 0; qt < tiles_of(T, tile); qt++) {
        const int rows = tile_len(T, qt, tile);
        for (int kt = 0; kt <= qt; kt++) {
            const int cols = tile_len(T, kt, tile);
            sum.cells += (uint64_t)rows * cols;
            sum.rows += (uint64_t)rows;
            for (int r = 0; r < rows; r++) sum.kept += (uint64_t)kept_keys(qt * tile + r, kt * tile, cols);
        }
    }
    return sum;
}

/* The keep decisions of query row i, keys j0 .. j0 + n − 1, of head bh. */
static void row_keep(uint8_t *keep, const AttnDropout *drop, int bh, int T, int i, int j0, int n)
{
    const uint64_t first = ((uint64_t)bh * (uint64_t)T + (uint64_t)i) * (uint64_t)T + (uint64_t)j0;
    counter_rng_keep(keep, &drop->key, first, (size_t)n, drop->p);
}

/* Scratch floats of one thread. Forward: scores (tile²), acc (tile·D), m and l (tile
 * each), keep (tile bytes); backward: p, da and a (tile² each), keep (tile² bytes), Δ for
 * a whole head (T). One size, the sum of both with room to spare, serves either. */
static size_t work_per_thread(int T, int D, int tile)
{
    const size_t t = (size_t)tile;
    return 4 * t * t + t * (size_t)D + 3 * t + (size_t)T;
}

size_t k_attention_work_floats(int T, int D, const AttnPlan *plan)
{
    return (size_t)omp_get_max_threads() * work_per_thread(T, D, plan->tile);
}

/* ---- forward ---------------------------------------------------------------------------- */

/* One tile's online-softmax update for rows i0 .. i0 + rows − 1 against keys j0 ..
 * j0 + cols − 1: s (rows,cols) holds the scaled scores on entry and the (dropped)
 * unnormalised probabilities on return; m, l, acc are updated. */
static void online_update(float *s, float *m, float *l, float *acc, uint8_t *keep, const AttnDropout *drop, int bh,
                          int T, int D, int i0, int rows, int j0, int cols)
{
    for (int r = 0; r < rows; r++) {
        float *sr = s + (size_t)r * cols;
        const int n = kept_keys(i0 + r, j0, cols);
        float mx = m[r];
        for (int c = 0; c < n; c++) mx = sr[c] > mx ? sr[c] : mx;
        const float correction = expf_inline(m[r] - mx); /* exp(−∞) = 0 on the first tile */
        float sum = 0.0f;
        for (int c = 0; c < n; c++) {
            sr[c] = expf_inline(sr[c] - mx);
            sum += sr[c];
        }
        for (int c = n; c < cols; c++) sr[c] = 0.0f; /* masked: exactly 0 */
        l[r] = l[r] * correction + sum;
        m[r] = mx;
        float *ar = acc + (size_t)r * D;
        for (int d = 0; d < D; d++) ar[d] *= correction;
        if (drop) {
            const float scale = 1.0f / (1.0f - drop->p);
            row_keep(keep, drop, bh, T, i0 + r, j0, n);
            for (int c = 0; c < n; c++) sr[c] *= (float)keep[c] * scale;
        }
    }
}

/* Query tile qt of head bh: out rows and lse. */
static void forward_tile(float *out, float *lse, const float *q, const float *k, const float *v, int bh, int qt,
                         int T, int D, float scale, const AttnDropout *drop, const AttnPlan *plan, float *work)
{
    const int tile = plan->tile, i0 = qt * tile, rows = tile_len(T, qt, tile);
    const AttnProducts how = plan->products;
    float *s = work, *acc = s + (size_t)tile * tile, *m = acc + (size_t)tile * D, *l = m + tile;
    uint8_t *keep = (uint8_t *)(l + tile);
    const size_t head = (size_t)bh * T * D;
    for (int r = 0; r < rows; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
    memset(acc, 0, (size_t)rows * D * sizeof *acc);
    for (int kt = 0; kt <= qt; kt++) {
        const int j0 = kt * tile, cols = tile_len(T, kt, tile);
        product(how, CblasNoTrans, CblasTrans, rows, cols, D, scale, q + head + (size_t)i0 * D, D,
                k + head + (size_t)j0 * D, D, 0.0f, s, cols);
        online_update(s, m, l, acc, keep, drop, bh, T, D, i0, rows, j0, cols);
        product(how, CblasNoTrans, CblasNoTrans, rows, D, cols, 1.0f, s, cols, v + head + (size_t)j0 * D, D, 1.0f,
                acc, D);
    }
    for (int r = 0; r < rows; r++) {
        const float inv = 1.0f / l[r];
        float *o = out + head + (size_t)(i0 + r) * D;
        for (int d = 0; d < D; d++) o[d] = acc[(size_t)r * D + d] * inv;
        lse[(size_t)bh * T + i0 + r] = m[r] + logf(l[r]);
    }
}

void k_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v, int BH, int T,
                         int D, const AttnDropout *drop, const AttnPlan *plan, float *work)
{
    const float scale = 1.0f / sqrtf((float)D);
    const int tiles = tiles_of(T, plan->tile), pairs = BH * tiles;
    const size_t per_thread = work_per_thread(T, D, plan->tile);
#pragma omp parallel for schedule(dynamic, 1) if (pairs > 1 && (size_t)BH * T * T * D >= ATTN_PARALLEL_MIN)
    for (int pair = 0; pair < pairs; pair++) {
        /* Heaviest first: query tile t has t + 1 key tiles, so the last tiles lead. */
        const int qt = tiles - 1 - pair / BH, bh = pair % BH;
        forward_tile(out, lse, q, k, v, bh, qt, T, D, scale, drop, plan, work + (size_t)omp_get_thread_num() * per_thread);
    }
    uint64_t recompute; /* the FLOPs at the top of the file, per tile, element, row */
    flops_add(k_attention_flops(BH, T, D, drop != NULL, plan, &recompute));
}

/* ---- backward --------------------------------------------------------------------------- */

/* The probabilities of a tile again: p = exp(s − lse) on kept elements, 0 on masked ones;
 * with dropout, a = p ⊙ keep·scale into `a` (else `a` is p itself). */
static void recompute_tile(float *p, float *a, uint8_t *keep, const float *lse, const AttnDropout *drop, int bh,
                           int T, int i0, int rows, int j0, int cols)
{
    for (int r = 0; r < rows; r++) {
        float *pr = p + (size_t)r * cols;
        const int n = kept_keys(i0 + r, j0, cols);
        const float row_lse = lse[(size_t)bh * T + i0 + r];
        for (int c = 0; c < n; c++) pr[c] = expf_inline(pr[c] - row_lse); /* expf's bits, vectorised */
        for (int c = n; c < cols; c++) pr[c] = 0.0f;
        if (!drop) continue;
        const float scale = 1.0f / (1.0f - drop->p);
        float *ar = a + (size_t)r * cols;
        row_keep(keep + (size_t)r * cols, drop, bh, T, i0 + r, j0, n);
        for (int c = 0; c < n; c++) ar[c] = pr[c] * ((float)keep[(size_t)r * cols + c] * scale);
        for (int c = n; c < cols; c++) ar[c] = 0.0f;
    }
}

/* ds = p ⊙ (dp − Δ), with dp = da ⊙ keep·scale under dropout; in place over `da`. */
static void softmax_backward_tile(float *da, const float *p, const uint8_t *keep, const float *delta,
                                  const AttnDropout *drop, int rows, int cols)
{
    const float scale = drop ? 1.0f / (1.0f - drop->p) : 1.0f;
    for (int r = 0; r < rows; r++) {
        float *dr = da + (size_t)r * cols;
        const float *pr = p + (size_t)r * cols;
        if (drop)
            for (int c = 0; c < cols; c++) dr[c] *= (float)keep[(size_t)r * cols + c] * scale;
        for (int c = 0; c < cols; c++) dr[c] = pr[c] * (dr[c] - delta[r]);
    }
}

/* Every tile of head bh, query tiles in order, each against its key tiles in order. */
static void backward_head(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                          const float *v, const float *out, const float *lse, int bh, int T, int D, float scale,
                          const AttnDropout *drop, const AttnPlan *plan, float *work)
{
    const int tile = plan->tile;
    const AttnProducts how = plan->products;
    float *p = work, *da = p + (size_t)tile * tile, *delta = da + (size_t)tile * tile;
    uint8_t *keep = (uint8_t *)(delta + T); /* tile² bytes, in the next ⌈tile²/4⌉ floats */
    float *a = drop ? (float *)keep + ((size_t)tile * tile + 3) / 4 : p; /* aligned for any tile */
    const size_t head = (size_t)bh * T * D;
    for (int i = 0; i < T; i++) { /* Δ_i = dout_i · out_i */
        float dot = 0.0f;
        for (int d = 0; d < D; d++) dot += dout[head + (size_t)i * D + d] * out[head + (size_t)i * D + d];
        delta[i] = dot;
    }
    for (int qt = 0; qt < tiles_of(T, tile); qt++) {
        const int i0 = qt * tile, rows = tile_len(T, qt, tile);
        const float *qi = q + head + (size_t)i0 * D, *doi = dout + head + (size_t)i0 * D;
        for (int kt = 0; kt <= qt; kt++) {
            const int j0 = kt * tile, cols = tile_len(T, kt, tile);
            const float *kj = k + head + (size_t)j0 * D, *vj = v + head + (size_t)j0 * D;
            product(how, CblasNoTrans, CblasTrans, rows, cols, D, scale, qi, D, kj, D, 0.0f, p, cols);
            recompute_tile(p, a, keep, lse, drop, bh, T, i0, rows, j0, cols); /* the scores and p again */
            product(how, CblasTrans, CblasNoTrans, cols, D, rows, 1.0f, a, cols, doi, D, 1.0f,
                    dv + head + (size_t)j0 * D, D);
            product(how, CblasNoTrans, CblasTrans, rows, cols, D, 1.0f, doi, D, vj, D, 0.0f, da, cols);
            softmax_backward_tile(da, p, keep, delta + i0, drop, rows, cols);
            product(how, CblasNoTrans, CblasNoTrans, rows, D, cols, scale, da, cols, kj, D, 1.0f,
                    dq + head + (size_t)i0 * D, D);
            product(how, CblasTrans, CblasNoTrans, cols, D, rows, scale, da, cols, qi, D, 1.0f,
                    dk + head + (size_t)j0 * D, D);
        }
    }
}

void k_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                          const float *v, const float *out, const float *lse, int BH, int T, int D,
                          const AttnDropout *drop, const AttnPlan *plan, float *work)
{
    const float scale = 1.0f / sqrtf((float)D);
    const size_t per_thread = work_per_thread(T, D, plan->tile);
#pragma omp parallel for schedule(static) if (BH > 1 && (size_t)BH * T * T * D >= ATTN_PARALLEL_MIN)
    for (int bh = 0; bh < BH; bh++)
        backward_head(dq, dk, dv, dout, q, k, v, out, lse, bh, T, D, scale, drop, plan,
                      work + (size_t)omp_get_thread_num() * per_thread);
    const TileSums sum = tile_sums(T, plan->tile);
    flops_add(BH * (8 * sum.cells * D + (2 + (drop ? 1 : 0)) * sum.kept + 2 * (uint64_t)T * D));
    uint64_t recompute;
    k_attention_flops(BH, T, D, drop != NULL, plan, &recompute);
    flops_add_phase(PHASE_RECOMPUTE, recompute);
}

/* The FLOPs at the top of the file, per tile, element and row. */
uint64_t k_attention_flops(int BH, int T, int D, bool drop, const AttnPlan *plan, uint64_t *recompute)
{
    const TileSums sum = tile_sums(T, plan->tile);
    *recompute = BH * (2 * sum.cells * D + (2 + (drop ? 2 : 0)) * sum.kept);
    return BH * (4 * sum.cells * D + sum.rows * (D + 3) + (4 + (drop ? 2 : 0)) * sum.kept + (uint64_t)T * (D + 2));
}
