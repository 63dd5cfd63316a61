/*
 * ops_linear.c — the ops that multiply and add: linear, matmul, add.
 *
 * Every product goes to BLAS through k_matmul; these ops only check shapes, allocate the
 * output, and record what backward needs. Letters: N rows (leading dims flattened), IN/OUT
 * a linear's widths, M/K/N a matmul's sizes.
 */
#include "autograd/ops.h"

#include <string.h>

#include "tensor/kernels.h"
#include "autograd/ops_internal.h"

/* ---- linear ------------------------------------------------------------------------- */

/* What a linear's backward needs: x (n,in) times W (in,out). */
typedef struct LinearAttrs {
    int n, in, out;
} LinearAttrs;
OPS_ATTRS_FIT(LinearAttrs);

/* Backward of linear. Forward was out = x·W + b, with x (N,IN), W (IN,OUT), b (OUT):
 *   dx += dout · W^T      (N,OUT)·(OUT,IN)
 *   dW += x^T · dout      (IN,N)·(N,OUT)
 *   db += Σ_rows dout */
static RematStatus linear_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    const LinearAttrs *attrs = ops_attrs(node);
    const int N = attrs->n, IN = attrs->in, OUT = attrs->out;
    Tensor *x = saved_tensor(node, 0), *w = saved_tensor(node, 1);
    const RematStatus status = x && w ? REMAT_OK : remat_last_status();
    if (status == REMAT_OK && dinputs[0])
        k_matmul(dinputs[0]->f32, dout->f32, w->f32, 1, N, IN, OUT, CblasNoTrans, CblasTrans, 1.0f, 1.0f);
    if (status == REMAT_OK && dinputs[1])
        k_matmul(dinputs[1]->f32, x->f32, dout->f32, 1, IN, OUT, N, CblasTrans, CblasNoTrans, 1.0f, 1.0f);
    if (status == REMAT_OK && dinputs[2]) k_bias_backward(dinputs[2]->f32, dout->f32, N, OUT);
    tensor_free(x);
    tensor_free(w);
    return status;
}

static const OpInfo LINEAR_OP = {.name = "linear", .backward = linear_backward};

Var *op_linear(Var *x, Var *weight, Var *bias, const char *tag)
{
    Var *inputs[3] = {x, weight, bias};
    char label[64], xs[48], ws[48];
    if (ops_check_inputs(label, sizeof label, "linear", tag, inputs, 2, NULL) != REMAT_OK) return NULL;
    const Tensor *X = x->value, *W = weight->value;
    const int IN = X->shape[X->ndim - 1];
    if (W->ndim != 2 || W->shape[0] != IN)
        return remat_fail_null(REMAT_EINVAL, "%s: x %s does not match weight %s (want weight (%d, OUT), stored "
                               "[in, out])", label, tensor_shape_str(xs, sizeof xs, X),
                               tensor_shape_str(ws, sizeof ws, W), IN);
    const int OUT = W->shape[1], N = (int)(X->numel / IN); /* rows: the leading dims */
    if (bias && (bias->value->ndim != 1 || bias->value->shape[0] != OUT))
        return remat_fail_null(REMAT_EINVAL, "%s: bias has %zu elements, want (%d)", label, bias->value->numel, OUT);

    int shape[TENSOR_MAX_DIMS];
    memcpy(shape, X->shape, sizeof shape);
    shape[X->ndim - 1] = OUT;
    bool cached;
    Tensor *out = ops_output(&LINEAR_OP, tag, 0, DTYPE_F32, X->ndim, shape, &cached);
    if (!out) return NULL;
    if (!cached) {
        /* With a bias, out starts as the bias in every row and the product is added onto
         * it (beta = 1): one pass over out fewer than adding the bias afterwards, and
         * sgemm skips the pass that clears C for beta = 0. */
        if (bias) k_bias_broadcast(out->f32, bias->value->f32, N, OUT);
        k_matmul(out->f32, X->f32, W->f32, 1, N, OUT, IN, CblasNoTrans, CblasNoTrans, 1.0f, bias ? 1.0f : 0.0f);
    }

    const LinearAttrs attrs = {.n = N, .in = IN, .out = OUT};
    Tensor *save[2] = {x->value, weight->value};
    return ops_record(&LINEAR_OP, tag, inputs, bias ? 3 : 2, out, save, 2, &attrs, sizeof attrs);
}

/* ---- matmul ------------------------------------------------------------------------- */

/* What a matmul's backward needs: batch products alpha · a (m,k) · op(b) (k,n), op(b)
 * being b transposed when trans_b; shared_b when one 2-D b serves every batch element. */
typedef struct MatmulAttrs {
    int batch, m, n, k;
    bool trans_b, shared_b;
    float alpha;
} MatmulAttrs;
OPS_ATTRS_FIT(MatmulAttrs);

/* Backward of matmul. Forward was out = alpha · a · op(b), per batch element, with
 * a (M,K), op(b) (K,N), out (M,N):
 *   da += alpha · dout · op(b)^T
 *   db += alpha · a^T · dout            when b is stored (K,N)
 *   db += alpha · dout^T · a            when b is stored (N,K) (transB): d(b^T) transposed
 * A 2-D b shared by every batch element was multiplied with a's rows flattened, so its
 * gradient is one product over all rows. */
static RematStatus matmul_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    const MatmulAttrs *attrs = ops_attrs(node);
    const int M = attrs->m, N = attrs->n, K = attrs->k;
    Tensor *a = saved_tensor(node, 0), *b = saved_tensor(node, 1);
    const RematStatus status = a && b ? REMAT_OK : remat_last_status();
    /* With a shared b, treat the whole batch as one (batch·M, K) matrix. */
    const int nb = attrs->shared_b ? 1 : attrs->batch, rows = attrs->shared_b ? attrs->batch * M : M;
    const float alpha = attrs->alpha;
    const CBLAS_TRANSPOSE undo_b = attrs->trans_b ? CblasNoTrans : CblasTrans;
    if (status == REMAT_OK && dinputs[0])
        k_matmul(dinputs[0]->f32, dout->f32, b->f32, nb, rows, K, N, CblasNoTrans, undo_b, alpha, 1.0f);
    if (status == REMAT_OK && dinputs[1] && !attrs->trans_b)
        k_matmul(dinputs[1]->f32, a->f32, dout->f32, nb, K, N, rows, CblasTrans, CblasNoTrans, alpha, 1.0f);
    if (status == REMAT_OK && dinputs[1] && attrs->trans_b)
        k_matmul(dinputs[1]->f32, dout->f32, a->f32, nb, N, K, rows, CblasTrans, CblasNoTrans, alpha, 1.0f);
    tensor_free(a);
    tensor_free(b);
    return status;
}

static const OpInfo MATMUL_OP = {.name = "matmul", .backward = matmul_backward};

Var *op_matmul(Var *a, Var *b, CBLAS_TRANSPOSE transB, float alpha, const char *tag)
{
    Var *inputs[2] = {a, b};
    char label[64], as[48], bs[48];
    if (ops_check_inputs(label, sizeof label, "matmul", tag, inputs, 2, NULL) != REMAT_OK) return NULL;
    const Tensor *A = a->value, *Bt = b->value;
    if (A->ndim < 2 || Bt->ndim < 2)
        return remat_fail_null(REMAT_EINVAL, "%s: operands must have at least 2 dims, got %s and %s", label,
                               tensor_shape_str(as, sizeof as, A), tensor_shape_str(bs, sizeof bs, Bt));
    const int M = A->shape[A->ndim - 2], K = A->shape[A->ndim - 1];
    const int bk = transB == CblasTrans ? Bt->shape[Bt->ndim - 1] : Bt->shape[Bt->ndim - 2];
    const int N = transB == CblasTrans ? Bt->shape[Bt->ndim - 2] : Bt->shape[Bt->ndim - 1];
    const int batch = (int)(A->numel / ((size_t)M * (size_t)K));
    const bool shared_b = Bt->ndim == 2 && A->ndim > 2;
    bool batch_matches = shared_b || (A->ndim == Bt->ndim && !memcmp(A->shape, Bt->shape, (size_t)(A->ndim - 2) * sizeof(int)));
    if (bk != K || !batch_matches)
        return remat_fail_null(REMAT_EINVAL, "%s: shapes %s and %s%s do not multiply", label,
                               tensor_shape_str(as, sizeof as, A), tensor_shape_str(bs, sizeof bs, Bt),
                               transB == CblasTrans ? " (transposed)" : "");

    int shape[TENSOR_MAX_DIMS];
    memcpy(shape, A->shape, sizeof shape);
    shape[A->ndim - 1] = N;
    bool cached;
    Tensor *out = ops_output(&MATMUL_OP, tag, 0, DTYPE_F32, A->ndim, shape, &cached);
    if (!out) return NULL;
    if (!cached) /* with a shared b, the whole batch is one (batch·M, K) matrix */
        k_matmul(out->f32, A->f32, Bt->f32, shared_b ? 1 : batch, shared_b ? batch * M : M, N, K, CblasNoTrans,
                 transB, alpha, 0.0f);

    const MatmulAttrs attrs = {.batch = batch, .m = M, .n = N, .k = K, .trans_b = transB == CblasTrans,
                               .shared_b = shared_b, .alpha = alpha};
    Tensor *save[2] = {a->value, b->value};
    return ops_record(&MATMUL_OP, tag, inputs, 2, out, save, 2, &attrs, sizeof attrs);
}

/* ---- add ---------------------------------------------------------------------------- */

/* Backward of add. Forward was out = a + b: da += dout, db += dout. */
static RematStatus add_backward(Node *node, const Tensor *dout, Tensor *const dinputs[])
{
    (void)node;
    for (int i = 0; i < 2; i++)
        if (dinputs[i]) k_axpy(dinputs[i]->f32, dout->f32, 1.0f, dout->numel);
    return REMAT_OK;
}

static const OpInfo ADD_OP = {.name = "add", .backward = add_backward};

Var *op_add(Var *a, Var *b, const char *tag)
{
    Var *inputs[2] = {a, b};
    char label[64], as[48], bs[48];
    if (ops_check_inputs(label, sizeof label, "add", tag, inputs, 2, NULL) != REMAT_OK) return NULL;
    if (!tensor_same_shape(a->value, b->value))
        return remat_fail_null(REMAT_EINVAL, "%s: shapes %s and %s differ", label,
                               tensor_shape_str(as, sizeof as, a->value), tensor_shape_str(bs, sizeof bs, b->value));
    bool cached;
    Tensor *out = ops_output(&ADD_OP, tag, 0, DTYPE_F32, a->value->ndim, a->value->shape, &cached);
    if (!out) return NULL;
    if (!cached) k_add(out->f32, a->value->f32, b->value->f32, out->numel);
    return ops_record(&ADD_OP, tag, inputs, 2, out, NULL, 0, NULL, 0);
}
