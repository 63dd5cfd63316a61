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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autograd.h"
#include "gradcheck.h"
#include "ops.h"

#define GRADCHECK_EPS 1e-2
#define GRADCHECK_TOL 2e-3

/* Every test starts with an empty tape and ledger and must leave them so. */
static int clean_state(void **state)
{
    (void)state;
    tape_reset(tape_current());
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
    Tensor *xt = tensor_create(MEM_ACT, 2, (int[]){1, 2});
    Tensor *wt = tensor_create(MEM_PARAM, 2, (int[]){2, 1});
    Tensor *bt = tensor_create(MEM_PARAM, 1, (int[]){1});
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
    tape_reset(tape_current());
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
    tape_reset(tape_current());
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
    tape_reset(tape_current());
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
    tape_set_scope("h.0");
    Var *h = op_linear(x, w, NULL, "mlp.fc");
    Var *a = op_relu(h, "mlp.act");
    tape_set_scope(NULL);
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
    tape_reset(tape_current());
}

static void test_nodes_are_named_and_printed(void **state)
{
    (void)state;
    Var *x = constant(2, 4, 15), *w = param(4, 4, 16);
    tape_set_scope("h.3");
    Var *h = op_linear(x, w, NULL, "mlp.fc");
    tape_set_scope(NULL);
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
    tape_reset(tape_current());
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
    tape_reset(tape_current());
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

/* ---- gradchecks ------------------------------------------------------------------------ */

static Var *fn_linear(void *ctx, Var *const *in) { (void)ctx; return op_linear(in[0], in[1], in[2], NULL); }
static Var *fn_linear_3d(void *ctx, Var *const *in) { (void)ctx; return op_linear(in[0], in[1], NULL, NULL); }
static Var *fn_matmul(void *ctx, Var *const *in) { return op_matmul(in[0], in[1], *(CBLAS_TRANSPOSE *)ctx, 0.5f, NULL); }
static Var *fn_add(void *ctx, Var *const *in) { (void)ctx; return op_add(in[0], in[1], NULL); }
static Var *fn_relu(void *ctx, Var *const *in) { (void)ctx; return op_relu(in[0], NULL); }
static Var *fn_gelu(void *ctx, Var *const *in) { (void)ctx; return op_gelu(in[0], NULL); }
static Var *fn_mse(void *ctx, Var *const *in) { (void)ctx; return op_mse(in[0], in[1], NULL); }

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_backward_of_a_single_linear_matches_hand_computation, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_unused_input_gets_zero_gradient, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_gradient_from_two_uses_is_summed, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_grad_mode_off_records_nothing, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_ops_reject_bad_shapes_and_null_inputs, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_reading_a_freed_saved_tensor_is_a_clear_error, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_nodes_are_named_and_printed, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_activations_live_exactly_as_long_as_needed, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_budget_overrun_inside_an_op_leaves_no_node, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_linear_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_matmul_gradcheck, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_add_relu_gelu_mse_gradcheck, clean_state, clean_state),
    };
    return cmocka_run_group_tests_name("autograd", tests, NULL, NULL);
}
