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

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fixture_train.h"
#include "tensor/flops.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "autograd/ops.h"
#include "autograd/optim.h"
#include "checkpoint/planner.h"
#include "checkpoint/revolve.h"

/* ---- fixtures: a model, one batch, its cost -------------------------------------------- */

typedef struct Fixture {
    Model *model;
    MlpTask *task;
    Var *x, *y;
    ChainCost *cost;
    DropoutRng dropout_rng; /* the GPT's dropout: the stream unless set */
} Fixture;

static Var *token_batch(int B, int T, Var **targets)
{
    Tensor *x = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
    Tensor *t = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
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

/* The fixture's step context: step_ctx's, with the fixture's dropout generator (seed 4). */
static TrainCtx fixture_step_ctx(const Fixture *f)
{
    TrainCtx ctx = step_ctx();
    ctx.dropout_rng = f->dropout_rng;
    ctx.seed = 4;
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
    f->cost = model_profile(f->model, f->x, f->y, &ctx, NULL, PLANNER_DP);
    assert_non_null(f->cost);
}

/* A GPT of L blocks (C 32, 2 heads, T 16, dropout 0.1) with attention cores of `attention`
 * (fused: dropout from the counter-based generator). */
static void fixture_gpt_with(Fixture *f, int L, AttentionKind attention)
{
    f->dropout_rng = attention == ATTENTION_FUSED ? DROPOUT_RNG_COUNTER : DROPOUT_RNG_STREAM;
    f->model = gpt_create(&(GptConfig){.n_layers = L, .d_model = 32, .n_heads = 2, .seq_len = 16, .vocab = 256,
                                       .dropout = 0.1f, .attention = attention, .seed = 3});
    f->x = token_batch(2, 16, &f->y);
    TrainCtx ctx = fixture_step_ctx(f);
    f->cost = model_profile(f->model, f->x, f->y, &ctx, NULL, PLANNER_DP);
    assert_non_null(f->cost);
}

static void fixture_gpt(Fixture *f, int L)
{
    fixture_gpt_with(f, L, ATTENTION_NAIVE);
}

static void fixture_free(Fixture *f)
{
    chain_cost_free(f->cost);
    var_free(f->x);
    var_free(f->y);
    mlp_task_free(f->task);
    model_free(f->model);
    tape_reset();
    *f = (Fixture){0};
}

static int clean_state(void **state)
{
    (void)state;
    tape_reset();
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
    TrainCtx ctx = fixture_step_ctx(f);
    flops_reset();
    mem_reset_peaks();
    Var *loss = model_loss_planned(f->model, s, f->x, f->y, &ctx);
    assert_int_equal(backward(loss), REMAT_OK);
    Measured m = {mem_peak(MEM_ACT), flops_get(PHASE_RECOMPUTE)};
    var_free(loss);
    tape_reset();
    return m;
}

/* Every strategy train --explain-memory predicts, none to selective with either policy:
 * the cost model, profiled with the schedule's policy, predicts the peak ACT within one
 * block input of the ledger's (to the byte on the MLP chain) and the RECOMPUTE FLOPs
 * exactly. The fixture's own cost, profiled without a policy, refuses a policy region. */
static void check_every_strategy(Fixture *f, size_t block_input)
{
    static const Policy *const POLICIES[] = {&POLICY_ATTENTION_CORE, &POLICY_DOTS_SAVEABLE};
    for (int k = 0; k < 5; k++) {
        Strategy st = strategy_defaults(k < 3 ? (StrategyKind[]){STRATEGY_NONE, STRATEGY_FULL, STRATEGY_SQRT}[k]
                                              : STRATEGY_SELECTIVE);
        if (k >= 3) st.policy = POLICIES[k - 3];
        Schedule *s = schedule_for_strategy(&st, f->model->n_layers);
        assert_non_null(s);
        if (k >= 3) assert_int_equal(schedule_predict(s, f->cost), REMAT_EINVAL); /* not profiled */
        TrainCtx ctx = step_ctx();
        ChainCost *cost = model_profile(f->model, f->x, f->y, &ctx, st.policy, PLANNER_DP);
        assert_non_null(cost);
        assert_int_equal(schedule_predict(s, cost), REMAT_OK);
        const Measured m = measure(f, s);
        printf("  %-28s predicted peak ACT %8zu, measured %8zu (one block input: %zu); recompute %" PRIu64
               " FLOPs, measured %" PRIu64 "\n",
               k < 3 ? name_of(&STRATEGY_NAMES, st.kind) : st.policy->name, s->predicted.peak_act, m.peak_act,
               block_input, s->predicted.recompute_flops, m.recompute);
        assert_true(s->predicted.peak_act >= m.peak_act && s->predicted.peak_act - m.peak_act <= block_input);
        assert_true(s->predicted.recompute_flops == m.recompute);
        chain_cost_free(cost);
        schedule_free(s);
    }
}

static void test_explain_predicts_every_strategy_on_both_models(void **state)
{
    (void)state;
    Fixture f;
    fixture_mlp(&f, 9);
    check_every_strategy(&f, 0); /* exact */
    fixture_free(&f);
    fixture_gpt(&f, 4);
    check_every_strategy(&f, 2 * 16 * 32 * sizeof(float)); /* B·T·C floats */
    fixture_free(&f);
}

/* A random schedule: segments of 1 to 4 layers, each a region or plain. */
static Schedule *random_schedule(const ChainCost *c, Pcg32 *rng)
{
    Segment segs[64];
    int n = 0;
    for (int k = 0; k < c->n_layers;) {
        int len = 1 + (int)pcg32_bounded(rng, 4);
        if (k + len > c->n_layers) len = c->n_layers - k;
        segs[n++] = (Segment){k, len, pcg32_bounded(rng, 2) == 1 ? SEGMENT_REGION : SEGMENT_PLAIN, NULL, 0};
        k += len;
    }
    return chain_schedule(c, segs, n);
}

/* The whole chain under Revolve with `slots` slots, predicted. */
static Schedule *revolve_schedule(const ChainCost *c, int slots)
{
    return chain_schedule(c, &(Segment){0, c ? c->n_layers : 1, SEGMENT_REVOLVE, NULL, slots}, 1);
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
        Schedule *s = t < 3 ? chain_schedule_for_strategy(f.cost, (StrategyKind)t) : random_schedule(f.cost, &rng);
        assert_non_null(s);
        Measured m = measure(&f, s);
        assert_int_equal(m.peak_act, s->predicted.peak_act);
        assert_int_equal(m.recompute, s->predicted.recompute_flops);
        schedule_free(s);
        checked++;
    }
    const size_t lo = planner_min_budget(PLANNER_DP, f.cost);
    Schedule *none = chain_schedule_for_strategy(f.cost, STRATEGY_NONE);
    for (int i = 0; i <= 6; i++) {
        const size_t budget = lo + (none->predicted.peak_total - lo) * (size_t)i / 6;
        for (int k = PLANNER_CHEN; k <= PLANNER_DP; k++) {
            Schedule *s = planner_plan((PlannerKind)k, f.cost, budget);
            if (!s) continue; /* Chen's search may find nothing at the tightest budgets */
            assert_int_equal(s->strategy, STRATEGY_BUDGET);
            Measured m = measure(&f, s);
            assert_int_equal(m.peak_act, s->predicted.peak_act);
            assert_int_equal(m.recompute, s->predicted.recompute_flops);
            assert_true(s->predicted.peak_total <= budget);
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
 * one-block region holds it from the start. FLOPs are exact. The same holds for Revolve
 * with 1 to 5 slots (the last five schedules), whose reversals allocate it alike. */
static void check_prediction_bounds_measurement_on_the_gpt(AttentionKind attention)
{
    Fixture f = {0};
    fixture_gpt_with(&f, 6, attention);
    const size_t block_input = f.cost->layers[0].in_bytes;
    Pcg32 rng;
    pcg32_seed(&rng, 9, 9);
    size_t worst = 0;
    int exact = 0;
    for (int t = 0; t < 35; t++) {
        Schedule *s = t < 3 ? chain_schedule_for_strategy(f.cost, (StrategyKind)t)
                    : t < 30 ? random_schedule(f.cost, &rng) : revolve_schedule(f.cost, t - 29);
        Measured m = measure(&f, s);
        assert_int_equal(m.recompute, s->predicted.recompute_flops);
        assert_true(s->predicted.peak_act >= m.peak_act);
        assert_true(s->predicted.peak_act - m.peak_act <= block_input);
        if (s->predicted.peak_act - m.peak_act > worst) worst = s->predicted.peak_act - m.peak_act;
        exact += s->predicted.peak_act == m.peak_act;
        schedule_free(s);
    }
    printf("  GPT L=6, %s attention: 35 schedules (5 of them Revolve), %d exact, the others high by at most %zu bytes "
           "(one block input: %zu); the backward kernels' own RECOMPUTE FLOPs %llu\n",
           name_of(&ATTENTION_KIND_NAMES, attention), exact, worst, block_input,
           (unsigned long long)f.cost->kernel_recompute);
    assert_true((attention == ATTENTION_FUSED) == (f.cost->kernel_recompute > 0));
    fixture_free(&f);
}

/* The same with fused attention and counter-based dropout, whose backward kernels
 * recompute under every schedule: the prediction counts them, exactly. */
static void test_prediction_bounds_measurement_on_the_gpt(void **state)
{
    (void)state;
    check_prediction_bounds_measurement_on_the_gpt(ATTENTION_NAIVE);
    check_prediction_bounds_measurement_on_the_gpt(ATTENTION_FUSED);
}

/* ---- Revolve as a planner ---------------------------------------------------------------- */

/* On the MLP chain the Revolve prediction is exact too: every slot count, and what planner
 * revolve chooses at budgets from its smallest feasible one to store-all — which is the
 * schedule with the most slots that fits. */
static void test_revolve_prediction_equals_measurement_on_the_mlp(void **state)
{
    (void)state;
    enum { N = 12 };
    Fixture f = {0};
    fixture_mlp(&f, N);
    const size_t a = f.cost->layers[0].in_bytes;
    printf("  MLP N=%d, a = %zu bytes: slots, peak ACT (predicted = measured), RECOMPUTE layer forwards\n", N, a);
    for (int slots = 1; slots < N; slots++) {
        Schedule *s = revolve_schedule(f.cost, slots);
        assert_non_null(s);
        Measured m = measure(&f, s);
        assert_int_equal(m.peak_act, s->predicted.peak_act);
        assert_int_equal(m.recompute, s->predicted.recompute_flops);
        int64_t count;
        assert_int_equal(revolve_forward_count(N, slots, &count, NULL), REMAT_OK);
        assert_int_equal(s->predicted.recompute_flops, (uint64_t)(count + 1) * f.cost->layers[0].flops);
        printf("  %3d %8zu B %4" PRIu64 "\n", slots, m.peak_act, m.recompute / f.cost->layers[0].flops);
        schedule_free(s);
    }
    const size_t lo = planner_min_budget(PLANNER_REVOLVE, f.cost);
    Schedule *none = chain_schedule_for_strategy(f.cost, STRATEGY_NONE);
    for (int i = 0; i <= 8; i++) {
        const size_t budget = lo + (none->predicted.peak_total - lo) * (size_t)i / 8;
        Schedule *s = planner_plan(PLANNER_REVOLVE, f.cost, budget);
        assert_non_null(s);
        assert_int_equal(s->strategy, STRATEGY_BUDGET); /* even when it keeps everything (i = 8) */
        assert_true(s->predicted.peak_total <= budget);
        Measured m = measure(&f, s);
        assert_int_equal(m.peak_act, s->predicted.peak_act);
        assert_int_equal(m.recompute, s->predicted.recompute_flops);
        /* No schedule with more slots fits (more slots never recompute more). */
        for (int more = schedule_revolve_slots(s) + 1; schedule_revolve_slots(s) > 0 && more < N; more++) {
            Schedule *t = revolve_schedule(f.cost, more);
            assert_true(t->predicted.peak_total > budget || t->predicted.recompute_flops >= s->predicted.recompute_flops);
            schedule_free(t);
        }
        schedule_free(s);
    }
    schedule_free(none);
    fixture_free(&f);
}

/* Revolve's smallest feasible budget is below the single-level planners': a budget between
 * the two is EOOM for dp and chen, and planner revolve fits it (and the step, run under the
 * ledger's budget, stays within it). Where both fit, dp (the best single-level schedule)
 * and Revolve (the best schedule with s slots, recomputing layers more than once) are not
 * ordered: the test counts which is cheaper where, and asserts no order. */
static void check_revolve_reaches_lower(Fixture *f, const char *what)
{
    const size_t lo_dp = planner_min_budget(PLANNER_DP, f->cost), lo_rev = planner_min_budget(PLANNER_REVOLVE, f->cost);
    assert_true(lo_rev > 0);
    assert_true(lo_rev < lo_dp);
    for (int k = PLANNER_CHEN; k <= PLANNER_DP; k++) {
        assert_null(planner_plan((PlannerKind)k, f->cost, lo_rev));
        assert_int_equal(remat_last_status(), REMAT_EOOM);
    }
    Schedule *rev = planner_plan(PLANNER_REVOLVE, f->cost, lo_rev);
    assert_non_null(rev);
    assert_int_equal(rev->predicted.peak_total, lo_rev);
    TrainCtx ctx = step_ctx();
    mem_set_budget(lo_rev);
    Var *loss = model_loss_planned(f->model, rev, f->x, f->y, &ctx);
    assert_non_null(loss);
    assert_int_equal(backward(loss), REMAT_OK);
    mem_set_budget(0);
    var_free(loss);
    tape_reset();

    Schedule *none = chain_schedule_for_strategy(f->cost, STRATEGY_NONE);
    int cheaper = 0, dearer = 0, equal = 0;
    for (int i = 0; i <= 24; i++) {
        const size_t budget = lo_dp + (none->predicted.peak_total - lo_dp) * (size_t)i / 24;
        Schedule *dp = planner_plan(PLANNER_DP, f->cost, budget), *r = planner_plan(PLANNER_REVOLVE, f->cost, budget);
        assert_true(dp && r);
        cheaper += r->predicted.recompute_flops < dp->predicted.recompute_flops;
        dearer += r->predicted.recompute_flops > dp->predicted.recompute_flops;
        equal += r->predicted.recompute_flops == dp->predicted.recompute_flops;
        schedule_free(dp);
        schedule_free(r);
    }
    printf("  %s: smallest feasible budget revolve %zu B (%d slot%s, %.1f× the forward recomputed), dp %zu B; "
           "at 25 budgets from dp's: revolve cheaper at %d, dearer at %d, equal at %d\n", what, lo_rev,
           schedule_revolve_slots(rev), schedule_revolve_slots(rev) == 1 ? "" : "s",
           (double)rev->predicted.recompute_flops / (double)f->cost->forward_flops, lo_dp, cheaper, dearer, equal);
    schedule_free(rev);
    schedule_free(none);
}

/* Runs `check` on the 16-layer MLP chain and on the 6-block GPT. */
static void on_mlp_and_gpt(void (*check)(Fixture *f, const char *what))
{
    Fixture f = {0};
    fixture_mlp(&f, 16);
    check(&f, "MLP N=16");
    fixture_free(&f);
    fixture_gpt(&f, 6);
    check(&f, "GPT L=6");
    fixture_free(&f);
}

static void test_revolve_reaches_below_the_single_level_minimum(void **state)
{
    (void)state;
    on_mlp_and_gpt(check_revolve_reaches_lower);
}

/* A chain whose layers differ is refused by planner revolve, naming the first that does. */
static void test_revolve_refuses_a_chain_that_is_not_uniform(void **state)
{
    (void)state;
    enum { L = 6 };
    ChainLayer layers[L];
    for (int k = 0; k < L; k++)
        layers[k] = (ChainLayer){.in_bytes = 64, .out_bytes = 64, .grad_bytes = 64, .kept = 128, .fwd_peak = 128,
                                 .nograd_peak = 128, .back_plain = 128, .back_held = 192, .flops = 1000};
    layers[0].grad_bytes = 0; /* the chain's input needs no gradient: still uniform */
    layers[0].back_held = 128;
    ChainCost cost = {.n_layers = L, .layers = layers, .base = 128, .head_peak = 256, .resid = 8, .fixed = 4096};
    assert_int_equal(chain_check_uniform(&cost), REMAT_OK);
    Schedule *s = planner_plan(PLANNER_REVOLVE, &cost, 1 << 20);
    assert_non_null(s);
    schedule_free(s);
    layers[4].kept = 256;
    layers[5].flops = 2000;
    assert_null(planner_plan(PLANNER_REVOLVE, &cost, 1 << 20));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "layer 4 differs from layer 1 in its kept bytes (256, against 128)"));
    assert_null(revolve_schedule(&cost, 2));
    assert_int_equal(planner_min_budget(PLANNER_REVOLVE, &cost), 0);
    layers[4].kept = 128;
    layers[0].flops = 999; /* layer 0's forward must match too */
    assert_int_equal(chain_check_uniform(&cost), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "layer 0 differs"));
    assert_null(revolve_schedule(NULL, 1));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
}

/* ---- the planners ------------------------------------------------------------------------ */

/* Over a sweep of budgets, the exact search recomputes no more than Chen's search, nor than
 * sqrt, full or none wherever those fit; and every schedule it returns fits. */
static void check_dp_is_never_beaten(Fixture *f, const char *what)
{
    const size_t lo = planner_min_budget(PLANNER_DP, f->cost);
    Schedule *fixed[3];
    for (int k = 0; k < 3; k++) fixed[k] = chain_schedule_for_strategy(f->cost, (StrategyKind)k);
    const size_t hi = fixed[STRATEGY_NONE]->predicted.peak_total;
    int budgets = 0, chen_found = 0;
    for (int i = 0; i <= 24; i++) {
        const size_t budget = lo + (hi - lo) * (size_t)i / 24;
        Schedule *dp = planner_plan(PLANNER_DP, f->cost, budget);
        assert_non_null(dp);
        assert_true(dp->predicted.peak_total <= budget);
        Schedule *chen = planner_plan(PLANNER_CHEN, f->cost, budget);
        if (chen) {
            assert_true(dp->predicted.recompute_flops <= chen->predicted.recompute_flops);
            chen_found++;
        }
        for (int k = 0; k < 3; k++)
            if (fixed[k]->predicted.peak_total <= budget) assert_true(dp->predicted.recompute_flops <= fixed[k]->predicted.recompute_flops);
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
    on_mlp_and_gpt(check_dp_is_never_beaten);
}

/* Every planned schedule trains like none: same losses, gradients and parameters, to the
 * bit (fixture_train.h), for each planner at budgets from its smallest feasible to
 * store-all. The schedules are planned on the trainee's own cost model. */
static void check_planned_like_none(const Trainee *t)
{
    Model *m = fixture_model(t);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    Var *y, *x = fixture_batch(t, &data, &y);
    TrainCtx ctx = fixture_ctx(t, 0);
    ChainCost *cost = model_profile(m, x, y, &ctx, NULL, PLANNER_DP);
    assert_non_null(cost);
    var_free(x);
    var_free(y);
    model_free(m);
    tape_reset();

    Outcome plain, got;
    assert_int_equal(fixture_train(t, &(Way){0}, &plain), REMAT_OK);
    Schedule *none = chain_schedule_for_strategy(cost, STRATEGY_NONE);
    int tried = 0, with_revolve = 0;
    for (int k = PLANNER_CHEN; k <= PLANNER_REVOLVE; k++) /* ops: test_ops_planner.c */ {
        const size_t lo = planner_min_budget((PlannerKind)k, cost);
        for (int i = 0; i <= 4; i++) {
            Schedule *s = planner_plan((PlannerKind)k, cost, lo + (none->predicted.peak_total - lo) * (size_t)i / 4);
            if (!s) continue; /* Chen's search may find nothing at the tightest budgets */
            assert_int_equal(s->strategy, STRATEGY_BUDGET);
            char what[96];
            snprintf(what, sizeof what, "%s%s, planner %s, budget %d/4", t->kind,
                     t->kind[0] != 'g' ? "" : t->dropout_rng == DROPOUT_RNG_COUNTER ? " with counter dropout" : " with dropout",
                     name_of(&PLANNER_NAMES, (PlannerKind)k), i);
            assert_int_equal(fixture_train(t, &(Way){.schedule = s}, &got), REMAT_OK);
            assert_same_outcome(&plain, &got, what);
            outcome_free(&got);
            with_revolve += schedule_revolve_slots(s) > 0;
            schedule_free(s);
            tried++;
        }
    }
    printf("  %s of %d layers: %d planned schedules (%d of them Revolve), losses, gradients and parameters "
           "identical to none\n", t->kind, t->layers, tried, with_revolve);
    assert_true(with_revolve > 0);
    outcome_free(&plain);
    schedule_free(none);
    chain_cost_free(cost);
}

static void test_planned_schedules_are_bit_identical_to_none(void **state)
{
    (void)state;
    check_planned_like_none(&(Trainee){.kind = "gpt", .layers = 4, .width = 0});
    check_planned_like_none(&(Trainee){.kind = "gpt", .layers = 4, .width = 0, .dropout_rng = DROPOUT_RNG_COUNTER});
    check_planned_like_none(&(Trainee){.kind = "gpt", .layers = 4, .dropout_rng = DROPOUT_RNG_COUNTER,
                                       .attention = ATTENTION_FUSED});
    check_planned_like_none(&(Trainee){.kind = "mlp", .layers = 8, .width = 16});
}

/* ---- errors ------------------------------------------------------------------------------ */

static void test_infeasible_budget_states_the_smallest_feasible(void **state)
{
    (void)state;
    Fixture f = {0};
    fixture_mlp(&f, 8);
    const size_t lo = planner_min_budget(PLANNER_DP, f.cost);
    char expected[32], message[512];
    for (int k = PLANNER_CHEN; k <= PLANNER_REVOLVE; k++) /* ops: test_ops_planner.c */ {
        const size_t lo_k = planner_min_budget((PlannerKind)k, f.cost);
        snprintf(expected, sizeof expected, "= %zu bytes", lo_k);
        assert_null(planner_plan((PlannerKind)k, f.cost, lo_k - 1));
        assert_int_equal(remat_last_status(), REMAT_EOOM);
        snprintf(message, sizeof message, "%s", remat_last_error());
        printf("  %s: %s\n", name_of(&PLANNER_NAMES, (PlannerKind)k), message);
        assert_non_null(strstr(message, "smallest feasible budget is"));
        assert_non_null(strstr(message, expected));
        /* On this uniform chain, dp and chen say where Revolve starts. */
        assert_true(k == PLANNER_REVOLVE || strstr(message, "planner revolve, which recomputes layers more than once"));
        assert_null(planner_plan((PlannerKind)k, f.cost, 1000)); /* below params alone */
        assert_int_equal(remat_last_status(), REMAT_EOOM);
    }
    Schedule *dp = planner_plan(PLANNER_DP, f.cost, lo);
    assert_non_null(dp);
    assert_int_equal(dp->predicted.peak_total, lo);
    schedule_free(dp);
    const size_t lo_rev = planner_min_budget(PLANNER_REVOLVE, f.cost);
    Schedule *rev = planner_plan(PLANNER_REVOLVE, f.cost, lo_rev);
    assert_non_null(rev);
    assert_int_equal(rev->predicted.peak_total, lo_rev);
    schedule_free(rev);
    /* A schedule that does not cover the chain is refused, and says where. */
    const Segment gap[] = {{0, 3, SEGMENT_REGION, NULL, 0}, {4, 4, SEGMENT_PLAIN, NULL, 0}};
    assert_null(chain_schedule(f.cost, gap, 2));
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
    const ParamSpec w = {"w", 2, {8, 8}, 0.1f, .decay = true};
    for (int i = 0; i < 2; i++) {
        Layer *layers[2];
        for (int k = 0; k < 2; k++) {
            layers[k] = layer_create(sizeof(Layer), "test", k ? "h.1" : "h.0", forwards[i], &w, 1, &rng);
            assert_non_null(layers[k]);
        }
        Var *io[2] = {var_create(tensor_zeros(MEM_ACT, 2, (int[]){4, 8}), true, "x"),
                      var_create(tensor_zeros(MEM_ACT, 2, (int[]){4, 8}), false, "y")};
        const ChainStages stages = {stage_input, stage_mse, io};
        assert_null(chain_profile_policy(layers, 2, &stages, NULL, NULL));
        assert_int_equal(remat_last_status(), REMAT_EINVAL);
        printf("  %s\n", remat_last_error());
        assert_non_null(strstr(remat_last_error(), expected[i]));
        var_free(io[0]);
        var_free(io[1]);
        tape_reset();
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
    assert_int_equal(planner_min_budget(PLANNER_DP, &cost), 0);
    Schedule *s = planner_plan(PLANNER_CHEN, &cost, 1 << 20);
    assert_non_null(s);
    assert_true(s->predicted.peak_total <= 1 << 20);
    schedule_free(s);
    free(layers);
}

/* calloc, wrapped at link time (tests/CMakeLists.txt): counts the calls, and fails the one
 * callocs_left counts down to (-1: none fails). */
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
static long callocs_made, callocs_left = -1;

void *__wrap_calloc(size_t n, size_t size)
{
    callocs_made++;
    if (callocs_left >= 0 && callocs_left-- == 0) return NULL;
    return __real_calloc(n, size);
}

/* Each planner, at a budget between dp's smallest and none's peak (so that every search
 * tries several schedules), with each of its allocations failing in turn: NULL and REMAT_ENOMEM every time, never a
 * budget said too small, never the best of a search cut short. */
static void test_a_failed_allocation_fails_the_plan(void **state)
{
    (void)state;
    Fixture f = {0};
    fixture_mlp(&f, 8);
    Schedule *none = chain_schedule_for_strategy(f.cost, STRATEGY_NONE);
    const size_t budget = (planner_min_budget(PLANNER_DP, f.cost) + none->predicted.peak_total) / 2;
    schedule_free(none);
    for (int k = PLANNER_CHEN; k <= PLANNER_REVOLVE; k++) {
        callocs_made = 0;
        Schedule *s = planner_plan((PlannerKind)k, f.cost, budget);
        const long made = callocs_made;
        assert_non_null(s);
        assert_true(made > 1);
        schedule_free(s);
        for (long i = 0; i < made; i++) {
            callocs_left = i;
            s = planner_plan((PlannerKind)k, f.cost, budget);
            callocs_left = -1;
            assert_null(s);
            assert_int_equal(remat_last_status(), REMAT_ENOMEM);
            remat_clear_error();
        }
        printf("  %s: each of its %ld allocations failed in turn, each reported\n",
               name_of(&PLANNER_NAMES, (PlannerKind)k), made);
    }
    fixture_free(&f);
}

static void test_planner_names_parse(void **state)
{
    (void)state;
    int kind;
    assert_int_equal(name_parse(&PLANNER_NAMES, "dp", &kind), REMAT_OK);
    assert_int_equal(kind, PLANNER_DP);
    assert_int_equal(name_parse(&PLANNER_NAMES, "greedy", &kind), REMAT_EINVAL);
    assert_string_equal(name_of(&PLANNER_NAMES, PLANNER_REVOLVE), "revolve");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prediction_equals_measurement_on_the_mlp, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_explain_predicts_every_strategy_on_both_models, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_prediction_bounds_measurement_on_the_gpt, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_revolve_prediction_equals_measurement_on_the_mlp, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_revolve_reaches_below_the_single_level_minimum, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_revolve_refuses_a_chain_that_is_not_uniform, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_dp_is_never_beaten, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_planned_schedules_are_bit_identical_to_none, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_infeasible_budget_states_the_smallest_feasible, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_chains_the_model_cannot_describe_are_refused, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_long_chains_go_to_chen, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_planner_names_parse, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_a_failed_allocation_fails_the_plan, clean_state, clean_state),
    };
    return cmocka_run_group_tests_name("planner", tests, NULL, NULL);
}
