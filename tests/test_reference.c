/*
 * test_reference.c — remat's GPT against PyTorch, as llm.c's test_gpt2 does: a tiny
 * 2-layer GPT-2 whose weights, batch, loss and every gradient were computed by PyTorch
 * (in float64) and committed in tests/reference/gpt_reference.safetensors; remat loads the
 * weights by their Hugging Face names, runs one forward and backward, and must match the
 * loss and every gradient. The file's metadata names the script and command that made it
 * (tests/reference/make_gpt_reference.py).
 *
 * Tolerance: remat computes in float32, the reference in float64. For each tensor the
 * relative error ||remat − reference|| / ||reference|| is printed; it must be under 1e-4.
 * float32 rounding over these short dot products gives ~1e-6; a wrong derivative, a
 * transposed weight or a mis-ordered head gives errors of order 1. The same check runs
 * with the attention core fused (tensor/kernels_attention.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt.h"
#include "app/model_file.h"
#include "app/safetensors.h"

#ifndef REMAT_REFERENCE_FILE
#define REMAT_REFERENCE_FILE "tests/reference/gpt_reference.safetensors"
#endif

#define MAX_RELATIVE_ERROR 1e-4

static int meta_int(const StFile *f, const char *key)
{
    const char *v = st_meta(f, key);
    if (!v) fail_msg("reference file has no metadata %s", key);
    return atoi(v);
}

static double relative_error(const Tensor *got, const Tensor *want)
{
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < want->numel; i++) {
        double d = (double)got->f32[i] - (double)want->f32[i];
        diff += d * d;
        norm += (double)want->f32[i] * (double)want->f32[i];
    }
    return sqrt(diff) / (sqrt(norm) > 0 ? sqrt(norm) : 1.0);
}

/* The reference's model with attention cores of `attention`: the fused kernel must match
 * PyTorch as closely as the primitive ops do. */
static void check_matches_pytorch(AttentionKind attention)
{
    printf("  attention %s\n", name_of(&ATTENTION_KIND_NAMES, attention));
    StFile *f = st_load(REMAT_REFERENCE_FILE);
    if (!f) fail_msg("%s", remat_last_error());
    GptConfig c = {.n_layers = meta_int(f, "layers"), .d_model = meta_int(f, "d_model"),
                   .n_heads = meta_int(f, "heads"), .seq_len = meta_int(f, "seq"), .vocab = 256,
                   .dropout = 0.0f, .attention = attention, .seed = 1};
    Model *m = gpt_create(&c);
    assert_non_null(m);
    if (model_load(m, NULL, NULL, REMAT_REFERENCE_FILE, NULL) != REMAT_OK) fail_msg("%s", remat_last_error());

    Var *input = var_create(st_get(f, "input", MEM_ACT), false, "input");
    Var *target = var_create(st_get(f, "target", MEM_ACT), false, "target");
    Tensor *want_loss = st_get(f, "loss", MEM_WORK);
    assert_non_null(input);
    assert_non_null(target);
    TrainCtx ctx = {.training = false};
    Var *loss = model_loss_planned(m, NULL, input, target, &ctx);
    assert_non_null(loss);
    assert_int_equal(backward(loss), REMAT_OK);

    double loss_error = fabs((double)loss->value->f32[0] - want_loss->f32[0]) / fabs(want_loss->f32[0]);
    printf("  loss: remat %.7f, PyTorch %.7f, relative error %.2e\n", loss->value->f32[0],
           want_loss->f32[0], loss_error);
    double worst = loss_error;
    for (int i = 0; i < m->n_params; i++) {
        Var *p = m->params[i].var;
        char name[NODE_NAME_LEN + 8];
        snprintf(name, sizeof name, "grad.%s", p->name);
        Tensor *want = st_get(f, name, MEM_WORK);
        if (!want) fail_msg("%s", remat_last_error());
        assert_non_null(p->grad);
        assert_true(tensor_same_shape(want, p->grad));
        double err = relative_error(p->grad, want);
        printf("  %-26s relative error %.2e\n", name, err);
        if (err > worst) worst = err;
        tensor_free(want);
    }
    printf("  worst relative error %.2e (limit %.0e)\n", worst, MAX_RELATIVE_ERROR);
    assert_true(worst < MAX_RELATIVE_ERROR);

    var_free(loss);
    tape_reset();
    var_free(input);
    var_free(target);
    tensor_free(want_loss);
    model_free(m);
    st_close(f);
    assert_int_equal(mem_live_blocks(), 0);
}

static void test_gpt_matches_pytorch(void **state)
{
    (void)state;
    check_matches_pytorch(ATTENTION_NAIVE);
}

static void test_gpt_with_fused_attention_matches_pytorch(void **state)
{
    (void)state;
    check_matches_pytorch(ATTENTION_FUSED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt_matches_pytorch),
        cmocka_unit_test(test_gpt_with_fused_attention_matches_pytorch),
    };
    return cmocka_run_group_tests_name("reference", tests, NULL, NULL);
}
