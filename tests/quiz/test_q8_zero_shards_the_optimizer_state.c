/*
 * test_q8_zero_shards_the_optimizer_state.c — Quiz question 8's remedy: what recomputation
 * cannot remove, data parallelism can divide. Run as 2 ranks (ctest starts it through
 * mpirun).
 *
 * On every rank: one process's AdamW step of the quiz's GPT under full checkpointing,
 * without a budget, peaks at P bytes. Under a budget of P − 1 the same step in one process
 * is out of memory, and its message lists what is resident, the optimizer's state among
 * it. Under ZeRO stage 1 over the 2 ranks, each keeps half of AdamW's state (exactly
 * 8 bytes per element of its shard), and the same step, one micro-batch per rank, fits
 * the same budget on every rank.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "parallel/zero.h"
#include "tests/quiz/fixtures.h"

static DistGroup world;

/* One AdamW step of `gpt` under full checkpointing, on this rank's micro-batch through
 * `zero`, or alone (zero NULL). */
static RematStatus adamw_step(Model *gpt, Optimizer *opt, Zero *zero, Var *x, Var *t)
{
    const Strategy full = strategy_defaults(STRATEGY_FULL);
    Schedule *schedule = schedule_for_strategy(&full, gpt->n_layers);
    assert_non_null(schedule);
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 7, 7);
    const Step step = {.model = gpt, .schedule = schedule, .optim = opt, .plugs = {step_zero_plug(zero)}};
    const MicroBatch mb = {x, t};
    StepResult result;
    const RematStatus status = step_run(&step, &mb, 1, &ctx, NULL, &result);
    schedule_free(schedule);
    return status;
}

static void test_q8_zero1_fits_a_budget_no_single_process_fits(void **state)
{
    (void)state;
    if (world.size != 2) fail_msg("run as 2 ranks: mpirun -np 2 %s", "test_q8_zero_shards_the_optimizer_state");
    Model *gpt = quiz_gpt(0.1f);
    Var *t, *x = quiz_tokens(8 + (uint64_t)world.rank, &t);
    const OptimConfig adamw = optim_adamw_defaults(1e-3f);

    Optimizer *opt = optim_create(&adamw, gpt->params, gpt->n_params);
    assert_non_null(opt);
    mem_reset_peaks();
    assert_int_equal(adamw_step(gpt, opt, NULL, x, t), REMAT_OK);
    const size_t peak = mem_peak_moment().resident;
    optim_free(opt);

    mem_set_budget(peak - 1);
    opt = optim_create(&adamw, gpt->params, gpt->n_params); /* its state fits; the step does not */
    assert_non_null(opt);
    assert_int_equal(adamw_step(gpt, opt, NULL, x, t), REMAT_EOOM);
    if (world.rank == 0) printf("  one process, budget %zu B: %s\n", peak - 1, remat_last_error());
    assert_non_null(strstr(remat_last_error(), "optimizer"));
    optim_free(opt);

    Zero *zero = zero_create(&world, 1, gpt->params, gpt->n_params);
    assert_non_null(zero);
    opt = zero_optimizer_create(zero, &adamw);
    assert_non_null(opt);
    const size_t shard = shard_begin(zero_total(zero), world.rank + 1, 2) - shard_begin(zero_total(zero), world.rank, 2);
    assert_int_equal(mem_current(MEM_OPTIM), 8 * shard);
    mem_reset_peaks();
    const RematStatus status = adamw_step(gpt, opt, zero, x, t);
    const size_t sharded_peak = mem_peak_moment().resident;
    mem_set_budget(0);
    printf("  rank %d of %d, ZeRO-1: optimizer %zu B instead of %zu B, step peak %zu B within the budget: %s\n",
           world.rank, world.size, mem_current(MEM_OPTIM), 2 * model_param_bytes(gpt), sharded_peak,
           status == REMAT_OK ? "fits" : remat_last_error());
    assert_int_equal(status, REMAT_OK);
    assert_true(sharded_peak < peak);

    optim_free(opt);
    zero_free(zero);
    var_free(x);
    var_free(t);
    model_free(gpt);
}

int main(int argc, char **argv)
{
    if (dist_init(&argc, &argv, &world) != REMAT_OK) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q8_zero1_fits_a_budget_no_single_process_fits),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (failed && world.size > 1) dist_abort(1); /* the other rank may wait in a collective */
    dist_finalize();
    return failed;
}
