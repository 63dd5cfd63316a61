/*
 * test_q5_fused_attention_keeps_no_t_squared.c — Quiz question 5, one level down: the
 * idea of selective recomputation (recompute what is cheap to redo but heavy to keep)
 * taken inside one kernel. Fused attention keeps, per head, q, k, v, its output and one
 * log-sum-exp per row — O(T) — and its backward recomputes the (T,T) probabilities tile
 * by tile from them, as FlashAttention does.
 *
 * It proves it on a GPT of 3 blocks (C = 32, H = 4, T = 128, batch 2, dropout 0.1 with
 * counter-based masks, no checkpointing): the naive attention core keeps two (B,H,T,T)
 * float tensors per block (the softmax's output and its dropped version), the fused one
 * none (no tensor on its tape is (.., T, T)), in exchange for its output and the
 * log-sum-exp rows; the ledger's difference is exactly that, to the byte. The price is RECOMPUTE FLOPs inside the backward, with no
 * checkpoint region at all; and the gradients are the naive path's within float32
 * rounding.
 *
 * Watch it happen: break on k_attention_backward (tensor/kernels_attention.c) and step
 * into recompute_tile: p = exp(s − lse) for one tile, never the whole matrix.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "tests/quiz/fixtures.h"

enum { B = 2, T = 128, C = 32, H = 4, D = C / H, L = 3 };

static Model *gpt(AttentionKind attention)
{
    return gpt_create(&(GptConfig){.n_layers = L, .d_model = C, .n_heads = H, .seq_len = T, .vocab = 256,
                                   .dropout = 0.1f, .attention = attention, .seed = 5});
}

static void test_q5_fused_attention_recomputes_its_probabilities_instead_of_keeping_them(void **state)
{
    (void)state;
    Model *naive = gpt(ATTENTION_NAIVE), *fused = gpt(ATTENTION_FUSED);
    Tensor *xt = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
    Tensor *tt = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
    for (int i = 0; i < B * T; i++) xt->i32[i] = (i * 13) % 256, tt->i32[i] = (i * 7) % 256;
    Var *x = var_create(xt, false, NULL), *t = var_create(tt, false, NULL);
    const Strategy none = strategy_defaults(STRATEGY_NONE);
    QuizStep n = quiz_step_with(naive, &none, NULL, DROPOUT_RNG_COUNTER, x, t);
    QuizStep f = quiz_step_with(fused, &none, NULL, DROPOUT_RNG_COUNTER, x, t);
    assert_int_equal(n.status, REMAT_OK);
    assert_int_equal(f.status, REMAT_OK);

    /* Per block the naive core keeps 2·B·H·T² floats, the fused one B·H·T·(D + 1). */
    const size_t tt_bytes = 2 * (size_t)B * H * T * T * sizeof(float);
    const size_t rows_bytes = (size_t)B * H * T * (D + 1) * sizeof(float);
    printf("  stored activations: naive %zu B, fused %zu B; per block naive keeps %zu B of (T,T) "
           "probabilities, fused %zu B of output and log-sum-exp rows\n", n.stored_act, f.stored_act, tt_bytes,
           rows_bytes);
    assert_int_equal(n.stored_act - f.stored_act, L * (tt_bytes - rows_bytes));
    printf("  RECOMPUTE FLOPs without any checkpointing: naive %llu (dropout masks made again), fused %llu "
           "(and every tile's probabilities)\n", (unsigned long long)n.flops[PHASE_RECOMPUTE],
           (unsigned long long)f.flops[PHASE_RECOMPUTE]);
    assert_true(f.flops[PHASE_RECOMPUTE] > n.flops[PHASE_RECOMPUTE]);
    /* Same gradients, up to float32 rounding (the sums run in another order). */
    const double diff = quiz_max_grad_diff(&n, &f);
    printf("  max |gradient difference| fused against naive: %.2e\n", diff);
    assert_true(diff < 1e-5);
    assert_true(fabs((double)n.loss - (double)f.loss) < 1e-5);

    /* And no tensor the fused forward saved for backward is (T,T) in its last two dims;
     * the naive forward saves 2 such per block (3 with the stream's masks). */
    for (int a = 0; a < 2; a++) {
        TrainCtx ctx = {.training = true, .dropout_rng = DROPOUT_RNG_COUNTER, .seed = 7};
        Var *loss = model_loss_planned(a ? fused : naive, NULL, x, t, &ctx);
        assert_non_null(loss);
        int square = 0;
        const Tape *tape = tape_current();
        for (int i = 0; i < tape->count; i++)
            for (int s = 0; s < tape->nodes[i]->n_saved; s++) {
                Tensor *kept = saved_tensor(tape->nodes[i], s);
                assert_non_null(kept);
                square += kept->ndim == 4 && kept->shape[2] == T && kept->shape[3] == T;
                tensor_free(kept);
            }
        printf("  %s forward: %d saved tensors of (.., T, T)\n", a ? "fused" : "naive", square);
        assert_int_equal(square, a ? 0 : 2 * L);
        var_free(loss);
        tape_reset();
    }

    quiz_step_free(&n);
    quiz_step_free(&f);
    var_free(x);
    var_free(t);
    model_free(naive);
    model_free(fused);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q5_fused_attention_recomputes_its_probabilities_instead_of_keeping_them),
    };
    return cmocka_run_group_tests_name("quiz q5, fused attention", tests, NULL, NULL);
}
