/*
 * test_q5_selective_recomputation.c — Quiz question 5: what is the idea behind selective
 * recomputation? Recompute only the operations that are cheap to recompute but heavy to
 * store, and keep (cache) the outputs of the expensive ones.
 *
 * It proves it on a GPT with many small heads (C = 64, H = 8, T = 64): the attention core
 * (scores, softmax, dropout, weights·V) holds about half of the activation bytes but a
 * small share of the FLOPs — its matmuls cost T/(6C + T) of a block's, 14% here. `attention_core` recomputes only that core and keeps the
 * matmul-heavy rest: it stores far less than no checkpointing, for a fraction of the
 * FLOPs that full recomputation spends. The distractors: it does recompute (not
 * "nothing"), it recomputes once (not twice), and not the embedding (its output is kept).
 *
 * Watch it happen: break on cache_observe (checkpoint/checkpoint.c) and print tag for
 * every op the policy keeps; break on cache_lookup during the replay to see them served.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "tests/quiz/fixtures.h"

static void test_q5_recompute_the_cheap_heavy_ops_keep_the_expensive_ones(void **state)
{
    (void)state;
    Model *gpt = gpt_create(&(GptConfig){.n_layers = 3, .d_model = 64, .n_heads = 8, .seq_len = 64,
                                         .vocab = 256, .dropout = 0.1f, .seed = 5});
    Tensor *xt = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){2, 64});
    Tensor *tt = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){2, 64});
    for (int i = 0; i < 128; i++) xt->i32[i] = (i * 13) % 256, tt->i32[i] = (i * 7) % 256;
    Var *x = var_create(xt, false, NULL), *t = var_create(tt, false, NULL);

    Strategy none = strategy_defaults(STRATEGY_NONE), full = strategy_defaults(STRATEGY_FULL);
    Strategy core = {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_ATTENTION_CORE, .replay.preserve_rng = true};
    QuizStep n = quiz_step(gpt, &none, x, t), f = quiz_step(gpt, &full, x, t), c = quiz_step(gpt, &core, x, t);
    printf("  stored activations: none %zu B, attention_core %zu B, full %zu B\n", n.stored_act, c.stored_act,
           f.stored_act);
    printf("  RECOMPUTE FLOPs: attention_core %llu = %.1f%% of full's %llu\n",
           (unsigned long long)c.flops[PHASE_RECOMPUTE],
           100.0 * (double)c.flops[PHASE_RECOMPUTE] / (double)f.flops[PHASE_RECOMPUTE],
           (unsigned long long)f.flops[PHASE_RECOMPUTE]);
    /* Heavy to store: dropping the core saves about half of what none keeps (49% here)... */
    assert_true(c.stored_act < 0.6 * (double)n.stored_act);
    /* ... cheap to recompute: a small fraction of what recomputing everything costs (15%). */
    assert_true(c.flops[PHASE_RECOMPUTE] > 0);
    assert_true(c.flops[PHASE_RECOMPUTE] < 0.25 * (double)f.flops[PHASE_RECOMPUTE]);
    /* And the gradients are exactly those of no checkpointing. */
    assert_true(quiz_same_grads(&n, &c));

    quiz_step_free(&n);
    quiz_step_free(&f);
    quiz_step_free(&c);
    var_free(x);
    var_free(t);
    model_free(gpt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q5_recompute_the_cheap_heavy_ops_keep_the_expensive_ones),
    };
    return cmocka_run_group_tests_name("quiz q5", tests, NULL, NULL);
}
