/*
 * test_mlp.c — the MLP chain and the optimizers: the activation memory of a training
 * step equals the bytes derived by hand, nothing outlives the step, optimizer state has
 * the size it should, a step is all-or-nothing, and training makes the loss fall.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "models/mlp.h"
#include "autograd/optim.h"

static int clean_state(void **state)
{
    (void)state;
    tape_reset();
    mem_set_budget(0);
    remat_clear_error();
    return mem_live_blocks() == 0 ? 0 : -1;
}

/* One forward + backward of the chain; returns the loss value. */
static float forward_backward(Model *m, Var *x, Var *y, TrainCtx *ctx)
{
    Var *loss = model_loss_planned(m, NULL, x, y, ctx);
    assert_non_null(loss);
    assert_int_equal(backward(loss), REMAT_OK);
    float value = loss->value->f32[0];
    var_free(loss);
    tape_reset();
    return value;
}

/* Peak ACT of one step of the N-block residual chain (N ≥ 2), with a = B·W·4 bytes per
 * activation. Each block k saves its input x_k (for the linear) and its relu's output r_k.
 * The peak comes in backward, in the last block's relu, when its input gradient is
 * allocated. Live then:
 *   2a        the batch's inputs x_0 and targets y, held by the caller
 *   2(N−1)·a  r_k and x_k saved by the blocks before the last (x_0 counted above) and the
 *             last block's input x_{N−1}
 *   a         the last block's r_{N−1}, released right after this op
 *   3a        gradients: of x_{N−1} (from the residual sum), of r_{N−1}, and of the relu's
 *             input, just allocated
 *   8 B       the loss value and its seed gradient d(loss)/d(loss) = 1
 * (The chain's output x_N and its gradient were freed when the loss node had run.)
 * Forward alone peaks lower, at 2a + 2N·a. So peak = (2N + 4)·a + 8, exactly. */
static void test_activation_peak_equals_the_derived_bytes(void **state)
{
    (void)state;
    enum { B = 16, W = 32 };
    const size_t a = (size_t)B * W * sizeof(float);
    const int depths[] = {2, 4, 16, 64};
    for (int d = 0; d < 4; d++) {
        const int N = depths[d];
        Model *m = mlp_create(&(MlpConfig){.n_layers = N, .width = W, .seed = 1});
        MlpTask *task = mlp_task_create(W, 2);
        assert_non_null(m);
        assert_non_null(task);
        Var *x, *y;
        Pcg32 data;
        pcg32_seed(&data, 2, 0);
        assert_int_equal(mlp_task_batch(task, &data, B, &x, &y), REMAT_OK);
        TrainCtx ctx = {.training = true};
        pcg32_seed(&ctx.rng, 3, 0);

        mem_reset_peaks();
        forward_backward(m, x, y, &ctx);
        size_t expected = (size_t)(2 * N + 4) * a + 8;
        printf("  N=%-3d peak ACT %zu bytes, derived (2N+4)·a + 8 = %zu\n", N, mem_peak(MEM_ACT), expected);
        assert_int_equal(mem_peak(MEM_ACT), expected);
        /* After the step only the batch is left; every gradient buffer and saved tensor is gone. */
        assert_int_equal(mem_current(MEM_ACT), 2 * a);
        /* Parameter gradients: one per parameter, exactly the parameters' bytes. */
        assert_int_equal(mem_current(MEM_GRAD), model_param_bytes(m));
        assert_int_equal(mem_current(MEM_PARAM), model_param_bytes(m));

        var_free(x);
        var_free(y);
        mlp_task_free(task);
        model_free(m);
        assert_int_equal(mem_current(MEM_ACT), 0);
        assert_int_equal(mem_current(MEM_GRAD), 0);
    }
}

static void test_adamw_state_is_twice_the_parameters(void **state)
{
    (void)state;
    Model *m = mlp_create(&(MlpConfig){.n_layers = 3, .width = 24, .seed = 4});
    OptimConfig adamw = optim_adamw_defaults(1e-3f);
    Optimizer *opt = optim_create(&adamw, m->params, m->n_params);
    assert_non_null(opt);
    assert_int_equal(mem_current(MEM_OPTIM), 2 * model_param_bytes(m));
    optim_free(opt);

    OptimConfig momentum = optim_sgd_defaults(1e-2f, 0.9f);
    opt = optim_create(&momentum, m->params, m->n_params);
    assert_int_equal(mem_current(MEM_OPTIM), model_param_bytes(m));
    optim_free(opt);

    OptimConfig plain = optim_sgd_defaults(1e-2f, 0.0f);
    opt = optim_create(&plain, m->params, m->n_params);
    assert_int_equal(mem_current(MEM_OPTIM), 0);
    optim_free(opt);
    model_free(m);
}

static void test_optimizer_state_over_budget_names_optimizer(void **state)
{
    (void)state;
    Model *m = mlp_create(&(MlpConfig){.n_layers = 2, .width = 64, .seed = 5});
    mem_set_budget(mem_resident() + model_param_bytes(m)); /* room for one moment, not two */
    OptimConfig adamw = optim_adamw_defaults(1e-3f);
    assert_null(optim_create(&adamw, m->params, m->n_params));
    assert_int_equal(remat_last_status(), REMAT_EOOM);
    assert_non_null(strstr(remat_last_error(), "of optimizer"));
    assert_int_equal(mem_current(MEM_OPTIM), 0); /* nothing half-allocated stays */
    mem_set_budget(0);
    model_free(m);
}

static void test_bad_optimizer_configs_are_rejected(void **state)
{
    (void)state;
    Model *m = mlp_create(&(MlpConfig){.n_layers = 1, .width = 4, .seed = 6});
    OptimConfig c = optim_adamw_defaults(0.0f);
    assert_null(optim_create(&c, m->params, m->n_params));
    assert_non_null(strstr(remat_last_error(), "learning rate"));
    c = optim_adamw_defaults(1e-3f);
    c.beta2 = 1.0f;
    assert_null(optim_create(&c, m->params, m->n_params));
    c = optim_sgd_defaults(0.1f, -0.5f);
    assert_null(optim_create(&c, m->params, m->n_params));
    assert_null(optim_create(&c, m->params, 0));
    assert_null(mlp_create(&(MlpConfig){.n_layers = 0, .width = 4}));
    model_free(m);
}

static void test_step_without_gradients_changes_nothing(void **state)
{
    (void)state;
    Model *m = mlp_create(&(MlpConfig){.n_layers = 2, .width = 8, .seed = 7});
    OptimConfig adamw = optim_adamw_defaults(1e-2f);
    Optimizer *opt = optim_create(&adamw, m->params, m->n_params);
    Tensor *before = tensor_clone(m->params[0].var->value, MEM_WORK);
    assert_int_equal(optim_step(opt, NULL, NULL), REMAT_ESTATE);
    assert_non_null(strstr(remat_last_error(), "h.0.weight"));
    assert_memory_equal(before->data, m->params[0].var->value->data, before->bytes);
    assert_int_equal(optim_steps(opt), 0);
    tensor_free(before);
    optim_free(opt);
    model_free(m);
}

/* Training works and is reproducible: with AdamW the loss falls clearly within 200 steps,
 * and a second run from the same seeds gives bit-identical losses. */
static void train_losses(float *losses, int steps)
{
    enum { B = 32, W = 64 };
    Model *m = mlp_create(&(MlpConfig){.n_layers = 4, .width = W, .seed = 8});
    MlpTask *task = mlp_task_create(W, 9);
    OptimConfig adamw = optim_adamw_defaults(3e-3f);
    Optimizer *opt = optim_create(&adamw, m->params, m->n_params);
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 10, 0);
    Pcg32 data;
    pcg32_seed(&data, 11, 0);
    for (int s = 0; s < steps; s++) {
        Var *x, *y;
        assert_int_equal(mlp_task_batch(task, &data, B, &x, &y), REMAT_OK);
        optim_zero_grad(opt);
        losses[s] = forward_backward(m, x, y, &ctx);
        assert_int_equal(optim_step(opt, NULL, NULL), REMAT_OK);
        var_free(x);
        var_free(y);
    }
    optim_free(opt);
    mlp_task_free(task);
    model_free(m);
}

static void test_training_reduces_loss_reproducibly(void **state)
{
    (void)state;
    enum { STEPS = 200 };
    float first[STEPS], second[STEPS];
    train_losses(first, STEPS);
    train_losses(second, STEPS);
    assert_memory_equal(first, second, sizeof first);
    float start = (first[0] + first[1] + first[2]) / 3, end = (first[STEPS - 3] + first[STEPS - 2] + first[STEPS - 1]) / 3;
    printf("  mean loss of the first 3 steps %.4f, of the last 3 %.4f\n", start, end);
    /* A working optimizer halves this loss within 200 steps; a broken sign or a zero
     * gradient leaves it flat or makes it grow. */
    assert_true(end < 0.5f * start);
}

/* The chain's initialisation scales with depth: a 1,024-block chain of width 64 starts
 * at a loss near that of a 16-block one, not at an absurd one (with weights scaled by
 * 1/sqrt(N), it started at 23.7 for 16 blocks and 1.1e15 for 1,024). */
static void test_a_deep_chain_starts_where_a_shallow_one_does(void **state)
{
    (void)state;
    float loss[2];
    const int depths[2] = {16, 1024};
    for (int i = 0; i < 2; i++) {
        Model *m = mlp_create(&(MlpConfig){.n_layers = depths[i], .width = 64, .seed = 1});
        MlpTask *task = mlp_task_create(64, 7);
        assert_non_null(m);
        assert_non_null(task);
        Pcg32 rng;
        pcg32_seed(&rng, 3, 0);
        Var *x, *y;
        assert_int_equal(mlp_task_batch(task, &rng, 64, &x, &y), REMAT_OK);
        const bool was = grad_set_enabled(false);
        Var *l = model_loss_planned(m, NULL, x, y, NULL);
        grad_set_enabled(was);
        assert_non_null(l);
        loss[i] = l->value->f32[0];
        var_free(l);
        var_free(x);
        var_free(y);
        mlp_task_free(task);
        model_free(m);
    }
    printf("  loss at initialisation: %.4f with 16 blocks, %.4f with 1,024\n", (double)loss[0], (double)loss[1]);
    assert_true(loss[1] < 100.0f);
    assert_true(loss[1] < 2.0f * loss[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_activation_peak_equals_the_derived_bytes, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_adamw_state_is_twice_the_parameters, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_optimizer_state_over_budget_names_optimizer, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_bad_optimizer_configs_are_rejected, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_step_without_gradients_changes_nothing, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_training_reduces_loss_reproducibly, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_a_deep_chain_starts_where_a_shallow_one_does, clean_state, clean_state),
    };
    return cmocka_run_group_tests_name("mlp", tests, NULL, NULL);
}
