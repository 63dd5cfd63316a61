/*
 * test_ops_planner.c — the op-level planner (--planner ops): its layer search against brute
 * force and against a greedy choice, its figures against the ledger, its schedules within
 * budget, never worse than dp and bit-identical to none, and its errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fixture_train.h"
#include "tensor/flops.h"
#include "checkpoint/ops_plan.h"
#include "checkpoint/planner.h"
#include "autograd/ops.h"

/* ---- the layer search, on constructed layers ------------------------------------------- */

/* A constructed layer as a list of edges: op `reader` reads output `out` of op `op`. */
typedef struct Read {
    int reader, op, out;
} Read;

/* kept(K) and flops(K) straight from the definition (ops_plan.h), output by output: kept
 * when its op is saved and it is read back or read by an op that is not saved. */
static void reference_figures(const OpsLayer *l, const Read *edges, int n_edges, uint32_t keep, size_t *kept,
                              uint64_t *flops)
{
    *kept = 0;
    *flops = 0;
    for (int i = 0; i < l->n_ops; i++) {
        const bool saved = keep >> l->ops[i].cls & 1u;
        if (!saved) *flops += l->ops[i].flops;
        for (int j = 0; saved && j < l->ops[i].n_out; j++) {
            bool needed = l->ops[i].read_back[j];
            for (int e = 0; e < n_edges; e++)
                if (edges[e].op == i && edges[e].out == j && !(keep >> l->ops[edges[e].reader].cls & 1u)) needed = true;
            if (needed) *kept += l->ops[i].bytes[j];
        }
    }
}

/* A random layer of n_ops ops in n_classes classes, each reading a few earlier outputs. */
static int random_layer(OpsLayer *l, Pcg32 *rng, int n_ops, int n_classes, Read *edges)
{
    memset(l, 0, sizeof *l);
    l->n_ops = n_ops;
    l->n_classes = n_classes;
    for (int c = 0; c < n_classes; c++) snprintf(l->op[c], OPS_NAME_LEN, "op%d", c);
    int n_edges = 0;
    for (int i = 0; i < n_ops; i++) {
        OpsOp *o = &l->ops[i];
        o->cls = i < n_classes ? i : (int)pcg32_bounded(rng, (uint32_t)n_classes);
        o->flops = pcg32_bounded(rng, 4) == 0 ? 0 : 1 + pcg32_bounded(rng, 1000);
        o->n_out = 1 + (int)pcg32_bounded(rng, 2);
        for (int j = 0; j < o->n_out; j++) {
            o->bytes[j] = 4 * (1 + pcg32_bounded(rng, 64));
            o->read_back[j] = pcg32_bounded(rng, 3) == 0;
        }
        for (int r = 0; i > 0 && r < 2; r++) {
            const int src = (int)pcg32_bounded(rng, (uint32_t)i);
            const int out = (int)pcg32_bounded(rng, (uint32_t)l->ops[src].n_out);
            edges[n_edges++] = (Read){i, src, out};
            l->ops[src].readers[out] |= 1u << o->cls;
        }
    }
    return n_edges;
}

/* The search's Pareto set is brute force's: every keep-set's figures computed from the
 * definition, the front of all 2^n of them, compared point by point. */
static void test_layer_search_equals_brute_force(void **state)
{
    (void)state;
    Pcg32 rng;
    pcg32_seed(&rng, 29, 1);
    int layers = 0, points = 0;
    for (int n_classes = 1; n_classes <= 10; n_classes++)
        for (int t = 0; t < 8; t++) {
            OpsLayer l;
            Read edges[2 * OPS_MAX_OPS];
            const int n_edges = random_layer(&l, &rng, n_classes + (int)pcg32_bounded(&rng, 6), n_classes, edges);
            OpsPoint *front;
            int n;
            assert_int_equal(ops_layer_pareto(&l, &front, &n), REMAT_OK);
            const uint32_t count = 1u << n_classes;
            size_t *kept = malloc(count * sizeof *kept);
            uint64_t *flops = malloc(count * sizeof *flops);
            for (uint32_t k = 0; k < count; k++) reference_figures(&l, edges, n_edges, k, &kept[k], &flops[k]);
            int on_front = 0;
            for (uint32_t k = 0; k < count; k++) {
                bool dominated = false, first = true; /* the smallest mask of equal figures stands for them */
                for (uint32_t o = 0; o < count; o++) {
                    dominated |= kept[o] <= kept[k] && flops[o] <= flops[k] &&
                                 (kept[o] < kept[k] || flops[o] < flops[k]);
                    if (kept[o] == kept[k] && flops[o] == flops[k] && o < k) first = false;
                }
                if (dominated || !first) continue;
                int at = 0;
                while (at < n && front[at].keep != k) at++;
                assert_true(at < n);
                assert_int_equal(front[at].kept, kept[k]);
                assert_int_equal(front[at].flops, flops[k]);
                on_front++;
            }
            assert_int_equal(on_front, n);
            for (int i = 1; i < n; i++) /* by bytes rising, FLOPs falling */
                assert_true(front[i].kept > front[i - 1].kept && front[i].flops < front[i - 1].flops);
            layers++, points += n;
            free(kept), free(flops), free(front);
        }
    printf("  %d random layers of 1-10 op classes: the search's Pareto sets (%d points) equal brute force's\n", layers,
           points);
}

/* Three ops, each output read back: A keeps 6 bytes and saves 7 FLOPs, B and C 5 and 5. With
 * 10 bytes to keep, a greedy choice by FLOPs per byte keeps A (7/6 > 1) and then neither B
 * nor C fits: it recomputes 10 FLOPs. Keeping B and C recomputes 7: the search finds it. */
static void test_layer_search_beats_greedy_by_flops_per_byte(void **state)
{
    (void)state;
    OpsLayer l = {.n_classes = 3, .n_ops = 3};
    const size_t bytes[] = {6, 5, 5};
    const uint64_t flops[] = {7, 5, 5};
    for (int i = 0; i < 3; i++) {
        snprintf(l.op[i], OPS_NAME_LEN, "%c", 'A' + i);
        l.ops[i] = (OpsOp){.cls = i, .flops = flops[i], .n_out = 1, .bytes = {bytes[i]}, .read_back = {true}};
    }
    const size_t room = 10;
    uint32_t greedy = 0;
    size_t used = 0;
    const int by_ratio[] = {0, 1, 2}; /* 7/6, 5/5, 5/5 */
    for (int i = 0; i < 3; i++)
        if (used + bytes[by_ratio[i]] <= room) used += bytes[by_ratio[i]], greedy |= 1u << by_ratio[i];
    size_t greedy_kept;
    uint64_t greedy_flops;
    ops_evaluate(&l, greedy, &greedy_kept, &greedy_flops);
    OpsPoint *front;
    int n;
    assert_int_equal(ops_layer_pareto(&l, &front, &n), REMAT_OK);
    const OpsPoint *best = NULL;
    for (int i = 0; i < n; i++)
        if (front[i].kept <= room) best = &front[i];
    assert_non_null(best);
    printf("  within %zu bytes: greedy keeps A and recomputes %llu FLOPs; the search %s and recomputes %llu\n", room,
           (unsigned long long)greedy_flops, best->name, (unsigned long long)best->flops);
    assert_int_equal(greedy_flops, 10);
    assert_int_equal(best->flops, 7);
    assert_int_equal(best->keep, 6u); /* B and C */
    assert_string_equal(best->name, "keeps B, C");
    free(front);
}

/* A layer of more classes than the search enumerates is refused, saying so. */
static void test_layer_search_refuses_too_many_classes(void **state)
{
    (void)state;
    OpsLayer l = {.n_classes = OPS_MAX_CLASSES + 1};
    OpsPoint *front;
    int n;
    assert_int_equal(ops_layer_pareto(&l, &front, &n), REMAT_EINVAL);
    assert_null(front);
    assert_non_null(strstr(remat_last_error(), "op classes"));
}

/* ---- on the models --------------------------------------------------------------------- */

/* The trainee's cost model with its op-level model, on the batch fixture_train's first step
 * sees. */
static ChainCost *ops_cost(const Trainee *t)
{
    Model *m = fixture_model(t);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    Var *y, *x = fixture_batch(t, &data, &y);
    TrainCtx ctx = fixture_ctx(t, 0);
    ChainCost *cost = model_profile(m, x, y, &ctx, NULL, PLANNER_OPS);
    assert_non_null(cost);
    assert_non_null(cost->ops);
    var_free(x);
    var_free(y);
    model_free(m);
    tape_reset();
    return cost;
}

typedef struct Measured {
    size_t peak_act;
    uint64_t recompute;
} Measured;

/* One forward and backward of the trainee's first batch under `s`, as the ledgers see it. */
static Measured measure(const Trainee *t, const Schedule *s)
{
    Model *m = fixture_model(t);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    Var *y, *x = fixture_batch(t, &data, &y);
    TrainCtx ctx = fixture_ctx(t, 0);
    flops_reset();
    mem_reset_peaks();
    Var *loss = model_loss_planned(m, s, x, y, &ctx);
    assert_int_equal(backward(loss), REMAT_OK);
    const Measured got = {mem_peak(MEM_ACT), flops_get(PHASE_RECOMPUTE)};
    var_free(loss);
    var_free(x);
    var_free(y);
    model_free(m);
    tape_reset();
    return got;
}

/* What the search assumed of each point, kept(K) and flops(K), is what its region measured:
 * it adds its output and kept(K) to the forward state, its replay recomputes flops(K). */
static void check_points_as_measured(const ChainCost *cost, const char *what)
{
    int checked = 0;
    for (int k = 0; k < cost->n_layers; k++) {
        int n;
        const OpsPoint *p = ops_points(cost->ops, k, &n);
        assert_true(n > 1);
        for (int i = 0; i < n; i++) {
            const SegmentFigures *f = ops_figures(cost->ops, k, &p[i].policy);
            assert_non_null(f);
            assert_int_equal(f->adds, cost->layers[k].out_bytes + p[i].kept);
            assert_int_equal(f->flops, p[i].flops);
            checked++;
        }
        assert_null(ops_figures(cost->ops, k, &POLICY_DOTS_SAVEABLE));
    }
    int n;
    ops_points(cost->ops, 0, &n);
    printf("  %s: %d points of %d layers (%d on layer 0's Pareto set), each's bytes and FLOPs as measured\n", what,
           checked, cost->n_layers, n);
}

/* The profile measures each point once per set of alike layers, several points in one pass (layer
 * i of m alike ones under point j·m + i). Each figure is what the first landing measured, a
 * pass with every layer under that point: what a region adds, needs and recomputes does not
 * depend on what its neighbours keep. */
static void check_points_as_a_pass_per_point_measures_them(const Trainee *t, const ChainCost *cost, const char *what)
{
    Model *m = fixture_model(t);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    Var *y, *x = fixture_batch(t, &data, &y);
    TrainCtx ctx = fixture_ctx(t, 0);
    int n;
    const OpsPoint *p = ops_points(cost->ops, 0, &n);
    ChainCost *last = model_profile(m, x, y, &ctx, &p[n - 1].policy, PLANNER_DP); /* the kernels' own share */
    assert_non_null(last);
    for (int j = 0; j < n; j++) {
        ChainCost *each = model_profile(m, x, y, &ctx, &p[j].policy, PLANNER_DP);
        assert_non_null(each);
        for (int k = 0; k < cost->n_layers; k++) {
            const SegmentFigures *f = ops_figures(cost->ops, k, &p[j].policy);
            assert_non_null(f); /* one shape: every layer has the point */
            assert_int_equal(f->adds, each->layers[k].policy.adds);
            assert_int_equal(f->need, each->layers[k].policy.need);
            assert_int_equal(f->flops, each->layers[k].policy.flops - last->layers[k].policy.flops);
        }
        chain_cost_free(each);
    }
    printf("  %s: %d points x %d layers measured as a pass per point measures them\n", what, n, cost->n_layers);
    chain_cost_free(last);
    var_free(x);
    var_free(y);
    model_free(m);
    tape_reset();
}

/* From the smallest feasible budget to none's peak: ops fits (its prediction within the
 * budget, the ledger's peak within the prediction), predicts the ledger (RECOMPUTE FLOPs
 * exactly, the peak to the byte or high by at most one block input, as for dp on the GPT,
 * cost.h), and recomputes no more than dp wherever dp fits; returns at how many budgets it
 * recomputes strictly less. */
static int check_budgets(const Trainee *t, const ChainCost *cost, const char *what)
{
    const size_t lo = planner_min_budget(PLANNER_OPS, cost), block = cost->layers[0].in_bytes;
    Schedule *none = chain_schedule_for_strategy(cost, STRATEGY_NONE);
    const size_t hi = none->predicted.peak_total;
    assert_true(lo > 0 && lo <= planner_min_budget(PLANNER_DP, cost));
    int less = 0, exact = 0, n = 12;
    for (int i = 0; i <= n; i++) {
        const size_t budget = lo + (hi - lo) * (size_t)i / (size_t)n;
        Schedule *ops = planner_plan(PLANNER_OPS, cost, budget), *dp = planner_plan(PLANNER_DP, cost, budget);
        assert_non_null(ops);
        assert_true(ops->predicted.peak_total <= budget);
        const Measured m = measure(t, ops);
        assert_int_equal(m.recompute, ops->predicted.recompute_flops);
        assert_true(m.peak_act <= ops->predicted.peak_act && ops->predicted.peak_act - m.peak_act <= block);
        assert_true(cost->fixed + cost->work_peak + m.peak_act <= budget);
        exact += m.peak_act == ops->predicted.peak_act;
        if (dp) {
            assert_true(ops->predicted.recompute_flops <= dp->predicted.recompute_flops);
            if (ops->predicted.recompute_flops < dp->predicted.recompute_flops) {
                if (!less) {
                    printf("  %s, budget %zu: ops recomputes %llu FLOPs, dp %llu; ops' schedule:\n", what, budget,
                           (unsigned long long)ops->predicted.recompute_flops,
                           (unsigned long long)dp->predicted.recompute_flops);
                    schedule_print(ops, NULL, stdout);
                }
                less++;
            }
        }
        schedule_free(ops);
        schedule_free(dp);
    }
    printf("  %s: %d budgets, ledger within each; peak predicted to the byte at %d, RECOMPUTE FLOPs at all; "
           "fewer FLOPs than dp at %d\n", what, n + 1, exact, less);
    schedule_free(none);
    return less;
}

static void check_model(const Trainee *t, const char *what)
{
    ChainCost *cost = ops_cost(t);
    check_points_as_measured(cost, what);
    check_points_as_a_pass_per_point_measures_them(t, cost, what);
    assert_true(check_budgets(t, cost, what) > 0);
    chain_cost_free(cost);
}

static void test_ops_fits_predicts_and_beats_dp_on_the_gpt(void **state)
{
    (void)state;
    check_model(&(Trainee){.kind = "gpt", .layers = 4}, "gpt, dropout from the stream");
    check_model(&(Trainee){.kind = "gpt", .layers = 4, .dropout_rng = DROPOUT_RNG_COUNTER}, "gpt, counter dropout");
}

static void test_ops_fits_predicts_and_beats_dp_on_the_mlp(void **state)
{
    (void)state;
    check_model(&(Trainee){.kind = "mlp", .layers = 8, .width = 16}, "mlp");
}

/* Every schedule ops plans trains like none: losses, gradients, parameters, to the bit. */
static void check_like_none(const Trainee *t, const char *what)
{
    ChainCost *cost = ops_cost(t);
    Outcome plain, got;
    assert_int_equal(fixture_train(t, &(Way){0}, &plain), REMAT_OK);
    Schedule *none = chain_schedule_for_strategy(cost, STRATEGY_NONE);
    const size_t lo = planner_min_budget(PLANNER_OPS, cost);
    int with_points = 0;
    for (int i = 0; i <= 4; i++) {
        Schedule *s = planner_plan(PLANNER_OPS, cost, lo + (none->predicted.peak_total - lo) * (size_t)i / 4);
        assert_non_null(s);
        for (int g = 0; g < s->n_segments; g++) with_points += s->segments[g].policy != NULL;
        assert_int_equal(fixture_train(t, &(Way){.schedule = s}, &got), REMAT_OK);
        assert_same_outcome(&plain, &got, what);
        outcome_free(&got);
        schedule_free(s);
    }
    printf("  %s: 5 budgets (%d layers under a keep-set), identical to none\n", what, with_points);
    assert_true(with_points > 0);
    outcome_free(&plain);
    schedule_free(none);
    chain_cost_free(cost);
}

static void test_ops_is_bit_identical_to_none(void **state)
{
    (void)state;
    check_like_none(&(Trainee){.kind = "gpt", .layers = 4}, "gpt with dropout");
    check_like_none(&(Trainee){.kind = "gpt", .layers = 4, .dropout_rng = DROPOUT_RNG_COUNTER}, "gpt, counter dropout");
    check_like_none(&(Trainee){.kind = "mlp", .layers = 8, .width = 16}, "mlp");
}

/* The schedule says what each layer keeps. */
static void test_ops_schedule_prints_what_each_layer_keeps(void **state)
{
    (void)state;
    ChainCost *cost = ops_cost(&(Trainee){.kind = "gpt", .layers = 4});
    Schedule *s = planner_plan(PLANNER_OPS, cost, planner_min_budget(PLANNER_OPS, cost) * 11 / 10);
    assert_non_null(s);
    char text[4096] = "";
    FILE *out = fmemopen(text, sizeof text - 1, "w");
    schedule_print(s, NULL, out);
    fclose(out);
    printf("%s", text);
    assert_non_null(strstr(text, "      keeps"));
    schedule_free(s);
    chain_cost_free(cost);
}

/* Below the smallest feasible budget: the planner's message; without the op-level model: a
 * clear refusal; bad arguments to the profile: refused. */
static void test_ops_errors(void **state)
{
    (void)state;
    const Trainee t = {.kind = "mlp", .layers = 8, .width = 16};
    ChainCost *cost = ops_cost(&t);
    const size_t lo = planner_min_budget(PLANNER_OPS, cost);
    char expected[48];
    snprintf(expected, sizeof expected, "= %zu bytes", lo);
    assert_null(planner_plan(PLANNER_OPS, cost, lo - 1));
    assert_int_equal(remat_last_status(), REMAT_EOOM);
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "smallest feasible budget is"));
    assert_non_null(strstr(remat_last_error(), expected));
    Schedule *s = planner_plan(PLANNER_OPS, cost, lo);
    assert_non_null(s);
    assert_int_equal(s->predicted.peak_total, lo);
    schedule_free(s);
    assert_int_equal(chain_profile_ops(NULL, NULL, NULL, NULL), REMAT_EINVAL);
    chain_cost_free(cost);

    Model *m = fixture_model(&t);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    Var *y, *x = fixture_batch(&t, &data, &y);
    TrainCtx ctx = fixture_ctx(&t, 0);
    cost = model_profile(m, x, y, &ctx, NULL, PLANNER_DP);
    assert_null(planner_plan(PLANNER_OPS, cost, SIZE_MAX));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "no op-level model"));
    assert_int_equal(planner_min_budget(PLANNER_OPS, cost), 0);
    chain_cost_free(cost);
    var_free(x);
    var_free(y);
    model_free(m);
}

/* A layer of more ops than the model holds (a linear, 60 relus, a residual add) is refused,
 * naming the layer, and the cost it was to join is left as it was. */
static Var *many_ops_forward(Layer *layer, Var *x, TrainCtx *ctx)
{
    (void)ctx;
    Var *h = op_linear(x, layer->params[0].var, NULL, "fc");
    for (int i = 0; i < 60 && h; i++) {
        Var *next = op_relu(h, "relu");
        var_free(h);
        h = next;
    }
    Var *y = h ? op_add(x, h, "residual") : NULL;
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

static void test_ops_refuses_a_layer_it_cannot_hold(void **state)
{
    (void)state;
    Pcg32 rng;
    pcg32_seed(&rng, 1, 1);
    const ParamSpec w = {"w", 2, {8, 8}, 0.1f, .decay = true};
    Layer *layers[2];
    for (int k = 0; k < 2; k++) {
        layers[k] = layer_create(sizeof(Layer), "test", k ? "h.1" : "h.0", many_ops_forward, &w, 1, &rng);
        assert_non_null(layers[k]);
    }
    Var *io[2] = {var_create(tensor_zeros(MEM_ACT, 2, (int[]){4, 8}), false, "x"),
                  var_create(tensor_zeros(MEM_ACT, 2, (int[]){4, 8}), false, "y")};
    const ChainStages stages = {stage_input, stage_mse, io};
    ChainCost *cost = chain_profile_policy(layers, 2, &stages, NULL, NULL);
    assert_non_null(cost);
    const uint64_t before = flops_get(PHASE_FORWARD);
    assert_int_equal(chain_profile_ops(cost, layers, &stages, NULL), REMAT_EINVAL);
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "layer h.0 has ops its model cannot hold"));
    assert_null(cost->ops);
    assert_int_equal(flops_get(PHASE_FORWARD), before);
    Schedule *dp = planner_plan(PLANNER_DP, cost, SIZE_MAX); /* the cost still plans */
    assert_non_null(dp);
    schedule_free(dp);
    chain_cost_free(cost);
    var_free(io[0]);
    var_free(io[1]);
    tape_reset();
    for (int k = 0; k < 2; k++) layer_free(layers[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_layer_search_equals_brute_force, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_layer_search_beats_greedy_by_flops_per_byte, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_layer_search_refuses_too_many_classes, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_ops_fits_predicts_and_beats_dp_on_the_gpt, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_ops_fits_predicts_and_beats_dp_on_the_mlp, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_ops_is_bit_identical_to_none, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_ops_schedule_prints_what_each_layer_keeps, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_ops_errors, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_ops_refuses_a_layer_it_cannot_hold, fixture_clean_state,
                                        fixture_clean_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
