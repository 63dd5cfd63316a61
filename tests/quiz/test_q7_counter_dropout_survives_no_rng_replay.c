/*
 * test_q7_counter_dropout_survives_no_rng_replay.c — Quiz question 7, the other design:
 * the replay reproduces the forward's randomness by construction when a dropout mask is
 * a pure function of (seed, step, micro-batch, op instance, element), not the next draws
 * of a running generator.
 *
 * It proves it on the same GPT as test_q7_dropout_needs_rng_replay.c, dropout 0.1 in
 * every block, with counter-based masks (Philox4x32-10): every strategy, replaying its
 * regions WITHOUT restoring the generator and checking every replay against its first
 * forward, gives gradients bit-identical to no checkpointing — where the PCG32 stream,
 * in the same runs, gives wrong ones. And the masks are not stored at all: the step
 * without checkpointing holds exactly the stream's mask bytes less, one byte per element
 * of every dropout.
 *
 * Watch it happen: break on k_dropout_counter_forward and k_dropout_counter_backward
 * (tensor/kernels_dropout.c) and print *key: the backward regenerates the mask from the
 * key the forward used; ctx->rng never moves.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tests/quiz/fixtures.h"

enum { B = 2, T = 16, C = 32, H = 4, BLOCKS = 3 }; /* quiz_gpt's and quiz_tokens' sizes */

static void test_q7_counter_masks_need_no_rng_replay(void **state)
{
    (void)state;
    Model *gpt = quiz_gpt(0.1f);
    Var *t, *x = quiz_tokens(7, &t);
    const Strategy none = strategy_defaults(STRATEGY_NONE);
    QuizStep reference = quiz_step_with(gpt, &none, NULL, DROPOUT_RNG_COUNTER, x, t);
    assert_int_equal(reference.status, REMAT_OK);
    Strategy unreplayed[] = {
        strategy_defaults(STRATEGY_FULL),
        strategy_defaults(STRATEGY_SQRT),
        {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_ATTENTION_CORE},
        {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_DOTS_SAVEABLE},
    };
    for (size_t i = 0; i < sizeof unreplayed / sizeof unreplayed[0]; i++) {
        Strategy *s = &unreplayed[i];
        s->replay.preserve_rng = false;
        s->replay.determinism_check = true;
        QuizStep counter = quiz_step_with(gpt, s, NULL, DROPOUT_RNG_COUNTER, x, t);
        QuizStep stream = quiz_step_with(gpt, s, NULL, DROPOUT_RNG_STREAM, x, t);
        printf("  %-28s without RNG replay: counter %s, stream %s\n",
               s->policy ? s->policy->name : name_of(&STRATEGY_NAMES, s->kind),
               counter.status == REMAT_OK && quiz_same_grads(&reference, &counter) ? "gradients identical to none"
                                                                                   : "WRONG",
               stream.status == REMAT_ESTATE ? "caught by the determinism check" : "not caught");
        assert_int_equal(counter.status, REMAT_OK);
        assert_true(quiz_same_grads(&reference, &counter));
        assert_int_equal(stream.status, REMAT_ESTATE); /* the running stream's replay diverged */
        quiz_step_free(&counter);
        quiz_step_free(&stream);
    }

    /* No mask is stored: the stream keeps one byte per element of each dropout — the
     * embedding's (B,T,C), and per block the attention's (B,H,T,T) and two (B,T,C) — and
     * the counter keeps none of them. */
    QuizStep stream_none = quiz_step_with(gpt, &none, NULL, DROPOUT_RNG_STREAM, x, t);
    const size_t masks = (size_t)B * T * C + BLOCKS * ((size_t)B * H * T * T + 2 * (size_t)B * T * C);
    printf("  stored between forward and backward: stream %zu bytes, counter %zu bytes (masks: %zu)\n",
           stream_none.stored_act, reference.stored_act, masks);
    assert_int_equal(stream_none.stored_act - reference.stored_act, masks);
    quiz_step_free(&stream_none);
    quiz_step_free(&reference);
    var_free(x);
    var_free(t);
    model_free(gpt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q7_counter_masks_need_no_rng_replay),
    };
    return cmocka_run_group_tests_name("quiz q7, counter-based dropout", tests, NULL, NULL);
}
