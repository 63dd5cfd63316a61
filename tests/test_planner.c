/*
 * test_planner.c — budget-driven checkpoint planning: the chain cost model predicts what
 * the ledgers measure, the exact search is never beaten, every planned schedule trains
 * bit-identically to none, and a budget nothing fits in is a clear error.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flops.h"
#include "gpt.h"
#include "mlp.h"
#include "ops.h"
#include "optim.h"
#include "planner.h"

/* ---- fixtures: a model, one batch, its cost -------------------------------------------- */

typedef struct Fixture {
    Model *model;
    MlpTask *task;
    Var *x, *y;
    ChainCost *cost;
} Fixture;

static Var *token_batch(int B, int T, Var **targets)
{
    Tensor *x = tensor_create_typed(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
    Tensor *t = tensor_create_typed(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
    for (size_t i = 0; i < x->numel; i++) x->i32[i] = (int32_t)(i * 7 % 256), t->i32[i] = (int32_t)(i * 11 % 256);
    *targets = var_create(t, false, "targets");
    return var_create(x, false, "tokens");
}

static TrainCtx step_ctx(void)
{
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 4, 4);
    return ctx;
}

static void fixture_mlp(Fixture *f, int N)
{
    f->model = mlp_create(&(MlpConfig){.n_layers = N, .width = 32, .seed = 1});
    f->task = mlp_task_create(32, 2);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    assert_int_equal(mlp_task_batch(f->task, &data, 4, &f->x, &f->y), REMAT_OK);
    TrainCtx ctx = step_ctx();
    f->cost = model_profile(f->model, f->x, f->y, &ctx);
    assert_non_null(f->cost);
}

static void fixture_gpt(Fixture *f, int L)
{
    f->model = gpt_create(&(GptConfig){.n_layers = L, .d_model = 32, .n_heads = 2, .seq_len = 16, .vocab = 256,
                                       .dropout = 0.1f, .seed = 3});
    f->x = token_batch(2, 16, &f->y);
    TrainCtx ctx = step_ctx();
    f->cost = model_profile(f->model, f->x, f->y, &ctx);
    assert_non_null(f->cost);
}

static void fixture_free(Fixture *f)
{
    chain_cost_free(f->cost);
    var_free(f->x);
    var_free(f->y);
    mlp_task_free(f->task);
    model_free(f->model);
    tape_reset(tape_current());
    *f = (Fixture){0};
}

static int clean_state(void **state)
{
    (void)state;
    tape_reset(tape_current());
    remat_clear_error();
    flops_reset();
    return mem_current(MEM_ACT) == 0 && mem_current(MEM_PARAM) == 0 ? 0 : -1;
}

/* ---- measuring a schedule -------------------------------------------------------------- */

typedef struct Measured {
    size_t peak_act;
    uint64_t recompute;
} Measured;

/* One forward and backward of the fixture's batch under schedule `s`. */
static Measured measure(const Fixture *f, const Schedule *s)
{
    Strategy st = strategy_defaults(STRATEGY_BUDGET);
    Plan *plan = plan_from_schedule(&st, f->model->layers, s);
    assert_non_null(plan);
    TrainCtx ctx = step_ctx();
    flops_reset();
    mem_reset_peaks();
    Var *loss = model_loss_planned(f->model, plan, f->x, f->y, &ctx);
    assert_int_equal(backward(loss), REMAT_OK);
    Measured m = {mem_peak(MEM_ACT), flops_get(PHASE_RECOMPUTE)};
    var_free(loss);
    tape_reset(tape_current());
    plan_free(plan);
    return m;
}

/* A random schedule: segments of 1 to 4 layers, each a region or plain. */
static Schedule *random_schedule(const ChainCost *c, Pcg32 *rng)
{
    ScheduleSegment segs[64];
    int n = 0;
    for (int k = 0; k < c->n_layers;) {
        int len = 1 + (int)pcg32_bounded(rng, 4);
        if (k + len > c->n_layers) len = c->n_layers - k;
        segs[n++] = (ScheduleSegment){k, len, pcg32_bounded(rng, 2) == 1};
        k += len;
    }
    return schedule_create(c, segs, n);
}

/* ---- prediction against measurement ---------------------------------------------------- */

/* On the MLP chain the model is exact: peak ACT to the byte and RECOMPUTE FLOPs, for the
 * fixed strategies, 40 random schedules, and what both planners choose at several budgets. */
static void test_prediction_equals_measurement_on_the_mlp(void **state)
{
    (void)state;
    Fixture f = {0};
    fixture_mlp(&f, 10);
    Pcg32 rng;
    pcg32_seed(&rng, 9, 9);
    int checked = 0;
    for (int t = 0; t < 43; t++) {
        Schedule *s = t < 3 ? schedule_for_strategy(f.cost, (StrategyKind)t) : random_schedule(f.cost, &rng);
        assert_non_null(s);
        Measured m = measure(&f, s);
        assert_int_equal(m.peak_act, s->peak_act);
        assert_int_equal(m.recompute, s->recompute_flops);
        schedule_free(s);
        checked++;
    }
    const size_t lo = planner_min_budget(f.cost);
    Schedule *none = schedule_for_strategy(f.cost, STRATEGY_NONE);
    for (int i = 0; i <= 6; i++) {
        const size_t budget = lo + (none->peak_total - lo) * (size_t)i / 6;
        for (int k = PLANNER_CHEN; k <= PLANNER_DP; k++) {
            Schedule *s = planner_plan((PlannerKind)k, f.cost, budget);
            if (!s) continue; /* Chen's search may find nothing at the tightest budgets */
            Measured m = measure(&f, s);
            assert_int_equal(m.peak_act, s->peak_act);
            assert_int_equal(m.recompute, s->recompute_flops);
            assert_true(s->peak_total <= budget);
            schedule_free(s);
            checked++;
        }
    }
    printf("  MLP N=10: predicted = measured (peak ACT and RECOMPUTE FLOPs) for %d schedules\n", checked);
    schedule_free(none);
    fixture_free(&f);
}

/* On the GPT the prediction is an upper bound, too high by at most one block input: a
 * block's input gradient is allocated half way through its backward, the profile's
 * one-block region holds it from the start. FLOPs are exact. */
static void test_prediction_bounds_measurement_on_the_gpt(void **state)
{
    (void)state;
    Fixture f = {0};
    fixture_gpt(&f, 6);
    const size_t block_input = f.cost->layers[0].in_bytes;
    Pcg32 rng;
    pcg32_seed(&rng, 9, 9);
    size_t worst = 0;
    int exact = 0;
    for (int t = 0; t < 30; t++) {
        Schedule *s = t < 3 ? schedule_for_strategy(f.cost, (StrategyKind)t) : random_schedule(f.cost, &rng);
        Measured m = measure(&f, s);
        assert_int_equal(m.recompute, s->recompute_flops);
        assert_true(s->peak_act >= m.peak_act);
        assert_true(s->peak_act - m.peak_act <= block_input);
        if (s->peak_act - m.peak_act > worst) worst = s->peak_act - m.peak_act;
        exact += s->peak_act == m.peak_act;
        schedule_free(s);
    }
    printf("  GPT L=6: 30 schedules, %d exact, the others high by at most %zu bytes (one block input: %zu)\n",
           exact, worst, block_input);
    fixture_free(&f);
}

/* ---- the planners ------------------------------------------------------------------------ */

/* Over a sweep of budgets, the exact search recomputes no more than Chen's search, nor than
 * sqrt, full or none wherever those fit; and every schedule it returns fits. */
static void check_dp_is_never_beaten(Fixture *f, const char *what)
{
    const size_t lo = planner_min_budget(f->cost);
    Schedule *fixed[3];
    for (int k = 0; k < 3; k++) fixed[k] = schedule_for_strategy(f->cost, (StrategyKind)k);
    const size_t hi = fixed[STRATEGY_NONE]->peak_total;
    int budgets = 0, chen_found = 0;
    for (int i = 0; i <= 24; i++) {
        const size_t budget = lo + (hi - lo) * (size_t)i / 24;
        Schedule *dp = planner_plan(PLANNER_DP, f->cost, budget);
        assert_non_null(dp);
        assert_true(dp->peak_total <= budget);
        Schedule *chen = planner_plan(PLANNER_CHEN, f->cost, budget);
        if (chen) {
            assert_true(dp->recompute_flops <= chen->recompute_flops);
            chen_found++;
        }
        for (int k = 0; k < 3; k++)
            if (fixed[k]->peak_total <= budget) assert_true(dp->recompute_flops <= fixed[k]->recompute_flops);
        schedule_free(chen);
        schedule_free(dp);
        budgets++;
    }
    printf("  %s: dp <= chen, sqrt, full, none at %d budgets (chen found a schedule at %d)\n", what, budgets, chen_found);
    for (int k = 0; k < 3; k++) schedule_free(fixed[k]);
}

static void test_dp_is_never_beaten(void **state)
{
    (void)state;
    Fixture f = {0};
    fixture_mlp(&f, 16);
    check_dp_is_never_beaten(&f, "MLP N=16");
    fixture_free(&f);
    fixture_gpt(&f, 6);
    check_dp_is_never_beaten(&f, "GPT L=6");
    fixture_free(&f);
}

/* Every planned schedule trains like none: same losses, gradients and parameters, to the bit. */
enum { STEPS = 3 };

/* Trains the 6-block GPT for STEPS AdamW steps under `s` (NULL: none); records the losses,
 * the first step's gradients (grads[0 .. n)) and the final parameters (params[0 .. n)). */
static void train_gpt(const Schedule *s, float *losses, Tensor **grads, Tensor **params, int *n_params)
{
    Model *m = gpt_create(&(GptConfig){.n_layers = 6, .d_model = 32, .n_heads = 2, .seq_len = 16, .vocab = 256,
                                       .dropout = 0.1f, .seed = 3});
    Strategy st = strategy_defaults(STRATEGY_BUDGET);
    Plan *plan = s ? plan_from_schedule(&st, m->layers, s) : NULL;
    OptimConfig c = optim_adamw_defaults(1e-2f);
    Optimizer *opt = optim_create(&c, m->params, m->n_params);
    TrainCtx ctx = step_ctx();
    for (int step = 0; step < STEPS; step++) {
        Var *y, *x = token_batch(2, 16, &y);
        optim_zero_grad(opt);
        Var *loss = model_loss_planned(m, plan, x, y, &ctx);
        assert_int_equal(backward(loss), REMAT_OK);
        losses[step] = loss->value->f32[0];
        for (int i = 0; step == 0 && i < m->n_params; i++) grads[i] = tensor_clone(m->params[i].var->grad, MEM_WORK);
        assert_int_equal(optim_step(opt), REMAT_OK);
        var_free(loss);
        var_free(x);
        var_free(y);
        tape_reset(tape_current());
    }
    *n_params = m->n_params;
    for (int i = 0; i < m->n_params; i++) params[i] = tensor_clone(m->params[i].var->value, MEM_WORK);
    optim_free(opt);
    plan_free(plan);
    model_free(m);
}

static void test_planned_schedules_are_bit_identical_to_none(void **state)
{
    (void)state;
    Fixture f = {0};
    fixture_gpt(&f, 6);
    float ref_losses[STEPS], losses[STEPS];
    Tensor *ref[128], *got[128], *ref_grads[128], *got_grads[128];
    int n_ref, n_got, tried = 0;
    train_gpt(NULL, ref_losses, ref_grads, ref, &n_ref);
    const size_t lo = planner_min_budget(f.cost);
    Schedule *none = schedule_for_strategy(f.cost, STRATEGY_NONE);
    for (int i = 0; i <= 4; i++) {
        const size_t budget = lo + (none->peak_total - lo) * (size_t)i / 4;
        for (int k = PLANNER_CHEN; k <= PLANNER_DP; k++) {
            Schedule *s = planner_plan((PlannerKind)k, f.cost, budget);
            if (!s) continue;
            train_gpt(s, losses, got_grads, got, &n_got);
            assert_memory_equal(ref_losses, losses, sizeof losses);
            assert_int_equal(n_ref, n_got);
            for (int p = 0; p < n_got; p++) {
                assert_memory_equal(ref_grads[p]->data, got_grads[p]->data, ref_grads[p]->bytes);
                assert_memory_equal(ref[p]->data, got[p]->data, ref[p]->bytes);
                tensor_free(got_grads[p]);
                tensor_free(got[p]);
            }
            schedule_free(s);
            tried++;
        }
    }
    printf("  GPT with dropout: %d planned schedules, losses, gradients and parameters identical to none\n", tried);
    for (int p = 0; p < n_ref; p++) {
        tensor_free(ref_grads[p]);
        tensor_free(ref[p]);
    }
    schedule_free(none);
    fixture_free(&f);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void test_infeasible_budget_states_the_smallest_feasible(void **state)
{
    (void)state;
    Fixture f = {0};
    fixture_mlp(&f, 8);
    const size_t lo = planner_min_budget(f.cost);
    char expected[32], message[512];
    snprintf(expected, sizeof expected, "= %zu bytes", lo);
    for (int k = PLANNER_CHEN; k <= PLANNER_DP; k++) {
        assert_null(planner_plan((PlannerKind)k, f.cost, lo - 1));
        assert_int_equal(remat_last_status(), REMAT_EOOM);
        snprintf(message, sizeof message, "%s", remat_last_error());
        printf("  %s: %s\n", planner_name((PlannerKind)k), message);
        assert_non_null(strstr(message, "smallest feasible budget is"));
        assert_non_null(strstr(message, expected));
        assert_null(planner_plan((PlannerKind)k, f.cost, 1000)); /* below params alone */
        assert_int_equal(remat_last_status(), REMAT_EOOM);
    }
    Schedule *dp = planner_plan(PLANNER_DP, f.cost, lo);
    assert_non_null(dp);
    assert_int_equal(dp->peak_total, lo);
    schedule_free(dp);
    /* Revolve is reserved, and says so. */
    assert_null(planner_plan(PLANNER_REVOLVE, f.cost, lo));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "not available"));
    /* A schedule that does not cover the chain is refused, and says where. */
    const ScheduleSegment gap[] = {{0, 3, true}, {4, 4, false}};
    assert_null(schedule_create(f.cost, gap, 2));
    assert_non_null(strstr(remat_last_error(), "does not continue the chain at layer 3"));
    fixture_free(&f);
}

/* Chains the model does not describe are refused, naming the layer: one whose layers do
 * not keep their input (y = x + relu(x): relu saves its output, the add nothing), and one
 * whose layers keep their own output (y = relu(x·W): relu saves y itself). */
static Var *no_input_forward(Layer *layer, Var *x, TrainCtx *ctx)
{
    (void)layer, (void)ctx;
    Var *r = op_relu(x, "relu");
    Var *y = op_add(x, r, "residual");
    var_free(r);
    return y;
}

static Var *keeps_output_forward(Layer *layer, Var *x, TrainCtx *ctx)
{
    (void)ctx;
    Var *h = op_linear(x, layer->params[0].var, NULL, "fc");
    Var *y = op_relu(h, "relu");
    var_free(h);
    return y;
}

static Var *stage_input(void *user, TrainCtx *ctx)
{
    (void)ctx;
    return var_retain(((Var **)user)[0]);
}

static Var *stage_mse(void *user, Var *x, TrainCtx *ctx)
{
    (void)ctx;
    return op_mse(x, ((Var **)user)[1], "loss");
}

static void test_chains_the_model_cannot_describe_are_refused(void **state)
{
    (void)state;
    const LayerForwardFn forwards[2] = {no_input_forward, keeps_output_forward};
    const char *const expected[2] = {"layer h.0 does not keep its input", "layer h.0 keeps its own output"};
    Pcg32 rng;
    pcg32_seed(&rng, 1, 1);
    for (int i = 0; i < 2; i++) {
        Layer *layers[2];
        for (int k = 0; k < 2; k++) {
            layers[k] = layer_alloc(sizeof(Layer), "test", k ? "h.1" : "h.0", forwards[i]);
            assert_non_null(layer_add_param(layers[k], "w", true, 2, (int[]){8, 8}, 0.1f, 0.0f, &rng));
        }
        Var *io[2] = {var_create(tensor_zeros(MEM_ACT, 2, (int[]){4, 8}), true, "x"),
                      var_create(tensor_zeros(MEM_ACT, 2, (int[]){4, 8}), false, "y")};
        const ChainStages stages = {stage_input, stage_mse, io};
        assert_null(chain_profile(layers, 2, &stages, NULL));
        assert_int_equal(remat_last_status(), REMAT_EINVAL);
        printf("  %s\n", remat_last_error());
        assert_non_null(strstr(remat_last_error(), expected[i]));
        var_free(io[0]);
        var_free(io[1]);
        tape_reset(tape_current());
        for (int k = 0; k < 2; k++) layer_free(layers[k]);
    }
}

/* The exact search refuses chains past its limit and says what to use; Chen's search,
 * linear in L per threshold, still plans them. The chain here is a hand-made cost model. */
static void test_long_chains_go_to_chen(void **state)
{
    (void)state;
    enum { L = PLANNER_DP_MAX_LAYERS + 1 };
    ChainLayer *layers = calloc(L, sizeof *layers);
    for (int k = 0; k < L; k++)
        layers[k] = (ChainLayer){.in_bytes = 64, .out_bytes = 64, .grad_bytes = 64, .kept = 128, .fwd_peak = 128,
                                 .nograd_peak = 128, .back_plain = 128, .back_held = 192, .flops = 1000};
    const ChainCost cost = {.n_layers = L, .layers = layers, .base = 128, .head_peak = 256, .resid = 8, .fixed = 4096};
    assert_null(planner_plan(PLANNER_DP, &cost, 1 << 20));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "use the chen planner"));
    assert_int_equal(planner_min_budget(&cost), 0);
    Schedule *s = planner_plan(PLANNER_CHEN, &cost, 1 << 20);
    assert_non_null(s);
    assert_true(s->peak_total <= 1 << 20);
    schedule_free(s);
    free(layers);
}

static void test_memory_sizes_parse_with_units(void **state)
{
    (void)state;
    size_t b = 0;
    assert_int_equal(parse_memory_size("300MiB", &b), REMAT_OK);
    assert_int_equal(b, 300u << 20);
    assert_int_equal(parse_memory_size("1.5GiB", &b), REMAT_OK);
    assert_int_equal(b, 3u << 29);
    assert_int_equal(parse_memory_size("64 KiB", &b), REMAT_OK);
    assert_int_equal(b, 64u << 10);
    assert_int_equal(parse_memory_size("4096", &b), REMAT_OK);
    assert_int_equal(b, 4096);
    assert_int_equal(parse_memory_size("512B", &b), REMAT_OK);
    assert_int_equal(b, 512);
    const char *bad[] = {"", "MiB", "-3MiB", "0", "12 parsecs", "3MiBx", "nan", "inf", "1e30GiB", " 5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = 7;
        assert_int_equal(parse_memory_size(bad[i], &b), REMAT_EINVAL);
        assert_int_equal(b, 7); /* nothing written */
    }
    assert_int_equal(planner_parse("dp", &(PlannerKind){0}), REMAT_OK);
    assert_int_equal(planner_parse("greedy", &(PlannerKind){0}), REMAT_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prediction_equals_measurement_on_the_mlp, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_prediction_bounds_measurement_on_the_gpt, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_dp_is_never_beaten, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_planned_schedules_are_bit_identical_to_none, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_infeasible_budget_states_the_smallest_feasible, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_chains_the_model_cannot_describe_are_refused, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_long_chains_go_to_chen, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_memory_sizes_parse_with_units, clean_state, clean_state),
    };
    return cmocka_run_group_tests_name("planner", tests, NULL, NULL);
}
