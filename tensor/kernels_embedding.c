/*
 * kernels_embedding.c — token and position embeddings: a table lookup and its
 * scatter-add backward (see kernels.h).
 *
 * What it is: the forward copies row ids[b,t] of the token table wte into out[b,t] and
 * adds row t of the position table wpe; rows are independent, so threads take whole rows.
 * The backward sends each dout[b,t] back where it came from: into row ids[b,t] of dwte
 * and row t of dwpe. Many tokens may share an id (and every batch row shares the
 * positions), so two tokens can add into the same gradient row: threads cannot take
 * tokens. They take columns instead: each thread owns whole blocks of COL_BLOCK columns
 * of both tables and walks every token in order (b = 0.., t = 0..), adding that token's
 * slice of dout into its columns. So every gradient element is summed in token order,
 * with no atomics, and the result does not depend on the thread count (the same idea as
 * k_bias_backward in kernels_elementwise.c).
 * What it is not: a check of the ids. They must be in [0, V) and the caller (the
 * embedding op) validates them; here an id out of range would read or write outside the
 * table.
 *
 * Aliasing: no output may overlap an input.
 */
#include "tensor/kernels.h"

#include "tensor/flops.h"

void k_embedding_forward(float *out, const int32_t *ids, const float *wte, const float *wpe,
                         int B, int T, int C)
{
    const int rows = B * T; /* row r is token (b, t) = (r / T, r % T) */
#pragma omp parallel for schedule(static) if ((size_t)rows * C >= PARALLEL_MIN_STREAM)
    for (int r = 0; r < rows; r++) {
        float *out_r = out + (size_t)r * C;
        const float *token = wte + (size_t)ids[r] * C;
        if (wpe) {
            const float *position = wpe + (size_t)(r % T) * C;
            for (int c = 0; c < C; c++) out_r[c] = token[c] + position[c];
        } else {
            for (int c = 0; c < C; c++) out_r[c] = token[c];
        }
    }
    flops_add(wpe ? (uint64_t)rows * C : 0); /* one add per element with positions */
}

/* Forward was out[b,t,c] = wte[ids[b,t],c] + wpe[t,c]; so
 *   d out[b,t,c] / d wte[v,c] = [ids[b,t] = v]  and  d out[b,t,c] / d wpe[t,c] = 1:
 *   dwte[ids[b,t],c] += dout[b,t,c]  for every token (b,t),
 *   dwpe[t,c]        += Σ_b dout[b,t,c]. */
void k_embedding_backward(float *dwte, float *dwpe, const float *dout, const int32_t *ids,
                          int B, int T, int C)
{
    const int rows = B * T;
    const int blocks = (C + COL_BLOCK - 1) / COL_BLOCK;
#pragma omp parallel for schedule(static) if ((size_t)rows * C >= PARALLEL_MIN_STREAM)
    for (int blk = 0; blk < blocks; blk++) {
        const int c0 = blk * COL_BLOCK;
        const int width = C - c0 < COL_BLOCK ? C - c0 : COL_BLOCK;
        for (int r = 0; r < rows; r++) { /* tokens in order: b outer, t inner */
            const float *dout_r = dout + (size_t)r * C + c0;
            if (dwte) {
                float *dtoken = dwte + (size_t)ids[r] * C + c0;
                for (int c = 0; c < width; c++) dtoken[c] += dout_r[c];
            }
            if (dwpe) {
                float *dposition = dwpe + (size_t)(r % T) * C + c0;
                for (int c = 0; c < width; c++) dposition[c] += dout_r[c];
            }
        }
    }
    flops_add((uint64_t)rows * C * ((dwte != NULL) + (dwpe != NULL))); /* one add per element per table */
}
