/*
 * kernels_ref.c — the naive double-precision references (see kernels_ref.h).
 *
 * Every loop here is the textbook formula: no blocking, no threads, no FLOP counting.
 * Inputs are float, as the kernels get them; each is widened to double on reading, and
 * every intermediate and output stays in double.
 */
#include "tests/kernels_ref.h"

#include <math.h>
#include <stdlib.h>

/* ---- matmul ----------------------------------------------------------------------- */

void ref_matmul(double *C, const float *A, const float *B, int M, int N, int K,
                CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB, float alpha, float beta)
{
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double dot = 0.0;
            for (int k = 0; k < K; k++) {
                /* op(A)[i,k] and op(B)[k,j], read from their stored layouts */
                double a = transA == CblasNoTrans ? A[(size_t)i * K + k] : A[(size_t)k * M + i];
                double b = transB == CblasNoTrans ? B[(size_t)k * N + j] : B[(size_t)j * K + k];
                dot += a * b;
            }
            double *c = &C[(size_t)i * N + j];
            *c = beta == 0.0f ? (double)alpha * dot : (double)alpha * dot + (double)beta * *c;
        }
    }
}

void ref_matmul_batched(double *C, const float *A, const float *B, int batch, int M, int N,
                        int K, CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB, float alpha,
                        float beta)
{
    for (int b = 0; b < batch; b++)
        ref_matmul(C + (size_t)b * M * N, A + (size_t)b * M * K, B + (size_t)b * K * N, M, N,
                   K, transA, transB, alpha, beta);
}

/* ---- elementwise ------------------------------------------------------------------ */

void ref_fill(double *out, float value, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = value;
}

void ref_add(double *out, const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = (double)a[i] + (double)b[i];
}

void ref_axpy(double *y, const float *x, float alpha, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] += (double)alpha * x[i];
}

void ref_scale(double *out, const float *x, float s, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = (double)s * x[i];
}

void ref_bias_broadcast(double *out, const float *bias, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) out[(size_t)r * cols + c] = bias[c];
}

void ref_bias_backward(double *dbias, const float *dout, int rows, int cols)
{
    for (int c = 0; c < cols; c++) {
        double sum = 0.0;
        for (int r = 0; r < rows; r++) sum += dout[(size_t)r * cols + c];
        dbias[c] += sum;
    }
}

void ref_relu_forward(double *out, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = x[i] > 0.0f ? x[i] : 0.0;
}

void ref_relu_backward(double *dx, const float *x, const float *dout, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] > 0.0f) dx[i] += dout[i];
}

static const double SQRT_2_OVER_PI = 0.79788456080286535588; /* sqrt(2/pi) */

void ref_gelu_forward(double *out, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        out[i] = 0.5 * v * (1.0 + tanh(SQRT_2_OVER_PI * (v + 0.044715 * v * v * v)));
    }
}

void ref_gelu_backward(double *dx, const float *x, const float *dout, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        double u = SQRT_2_OVER_PI * (v + 0.044715 * v * v * v);
        double sech = 1.0 / cosh(u); /* llm.c's form; cosh(u) overflows only past |u| ~ 710 */
        double du_dv = SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * v * v);
        dx[i] += dout[i] * (0.5 * (1.0 + tanh(u)) + 0.5 * v * sech * sech * du_dv);
    }
}

/* ---- row-wise --------------------------------------------------------------------- */

/* log Σ_j exp(x_j) of a row of n, with the max subtracted first (as the softmax kernels
 * do), in double. */
static double ref_log_sum_exp(const float *x, int n)
{
    double maxval = x[0];
    for (int j = 1; j < n; j++)
        if (x[j] > maxval) maxval = x[j];
    double sum = 0.0;
    for (int j = 0; j < n; j++) sum += exp(x[j] - maxval);
    return maxval + log(sum);
}

/* Row r keeps all its columns, or, causal, row t = r mod T of its head's (T,T) block keeps
 * columns 0..t: out_j = exp(x_j − log Σ_k exp(x_k)) there. */
void ref_softmax_forward(double *out, const float *x, int rows, int cols, bool causal)
{
    for (size_t r = 0; r < (size_t)rows; r++) {
        const int kept = causal ? (int)(r % (size_t)cols) + 1 : cols;
        const double lse = ref_log_sum_exp(x + r * cols, kept);
        for (int j = 0; j < cols; j++) out[r * cols + j] = j < kept ? exp(x[r * cols + j] - lse) : 0.0;
    }
}

void ref_softmax_backward(double *dx, const float *out, const float *dout, int rows, int cols,
                          bool causal)
{
    for (size_t r = 0; r < (size_t)rows; r++) {
        const int kept = causal ? (int)(r % (size_t)cols) + 1 : cols;
        double dot = 0.0;
        for (int j = 0; j < kept; j++) dot += (double)dout[r * cols + j] * out[r * cols + j];
        for (int i = 0; i < kept; i++) dx[r * cols + i] += out[r * cols + i] * (dout[r * cols + i] - dot);
    }
}

void ref_layernorm_forward(double *out, double *mean, double *rstd, const float *x,
                           const float *weight, const float *bias, int rows, int cols,
                           float eps)
{
    for (int r = 0; r < rows; r++) {
        const float *x_r = x + (size_t)r * cols;
        double m = 0.0;
        for (int j = 0; j < cols; j++) m += x_r[j];
        m /= cols;
        double var = 0.0;
        for (int j = 0; j < cols; j++) var += (x_r[j] - m) * (x_r[j] - m);
        var /= cols;
        double s = 1.0 / sqrt(var + eps);
        for (int j = 0; j < cols; j++)
            out[(size_t)r * cols + j] = (x_r[j] - m) * s * weight[j] + bias[j];
        mean[r] = m;
        rstd[r] = s;
    }
}

void ref_layernorm_backward(double *dx, double *dweight, double *dbias, const float *dout,
                            const float *x, const float *weight, const float *mean,
                            const float *rstd, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        size_t off = (size_t)r * cols;
        double m = mean[r], s = rstd[r];
        double dnorm_mean = 0.0, dnorm_norm_mean = 0.0;
        for (int j = 0; j < cols; j++) {
            double norm = (x[off + j] - m) * s;
            double dnorm = (double)dout[off + j] * weight[j];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= cols;
        dnorm_norm_mean /= cols;
        for (int j = 0; j < cols; j++) {
            double norm = (x[off + j] - m) * s;
            double dnorm = (double)dout[off + j] * weight[j];
            dx[off + j] += s * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
            dweight[j] += dout[off + j] * norm;
            dbias[j] += dout[off + j];
        }
    }
}

/* ---- losses ----------------------------------------------------------------------- */

double ref_mse_forward(const float *pred, const float *target, size_t n)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)pred[i] - (double)target[i];
        sum += d * d;
    }
    return sum / (double)n;
}

void ref_mse_backward(double *dpred, const float *pred, const float *target, float dloss, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dpred[i] += (double)dloss * 2.0 / (double)n * ((double)pred[i] - (double)target[i]);
}

double ref_cross_entropy_forward(const float *logits, const int32_t *targets, int rows, int V)
{
    double total = 0.0;
    for (int r = 0; r < rows; r++) {
        const float *x = logits + (size_t)r * V;
        total += ref_log_sum_exp(x, V) - x[targets[r]]; /* −log(exp(x_t) / Σ_j exp(x_j)) */
    }
    return total / rows;
}

void ref_cross_entropy_backward(double *dlogits, const float *logits, const int32_t *targets,
                                float dloss, int rows, int V)
{
    for (int r = 0; r < rows; r++) {
        const float *x = logits + (size_t)r * V;
        double lse = ref_log_sum_exp(x, V);
        for (int j = 0; j < V; j++) {
            double softmax = exp(x[j] - lse);
            double onehot = j == targets[r] ? 1.0 : 0.0;
            dlogits[(size_t)r * V + j] += (double)dloss / rows * (softmax - onehot);
        }
    }
}

/* ---- dropout ---------------------------------------------------------------------- */

void ref_dropout_forward(double *out, uint8_t *mask, const float *x, float p, Pcg32 *rng, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mask[i] = pcg32_float(rng) >= p;
        out[i] = mask[i] ? (double)x[i] / (1.0 - (double)p) : 0.0;
    }
}

void ref_dropout_backward(double *dx, const float *dout, const uint8_t *mask, float p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (mask[i]) dx[i] += (double)dout[i] / (1.0 - (double)p);
}

void ref_dropout_counter_mask(uint8_t *mask, const CounterKey *key, float p, size_t n)
{
    for (size_t i = 0; i < n; i++) mask[i] = ref_counter_draw(key, i) >= p;
}

/* ---- causal attention ------------------------------------------------------------- */

/* Row i of head bh: the softmax probabilities P[0..i] of its scaled scores (double),
 * and its log-sum-exp. */
static double attention_row(double *P, const float *q, const float *k, int bh, int T, int D, int i)
{
    const double scale = 1.0 / sqrt((double)D);
    double mx = -INFINITY, sum = 0.0;
    for (int j = 0; j <= i; j++) {
        double s = 0.0;
        for (int d = 0; d < D; d++) s += (double)q[((size_t)bh * T + i) * D + d] * k[((size_t)bh * T + j) * D + d];
        P[j] = s * scale;
        mx = fmax(mx, P[j]);
    }
    for (int j = 0; j <= i; j++) sum += exp(P[j] - mx);
    for (int j = 0; j <= i; j++) P[j] = exp(P[j] - mx) / sum;
    return mx + log(sum);
}

/* The dropout factor of element (bh, i, j): keep/(1 − p), or 1 without a mask. */
static double drop_factor(const uint8_t *mask, float p, int bh, int T, int i, int j)
{
    return mask ? mask[((size_t)bh * T + i) * T + j] / (1.0 - (double)p) : 1.0;
}

void ref_attention_forward(double *out, double *lse, const float *q, const float *k, const float *v,
                           const uint8_t *mask, float p, int BH, int T, int D)
{
    double *P = malloc((size_t)T * sizeof *P);
    for (int bh = 0; bh < BH; bh++)
        for (int i = 0; i < T; i++) {
            const double row_lse = attention_row(P, q, k, bh, T, D, i);
            if (lse) lse[(size_t)bh * T + i] = row_lse;
            for (int d = 0; d < D; d++) {
                double o = 0.0;
                for (int j = 0; j <= i; j++) o += P[j] * drop_factor(mask, p, bh, T, i, j) * v[((size_t)bh * T + j) * D + d];
                out[((size_t)bh * T + i) * D + d] = o;
            }
        }
    free(P);
}

void ref_attention_backward(double *dq, double *dk, double *dv, const float *dout, const float *q,
                            const float *k, const float *v, const uint8_t *mask, float p, int BH, int T, int D)
{
    const double scale = 1.0 / sqrt((double)D);
    double *P = malloc((size_t)T * sizeof *P), *dP = malloc((size_t)T * sizeof *dP);
    for (int bh = 0; bh < BH; bh++)
        for (int i = 0; i < T; i++) {
            attention_row(P, q, k, bh, T, D, i);
            const float *doi = dout + ((size_t)bh * T + i) * D;
            double dot = 0.0; /* Σ_j P_j dP_j */
            for (int j = 0; j <= i; j++) {
                const double f = drop_factor(mask, p, bh, T, i, j);
                double da = 0.0;
                for (int d = 0; d < D; d++) {
                    da += (double)doi[d] * v[((size_t)bh * T + j) * D + d];
                    dv[((size_t)bh * T + j) * D + d] += P[j] * f * doi[d];
                }
                dP[j] = da * f;
                dot += P[j] * dP[j];
            }
            for (int j = 0; j <= i; j++) {
                const double ds = P[j] * (dP[j] - dot) * scale;
                for (int d = 0; d < D; d++) {
                    dq[((size_t)bh * T + i) * D + d] += ds * k[((size_t)bh * T + j) * D + d];
                    dk[((size_t)bh * T + j) * D + d] += ds * q[((size_t)bh * T + i) * D + d];
                }
            }
        }
    free(P);
    free(dP);
}

/* ---- embeddings ------------------------------------------------------------------- */

void ref_embedding_forward(double *out, const int32_t *ids, const float *wte, const float *wpe,
                           int B, int T, int C)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                size_t bt = (size_t)b * T + t;
                double position = wpe ? wpe[(size_t)t * C + c] : 0.0;
                out[bt * C + c] = (double)wte[(size_t)ids[bt] * C + c] + position;
            }
}

void ref_embedding_backward(double *dwte, double *dwpe, const float *dout, const int32_t *ids,
                            int B, int T, int C)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                size_t bt = (size_t)b * T + t;
                if (dwte) dwte[(size_t)ids[bt] * C + c] += dout[bt * C + c];
                if (dwpe) dwpe[(size_t)t * C + c] += dout[bt * C + c];
            }
}

/* ---- attention heads -------------------------------------------------------------- */

/* Element i of a (B,H,T,D) array, [b,h,t,d], is channel h·D + d of token (b,t) in a
 * (B,T,width) array: its index there. */
static size_t ref_wide_of(size_t i, int width, int T, int H, int D)
{
    const size_t d = i % (size_t)D, t = i / (size_t)D % (size_t)T, h = i / ((size_t)D * T) % (size_t)H;
    const size_t b = i / ((size_t)D * T * H);
    return (b * (size_t)T + t) * (size_t)width + h * (size_t)D + d;
}

void ref_rows_to_heads(double *heads, const float *rows, int stride, int B, int T, int C, int H, bool add)
{
    for (size_t i = 0; i < (size_t)B * T * C; i++)
        heads[i] = (add ? heads[i] : 0.0) + rows[ref_wide_of(i, stride, T, H, C / H)];
}

void ref_heads_to_rows(double *rows, const float *heads, int stride, int B, int T, int C, int H, bool add)
{
    for (size_t i = 0; i < (size_t)B * T * C; i++) {
        double *row = &rows[ref_wide_of(i, stride, T, H, C / H)];
        *row = (add ? *row : 0.0) + heads[i];
    }
}

/* ---- sampling --------------------------------------------------------------------- */

int ref_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 0; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

int ref_sample_categorical(const float *probs, int n, float u)
{
    double cumulative = 0.0;
    int last_nonzero = 0;
    for (int i = 0; i < n; i++) {
        cumulative += probs[i];
        if (probs[i] > 0.0f) last_nonzero = i;
        if ((double)u < cumulative) return i;
    }
    return last_nonzero;
}

/* ---- optimizer updates ------------------------------------------------------------ */

void ref_sgd_update(double *param, double *velocity, const float *grad, float lr, float momentum,
                    size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double step = grad[i];
        if (momentum != 0.0f && velocity) {
            velocity[i] = (double)momentum * velocity[i] + grad[i];
            step = velocity[i];
        }
        param[i] -= (double)lr * step;
    }
}

void ref_adamw_update(double *param, double *m, double *v, const float *grad, float lr,
                      float beta1, float beta2, float eps, float weight_decay, int t, size_t n)
{
    double bias1 = 1.0 - pow(beta1, t), bias2 = 1.0 - pow(beta2, t);
    for (size_t i = 0; i < n; i++) {
        double g = grad[i];
        param[i] -= (double)lr * weight_decay * param[i];
        m[i] = beta1 * m[i] + (1.0 - beta1) * g;
        v[i] = beta2 * v[i] + (1.0 - beta2) * g * g;
        double m_hat = m[i] / bias1, v_hat = v[i] / bias2;
        param[i] -= lr * m_hat / (sqrt(v_hat) + eps);
    }
}
