/*
 * kernels_heads.c — attention's change of layout: the fused q,k,v projection cut into
 * heads, and the heads put side by side again (see kernels.h).
 *
 * What it is: multi-head attention computes, for each (batch, head), a (T,T) product of
 * that head's queries and keys. The projection produces, for each token, q, k and v
 * side by side, each of C = H·D channels: qkv is (B,T,3C). The batched matmuls want each
 * head's (T,D) block contiguous: (B,H,T,D). Splitting is a transposing copy of one of
 * the three parts; merging copies (B,H,T,D) back to (B,T,C). Their backward kernels are
 * the same copies the other way, adding (+=) like every backward.
 * Threads take whole tokens (b,t): a token's row of qkv (or of the merged output) is
 * read or written by one thread only, and every element is touched once, so the results
 * do not depend on the thread count.
 * What it is not: a strided "view" that avoids the copy. Copies keep every tensor
 * contiguous, which is what the rest of remat (and BLAS) expects; they cost a few
 * percent of a step.
 *
 * Aliasing: no output may overlap an input.
 * Sizes: B, T, C, H with D = C/H (C a multiple of H, checked by the caller); which is
 * 0, 1 or 2 for q, k or v.
 */
#include "tensor/kernels.h"

#include "tensor/flops.h"

/* Single streaming passes: threads pay from about 2^16 elements (kernels_elementwise.c). */
#define PARALLEL_MIN_ELEMS ((size_t)1 << 16)

/* Where the (b,h,t) row of D floats starts in a (B,H,T,D) array. */
static size_t head_row(int b, int h, int t, int H, int T, int D)
{
    return (((size_t)b * H + h) * T + t) * D;
}

/* ---- split ------------------------------------------------------------------------ */

void k_split_heads_forward(float *out, const float *qkv, int which, int B, int T, int C, int H)
{
    const int D = C / H;
#pragma omp parallel for schedule(static) if ((size_t)B * T * C >= PARALLEL_MIN_ELEMS)
    for (int r = 0; r < B * T; r++) { /* token (b, t) = (r / T, r % T) */
        const int b = r / T, t = r % T;
        const float *part = qkv + (size_t)r * 3 * C + (size_t)which * C;
        for (int h = 0; h < H; h++) {
            float *out_bht = out + head_row(b, h, t, H, T, D);
            for (int d = 0; d < D; d++) out_bht[d] = part[h * D + d];
        }
    }
    /* a copy is not a FLOP */
}

/* Forward was out[b,h,t,d] = qkv[b,t, which·C + h·D + d], a copy; so
 * dqkv[b,t, which·C + h·D + d] += dout[b,h,t,d]. */
void k_split_heads_backward(float *dqkv, const float *dout, int which, int B, int T, int C, int H)
{
    const int D = C / H;
#pragma omp parallel for schedule(static) if ((size_t)B * T * C >= PARALLEL_MIN_ELEMS)
    for (int r = 0; r < B * T; r++) {
        const int b = r / T, t = r % T;
        float *dpart = dqkv + (size_t)r * 3 * C + (size_t)which * C;
        for (int h = 0; h < H; h++) {
            const float *dout_bht = dout + head_row(b, h, t, H, T, D);
            for (int d = 0; d < D; d++) dpart[h * D + d] += dout_bht[d];
        }
    }
    flops_add((uint64_t)B * T * C); /* one add per element */
}

/* ---- merge ------------------------------------------------------------------------ */

void k_merge_heads_forward(float *out, const float *y, int B, int T, int C, int H)
{
    const int D = C / H;
#pragma omp parallel for schedule(static) if ((size_t)B * T * C >= PARALLEL_MIN_ELEMS)
    for (int r = 0; r < B * T; r++) {
        const int b = r / T, t = r % T;
        float *out_r = out + (size_t)r * C;
        for (int h = 0; h < H; h++) {
            const float *y_bht = y + head_row(b, h, t, H, T, D);
            for (int d = 0; d < D; d++) out_r[h * D + d] = y_bht[d];
        }
    }
    /* a copy is not a FLOP */
}

/* Forward was out[b,t,h·D + d] = y[b,h,t,d], a copy; so dy[b,h,t,d] += dout[b,t,h·D + d]. */
void k_merge_heads_backward(float *dy, const float *dout, int B, int T, int C, int H)
{
    const int D = C / H;
#pragma omp parallel for schedule(static) if ((size_t)B * T * C >= PARALLEL_MIN_ELEMS)
    for (int r = 0; r < B * T; r++) {
        const int b = r / T, t = r % T;
        const float *dout_r = dout + (size_t)r * C;
        for (int h = 0; h < H; h++) {
            float *dy_bht = dy + head_row(b, h, t, H, T, D);
            for (int d = 0; d < D; d++) dy_bht[d] += dout_r[h * D + d];
        }
    }
    flops_add((uint64_t)B * T * C); /* one add per element */
}
