/*
 * test_q3_overhead_depends_on_the_model.c — Quiz question 3: why measure checkpointing's
 * overhead on the actual model? Because checkpoint placement, the operators inside, and
 * the hardware decide what the replay costs.
 *
 * It proves it from the FLOP ledger (deterministic, unlike wall time): on the same GPT,
 * replaying only the attention ops, only the MLP ops, or whole blocks costs very different
 * fractions of the step's FLOPs; and the same placement costs a different fraction when
 * the operators' shapes change (sequence length). No fixed percentage (such as "always
 * 40%") survives this, and recomputation never removes forward work — it adds some.
 * (Hardware changes the time on top of the FLOPs: bench_placement measures that, on 1 and
 * 2 threads.)
 *
 * Watch it happen: break on cache_lookup (checkpoint/checkpoint.c) in an "attention only"
 * run and print tag: the MLP's ops come from the cache, the attention's are recomputed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tests/quiz/fixtures.h"

/* Placement as a policy: recompute the ops whose tag starts with `user` ("attn." or
 * "mlp."), keep every other output. */
static PolicyDecision recompute_prefix(const char *op, const char *tag, void *user)
{
    (void)op;
    const char *prefix = user;
    return tag && !strncmp(tag, prefix, strlen(prefix)) ? POLICY_RECOMPUTE : POLICY_SAVE;
}

static double recompute_share(Model *m, const Strategy *s, Var *x, Var *t)
{
    QuizStep step = quiz_step(m, s, x, t);
    assert_int_equal(step.status, REMAT_OK);
    double share = (double)step.flops[PHASE_RECOMPUTE] /
                   (double)(step.flops[PHASE_FORWARD] + step.flops[PHASE_BACKWARD]);
    quiz_step_free(&step);
    return share;
}

static void test_q3_replay_cost_depends_on_placement_and_operators(void **state)
{
    (void)state;
    Policy attention_only = {"attention only", recompute_prefix, "attn."};
    Policy mlp_only = {"mlp only", recompute_prefix, "mlp."};
    Strategy blocks = strategy_defaults(STRATEGY_FULL);
    Strategy attn = {.kind = STRATEGY_SELECTIVE, .policy = &attention_only, .replay.preserve_rng = true};
    Strategy mlp = {.kind = STRATEGY_SELECTIVE, .policy = &mlp_only, .replay.preserve_rng = true};

    Model *gpt = quiz_gpt(0.1f);
    Var *t, *x = quiz_tokens(3, &t);
    double whole = recompute_share(gpt, &blocks, x, t), a = recompute_share(gpt, &attn, x, t),
           m = recompute_share(gpt, &mlp, x, t);
    printf("  recompute FLOPs / (forward + backward), T=16: whole blocks %.1f%%, attention only %.1f%%, "
           "MLP only %.1f%%\n", 100 * whole, 100 * a, 100 * m);
    /* Placement decides: three placements, three different costs, all below whole blocks. */
    assert_true(a < whole && m < whole);
    assert_true(a + m > 0.9 * whole && a + m <= whole); /* the two halves of a block */
    assert_true(m > 1.5 * a || a > 1.5 * m);
    var_free(x);
    var_free(t);
    model_free(gpt);

    /* Operators decide too: attention's ops grow with T², the MLP's with T. The same
     * "attention only" placement on longer sequences costs a larger share. */
    Model *longer = gpt_create(&(GptConfig){.n_layers = 3, .d_model = 32, .n_heads = 4, .seq_len = 128,
                                            .vocab = 256, .dropout = 0.1f, .seed = 2026});
    Tensor *xt = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){1, 128});
    Tensor *tt = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){1, 128});
    for (int i = 0; i < 128; i++) xt->i32[i] = (i * 31) % 256, tt->i32[i] = (i * 17) % 256;
    Var *xl = var_create(xt, false, NULL), *tl = var_create(tt, false, NULL);
    double a_long = recompute_share(longer, &attn, xl, tl);
    printf("  attention only at T=128: %.1f%% (at T=16: %.1f%%)\n", 100 * a_long, 100 * a);
    assert_true(a_long > 1.5 * a);
    var_free(xl);
    var_free(tl);
    model_free(longer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q3_replay_cost_depends_on_placement_and_operators),
    };
    return cmocka_run_group_tests_name("quiz q3", tests, NULL, NULL);
}
