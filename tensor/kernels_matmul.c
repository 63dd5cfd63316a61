/*
 * kernels_matmul.c — matrix products, one or a batch: k_matmul (see kernels.h).
 *
 * What it is: a thin wrapper over OpenBLAS's cblas_sgemm. It works out the leading
 * dimensions of contiguous row-major matrices from the transposes, count FLOPs and the
 * wall time inside the call (the FLOP ledger's matmul share, tensor/flops.h: one clock
 * read before and after each call, outside any parallel loop), and decide how a batch of
 * products is spread over the threads.
 * What it is not: a GEMM. Blocking, packing and SIMD are OpenBLAS's job. There is no
 * matmul_backward either: the backward of C = A·B is two more products,
 * dA += dC·B^T and dB += A^T·dC, which the caller issues with k_matmul and beta = 1.
 *
 * Threading a batch. The OpenMP build of OpenBLAS threads one sgemm over the whole
 * OpenMP pool when it is called from serial code, and runs it on the calling thread alone
 * when it is called inside an OpenMP parallel region. So a batch can use the threads in
 * two ways:
 *   - inside:  a serial loop of sgemm calls, each split over all the threads;
 *   - across:  `omp parallel for` over the batch, one whole single-threaded sgemm each.
 * Attention's per-head products are small (T·T·head_size, e.g. 128·128·64) and many
 * (batch·heads). Inside, each small product is cut into slivers and pays a fork and join;
 * across pays once per batch and keeps every product whole, which is about twice as fast.
 * Large products thread well inside, and across then only adds load imbalance when the
 * batch is not a multiple of the thread count (3 products on 2 threads: one thread does
 * two). The rule: go across when there are at least as many products as threads and each
 * is at most BATCH_ACROSS_MAX_FLOPS; otherwise go inside. Either way each product is one
 * sgemm call on the same data.
 */
#include "tensor/kernels.h"

#include <omp.h>

#include "tensor/flops.h"
#include "base/platform.h"

/* Largest product (in FLOPs, 2·M·N·K) that k_matmul spreads across threads:
 * 2^27, which is 1024·1024·64, attention's score product at T = 1024, head size 64.
 * Measured on a 2-core Zen with 2 threads, OpenBLAS 0.3.21 (OpenMP build, Haswell
 * kernels), best of 15 runs, GFLOP/s:
 *   batch x product          FLOPs each   inside   across
 *   32 x 128·128·64            2.1 M         75      178
 *   48 x 64·64·64              0.5 M         81      150
 *   16 x 256·256·256            34 M        150      186
 *    5 x 256·256·256            34 M        151      163
 *    4 x 1024·1024·64          134 M        141      178
 *    3 x 1024·1024·64          134 M        141      139
 *    8 x 512·512·512           268 M        172      188
 *    3 x 512·512·512           268 M        172      143
 *    2 x 1024·1024·1024       2147 M        190      194
 *    3 x 1024·1024·1024       2147 M        188      146
 * Up to 2^27 across wins or ties even with an uneven batch; above it inside ties on even
 * batches and wins by ~25% on uneven ones. */
#define BATCH_ACROSS_MAX_FLOPS ((uint64_t)1 << 27)

void k_matmul(float *C, const float *A, const float *B, int batch, int M, int N, int K,
              CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB, float alpha, float beta)
{
    /* A row-major matrix's leading dimension is its stored row length, at least 1 even for
     * an empty matrix (BLAS rejects 0). */
    const int lda = transA == CblasNoTrans ? K : M; /* A stored (M,K) or (K,M) */
    const int ldb = transB == CblasNoTrans ? N : K; /* B stored (K,N) or (N,K) */
    const size_t a_step = (size_t)M * K, b_step = (size_t)K * N, c_step = (size_t)M * N;
    const uint64_t flops_each = 2 * (uint64_t)M * (uint64_t)N * (uint64_t)K;
    const double t0 = platform_seconds();
    /* Across: each sgemm on its own thread. Inside: serial code, outside any parallel
     * construct, so that each sgemm's team is OpenBLAS's top-level one. Called from within
     * even an inactive region, its team was a nested one, and under libgomp's default
     * spin-waiting bench_step's 2-thread steps ran 1.4 to 1.6 times slower (6 paired rounds). */
    const bool across = batch >= omp_get_max_threads() && flops_each <= BATCH_ACROSS_MAX_FLOPS;
    const int lda1 = lda > 1 ? lda : 1, ldb1 = ldb > 1 ? ldb : 1;
    if (M > 0 && N > 0 && across) {
#pragma omp parallel for schedule(static)
        for (int b = 0; b < batch; b++)
            cblas_sgemm(CblasRowMajor, transA, transB, M, N, K, alpha, A + b * a_step, lda1, B + b * b_step, ldb1,
                        beta, C + b * c_step, N);
    } else if (M > 0 && N > 0) {
        for (int b = 0; b < batch; b++)
            cblas_sgemm(CblasRowMajor, transA, transB, M, N, K, alpha, A + b * a_step, lda1, B + b * b_step, ldb1,
                        beta, C + b * c_step, N);
    }
    flops_add_matmul((uint64_t)batch * flops_each, platform_seconds() - t0);
}
