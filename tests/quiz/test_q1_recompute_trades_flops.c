/*
 * test_q1_recompute_trades_flops.c — Quiz question 1: what does activation recomputation
 * trade to save memory? Extra computation (FLOPs).
 *
 * It proves that checkpointing every block of a GPT cuts the activations it stores while
 * the FLOP ledger's RECOMPUTE phase shows the extra forward work — and that nothing else
 * changed: the loss and every gradient are bit-identical (so the model's accuracy cannot
 * differ), and everything stays float32 (no precision was given up). There is no network
 * in a single-process CPU step, so bandwidth cannot be what was traded.
 *
 * Watch it happen: break on region_backward (checkpoint/checkpoint.c) and print
 * flops_get(PHASE_RECOMPUTE) before and after `y = r->fn(...)`; break on mem_alloc with
 * the condition kind == MEM_ACT to see the replay re-create the activations.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "tests/quiz/fixtures.h"

static void test_q1_recomputation_spends_flops_not_accuracy_or_precision(void **state)
{
    (void)state;
    Model *gpt = quiz_gpt(0.1f);
    Var *targets, *x = quiz_tokens(1, &targets);
    Strategy none = strategy_defaults(STRATEGY_NONE), full = strategy_defaults(STRATEGY_FULL);
    QuizStep keep = quiz_step(gpt, &none, x, targets);
    QuizStep recompute = quiz_step(gpt, &full, x, targets);
    assert_int_equal(keep.status, REMAT_OK);
    assert_int_equal(recompute.status, REMAT_OK);

    printf("  stored activations: none %zu B, full %zu B\n", keep.stored_act, recompute.stored_act);
    printf("  RECOMPUTE FLOPs: none %llu, full %llu (forward %llu)\n",
           (unsigned long long)keep.flops[PHASE_RECOMPUTE], (unsigned long long)recompute.flops[PHASE_RECOMPUTE],
           (unsigned long long)keep.flops[PHASE_FORWARD]);
    /* The memory saved ... */
    assert_true(recompute.stored_act < keep.stored_act / 2);
    /* ... was paid for in FLOPs: the blocks' forward, once more. */
    assert_int_equal(keep.flops[PHASE_RECOMPUTE], 0);
    assert_true(recompute.flops[PHASE_RECOMPUTE] > keep.flops[PHASE_FORWARD] / 2);
    /* Not in accuracy: the same loss and the same gradients, bit for bit. */
    assert_memory_equal(&keep.loss, &recompute.loss, sizeof(float));
    assert_true(quiz_same_grads(&keep, &recompute));
    /* Not in precision: every gradient is float32 either way. */
    for (int i = 0; i < recompute.n_grads; i++) assert_int_equal(recompute.grads[i]->dtype, DTYPE_F32);

    quiz_step_free(&keep);
    quiz_step_free(&recompute);
    var_free(x);
    var_free(targets);
    model_free(gpt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q1_recomputation_spends_flops_not_accuracy_or_precision),
    };
    return cmocka_run_group_tests_name("quiz q1", tests, NULL, NULL);
}
