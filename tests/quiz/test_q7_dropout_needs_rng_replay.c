/*
 * test_q7_dropout_needs_rng_replay.c — Quiz question 7: a checkpointed block contains
 * dropout; why does a consistent RNG state matter during the replay? Backward's
 * recomputation must reproduce the forward's randomness.
 *
 * It proves it on a GPT with dropout 0.1 in every block: replaying each block with the
 * generator restored to its state at the block's entry gives gradients bit-identical to
 * no checkpointing; replaying without restoring it draws new dropout masks, so the
 * gradients are computed through masks the forward never used — they come out wrong —
 * and the determinism check names the region whose replay diverged. The distractors: the
 * batch size, the optimizer and the weights are the same in every run here.
 *
 * Watch it happen: break on region_backward (checkpoint/checkpoint.c) and print
 * r->rng_at_entry and ctx->rng before and after `ctx->rng = r->rng_at_entry`; break on
 * k_dropout_forward to compare the generator's state in the forward and in the replay.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tests/quiz/fixtures.h"

static void test_q7_the_replay_must_reproduce_the_forward_randomness(void **state)
{
    (void)state;
    Model *gpt = quiz_gpt(0.1f);
    Var *t, *x = quiz_tokens(7, &t);
    Strategy none = strategy_defaults(STRATEGY_NONE);
    Strategy replay = strategy_defaults(STRATEGY_FULL);
    Strategy fresh = strategy_defaults(STRATEGY_FULL);
    fresh.replay.preserve_rng = false;

    QuizStep reference = quiz_step(gpt, &none, x, t);
    QuizStep replayed = quiz_step(gpt, &replay, x, t);
    QuizStep unreplayed = quiz_step(gpt, &fresh, x, t);
    const double with = quiz_max_grad_diff(&reference, &replayed);
    const double without = quiz_max_grad_diff(&reference, &unreplayed);
    printf("  max |gradient difference| against no checkpointing: with RNG replay %.3g, without %.3g\n",
           with, without);
    assert_true(quiz_same_grads(&reference, &replayed));
    assert_true(without > 1e-4);
    /* The forward itself is unaffected: the loss is the same either way. */
    assert_memory_equal(&reference.loss, &unreplayed.loss, sizeof(float));

    fresh.replay.determinism_check = true;
    QuizStep checked = quiz_step(gpt, &fresh, x, t);
    assert_int_equal(checked.status, REMAT_ESTATE);
    printf("  determinism check: %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "checkpoint region h.2"));

    QuizStep *all[] = {&reference, &replayed, &unreplayed, &checked};
    for (int i = 0; i < 4; i++) quiz_step_free(all[i]);
    var_free(x);
    var_free(t);
    model_free(gpt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q7_the_replay_must_reproduce_the_forward_randomness),
    };
    return cmocka_run_group_tests_name("quiz q7", tests, NULL, NULL);
}
