/*
 * test_q2_backward_needs_activations.c — Quiz question 2: why are forward activations
 * stored at all? Because backpropagation needs them to compute the gradients.
 *
 * It proves it twice. First, the gradient of a linear layer's weight is computed from the
 * input the forward saved: dW = x^T · dy, recomputed here by hand from the saved tensor,
 * matches backward's. Second, if the saved activation is released before backward, the
 * gradient cannot be computed: backward stops with a clear error naming the op, its place
 * on the tape and its name. (Nothing here is for display, compression or tokenisation:
 * the model's input is token ids, and no stored activation is read by anything but
 * backward.)
 *
 * Watch it happen: break on linear_backward (autograd/ops_linear.c) and print
 * *saved_tensor(node, 0) — the x that dW is made of; break on saved_tensor to see the
 * released slot refuse.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tensor/kernels.h"
#include "autograd/ops.h"

static Var *filled(int rows, int cols, bool grad, float scale)
{
    Tensor *t = tensor_create(grad ? MEM_PARAM : MEM_ACT, DTYPE_F32, 2, (int[]){rows, cols});
    for (size_t i = 0; i < t->numel; i++) t->f32[i] = scale * (float)((int)(i * 37 % 11) - 5);
    return var_create(t, grad, NULL);
}

static void test_q2_weight_gradient_is_made_of_the_saved_input(void **state)
{
    (void)state;
    enum { N = 4, IN = 3, OUT = 2 };
    Var *x = filled(N, IN, false, 0.1f), *w = filled(IN, OUT, true, 0.2f), *t = filled(N, OUT, false, 0.3f);
    Var *y = op_linear(x, w, NULL, "fc");
    Var *loss = op_mse(y, t, "loss");
    Node *fc = y->creator;
    Tensor *saved_x = saved_tensor(fc, 0); /* what the forward kept for backward */
    assert_ptr_equal(saved_x, x->value);

    /* dloss/dy = 2(y − t)/n, and dW = x^T · dloss/dy: built from the saved x. */
    double by_hand[IN * OUT] = {0};
    for (int i = 0; i < IN; i++)
        for (int j = 0; j < OUT; j++)
            for (int r = 0; r < N; r++)
                by_hand[i * OUT + j] += saved_x->f32[r * IN + i] * 2.0 *
                                        (y->value->f32[r * OUT + j] - t->value->f32[r * OUT + j]) / (N * OUT);
    tensor_free(saved_x);
    assert_int_equal(backward(loss), REMAT_OK);
    for (int k = 0; k < IN * OUT; k++) assert_true(fabs(w->grad->f32[k] - by_hand[k]) < 1e-6);

    Var *all[] = {x, w, t, y, loss};
    for (int i = 0; i < 5; i++) var_free(all[i]);
    tape_reset();
}

static void test_q2_without_the_saved_activation_backward_cannot_run(void **state)
{
    (void)state;
    Var *x = filled(4, 3, false, 0.1f), *w = filled(3, 2, true, 0.2f), *t = filled(4, 2, false, 0.3f);
    tape_set_stage(NULL, "h.0");
    Var *y = op_linear(x, w, NULL, "mlp.fc");
    tape_set_stage(NULL, NULL);
    Var *loss = op_mse(y, t, "loss");
    node_release_saved(y->creator); /* drop what the linear kept */
    assert_int_equal(backward(loss), REMAT_ESTATE);
    assert_non_null(strstr(remat_last_error(), "of linear #0 (h.0.mlp.fc) was freed"));
    /* No gradient reached the weight: its buffer was made, and stayed zero. */
    for (size_t k = 0; w->grad && k < w->grad->numel; k++) assert_true(w->grad->f32[k] == 0.0f);

    Var *all[] = {x, w, t, y, loss};
    for (int i = 0; i < 5; i++) var_free(all[i]);
    tape_reset();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q2_weight_gradient_is_made_of_the_saved_input),
        cmocka_unit_test(test_q2_without_the_saved_activation_backward_cannot_run),
    };
    return cmocka_run_group_tests_name("quiz q2", tests, NULL, NULL);
}
