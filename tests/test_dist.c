/*
 * test_dist.c — data parallelism, run as K ranks by ctest through mpirun (K = 2 and 3).
 *
 * On every rank, each test first trains a small GPT (dropout on) for a few AdamW steps in
 * one process, accumulating the K micro-batches (models/step.h), and keeps its final
 * parameters and optimizer state outside the ledger; then trains the same model again,
 * this rank running micro-batch `rank` and the step reducing over the ranks at a ZeRO
 * stage (parallel/zero.h), and checks:
 *   - the parameters equal the one-process run's to the bit, on every rank;
 *   - the optimizer state does, gathered on rank 0 (stages 1 and 2 shard it);
 *   - the ledger holds exactly the ZeRO formula of each kind for this rank's shard;
 *   - the communication ledger counted exactly the bytes each collective moved.
 * And ranks that compare what must agree (dist_agree) name the first difference.
 * Every strategy none, full and selective, every stage 0, 1, 2, 3. K = 3 does not divide the
 * GPT's parameter count, so the shards are uneven. Run outside mpirun, the file is a
 * group of one and checks the same (K = 1).
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

#include "parallel/comm.h"
#include "tensor/rng.h"
#include "parallel/group.h"
#include "parallel/zero.h"
#include "tests/fixture_train.h"
#include "models/step.h"

enum { STEPS = 3 };

static DistGroup world;

/* What a run ended with, in plain memory (not the ledger): every parameter, then every
 * AdamW state (m of each parameter, then v), flat. */
typedef struct Final {
    float *params, *state;
    size_t total;
} Final;

static void final_free(Final *f)
{
    free(f->params);
    free(f->state);
}

static size_t param_total(const Model *m)
{
    size_t total = 0;
    for (int i = 0; i < m->n_params; i++) total += m->params[i].var->value->numel;
    return total;
}

/* The model's parameters and the state of `full` (an optimizer over everything), copied. */
static Final final_of(const Model *m, const Optimizer *full)
{
    Final f = {.total = param_total(m)};
    f.params = malloc(f.total * sizeof *f.params);
    f.state = malloc(2 * f.total * sizeof *f.state);
    assert_true(f.params && f.state);
    size_t at = 0;
    for (int i = 0; i < m->n_params; i++, at += m->params[i - 1].var->value->numel)
        memcpy(f.params + at, m->params[i].var->value->f32, m->params[i].var->value->bytes);
    at = 0;
    for (int which = 0; which < 2; which++)
        for (int i = 0; full && i < m->n_params; i++) {
            Tensor *s[2];
            optim_state(full, i, &s[0], &s[1]);
            memcpy(f.state + at, s[which]->f32, s[which]->bytes);
            at += s[which]->numel;
        }
    return f;
}

/* STEPS steps of the trainee, each of world.size micro-batches drawn in order: all in this
 * process (zero NULL), or this rank's through `zero`. */
static void train(Model *m, const Strategy *strategy, Optimizer *opt, Zero *zero)
{
    const Trainee gpt = {"gpt", 2, 0, DROPOUT_RNG_STREAM, ATTENTION_NAIVE, 0.0f};
    Schedule *schedule = schedule_for_strategy(strategy, m->n_layers);
    assert_non_null(schedule);
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 77, 1);
    Pcg32 data;
    pcg32_seed(&data, 78, 2);
    const Step step = {.model = m, .schedule = schedule, .optim = opt, .plugs = {step_zero_plug(zero)}};
    for (int s = 0; s < STEPS; s++) {
        MicroBatch mb[8];
        for (int r = 0; r < world.size; r++) mb[r].input = fixture_batch(&gpt, &data, &mb[r].targets);
        StepResult result;
        const RematStatus status = zero ? step_run(&step, &mb[world.rank], 1, &ctx, NULL, &result)
                                        : step_run(&step, mb, world.size, &ctx, NULL, &result);
        for (int r = 0; r < world.size; r++) {
            var_free(mb[r].input);
            var_free(mb[r].targets);
        }
        assert_int_equal(status, REMAT_OK);
    }
    schedule_free(schedule);
}

/* The one-process run of the K micro-batches. */
static Final reference(const Strategy *strategy)
{
    Model *m = fixture_model(&(Trainee){"gpt", 2, 0, DROPOUT_RNG_STREAM, ATTENTION_NAIVE, 0.0f});
    const OptimConfig c = optim_adamw_defaults(1e-2f);
    Optimizer *opt = optim_create(&c, m->params, m->n_params);
    assert_non_null(opt);
    train(m, strategy, opt, NULL);
    Final f = final_of(m, opt);
    optim_free(opt);
    model_free(m);
    return f;
}

/* Bytes rank r's shard holds of `total` floats among world.size ranks. */
static uint64_t shard_bytes(size_t total, int r)
{
    return 4 * (uint64_t)(shard_begin(total, r + 1, world.size) - shard_begin(total, r, world.size));
}

/* Exactly what the communication ledger must say after STEPS steps at `stage`. */
static void check_comm(size_t total, int stage)
{
    const CommCounts c = comm_counts();
    const int K = world.size, me = world.rank;
    uint64_t others = 0; /* the bytes of every other rank's shard */
    for (int r = 0; r < K; r++)
        if (r != me) others += shard_bytes(total, r);
    const uint64_t mine = shard_bytes(total, me) * (uint64_t)(K - 1);
    const CommPhase gather = stage == 0 ? COMM_GRAD_REDUCE : COMM_PARAM_GATHER;
    assert_int_equal(c.sent[COMM_REDUCE_SCATTER][COMM_GRAD_REDUCE], STEPS * others);
    assert_int_equal(c.received[COMM_REDUCE_SCATTER][COMM_GRAD_REDUCE], STEPS * mine);
    if (stage == 3) { /* every group gathered at least once a step: its forward */
        assert_true(c.sent[COMM_ALL_GATHER][gather] >= STEPS * mine);
        assert_true(c.received[COMM_ALL_GATHER][gather] >= STEPS * others);
        return;
    }
    assert_int_equal(c.sent[COMM_ALL_GATHER][gather], STEPS * mine);
    assert_int_equal(c.received[COMM_ALL_GATHER][gather], STEPS * others);
    assert_int_equal(c.sent[COMM_ALL_GATHER][COMM_CONTROL], STEPS * 4 * (uint64_t)(K - 1)); /* the losses */
    const uint64_t moved = comm_sent(&c, COMM_GRAD_REDUCE) + comm_sent(&c, COMM_PARAM_GATHER);
    assert_int_equal(moved, STEPS * (others + mine)); /* about 2Ψ floats a step */
}

/* The data-parallel run at `stage`, checked against the one-process run. */
static void check_stage(const Strategy *strategy, int stage)
{
    Final ref = reference(strategy);
    assert_int_equal(mem_current(MEM_PARAM) + mem_current(MEM_GRAD) + mem_current(MEM_OPTIM), 0);

    Model *m = fixture_model(&(Trainee){"gpt", 2, 0, DROPOUT_RNG_STREAM, ATTENTION_NAIVE, 0.0f});
    Zero *zero = step_zero_create(m, &world, stage);
    assert_non_null(zero);
    const OptimConfig c = optim_adamw_defaults(1e-2f);
    Optimizer *opt = zero_optimizer_create(zero, &c);
    assert_non_null(opt);
    comm_reset();
    train(m, strategy, opt, zero);

    const size_t total = ref.total;
    const uint64_t shard = shard_bytes(total, world.rank);
    assert_int_equal(mem_current(MEM_PARAM), stage >= 3 ? shard : 4 * (uint64_t)total);
    assert_int_equal(mem_current(MEM_GRAD), stage >= 2 ? shard : 4 * (uint64_t)total);
    assert_int_equal(mem_current(MEM_OPTIM), stage >= 1 ? 2 * shard : 8 * (uint64_t)total);
    check_comm(total, stage);
    assert_int_equal(zero_params_gather(zero), REMAT_OK); /* stage 3: whole again, to compare */

    Optimizer *full = stage == 0 ? opt : world.rank == 0 ? optim_create(&c, m->params, m->n_params) : NULL;
    assert_int_equal(zero_gather_optimizer(zero, opt, full, 0), REMAT_OK);
    Final got = final_of(m, full);
    assert_memory_equal(got.params, ref.params, total * sizeof(float));
    if (full) assert_memory_equal(got.state, ref.state, 2 * total * sizeof(float));
    if (full != opt) optim_free(full);
    zero_params_scatter(zero);
    final_free(&got);
    final_free(&ref);
    optim_free(opt);
    zero_free(zero);
    model_free(m);
    dist_barrier(&world);
}

static void check_every_stage(StrategyKind kind)
{
    Strategy s = strategy_defaults(kind);
    for (int stage = 0; stage <= ZERO_MAX_STAGE; stage++) check_stage(&s, stage);
}

static void test_stages_match_accumulation_with_none(void **state)
{
    (void)state;
    check_every_stage(STRATEGY_NONE);
}

static void test_stages_match_accumulation_with_full(void **state)
{
    (void)state;
    check_every_stage(STRATEGY_FULL);
}

static void test_stages_match_accumulation_with_selective(void **state)
{
    (void)state;
    check_every_stage(STRATEGY_SELECTIVE);
}

/* The parameter-gathering bytes of STEPS stage-3 steps under `kind` (a 4-layer GPT). */
static uint64_t stage3_gather_bytes(StrategyKind kind)
{
    Model *m = fixture_model(&(Trainee){"gpt", 4, 0, DROPOUT_RNG_STREAM, ATTENTION_NAIVE, 0.0f});
    Zero *zero = step_zero_create(m, &world, 3);
    assert_non_null(zero);
    const OptimConfig c = optim_adamw_defaults(1e-2f);
    Optimizer *opt = zero_optimizer_create(zero, &c);
    assert_non_null(opt);
    comm_reset();
    const Strategy s = strategy_defaults(kind);
    train(m, &s, opt, zero);
    const CommCounts counts = comm_counts();
    optim_free(opt);
    zero_free(zero);
    model_free(m);
    return counts.received[COMM_ALL_GATHER][COMM_PARAM_GATHER];
}

/* Stage 3 gathers a layer when the forward uses it and again when backward does. A region
 * of one layer (full, selective) replays it just before its backward, so the replay and
 * the backward share one gather: full moves exactly what none moves. sqrt's segments of
 * two layers replay both, and the first is let go for the second before its backward
 * needs it again: sqrt moves more. */
static void test_stage3_replay_and_backward_share_one_gather(void **state)
{
    (void)state;
    const uint64_t none = stage3_gather_bytes(STRATEGY_NONE), full = stage3_gather_bytes(STRATEGY_FULL);
    const uint64_t sqrt_ = stage3_gather_bytes(STRATEGY_SQRT);
    if (world.rank == 0)
        printf("  stage 3, rank 0 received per step: none %" PRIu64 " B, full %" PRIu64 " B, sqrt %" PRIu64 " B\n",
               none / STEPS, full / STEPS, sqrt_ / STEPS);
    assert_int_equal(full, none);
    if (world.size > 1) assert_true(sqrt_ > none);
}

/* A shard is as long as floor(Ψ(k+1)/K) − floor(Ψk/K): the shards tile Ψ, differ by one at
 * most, and 10 elements over 3 ranks are 3, 3, 4. */
static void test_shards_tile_the_parameters(void **state)
{
    (void)state;
    assert_int_equal(shard_begin(10, 0, 3), 0);
    assert_int_equal(shard_begin(10, 1, 3), 3);
    assert_int_equal(shard_begin(10, 2, 3), 6);
    assert_int_equal(shard_begin(10, 3, 3), 10);
    for (int K = 1; K <= 7; K++)
        for (int k = 0; k < K; k++) {
            const size_t len = shard_begin(1001, k + 1, K) - shard_begin(1001, k, K);
            assert_true(len == 1001 / (size_t)K || len == 1001 / (size_t)K + 1);
        }
}

/* Rank r's contribution to the collectives test: `n` floats from a generator seeded by r. */
static void contribution(int r, float *x, size_t n)
{
    Pcg32 rng;
    pcg32_seed(&rng, 11, (uint64_t)r);
    for (size_t i = 0; i < n; i++) x[i] = pcg32_normal(&rng);
}

/* An array of three pieces whose shards span several chunks (DIST_CHUNK) and cross the
 * pieces: the ordered reduce-scatter gives each rank the sum in rank order, scaled, to the
 * bit of the same additions done here; the all-gather then gives every rank all of it. */
static void test_reduce_scatter_sums_in_rank_order_across_chunks_and_pieces(void **state)
{
    (void)state;
    const size_t sizes[3] = {70001, 3, 3 * DIST_CHUNK + 17}, total = sizes[0] + sizes[1] + sizes[2];
    float *mine = malloc(total * sizeof *mine), *other = malloc(total * sizeof *other);
    float *want = malloc(total * sizeof *want), *shard = malloc(total * sizeof *shard);
    float *scratch = malloc(DIST_CHUNK * sizeof *scratch);
    assert_true(mine && other && want && shard && scratch);
    contribution(world.rank, mine, total);
    for (int r = 0; r < world.size; r++) { /* what every rank holds, summed here in rank order */
        contribution(r, other, total);
        for (size_t i = 0; i < total; i++) want[i] = r == 0 ? other[i] : want[i] + other[i];
    }
    for (size_t i = 0; i < total; i++) want[i] *= 0.25f;
    const FlatPiece pieces[3] = {{mine, sizes[0]}, {mine + sizes[0], sizes[1]}, {mine + sizes[0] + sizes[1], sizes[2]}};
    const FlatView v = {pieces, 3, total};
    const size_t b = shard_begin(total, world.rank, world.size), e = shard_begin(total, world.rank + 1, world.size);
    assert_int_equal(dist_scratch_floats(e - b), e - b < DIST_CHUNK ? e - b : DIST_CHUNK);
    assert_int_equal(dist_reduce_scatter(&world, &v, 0.25f, shard, scratch, COMM_GRAD_REDUCE), REMAT_OK);
    flat_write(&v, b, e, shard);
    assert_int_equal(dist_all_gather(&world, &v, NULL, COMM_GRAD_REDUCE), REMAT_OK);
    dist_barrier(&world);
    assert_memory_equal(shard, want + b, (e - b) * sizeof(float));
    assert_memory_equal(mine, want, total * sizeof(float));
    free(mine), free(other), free(want), free(shard), free(scratch);
}

/* A stage that does not exist is refused by name. */
static void test_unknown_stage_is_refused(void **state)
{
    (void)state;
    Model *m = fixture_model(&(Trainee){"gpt", 1, 0, DROPOUT_RNG_STREAM, ATTENTION_NAIVE, 0.0f});
    assert_null(zero_create(&world, 4, m->params, m->n_params));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "stage 4 (0 to 3 are built)"));
    model_free(m);
}

/* Ranks compare what must agree: the same facts pass; a fact that differs fails on every
 * rank, naming it, this rank's value and the first rank that holds another. Last: a
 * difference makes every rank end itself at dist_abort (group.h). */
static void test_ranks_agree_or_name_the_first_difference(void **state)
{
    (void)state;
    const DistFact same[] = {dist_fact("--steps", "%d", 4), dist_fact("--lr", "%.9g", (double)0.002f)};
    assert_int_equal(dist_agree(&world, same, 2, "give every rank the same"), REMAT_OK);
    if (world.size == 1) return;
    const DistFact differ[] = {dist_fact("--steps", "%d", 4), dist_fact("--seed", "%d", 10 + world.rank),
                               dist_fact("--batch", "%d", world.rank)};
    assert_int_equal(dist_agree(&world, differ, 3, "give every rank the same"), REMAT_EINVAL);
    char want[128];
    snprintf(want, sizeof want, "--seed is %d here, %d on rank %d: give every rank the same", 10 + world.rank,
             world.rank ? 10 : 11, world.rank ? 0 : 1);
    assert_string_equal(remat_last_error(), want);
}

int main(int argc, char **argv)
{
    if (dist_init(&argc, &argv, &world) != REMAT_OK) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shards_tile_the_parameters),
        cmocka_unit_test(test_reduce_scatter_sums_in_rank_order_across_chunks_and_pieces),
        cmocka_unit_test_setup_teardown(test_unknown_stage_is_refused, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_stage3_replay_and_backward_share_one_gather, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_stages_match_accumulation_with_none, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_stages_match_accumulation_with_full, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_stages_match_accumulation_with_selective, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test(test_ranks_agree_or_name_the_first_difference),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (failed && world.size > 1) dist_abort(1); /* the other ranks may wait in a collective */
    dist_finalize();
    return failed;
}
