/*
 * test_revolve.c — binomial checkpointing (checkpoint/revolve.h), shown by the ledgers.
 *
 * The count equals Griewank's t(l, s) on the published grid and a brute-force minimum;
 * the schedule is a valid reversal that attains it; the executor gives losses and
 * parameters bit-identical to running the layers plainly (dropout included), recomputes
 * exactly (t(l, s) + 1) layer forwards on the FLOP ledger, and peaks at exactly the bytes
 * the chain cost model predicts; bad input and a failing backward lose nothing.
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

#include "tensor/flops.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "offload/offload.h"
#include "autograd/optim.h"
#include "tests/fixture_train.h"
#include "checkpoint/cost.h"
#include "checkpoint/revolve.h"
#include "checkpoint/schedule.h"

static int group_teardown(void **state)
{
    (void)state;
    return mem_live_blocks() == 0 ? 0 : -1;
}

/* ---- the count ------------------------------------------------------------------------- */

static int64_t count(int64_t l, int64_t s, int64_t *r)
{
    int64_t t = -1;
    assert_int_equal(revolve_forward_count(l, s, &t, r), REMAT_OK);
    return t;
}

static void test_count_matches_the_published_examples(void **state)
{
    (void)state;
    int64_t r;
    assert_int_equal(count(100, 10, &r), 222);
    assert_int_equal(r, 3);
    assert_int_equal(count(64, 8, &r), 137);
    /* Enough slots for every state but the last: each step advanced over once. */
    assert_int_equal(count(9, 8, &r), 8);
    assert_int_equal(r, 1);
    assert_int_equal(count(1, 1, &r), 0);
    assert_int_equal(r, 0);
    /* One slot (x_0): every reversal starts again from x_0, l(l−1)/2 steps. */
    assert_int_equal(count(50, 1, &r), 50 * 49 / 2);
    assert_int_equal(r, 49);
}

/* The optimum by brute force, independent of the closed form: reversing n steps from x_0
 * (kept in one of the k slots when n > 1) either is one reverse step (n = 1), or advances
 * m steps, keeps x_m in another slot, reverses the last n − m steps with the k − 1 slots
 * left, then the first m steps with all k slots (x_0 is still kept):
 *     T(1, k) = 0,  T(n > 1, 0) = ∞,  T(n, k) = min over 1 ≤ m < n of m + T(n−m, k−1) + T(m, k). */
enum { BRUTE_L = 60, BRUTE_S = 8 };
static int64_t brute[BRUTE_L + 1][BRUTE_S + 1];

static void brute_force_fill(void)
{
    for (int k = 0; k <= BRUTE_S; k++) brute[1][k] = 0;
    for (int n = 2; n <= BRUTE_L; n++) {
        brute[n][0] = INT64_MAX;
        for (int k = 1; k <= BRUTE_S; k++) {
            int64_t best = INT64_MAX;
            for (int m = 1; m < n; m++) {
                if (brute[n - m][k - 1] == INT64_MAX) continue;
                const int64_t cost = m + brute[n - m][k - 1] + brute[m][k];
                if (cost < best) best = cost;
            }
            brute[n][k] = best;
        }
    }
}

static void test_count_equals_the_brute_force_minimum(void **state)
{
    (void)state;
    brute_force_fill();
    for (int n = 1; n <= BRUTE_L; n++)
        for (int k = 1; k <= BRUTE_S; k++)
            if (count(n, k, NULL) != brute[n][k])
                fail_msg("t(%d, %d): closed form %" PRId64 ", brute force %" PRId64, n, k, count(n, k, NULL), brute[n][k]);
}

static void test_count_rejects_bad_input(void **state)
{
    (void)state;
    int64_t t = 7, r = 7;
    assert_int_equal(revolve_forward_count(0, 3, &t, &r), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "l ≥ 1 steps and s ≥ 1 slots (got l = 0, s = 3)"));
    assert_int_equal(revolve_forward_count(5, 0, &t, &r), REMAT_EINVAL);
    assert_int_equal(revolve_forward_count(-4, 2, &t, &r), REMAT_EINVAL);
    assert_int_equal(revolve_forward_count(5, 2, NULL, &r), REMAT_EINVAL);
    /* One slot and 2^62 steps: l(l−1)/2 is far beyond 64 bits. */
    assert_int_equal(revolve_forward_count(INT64_C(1) << 62, 1, &t, &r), REMAT_EINVAL);
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "does not fit in 64 bits"));
    assert_int_equal(t, 7); /* nothing written on failure */
    assert_int_equal(r, 7);
    /* Many slots are fine, however many: t = l − 1. */
    assert_int_equal(count(1000, INT64_MAX, NULL), 999);
}

/* ---- the schedule ------------------------------------------------------------------------ */

/* Replays a schedule on positions only, checking that it is a correct reversal: every
 * action starts from the state it says, slots hold what is restored from them, no more
 * than s slots are ever occupied, and steps are reversed from l down to 1. Returns the
 * forward steps advanced over (Griewank's count). */
static int64_t check_schedule(const RevolveSchedule *sch)
{
    const int l = sch->steps, s = sch->slots;
    int *slot_pos = malloc((size_t)sch->slots_used * sizeof *slot_pos + sizeof *slot_pos);
    assert_non_null(slot_pos);
    for (int k = 0; k < sch->slots_used; k++) slot_pos[k] = -1;
    int cur = 0, next_reverse = l - 1, occupied = 0, first_reverse = -1;
    int64_t advanced = 0;
    for (int i = 0; i < sch->n_actions; i++) {
        const RevolveAction *a = &sch->actions[i];
        switch (a->kind) {
        case REVOLVE_ADVANCE:
            assert_int_equal(cur, a->position);
            assert_true(a->steps >= 1 && cur + a->steps <= next_reverse);
            cur += a->steps;
            advanced += a->steps;
            break;
        case REVOLVE_STORE:
            assert_int_equal(cur, a->position);
            assert_true(a->slot >= 0 && a->slot < s && a->slot < sch->slots_used);
            if (slot_pos[a->slot] < 0) occupied++;
            slot_pos[a->slot] = cur;
            assert_true(occupied <= s);
            break;
        case REVOLVE_RESTORE:
            assert_true(a->slot >= 0 && a->slot < sch->slots_used);
            assert_int_equal(slot_pos[a->slot], a->position);
            cur = a->position;
            if (a->release) slot_pos[a->slot] = -1, occupied--;
            break;
        case REVOLVE_REVERSE:
            if (first_reverse < 0) first_reverse = i;
            assert_int_equal(cur, a->position);
            assert_int_equal(a->position, next_reverse);
            next_reverse--;
            cur = -1; /* used up: the next action must restore */
            break;
        }
    }
    assert_int_equal(next_reverse, -1);
    assert_int_equal(occupied, 0); /* every slot released at its last use */
    assert_int_equal(first_reverse, sch->first_reverse);
    free(slot_pos);
    return advanced;
}

/* The per-layer recomputations sum to t + 1 (revolve.h), none exceeds r, and the last
 * layer is recomputed exactly once (its reversal). */
static void check_recomputed(const RevolveSchedule *sch)
{
    int64_t sum = 0;
    int most = 0;
    for (int j = 0; j < sch->steps; j++) {
        sum += sch->recomputed[j];
        if (sch->recomputed[j] > most) most = sch->recomputed[j];
        assert_true(sch->recomputed[j] >= 1);
    }
    assert_int_equal(sum, sch->forward_count + 1);
    assert_true(most <= (sch->repetitions > 1 ? sch->repetitions : 1));
    assert_int_equal(sch->recomputed[sch->steps - 1], 1);
}

static void test_schedule_attains_the_count_on_the_grid(void **state)
{
    (void)state;
    const int ls[] = {64, 100, 256}, ss[] = {2, 3, 4, 8, 10};
    printf("  %5s %3s %3s %8s %16s\n", "l", "s", "r", "t(l,s)", "most recomputed");
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 5; k++) {
            RevolveSchedule *sch = revolve_schedule_create(ls[i], ss[k]);
            assert_non_null(sch);
            int64_t r;
            const int64_t t = count(ls[i], ss[k], &r);
            assert_int_equal(check_schedule(sch), t);
            assert_int_equal(sch->forward_count, t);
            assert_int_equal(sch->repetitions, r);
            assert_int_equal(sch->slots_used, ss[k]);
            check_recomputed(sch);
            int most = 0;
            for (int j = 0; j < sch->steps; j++) most = sch->recomputed[j] > most ? sch->recomputed[j] : most;
            printf("  %5d %3d %3" PRId64 " %8" PRId64 " %16d\n", ls[i], ss[k], r, t, most);
            revolve_schedule_free(sch);
        }
    }
}

/* One line per action ("advance 3 from x_0 to x_3", "store x_3 in slot 1", ...), then how
 * many times each layer is recomputed. */
static void print_schedule(const RevolveSchedule *sch)
{
    printf("revolve: %d steps, %d slots (%d used), r = %d, t = %" PRId64 " forward steps (Griewank's count); %" PRId64
           " layer forwards recomputed\n", sch->steps, sch->slots, sch->slots_used, sch->repetitions, sch->forward_count,
           sch->forward_count + 1);
    for (int i = 0; i < sch->n_actions; i++) {
        const RevolveAction *a = &sch->actions[i];
        if (i == sch->first_reverse) printf("  -- backward --\n");
        switch (a->kind) {
        case REVOLVE_ADVANCE: printf("  advance %d from x_%d to x_%d\n", a->steps, a->position, a->position + a->steps); break;
        case REVOLVE_STORE: printf("  store x_%d in slot %d\n", a->position, a->slot); break;
        case REVOLVE_RESTORE:
            printf("  restore x_%d from slot %d%s\n", a->position, a->slot, a->release ? " (its last use)" : "");
            break;
        case REVOLVE_REVERSE: printf("  reverse step %d (layer %d)\n", a->position + 1, a->position); break;
        }
    }
    printf("  recomputed per layer:");
    for (int j = 0; j < sch->steps; j++) printf(" %d", sch->recomputed[j]);
    printf("\n");
}

static void test_schedule_attains_the_brute_force_minimum(void **state)
{
    (void)state;
    brute_force_fill();
    for (int n = 1; n <= 40; n++) {
        for (int k = 1; k <= 6; k++) {
            RevolveSchedule *sch = revolve_schedule_create(n, k);
            assert_non_null(sch);
            if (check_schedule(sch) != brute[n][k])
                fail_msg("l = %d, s = %d: the schedule advances %" PRId64 " steps, the minimum is %" PRId64, n, k,
                         sch->forward_count, brute[n][k]);
            check_recomputed(sch);
            assert_int_equal(sch->slots_used, n > 1 ? (k < n - 1 ? k : n - 1) : 0);
            revolve_schedule_free(sch);
        }
    }
    /* A small one, for the reader. */
    RevolveSchedule *sch = revolve_schedule_create(6, 2);
    print_schedule(sch);
    revolve_schedule_free(sch);
}

static void test_schedule_rejects_bad_input(void **state)
{
    (void)state;
    assert_null(revolve_schedule_create(0, 2));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "got l = 0, s = 2"));
    assert_null(revolve_schedule_create(5, 0));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_null(revolve_schedule_create(-3, -3));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    revolve_schedule_free(NULL);
}

/* ---- the executor: bit-identical training ----------------------------------------------- */

/* The models (fixture_train.h): an 8-block MLP chain of width 32, and a 4-block GPT with
 * dropout 0.1 everywhere, whose generator must be replayed exactly. */
static const Trainee MLP8 = {.kind = "mlp", .layers = 8, .width = 32}, GPT4 = {.kind = "gpt", .layers = 4, .width = 0};

/* A few training steps with the chain under Revolve, for each number of slots, against the
 * same steps run plainly. */
static void assert_same_as_plain(const Trainee *t, const int *slots, int n_slots)
{
    Outcome plain;
    assert_int_equal(fixture_train(t, &(Way){0}, &plain), REMAT_OK);
    for (int k = 0; k < n_slots; k++) {
        Outcome o;
        char what[96];
        snprintf(what, sizeof what, "%s (%d blocks), revolve with %d slots", t->kind, t->layers, slots[k]);
        Schedule *revolve = schedule_create(STRATEGY_BUDGET, &(Segment){0, t->layers, SEGMENT_REVOLVE, NULL, slots[k]},
                                            1, t->layers);
        assert_non_null(revolve);
        assert_int_equal(fixture_train(t, &(Way){.schedule = revolve}, &o), REMAT_OK);
        schedule_free(revolve);
        assert_same_outcome(&plain, &o, what);
        printf("  %s: losses, gradients and parameters identical to none\n", what);
        outcome_free(&o);
    }
    outcome_free(&plain);
}

static void test_executor_is_bit_identical_on_the_mlp(void **state)
{
    (void)state;
    const int slots[] = {1, 2, 3, 7, 20};
    assert_same_as_plain(&MLP8, slots, 5);
}

static void test_executor_is_bit_identical_on_the_gpt_with_dropout(void **state)
{
    (void)state;
    const int slots[] = {1, 2, 3};
    assert_same_as_plain(&GPT4, slots, 3);
}

/* ---- the executor: the ledgers against the predictor ------------------------------------ */

enum { W = 32, B = 4 };

/* A model, one batch drawn from a fixed seed, and a training context. */
typedef struct Fixture {
    Model *m;
    Var *x, *y;
    TrainCtx ctx;
} Fixture;

static Fixture fixture(const Trainee *t)
{
    Fixture f = {.m = fixture_model(t), .ctx = {.training = true}};
    assert_non_null(f.m);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    f.x = fixture_batch(t, &data, &f.y);
    pcg32_seed(&f.ctx.rng, 5, 5);
    return f;
}

/* Frees the model and the batch; the step's activations must all be gone by then. */
static void fixture_free(Fixture *f)
{
    tape_reset();
    var_free(f->x);
    var_free(f->y);
    model_free(f->m);
    assert_int_equal(mem_current(MEM_ACT), 0);
}

/* The MLP chains below are of width W, batches of B rows (fixture_train.h). Their embed is
 * the identity: the batch is the chain's x_0. */

/* ---- the executor: the ledgers against the chain cost model ------------------------------ */

typedef struct StepMeasure {
    size_t peak;                 /* peak ACT of the step */
    uint64_t forward, recompute; /* the chain's first forward; the step's RECOMPUTE */
    Prediction predicted;        /* the chain cost model's, for the same schedule (cost.h) */
    ChainLayer layer;            /* layer 0's figures in that model */
} StepMeasure;

/* Layer 0's figures in the fixture's chain cost model (cost.h). */
static ChainLayer layer_cost(Fixture *f)
{
    ChainCost *chain = model_profile(f->m, f->x, f->y, &f->ctx, NULL, PLANNER_DP);
    assert_non_null(chain);
    const ChainLayer first = chain->layers[0];
    chain_cost_free(chain);
    return first;
}

/* One step of an N-block MLP chain with the chain run by Revolve with `slots` slots, and
 * what the chain cost model predicts for it. */
static StepMeasure measure_mlp(int N, int slots)
{
    Fixture f = fixture(&(Trainee){.kind = "mlp", .layers = N, .width = W});
    ChainCost *chain = model_profile(f.m, f.x, f.y, &f.ctx, NULL, PLANNER_DP);
    assert_non_null(chain);
    Schedule *s = chain_schedule(chain, &(Segment){0, N, SEGMENT_REVOLVE, NULL, slots}, 1);
    assert_non_null(s);
    StepMeasure r = {.predicted = s->predicted, .layer = chain->layers[0]};
    schedule_free(s);
    chain_cost_free(chain);
    flops_reset();
    mem_reset_peaks();
    Var *z = revolve_forward(f.m->layers, N, slots, f.x, &f.ctx);
    assert_non_null(z);
    r.forward = flops_get(PHASE_FORWARD);
    Var *loss = f.m->head(f.m, z, f.y, &f.ctx);
    var_free(z);
    assert_int_equal(backward(loss), REMAT_OK);
    r.peak = mem_peak(MEM_ACT);
    r.recompute = flops_get(PHASE_RECOMPUTE);
    var_free(loss);
    fixture_free(&f);
    return r;
}

/* Measured against predicted, for a few (N, s): the step's peak ACT to the byte (the
 * targets, the batch that is the chain's input, the loss and its seed included), and its
 * FLOPs. */
static void test_ledger_equals_the_prediction_on_the_mlp(void **state)
{
    (void)state;
    const int cases[][2] = {{1, 1}, {2, 1}, {8, 1}, {8, 2}, {8, 7}, {16, 2}, {16, 3}, {32, 3}, {32, 4}, {64, 2}, {64, 4}, {64, 8}};
    const int n_cases = (int)(sizeof cases / sizeof cases[0]);
    const size_t a = (size_t)B * W * sizeof(float);
    printf("  MLP W=%d B=%d: a = %zu bytes; the step's peak in units of a; FLOPs per layer F\n", W, B, a);
    printf("  %4s %3s %7s %12s %14s %14s\n", "N", "s", "t(N,s)", "peak", "RECOMPUTE/F", "predicted/F");
    for (int c = 0; c < n_cases; c++) {
        const int N = cases[c][0], s = cases[c][1];
        StepMeasure got = measure_mlp(N, s);
        const uint64_t F = got.layer.flops;
        assert_int_equal(got.layer.in_bytes, a);
        int64_t t;
        assert_int_equal(revolve_forward_count(N, s, &t, NULL), REMAT_OK);
        printf("  %4d %3d %7" PRId64 " %12zu %14" PRIu64 " %14" PRIu64 "\n", N, s, t, got.peak / a,
               got.recompute / F, got.predicted.recompute_flops / F);
        /* FLOPs: the first forward is every layer once; RECOMPUTE is (t + 1) layer forwards. */
        assert_int_equal(got.forward, (uint64_t)N * F);
        assert_int_equal(got.recompute, (uint64_t)(t + 1) * F);
        assert_int_equal(got.recompute, got.predicted.recompute_flops);
        assert_int_equal(got.peak, got.predicted.peak_act); /* bytes, exactly */
    }
}

/* With s = l − 1 slots every layer input is kept and each layer is recomputed once:
 * Revolve is then strategy full, to the byte and the FLOP. */
static void test_enough_slots_is_strategy_full(void **state)
{
    (void)state;
    enum { N = 12 };
    StepMeasure rev = measure_mlp(N, N - 1);
    Fixture f = fixture(&(Trainee){.kind = "mlp", .layers = N, .width = W});
    Strategy full = strategy_defaults(STRATEGY_FULL);
    Schedule *schedule = schedule_for_strategy(&full, N);
    flops_reset();
    mem_reset_peaks();
    Var *loss = model_loss_planned(f.m, schedule, f.x, f.y, &f.ctx);
    assert_int_equal(backward(loss), REMAT_OK);
    printf("  N = %d: peak ACT revolve(s = N−1) %zu B, full %zu B; RECOMPUTE %" PRIu64 " and %" PRIu64 " FLOPs\n", N,
           rev.peak, mem_peak(MEM_ACT), rev.recompute, flops_get(PHASE_RECOMPUTE));
    assert_int_equal(rev.peak, mem_peak(MEM_ACT));
    assert_int_equal(rev.recompute, flops_get(PHASE_RECOMPUTE));
    var_free(loss);
    schedule_free(schedule);
    fixture_free(&f);
}

/* ---- the executor: errors, and what it leaves behind ------------------------------------ */

static void test_executor_rejects_bad_input(void **state)
{
    (void)state;
    Fixture f = fixture(&MLP8);
    Layer **layers = f.m->layers;
    const size_t act = mem_current(MEM_ACT);
    Layer *holes[3] = {layers[0], NULL, layers[2]};
    struct { Layer **layers; int l, s; Var *x; const char *says; } bad[] = {
        {NULL, 8, 2, f.x, "got no layers"},
        {layers, 8, 2, NULL, "no input"},
        {layers, 0, 2, f.x, "l = 0"},
        {layers, 8, 0, f.x, "slots = 0"},
        {layers, -1, -1, f.x, "l = -1, slots = -1"},
        {holes, 3, 2, f.x, "layer 1 of 3 is NULL"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(revolve_forward(bad[i].layers, bad[i].l, bad[i].s, bad[i].x, &f.ctx));
        assert_int_equal(remat_last_status(), REMAT_EINVAL);
        if (!strstr(remat_last_error(), bad[i].says)) fail_msg("'%s' does not say '%s'", remat_last_error(), bad[i].says);
        assert_int_equal(tape_current()->count, 0);
        assert_int_equal(mem_current(MEM_ACT), act);
    }
    printf("  %s\n", remat_last_error());
    fixture_free(&f);
}

/* Grad mode off (evaluation): the layers just run, nothing is recorded or kept. */
static void test_grad_off_runs_the_layers_plainly(void **state)
{
    (void)state;
    Fixture f = fixture(&MLP8);
    const bool was = grad_set_enabled(false);
    Var *plain = var_retain(f.x);
    for (int i = 0; i < f.m->n_layers; i++) {
        Var *next = layers_forward(&f.m->layers[i], 1, plain, &f.ctx);
        var_free(plain);
        plain = next;
    }
    Var *rev = revolve_forward(f.m->layers, f.m->n_layers, 2, f.x, &f.ctx);
    grad_set_enabled(was);
    assert_non_null(rev);
    assert_null(rev->creator);
    assert_int_equal(tape_current()->count, 0);
    assert_memory_equal(plain->value->data, rev->value->data, rev->value->bytes);
    var_free(plain);
    var_free(rev);
    fixture_free(&f);
}

/* A forward whose backward never runs (the step is abandoned): resetting the tape frees
 * every checkpoint. */
static void test_abandoned_forward_frees_its_checkpoints(void **state)
{
    (void)state;
    Fixture f = fixture(&(Trainee){.kind = "mlp", .layers = 16, .width = W});
    const size_t act = mem_current(MEM_ACT);
    Var *z = revolve_forward(f.m->layers, 16, 3, f.x, &f.ctx);
    assert_non_null(z);
    var_free(z);
    /* Three slots (x_0 is the caller's batch) and x_15: three more activations held. */
    assert_int_equal(mem_current(MEM_ACT), act + 3 * (size_t)B * W * sizeof(float));
    tape_reset();
    assert_int_equal(mem_current(MEM_ACT), act);
    fixture_free(&f);
}

/* A forward that fails half-way (the memory budget) keeps nothing and leaves the
 * generator where it was. */
static void test_failing_forward_loses_nothing(void **state)
{
    (void)state;
    Fixture f = fixture(&GPT4);
    const ChainLayer cost = layer_cost(&f);
    Var *h = f.m->embed(f.m, f.x, &f.ctx);
    const size_t act = mem_current(MEM_ACT);
    const int nodes = tape_current()->count;
    const Pcg32 rng = f.ctx.rng;
    /* Room for the first block's forward on top of x_0, not for the second's on top of x_1:
     * it fails with x_0 stored and x_1 made. */
    mem_set_budget(mem_resident() + cost.nograd_peak + cost.in_bytes / 2);
    Var *z = revolve_forward(f.m->layers, f.m->n_layers, 2, h, &f.ctx);
    mem_set_budget(0);
    assert_null(z);
    assert_int_equal(remat_last_status(), REMAT_EOOM);
    printf("  %s\n", remat_last_error());
    assert_int_equal(tape_current()->count, nodes);
    assert_int_equal(mem_current(MEM_ACT), act);
    assert_memory_equal(&f.ctx.rng, &rng, sizeof rng);
    var_free(h);
    fixture_free(&f);
}

/* A backward that fails half-way (the memory budget) reports it, puts the generator back,
 * and leaves nothing behind once the tape is reset; the parameters are untouched. */
static void test_failing_backward_loses_nothing(void **state)
{
    (void)state;
    Fixture f = fixture(&GPT4);
    Tensor *before = tensor_clone(f.m->layers[2]->params[0].var->value, MEM_WORK);
    Var *loss = fixture_revolve_loss(f.m, 2, f.x, f.y, &f.ctx);
    assert_non_null(loss);
    const Pcg32 rng = f.ctx.rng;
    /* 48 KiB more than now: enough for the head's backward (the logits' gradient, the
     * final LayerNorm's and the token table's gradients), not for the reversals too. */
    mem_set_budget(mem_resident() + (48 << 10));
    const RematStatus status = backward(loss);
    mem_set_budget(0);
    assert_int_equal(status, REMAT_EOOM);
    printf("  %s\n", remat_last_error());
    /* It failed inside the chain's backward: the head's parameters have their gradients,
     * the first block none. */
    assert_non_null(f.m->params[f.m->n_params - 1].var->grad);
    assert_null(f.m->layers[0]->params[0].var->grad);
    assert_memory_equal(&f.ctx.rng, &rng, sizeof rng);
    assert_memory_equal(before->data, f.m->layers[2]->params[0].var->value->data, before->bytes);
    var_free(loss);
    tensor_free(before);
    fixture_free(&f);
}

/* The GPT's blocks, read off the chain profile, are a uniform chain Revolve can plan; the
 * profile leaves the generator and the FLOP ledger's counts as they were. */
static void test_layer_cost_read_off_the_chain_profile(void **state)
{
    (void)state;
    Fixture f = fixture(&GPT4);
    const Pcg32 rng = f.ctx.rng;
    const FlopCounts flops = flops_snapshot();
    ChainCost *chain = model_profile(f.m, f.x, f.y, &f.ctx, NULL, PLANNER_DP);
    assert_non_null(chain);
    const ChainLayer *l = &chain->layers[1];
    printf("  gpt block: a = %zu B, forward %zu B (grad off %zu B), backward as a region's last %zu B, F = %" PRIu64
           " FLOPs\n", l->in_bytes, l->fwd_peak, l->nograd_peak, l->back_held, l->flops);
    assert_int_equal(chain_check_uniform(chain), REMAT_OK);
    assert_true(chain->layers[0].grad_bytes > 0); /* the embeddings' output needs a gradient */
    assert_true(l->fwd_peak > l->nograd_peak && l->flops > 0);
    chain_cost_free(chain);
    assert_memory_equal(&f.ctx.rng, &rng, sizeof rng);
    const FlopCounts after = flops_snapshot(); /* the counts; its seconds run on */
    assert_memory_equal(flops.phase, after.phase, sizeof after.phase);
    assert_memory_equal(flops.matmul, after.matmul, sizeof after.matmul);
    fixture_free(&f);
}

/* The checkpoints go through the saved-tensor path: offload's boundary policy spills the
 * ones the first forward stores, and the gradients stay bit-identical. */
static void test_offload_takes_the_checkpoints(void **state)
{
    (void)state;
    enum { N = 16, S = 3 };
    RevolveSchedule *sch = revolve_schedule_create(N, S);
    int stores = 0; /* x_0 and the other states the first forward stores */
    for (int i = 0; i < sch->first_reverse; i++) stores += sch->actions[i].kind == REVOLVE_STORE;
    revolve_schedule_free(sch);
    Tensor *grads[2];
    for (int run = 0; run < 2; run++) {
        Fixture f = fixture(&(Trainee){.kind = "mlp", .layers = N, .width = W});
        OffloadOptions o = OFFLOAD_DEFAULTS(OFFLOAD_BOUNDARY);
        o.min_bytes = 0;
        Offload *off = run ? offload_create(&o) : NULL;
        if (off) assert_int_equal(offload_push(off), REMAT_OK);
        Var *loss = fixture_revolve_loss(f.m, S, f.x, f.y, &f.ctx);
        if (off) assert_int_equal(offload_pop(off), REMAT_OK);
        assert_non_null(loss);
        if (off) { /* the stored states, and x_15 */
            printf("  offload (boundary): %zu records, %zu bytes on disk\n", offload_stats(off).records_written,
                   mem_current(MEM_DISK));
            assert_int_equal(offload_stats(off).records_written, stores + 1);
            assert_int_equal(mem_current(MEM_DISK), (size_t)(stores + 1) * B * W * sizeof(float));
        }
        assert_int_equal(backward(loss), REMAT_OK);
        grads[run] = tensor_clone(f.m->layers[0]->params[0].var->grad, MEM_WORK);
        var_free(loss);
        tape_reset();
        assert_int_equal(mem_current(MEM_DISK), 0);
        offload_free(off);
        fixture_free(&f);
    }
    assert_memory_equal(grads[0]->data, grads[1]->data, grads[0]->bytes);
    tensor_free(grads[0]);
    tensor_free(grads[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_count_matches_the_published_examples, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_count_equals_the_brute_force_minimum, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_count_rejects_bad_input, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_schedule_attains_the_count_on_the_grid, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_schedule_attains_the_brute_force_minimum, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_schedule_rejects_bad_input, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_executor_is_bit_identical_on_the_mlp, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_executor_is_bit_identical_on_the_gpt_with_dropout, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_ledger_equals_the_prediction_on_the_mlp, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_enough_slots_is_strategy_full, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_executor_rejects_bad_input, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_grad_off_runs_the_layers_plainly, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_abandoned_forward_frees_its_checkpoints, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_failing_forward_loses_nothing, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_failing_backward_loses_nothing, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_layer_cost_read_off_the_chain_profile, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_offload_takes_the_checkpoints, fixture_clean_state, fixture_clean_state),
    };
    return cmocka_run_group_tests_name("revolve", tests, NULL, group_teardown);
}
