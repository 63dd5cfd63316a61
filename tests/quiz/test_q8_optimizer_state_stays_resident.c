/*
 * test_q8_optimizer_state_stays_resident.c — Quiz question 8: checkpointing reduces the
 * stored activations, but the optimizer's state still does not fit; why is the job still
 * out of memory? Activation recomputation does not remove optimizer-state storage.
 *
 * It proves it with the memory ledger's budget, which makes allocation fail like a
 * device's: AdamW keeps two tensors per parameter, allocated before any step. With a
 * budget below parameters + gradients + AdamW state, no strategy fits — full
 * recomputation included — and the OOM message names the optimizer state as what did not
 * fit, next to what is resident. With a budget just large enough for that state, full
 * checkpointing makes a step fit that no checkpointing cannot. The distractors: the state
 * stays float32 (its bytes are exactly 2 x the parameters'), and backward still allocates
 * (gradients), so "backward no longer consumes memory" is false too.
 *
 * Watch it happen: break on check_budget (tensor/memory.c) and print kind and bytes; the
 * last call before the failure is the optimizer's second moment.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tests/quiz/fixtures.h"
#include "autograd/optim.h"

static void test_q8_no_amount_of_recomputation_makes_room_for_adamw(void **state)
{
    (void)state;
    Model *gpt = quiz_gpt(0.1f);
    Var *t, *x = quiz_tokens(8, &t);
    const size_t params = model_param_bytes(gpt);
    const size_t base = mem_resident(); /* parameters and the batch */

    /* Room for the gradients and one moment: AdamW needs two. */
    mem_set_budget(base + params + params);
    OptimConfig adamw = optim_adamw_defaults(1e-3f);
    Strategy full = strategy_defaults(STRATEGY_FULL);
    QuizStep step = quiz_step(gpt, &full, x, t); /* the gradients now exist */
    assert_int_equal(step.status, REMAT_OK);
    quiz_step_free(&step);
    Optimizer *opt = optim_create(&adamw, gpt->params, gpt->n_params);
    assert_null(opt);
    assert_int_equal(remat_last_status(), REMAT_EOOM);
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "of optimizer"));
    assert_non_null(strstr(remat_last_error(), "params"));
    assert_int_equal(mem_current(MEM_OPTIM), 0);

    /* Budget = parameters + gradients + AdamW state + a little: the state fits, and then
     * the activations decide. No checkpointing does not fit; full checkpointing does. */
    mem_set_budget(0);
    opt = optim_create(&adamw, gpt->params, gpt->n_params);
    assert_non_null(opt);
    assert_int_equal(mem_current(MEM_OPTIM), 2 * params);
    Strategy none = strategy_defaults(STRATEGY_NONE);
    QuizStep unlimited_none = quiz_step(gpt, &none, x, t), unlimited_full = quiz_step(gpt, &full, x, t);
    const size_t fixed = mem_resident();
    mem_set_budget(fixed + (unlimited_none.peak_act + unlimited_full.peak_act) / 2);
    QuizStep fits = quiz_step(gpt, &full, x, t), too_big = quiz_step(gpt, &none, x, t);
    mem_set_budget(0);
    printf("  budget %zu B over params+grads+AdamW: full (peak %zu B) %s, none (peak %zu B) %s\n",
           (unlimited_none.peak_act + unlimited_full.peak_act) / 2, unlimited_full.peak_act,
           fits.status == REMAT_OK ? "fits" : "does not fit", unlimited_none.peak_act,
           too_big.status == REMAT_OK ? "fits" : "does not fit");
    assert_int_equal(fits.status, REMAT_OK);
    assert_int_equal(too_big.status, REMAT_EOOM);

    QuizStep *all[] = {&unlimited_none, &unlimited_full, &fits, &too_big};
    for (int i = 0; i < 4; i++) quiz_step_free(all[i]);
    optim_free(opt);
    var_free(x);
    var_free(t);
    model_free(gpt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q8_no_amount_of_recomputation_makes_room_for_adamw),
    };
    return cmocka_run_group_tests_name("quiz q8", tests, NULL, NULL);
}
