/*
 * test_autograd.c — the engine (tape, grad mode, saved-tensor path, backward, memory
 * honesty) and every op's gradient against central finite differences.
 *
 * Gradcheck tolerance: errors are measured as |analytic − numeric| / (1 + |numeric|).
 * The forward runs in float32, so L = Σ out·r carries a rounding error of about
 * 1e-7·|L|; divided by the 2·eps = 2e-2 step that is ~1e-5 for the sizes here, and the
 * central difference's truncation error is eps²·|f'''| ~ 1e-4. A tolerance of 2e-3 sits
 * well above both, and far below what a wrong derivative gives (a missing factor, a wrong
 * sign or a transposed product is off by O(1)).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autograd/autograd.h"
#include "tests/gradcheck.h"
#include "autograd/ops.h"
#include "tensor/kernels.h"
#include "tests/kernels_ref.h"

#define GRADCHECK_EPS 1e-2
#define GRADCHECK_TOL 2e-3

/* Every test starts with an empty tape and ledger and must leave them so. */
static int clean_state(void **state)
{
    (void)state;
    tape_reset();
    grad_set_enabled(true);
    remat_clear_error();
    if (mem_live_blocks() != 0) {
        fprintf(stderr, "ledger not empty: %zu blocks live, %zu bytes resident\n",
                mem_live_blocks(), mem_resident());
        return -1;
    }
    return 0;
}

static Var *param(int rows, int cols, uint64_t seed)
{
    return gradcheck_input(2, (int[]){rows, cols}, true, seed, -1.0f, 1.0f);
}

static Var *constant(int rows, int cols, uint64_t seed)
{
    return gradcheck_input(2, (int[]){rows, cols}, false, seed, -1.0f, 1.0f);
}

/* ---- the engine ---------------------------------------------------------------------- */

static void test_backward_of_a_single_linear_matches_hand_computation(void **state)
{
    (void)state;
    /* x (1,2) = [1 2], W (2,1) = [3; 4], b = [0.5]: y = 1·3 + 2·4 + 0.5 = 11.5;
     * loss = mse(y, 0) = y² = 132.25; dloss/dy = 2y = 23; dW = x^T·23 = [23; 46];
     * db = 23; dx = 23·W^T = [69 92]. */
    Tensor *xt = tensor_create(MEM_ACT, DTYPE_F32, 2, (int[]){1, 2});
    Tensor *wt = tensor_create(MEM_PARAM, DTYPE_F32, 2, (int[]){2, 1});
    Tensor *bt = tensor_create(MEM_PARAM, DTYPE_F32, 1, (int[]){1});
    Tensor *tt = tensor_zeros(MEM_ACT, 2, (int[]){1, 1});
    xt->f32[0] = 1, xt->f32[1] = 2, wt->f32[0] = 3, wt->f32[1] = 4, bt->f32[0] = 0.5f;
    Var *x = var_create(xt, true, "x"), *w = var_create(wt, true, "w"), *b = var_create(bt, true, "b");
    Var *target = var_create(tt, false, "target");

    Var *y = op_linear(x, w, b, "fc");
    Var *loss = op_mse(y, target, "loss");
    assert_non_null(loss);
    assert_float_equal(loss->value->f32[0], 132.25f, 0.0f); /* exact in float */
    assert_int_equal(backward(loss), REMAT_OK);
    assert_float_equal(w->grad->f32[0], 23.0f, 0.0f);
    assert_float_equal(w->grad->f32[1], 46.0f, 0.0f);
    assert_float_equal(b->grad->f32[0], 23.0f, 0.0f);
    assert_float_equal(x->grad->f32[0], 69.0f, 0.0f);
    assert_float_equal(x->grad->f32[1], 92.0f, 0.0f);
    assert_int_equal(w->grad->kind, MEM_GRAD);

    Var *all[] = {x, w, b, target, y, loss};
    for (int i = 0; i < 6; i++) var_free(all[i]);
    tape_reset();
}

static void test_unused_input_gets_zero_gradient(void **state)
{
    (void)state;
    Var *a = param(2, 3, 1), *b = param(2, 3, 2), *unused = param(2, 3, 3);
    Var *s = op_add(a, b, NULL);
    Var *t = op_add(s, unused, NULL);
    Var *target = constant(2, 3, 4);
    Var *loss = op_mse(s, target, NULL); /* t is computed but not used by the loss */
    assert_int_equal(backward(loss), REMAT_OK);
    assert_non_null(a->grad);
    /* Nothing flowed to `unused`: backward never reached the node that used it. */
    assert_null(unused->grad);
    Var *all[] = {a, b, unused, s, t, target, loss};
    for (int i = 0; i < 7; i++) var_free(all[i]);
    tape_reset();
}

static void test_gradient_from_two_uses_is_summed(void **state)
{
    (void)state;
    /* loss = mse(a + a, 0) = mean(4a²); dloss/da = 8a/n. */
    Var *a = param(1, 4, 5);
    Var *target = var_create(tensor_zeros(MEM_ACT, 2, (int[]){1, 4}), false, NULL);
    Var *twice = op_add(a, a, NULL);
    Var *loss = op_mse(twice, target, NULL);
    assert_int_equal(backward(loss), REMAT_OK);
    for (int i = 0; i < 4; i++) {
        /* 8a/4 = 2a, computed in float through two accumulations: exact up to rounding. */
        assert_float_equal(a->grad->f32[i], 2.0f * a->value->f32[i], 1e-6f);
    }
    Var *all[] = {a, target, twice, loss};
    for (int i = 0; i < 4; i++) var_free(all[i]);
    tape_reset();
}

/* x feeds relu and gelu, whose outputs are added. Backward runs gelu first (it is later
 * on the tape), then relu: both add their share onto x's zero-filled buffer, in that
 * order, and the result has the bits of the two kernels accumulating so by hand. */
static void test_a_value_with_two_consumers_gets_both_shares(void **state)
{
    (void)state;
    Var *x = param(4, 6, 10);
    Var *r = op_relu(x, NULL), *g = op_gelu(x, NULL);
    Var *sum = op_add(r, g, NULL);
    Var *dout = constant(4, 6, 11);
    assert_int_equal(backward_from(sum, dout->value), REMAT_OK);
    const size_t n = x->value->numel;
    float *want = calloc(n, sizeof *want);
    assert_non_null(want);
    k_gelu_backward(want, x->value->f32, dout->value->f32, n);
    k_relu_backward(want, x->value->f32, dout->value->f32, n); /* relu(x) > 0 iff x > 0 */
    assert_memory_equal(x->grad->f32, want, n * sizeof *want);
    free(want);
    Var *all[] = {x, r, g, sum, dout};
    for (int i = 0; i < 5; i++) var_free(all[i]);
    tape_reset();
}

static void test_grad_mode_off_records_nothing(void **state)
{
    (void)state;
    Var *x = constant(4, 8, 6), *w = param(8, 8, 7);
    bool was = grad_set_enabled(false);
    Var *h = op_linear(x, w, NULL, NULL);
    Var *y = op_relu(h, NULL);
    grad_set_enabled(was);
    var_free(h);
    assert_int_equal(tape_current()->count, 0);
    assert_null(y->creator);
    assert_int_equal(backward_from(y, y->value), REMAT_ESTATE);
    assert_non_null(strstr(remat_last_error(), "requires_grad"));
    var_free(y);
    var_free(x);
    var_free(w);
}

static void test_ops_reject_bad_shapes_and_null_inputs(void **state)
{
    (void)state;
    Var *x = constant(4, 8, 8), *w = param(7, 3, 9), *b = param(1, 5, 10);
    assert_null(op_linear(x, w, NULL, "mlp.fc"));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "mlp.fc"));
    assert_null(op_add(x, w, NULL));
    assert_null(op_matmul(x, w, CblasNoTrans, 1.0f, NULL));
    assert_null(op_mse(x, w, NULL));
    remat_clear_error();
    assert_null(op_relu(NULL, NULL));
    assert_non_null(strstr(remat_last_error(), "earlier op"));
    Var *w2 = param(8, 5, 11);
    assert_null(op_linear(x, w2, b, NULL)); /* bias must be (5), not (1,5) */
    assert_int_equal(tape_current()->count, 0);
    var_free(x);
    var_free(w);
    var_free(b);
    var_free(w2);
}

static void test_reading_a_freed_saved_tensor_is_a_clear_error(void **state)
{
    (void)state;
    Var *x = constant(2, 4, 12), *w = param(4, 4, 13);
    Var *target = constant(2, 4, 14);
    tape_set_stage(NULL, "h.0");
    Var *h = op_linear(x, w, NULL, "mlp.fc");
    Var *a = op_relu(h, "mlp.act");
    tape_set_stage(NULL, NULL);
    Var *loss = op_mse(a, target, NULL);
    assert_int_equal(backward(loss), REMAT_OK);
    /* Backward released every saved tensor; a second backward cannot run. */
    assert_int_equal(backward(loss), REMAT_ESTATE);
    Node *relu = a->creator;
    assert_null(saved_tensor(relu, 0));
    assert_int_equal(remat_last_status(), REMAT_ESTATE);
    assert_non_null(strstr(remat_last_error(), "saved tensor 0 of relu #1 (h.0.mlp.act) was freed"));
    Var *all[] = {x, w, target, h, a, loss};
    for (int i = 0; i < 6; i++) var_free(all[i]);
    tape_reset();
}

static void test_nodes_are_named_and_printed(void **state)
{
    (void)state;
    Var *x = constant(2, 4, 15), *w = param(4, 4, 16);
    tape_set_stage(NULL, "h.3");
    Var *h = op_linear(x, w, NULL, "mlp.fc");
    tape_set_stage(NULL, NULL);
    Var *a = op_relu(h, NULL);
    assert_string_equal(h->creator->name, "h.3.mlp.fc");
    assert_string_equal(a->creator->name, "node_1");

    char buf[2048] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    tape_print(tape_current(), f);
    fclose(f);
    assert_non_null(strstr(buf, "h.3.mlp.fc"));
    assert_non_null(strstr(buf, "linear"));
    assert_non_null(strstr(buf, "(2,4)"));
    assert_non_null(strstr(buf, "[0] 32 B")); /* the linear's saved input, 2·4 floats */

    char path[] = "/tmp/remat_tape_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(tape_dump_dot(tape_current(), path), REMAT_OK);
    FILE *dot = fopen(path, "r");
    char dbuf[2048] = {0};
    size_t got = fread(dbuf, 1, sizeof dbuf - 1, dot);
    fclose(dot);
    unlink(path);
    assert_true(got > 0);
    assert_non_null(strstr(dbuf, "digraph tape"));
    assert_non_null(strstr(dbuf, "n0 -> n1"));
    assert_int_equal(tape_dump_dot(tape_current(), "/nonexistent-dir/tape.dot"), REMAT_EIO);

    Var *all[] = {x, w, h, a};
    for (int i = 0; i < 4; i++) var_free(all[i]);
    tape_reset();
}

/* The ACT ledger is honest: an intermediate nobody saved is freed when its Var is
 * dropped, a saved one lives exactly until backward has used it, and after backward
 * nothing of the activations remains. */
static void test_activations_live_exactly_as_long_as_needed(void **state)
{
    (void)state;
    enum { B = 8, W = 16 };
    const size_t act = (size_t)B * W * sizeof(float);
    Var *x = constant(B, W, 17), *w1 = param(W, W, 18), *w2 = param(W, W, 19), *t = constant(B, W, 20);
    size_t base = mem_current(MEM_ACT); /* x and t */
    mem_reset_peaks();

    Var *h1 = op_linear(x, w1, NULL, "fc1");
    Var *a1 = op_relu(h1, "act1");
    var_free(h1); /* relu saved its output, not its input: h1 is gone now */
    assert_int_equal(mem_current(MEM_ACT), base + act);
    Var *h2 = op_linear(a1, w2, NULL, "fc2");
    var_free(a1); /* still saved by relu and by fc2 (the same tensor) */
    assert_int_equal(mem_current(MEM_ACT), base + 2 * act);
    Var *loss = op_mse(h2, t, NULL);
    var_free(h2); /* saved by mse */
    assert_int_equal(mem_current(MEM_ACT), base + 2 * act + sizeof(float));

    assert_int_equal(backward(loss), REMAT_OK);
    /* Only the loss value itself is left of the activations. */
    assert_int_equal(mem_current(MEM_ACT), base + sizeof(float));
    var_free(loss);
    tape_reset();
    assert_int_equal(mem_current(MEM_ACT), base);
    var_free(x);
    var_free(w1);
    var_free(w2);
    var_free(t);
    assert_int_equal(mem_current(MEM_GRAD), 0);
}

static void test_budget_overrun_inside_an_op_leaves_no_node(void **state)
{
    (void)state;
    Var *x = constant(64, 64, 21), *w = param(64, 64, 22);
    mem_set_budget(mem_resident() + 100);
    Var *y = op_linear(x, w, NULL, "fc");
    mem_set_budget(0);
    assert_null(y);
    assert_int_equal(remat_last_status(), REMAT_EOOM);
    assert_int_equal(tape_current()->count, 0);
    var_free(x);
    var_free(w);
}

/* A chain of ops checked once at the end reports the failure that broke it, not the NULL
 * input the next op saw: an OOM in the middle of a layer stays an OOM, with the ledger's
 * message. */
static void test_a_chain_of_ops_keeps_the_first_failure(void **state)
{
    (void)state;
    Var *x = constant(64, 64, 23), *w = param(64, 64, 24);
    mem_set_budget(mem_resident() + 100);
    Var *h = op_linear(x, w, NULL, "fc");
    Var *a = op_gelu(h, "act");
    Var *y = op_add(a, x, "residual");
    mem_set_budget(0);
    assert_null(y);
    assert_int_equal(remat_last_status(), REMAT_EOOM);
    assert_non_null(strstr(remat_last_error(), "resident"));
    var_free(x);
    var_free(w);
}

/* ---- gradchecks ------------------------------------------------------------------------ */

static Var *fn_linear(void *ctx, Var *const *in) { (void)ctx; return op_linear(in[0], in[1], in[2], NULL); }
static Var *fn_linear_3d(void *ctx, Var *const *in) { (void)ctx; return op_linear(in[0], in[1], NULL, NULL); }
static Var *fn_matmul(void *ctx, Var *const *in) { return op_matmul(in[0], in[1], *(CBLAS_TRANSPOSE *)ctx, 0.5f, NULL); }
static Var *fn_add(void *ctx, Var *const *in) { (void)ctx; return op_add(in[0], in[1], NULL); }
static Var *fn_relu(void *ctx, Var *const *in) { (void)ctx; return op_relu(in[0], NULL); }
static Var *fn_gelu(void *ctx, Var *const *in) { (void)ctx; return op_gelu(in[0], NULL); }
static Var *fn_mse(void *ctx, Var *const *in) { (void)ctx; return op_mse(in[0], in[1], NULL); }

static Var *fn_layernorm(void *ctx, Var *const *in) { (void)ctx; return op_layernorm(in[0], in[1], in[2], 1e-5f, NULL); }
static Var *fn_split(void *ctx, Var *const *in) { return op_split_heads(in[0], *(QkvPart *)ctx, 2, NULL); }
static Var *fn_merge(void *ctx, Var *const *in) { (void)ctx; return op_merge_heads(in[0], NULL); }
static Var *fn_causal_softmax(void *ctx, Var *const *in) { (void)ctx; return op_causal_softmax(in[0], NULL); }
static Var *fn_embedding(void *ctx, Var *const *in) { (void)ctx; return op_embedding(in[0], in[1], in[2], NULL); }
static Var *fn_cross_entropy(void *ctx, Var *const *in) { (void)ctx; return op_cross_entropy(in[0], in[1], NULL); }

/* Dropout in a gradcheck: every forward (the recorded one and each finite difference)
 * restarts the generator from the same state, so every forward draws the same mask and
 * the op is a fixed linear map. */
typedef struct DropoutCtx {
    Pcg32 start;
    TrainCtx train;
    float p;
} DropoutCtx;

static Var *fn_dropout(void *ctx, Var *const *in)
{
    DropoutCtx *c = ctx;
    c->train = (TrainCtx){.rng = c->start, .training = true};
    return op_dropout(in[0], c->p, &c->train, 0, NULL);
}

/* Counter-based dropout needs no restart: the same key gives the same mask every time. */
static TrainCtx GRADCHECK_COUNTER = {.training = true, .dropout_rng = DROPOUT_RNG_COUNTER, .seed = 61, .step = 3};
enum { GRADCHECK_SITE = 2 };
static Var *fn_dropout_counter(void *ctx, Var *const *in)
{
    return op_dropout(in[0], *(const float *)ctx, &GRADCHECK_COUNTER, GRADCHECK_SITE, NULL);
}

/* A hook that counts what ops say they regenerate. */
typedef struct Regenerated {
    int calls;
    const char *what;
    size_t numel;
} Regenerated;

static void note_regenerated(void *ctx, const OpInfo *op, const char *tag, const char *what, DType dtype, int ndim,
                             const int *shape)
{
    (void)op, (void)tag;
    Regenerated *r = ctx;
    r->calls++;
    r->what = what;
    r->numel = dtype_size(dtype);
    for (int d = 0; d < ndim; d++) r->numel *= (size_t)shape[d];
}

/* Fused attention with dropout p (the counter key above when p > 0). */
static Var *fn_attention_fused(void *ctx, Var *const *in)
{
    const float p = *(const float *)ctx;
    return op_attention_fused(in[0], in[1], in[2], p, &GRADCHECK_COUNTER, GRADCHECK_SITE, NULL);
}

/* An int32 Var (no gradient) of the given shape holding `values`. */
static Var *int_var(int ndim, const int *shape, const int32_t *values)
{
    Tensor *t = tensor_create(MEM_ACT, DTYPE_I32, ndim, shape);
    memcpy(t->i32, values, t->bytes);
    return var_create(t, false, "ids");
}

static void check_and_free(const char *label, GradcheckFn fn, void *ctx, Var **in, int n)
{
    GradcheckResult r = gradcheck(label, fn, ctx, in, n, GRADCHECK_EPS);
    if (r.worst_error > GRADCHECK_TOL)
        fail_msg("%s: input %d element %zu off by %.3e", label, r.worst_input, r.worst_index, r.worst_error);
    for (int i = 0; i < n; i++) var_free(in[i]);
}

static void test_linear_gradcheck(void **state)
{
    (void)state;
    Var *in[] = {param(5, 7, 30), param(7, 3, 31), gradcheck_input(1, (int[]){3}, true, 32, -1, 1)};
    check_and_free("linear", fn_linear, NULL, in, 3);
    /* Leading dims are flattened into rows. */
    Var *in3[] = {gradcheck_input(3, (int[]){2, 3, 4}, true, 33, -1, 1), param(4, 5, 34)};
    check_and_free("linear (2,3,4)", fn_linear_3d, NULL, in3, 2);
}

static void test_matmul_gradcheck(void **state)
{
    (void)state;
    CBLAS_TRANSPOSE no = CblasNoTrans, tr = CblasTrans;
    Var *batched[] = {gradcheck_input(3, (int[]){3, 4, 5}, true, 35, -1, 1),
                      gradcheck_input(3, (int[]){3, 5, 2}, true, 36, -1, 1)};
    check_and_free("matmul batched", fn_matmul, &no, batched, 2);
    Var *batched_t[] = {gradcheck_input(4, (int[]){2, 2, 4, 5}, true, 37, -1, 1),
                        gradcheck_input(4, (int[]){2, 2, 3, 5}, true, 38, -1, 1)};
    check_and_free("matmul batched b^T", fn_matmul, &tr, batched_t, 2);
    Var *shared_t[] = {gradcheck_input(3, (int[]){2, 3, 4}, true, 39, -1, 1), param(6, 4, 40)};
    check_and_free("matmul shared b^T", fn_matmul, &tr, shared_t, 2);
}

static void test_add_relu_gelu_mse_gradcheck(void **state)
{
    (void)state;
    Var *add[] = {param(3, 4, 41), param(3, 4, 42)};
    check_and_free("add", fn_add, NULL, add, 2);
    /* Keep relu's inputs away from its kink at 0, where the derivative does not exist. */
    Var *relu[] = {param(4, 6, 43)};
    for (size_t i = 0; i < relu[0]->value->numel; i++) {
        float *v = &relu[0]->value->f32[i];
        if (*v > -0.1f && *v < 0.1f) *v += *v < 0 ? -0.2f : 0.2f;
    }
    check_and_free("relu", fn_relu, NULL, relu, 1);
    Var *gelu[] = {gradcheck_input(2, (int[]){4, 6}, true, 44, -3, 3)};
    check_and_free("gelu", fn_gelu, NULL, gelu, 1);
    Var *mse[] = {param(3, 5, 45), constant(3, 5, 46)};
    check_and_free("mse", fn_mse, NULL, mse, 2);
}

static void test_layernorm_gradcheck(void **state)
{
    (void)state;
    /* x with a row mean far from 0, so the centring is exercised; weight around 1. */
    Var *in[] = {gradcheck_input(3, (int[]){2, 3, 8}, true, 50, 1.0f, 3.0f),
                 gradcheck_input(1, (int[]){8}, true, 51, 0.5f, 1.5f),
                 gradcheck_input(1, (int[]){8}, true, 52, -1.0f, 1.0f)};
    check_and_free("layernorm", fn_layernorm, NULL, in, 3);
    /* A frozen weight and bias: the op still gives x its gradient. */
    Var *frozen[] = {param(4, 8, 53), gradcheck_input(1, (int[]){8}, false, 54, 0.5f, 1.5f),
                     gradcheck_input(1, (int[]){8}, false, 55, -1.0f, 1.0f)};
    check_and_free("layernorm frozen w,b", fn_layernorm, NULL, frozen, 3);
}

static void test_split_merge_heads_gradcheck(void **state)
{
    (void)state;
    /* qkv (B,T,3C) = (2,3,12): C = 4 in 2 heads of 2. */
    const QkvPart parts[3] = {QKV_Q, QKV_K, QKV_V};
    const char *labels[3] = {"split_heads q", "split_heads k", "split_heads v"};
    for (int i = 0; i < 3; i++) {
        Var *in[] = {gradcheck_input(3, (int[]){2, 3, 12}, true, 56 + (uint64_t)i, -1, 1)};
        QkvPart which = parts[i];
        check_and_free(labels[i], fn_split, &which, in, 1);
    }
    Var *merge[] = {gradcheck_input(4, (int[]){2, 2, 3, 2}, true, 59, -1, 1)};
    check_and_free("merge_heads", fn_merge, NULL, merge, 1);
}

static void test_causal_softmax_gradcheck(void **state)
{
    (void)state;
    Var *in[] = {gradcheck_input(4, (int[]){2, 2, 5, 5}, true, 60, -2, 2)};
    check_and_free("causal_softmax", fn_causal_softmax, NULL, in, 1);
}

static void test_dropout_gradcheck(void **state)
{
    (void)state;
    DropoutCtx ctx = {.p = 0.3f};
    pcg32_seed(&ctx.start, 61, 1);
    Var *in[] = {param(6, 7, 62)};
    check_and_free("dropout", fn_dropout, &ctx, in, 1);
}

static void test_dropout_counter_gradcheck(void **state)
{
    (void)state;
    float p = 0.3f;
    Var *in[] = {param(6, 7, 62)};
    check_and_free("dropout_counter", fn_dropout_counter, &p, in, 1);
}

/* q, k, v of 2 batches, 2 heads, 5 tokens of 3: one partial tile, causal rows of 1 to 5
 * keys; without and with dropout. */
static void test_attention_fused_gradcheck(void **state)
{
    (void)state;
    for (int d = 0; d < 2; d++) {
        float p = d ? 0.2f : 0.0f;
        Var *in[3];
        for (int i = 0; i < 3; i++) in[i] = gradcheck_input(4, (int[]){2, 2, 5, 3}, true, 80 + (uint64_t)i, -1, 1);
        check_and_free(d ? "attention_fused with dropout" : "attention_fused", fn_attention_fused, &p, in, 3);
    }
}

/* Fused attention keeps q, k, v, its output and one float per row — nothing of size T² —
 * and says so of the probabilities and the mask it makes again; bad input is refused. */
static void test_attention_fused_saves_no_t_squared_tensor(void **state)
{
    (void)state;
    enum { B = 2, H = 2, T = 33, D = 4 };
    Var *q = gradcheck_input(4, (int[]){B, H, T, D}, true, 90, -1, 1), *k = gradcheck_input(4, (int[]){B, H, T, D}, true, 91, -1, 1);
    Var *v = gradcheck_input(4, (int[]){B, H, T, D}, true, 92, -1, 1);
    Regenerated seen = {0};
    const OpHooks hooks = {.name = "test", .regenerated = note_regenerated, .ctx = &seen};
    assert_int_equal(op_hooks_push(&hooks), REMAT_OK);
    const size_t before = mem_current(MEM_ACT);
    Var *y = op_attention_fused(q, k, v, 0.1f, &GRADCHECK_COUNTER, GRADCHECK_SITE, "attn.fused");
    op_hooks_pop();
    assert_non_null(y);
    const Node *node = y->creator;
    assert_int_equal(node->n_saved, 5);
    for (int i = 0; i < node->n_saved; i++) assert_true(node->saved[i].bytes < (size_t)B * H * T * T);
    assert_int_equal(node->saved[4].bytes, (size_t)B * H * T * sizeof(float)); /* the log-sum-exp rows */
    assert_int_equal(mem_current(MEM_ACT) - before, (size_t)B * H * T * (D + 1) * sizeof(float));
    assert_int_equal(seen.calls, 2); /* the probabilities, then the mask */
    assert_string_equal(seen.what, "mask");
    assert_int_equal(seen.numel, (size_t)B * H * T * T);
    var_free(y);
    tape_reset();

    const TrainCtx stream = {.training = true};
    assert_null(op_attention_fused(q, k, v, 0.1f, &stream, GRADCHECK_SITE, "attn.fused"));
    assert_non_null(strstr(remat_last_error(),
                           "attention_fused attn.fused: dropout p = 0.1 inside fused attention needs the counter-based"));
    Var *short_v = gradcheck_input(4, (int[]){B, H, T - 1, D}, true, 93, -1, 1);
    assert_null(op_attention_fused(q, k, short_v, 0.0f, NULL, 0, NULL));
    assert_non_null(strstr(remat_last_error(), "attention_fused: v is (2,2,32,4), not q's (2,2,33,4)"));
    var_free(short_v);
    var_free(q), var_free(k), var_free(v);
}

static void test_embedding_gradcheck(void **state)
{
    (void)state;
    /* ids (2,4) over V = 5, with repeats (token 3 four times): dwte sums them. */
    const int32_t ids[8] = {3, 0, 3, 4, 1, 3, 3, 2};
    Var *in[] = {int_var(2, (int[]){2, 4}, ids), param(5, 6, 63), param(7, 6, 64)};
    check_and_free("embedding", fn_embedding, NULL, in, 3);
    Var *no_positions[] = {int_var(2, (int[]){2, 4}, ids), param(5, 6, 65), NULL};
    check_and_free("embedding without wpe", fn_embedding, NULL, no_positions, 2);
}

static void test_cross_entropy_gradcheck(void **state)
{
    (void)state;
    const int32_t targets[6] = {0, 6, 2, 2, 5, 1};
    Var *in[] = {gradcheck_input(3, (int[]){2, 3, 7}, true, 66, -2, 2), int_var(2, (int[]){2, 3}, targets)};
    check_and_free("cross_entropy", fn_cross_entropy, NULL, in, 2);
}

/* ---- hand-checkable behaviour of the new ops ------------------------------------------- */

/* Dropout keeps each element independently with probability 1 − p. Over n = 100000
 * elements the kept count is Binomial(n, 1 − p): with p = 0.25 its standard deviation is
 * sqrt(n·p·(1 − p)) ≈ 137, so the kept fraction is 0.75 ± 0.0014; a tolerance of 0.01 is
 * 7 standard deviations (and the mask is fixed by the seed anyway). Kept elements are
 * x/(1 − p) exactly as the kernel computes it, the rest exactly 0; only the mask is saved,
 * one byte per element, and the generator moved on by exactly n draws. */
static void test_dropout_keeps_the_expected_fraction_and_saves_only_the_mask(void **state)
{
    (void)state;
    enum { ROWS = 100, COLS = 1000, N = ROWS * COLS };
    const float p = 0.25f;
    Var *x = param(ROWS, COLS, 70);
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 71, 2);
    Pcg32 expected = ctx.rng;
    pcg32_advance(&expected, N);
    size_t act_before = mem_current(MEM_ACT);
    Var *y = op_dropout(x, p, &ctx, 0, "drop");
    assert_non_null(y);
    assert_memory_equal(&ctx.rng, &expected, sizeof expected);

    Node *node = y->creator;
    assert_non_null(node);
    assert_int_equal(node->n_saved, 1);
    assert_int_equal(node->saved[0].bytes, N); /* uint8: one byte per element */
    /* The output's N floats and the mask's N bytes, nothing else. */
    assert_int_equal(mem_current(MEM_ACT), act_before + N * sizeof(float) + N);

    size_t kept = 0;
    const float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < N; i++) {
        float xi = x->value->f32[i], yi = y->value->f32[i];
        if (yi != 0.0f) {
            kept++;
            assert_true(yi == xi * scale);
        }
    }
    double fraction = (double)kept / N;
    printf("  dropout p = %.2f kept %.4f of %d elements (expected %.2f ± 0.01)\n", (double)p,
           fraction, N, 1.0 - p);
    assert_true(fabs(fraction - (1.0 - p)) < 0.01);
    var_free(y);
    tape_reset();
    var_free(x);
}

/* Counter-based dropout: the same fraction kept, the output x/(1 − p) or 0 as the key's
 * draws say, and NOTHING saved: the ledger grows by the output alone, the node holds no
 * tensor, and the hooks hear of the mask it will make again. */
static void test_dropout_counter_saves_no_mask(void **state)
{
    (void)state;
    enum { ROWS = 100, COLS = 1000, N = ROWS * COLS };
    const float p = 0.25f;
    TrainCtx ctx = {.training = true, .dropout_rng = DROPOUT_RNG_COUNTER, .seed = 70, .step = 9};
    const CounterKey key = dropout_counter_key(&ctx, 5);
    Var *x = param(ROWS, COLS, 70);
    Regenerated seen = {0};
    const OpHooks hooks = {.name = "test", .regenerated = note_regenerated, .ctx = &seen};
    assert_int_equal(op_hooks_push(&hooks), REMAT_OK);
    size_t act_before = mem_current(MEM_ACT);
    Var *y = op_dropout(x, p, &ctx, 5, "drop");
    op_hooks_pop();
    assert_non_null(y);
    assert_non_null(y->creator);
    assert_int_equal(y->creator->n_saved, 0);
    assert_int_equal(mem_current(MEM_ACT), act_before + N * sizeof(float));
    assert_int_equal(seen.calls, 1);
    assert_string_equal(seen.what, "mask");
    assert_int_equal(seen.numel, N); /* the uint8 mask the stream would have kept */
    size_t kept = 0;
    const float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < N; i++) {
        const bool keep = ref_counter_draw(&key, i) >= p;
        kept += keep;
        assert_true(y->value->f32[i] == (keep ? x->value->f32[i] * scale : 0.0f));
    }
    printf("  counter dropout p = %.2f kept %.4f of %d elements, saved 0 bytes\n", (double)p, (double)kept / N, N);
    assert_true(fabs((double)kept / N - (1.0 - p)) < 0.01);
    var_free(y);
    tape_reset();
    var_free(x);
}

static void test_dropout_off_is_the_identity_and_draws_nothing(void **state)
{
    (void)state;
    Var *x = param(3, 4, 72);
    TrainCtx eval = {.training = false}, train = {.training = true, .dropout_rng = DROPOUT_RNG_COUNTER};
    pcg32_seed(&eval.rng, 73, 1);
    const Pcg32 before = eval.rng;
    Var *off = op_dropout(x, 0.5f, &eval, 0, "drop");
    Var *none = op_dropout(x, 0.5f, NULL, 0, "drop");
    Var *zero = op_dropout(x, 0.0f, &train, 0, "drop");
    assert_ptr_equal(off, x); /* a new reference to x itself */
    assert_ptr_equal(none, x);
    assert_ptr_equal(zero, x);
    assert_int_equal(x->refcount, 4);
    assert_memory_equal(&eval.rng, &before, sizeof before);
    assert_int_equal(tape_current()->count, 0);
    assert_null(op_dropout(x, 1.0f, &train, 0, "drop"));
    assert_non_null(strstr(remat_last_error(), "dropout drop: p must be in [0, 1)"));
    var_free(off);
    var_free(none);
    var_free(zero);
    var_free(x);
}

/* Uniform logits: softmax is 1/V everywhere, so the loss is −log(1/V) = ln V; the kernel
 * gets it exactly in double, and the op's float result is ln V rounded to float. */
static void test_cross_entropy_of_uniform_logits_is_ln_v(void **state)
{
    (void)state;
    enum { ROWS = 6, V = 256 };
    Tensor *t = tensor_create(MEM_PARAM, DTYPE_F32, 2, (int[]){ROWS, V});
    for (size_t i = 0; i < t->numel; i++) t->f32[i] = 0.125f;
    Var *logits = var_create(t, true, "logits");
    const int32_t targets_values[ROWS] = {0, 1, 255, 17, 17, 128};
    Var *targets = int_var(1, (int[]){ROWS}, targets_values);
    Var *loss = op_cross_entropy(logits, targets, "loss");
    assert_non_null(loss);
    printf("  cross-entropy of uniform logits %.9g, ln 256 = %.9g\n", (double)loss->value->f32[0], log(256.0));
    assert_true(loss->value->f32[0] == (float)log(256.0));
    /* Its gradient is (1/ROWS)·(1/V − onehot): the same for every non-target entry. */
    assert_int_equal(backward(loss), REMAT_OK);
    assert_float_equal(logits->grad->f32[1], 1.0f / V / ROWS, 1e-9f);
    assert_float_equal(logits->grad->f32[0], (1.0f / V - 1.0f) / ROWS, 1e-8f);
    var_free(loss);
    var_free(logits);
    var_free(targets);
    tape_reset();
}

static void test_embedding_rejects_an_out_of_range_id(void **state)
{
    (void)state;
    const int32_t ids[6] = {0, 1, 2, 3, 9, 4};
    Var *bad = int_var(2, (int[]){2, 3}, ids), *wte = param(5, 4, 74), *wpe = param(3, 4, 75);
    assert_null(op_embedding(bad, wte, wpe, "embd"));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "embedding embd: token id 9 at (1,1) is outside the vocabulary [0, 5)"));
    /* A sequence longer than the position table, and float ids, are rejected too. */
    Var *short_wpe = param(2, 4, 76);
    const int32_t fine[6] = {0, 1, 2, 3, 4, 0};
    Var *good = int_var(2, (int[]){2, 3}, fine);
    assert_null(op_embedding(good, wte, short_wpe, "embd"));
    assert_non_null(strstr(remat_last_error(), "T_max >= 3"));
    assert_null(op_embedding(wte, wte, NULL, "embd"));
    assert_non_null(strstr(remat_last_error(), "input 0 must be int32"));
    assert_int_equal(tape_current()->count, 0);
    Var *all[] = {bad, wte, wpe, short_wpe, good};
    for (int i = 0; i < 5; i++) var_free(all[i]);
}

static void test_new_ops_reject_bad_shapes(void **state)
{
    (void)state;
    Var *x = param(4, 6, 77), *w5 = gradcheck_input(1, (int[]){5}, true, 78, -1, 1);
    Var *qkv = gradcheck_input(3, (int[]){2, 3, 12}, true, 79, -1, 1);
    assert_null(op_layernorm(x, w5, w5, 1e-5f, "attn.ln"));
    assert_non_null(strstr(remat_last_error(), "layernorm attn.ln"));
    assert_null(op_split_heads(qkv, QKV_Q, 3, "attn.split_q")); /* C = 4 in 3 heads */
    assert_non_null(strstr(remat_last_error(), "split_heads attn.split_q"));
    assert_null(op_split_heads(x, QKV_Q, 2, NULL)); /* not (B,T,3C) */
    assert_null(op_merge_heads(x, "attn.merge"));
    assert_non_null(strstr(remat_last_error(), "merge_heads attn.merge"));
    assert_null(op_causal_softmax(x, "attn.softmax")); /* (4,6) is not square */
    assert_non_null(strstr(remat_last_error(), "causal_softmax attn.softmax"));
    const int32_t t[4] = {0, 1, 2, 6};
    Var *targets = int_var(1, (int[]){4}, t);
    assert_null(op_cross_entropy(x, targets, "loss")); /* 6 is outside [0, 6) */
    assert_non_null(strstr(remat_last_error(), "cross_entropy loss: target 6 at row 3"));
    assert_null(op_cross_entropy(x, x, "loss"));
    assert_non_null(strstr(remat_last_error(), "input 1 must be int32"));
    assert_int_equal(tape_current()->count, 0);
    Var *all[] = {x, w5, qkv, targets};
    for (int i = 0; i < 4; i++) var_free(all[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_backward_of_a_single_linear_matches_hand_computation, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_unused_input_gets_zero_gradient, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_gradient_from_two_uses_is_summed, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_a_value_with_two_consumers_gets_both_shares, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_grad_mode_off_records_nothing, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_ops_reject_bad_shapes_and_null_inputs, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_reading_a_freed_saved_tensor_is_a_clear_error, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_nodes_are_named_and_printed, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_activations_live_exactly_as_long_as_needed, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_budget_overrun_inside_an_op_leaves_no_node, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_linear_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_matmul_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_add_relu_gelu_mse_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_a_chain_of_ops_keeps_the_first_failure, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_layernorm_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_split_merge_heads_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_causal_softmax_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_dropout_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_dropout_counter_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_attention_fused_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_attention_fused_saves_no_t_squared_tensor, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_embedding_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_cross_entropy_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_dropout_keeps_the_expected_fraction_and_saves_only_the_mask, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_dropout_off_is_the_identity_and_draws_nothing, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_dropout_counter_saves_no_mask, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_cross_entropy_of_uniform_logits_is_ln_v, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_embedding_rejects_an_out_of_range_id, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_new_ops_reject_bad_shapes, clean_state, clean_state),
    };
    return cmocka_run_group_tests_name("autograd", tests, NULL, NULL);
}
