/*
 * test_gpt.c — the char-level GPT as a whole: its gradient against finite differences,
 * its parameters' names and layouts, what a training step leaves in memory, its loss at
 * initialisation, bit-identical runs with dropout, training on the corpus, argument
 * checks, and generation.
 *
 * The ops inside are gradchecked one by one in test_autograd.c; here the check is that
 * they are wired together right: the residual paths, the tied token table (its gradient
 * comes from the embedding and from the LM head), the causal attention, the mean over
 * B·T positions.
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

#include "models/data.h"
#include "models/gpt.h"
#include "autograd/optim.h"

#define CORPUS REMAT_DATA_DIR "/corpus.txt"

static int clean_state(void **state)
{
    (void)state;
    tape_reset();
    grad_set_enabled(true);
    mem_set_budget(0);
    remat_clear_error();
    if (mem_live_blocks() != 0) {
        fprintf(stderr, "ledger not empty: %zu blocks live, %zu bytes resident\n",
                mem_live_blocks(), mem_resident());
        return -1;
    }
    return 0;
}

/* The tiny GPT of these tests: 2 blocks of 16 channels in 2 heads, sequences of 8. */
static GptConfig tiny_config(float dropout)
{
    return (GptConfig){.n_layers = 2, .d_model = 16, .n_heads = 2, .seq_len = 8,
                       .vocab = TEXT_VOCAB_SIZE, .dropout = dropout, .seed = 1};
}

/* An int32 Var (B,T), no gradient, holding `values`. */
static Var *ids_var(int B, int T, const int32_t *values)
{
    Tensor *t = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
    assert_non_null(t);
    memcpy(t->i32, values, t->bytes);
    return var_create(t, false, "ids");
}

/* A batch of B windows of T tokens from the corpus's training split, drawn with a
 * generator seeded with `seed`: inputs and targets (the next tokens) as Vars. */
static void corpus_batch(int B, int T, uint64_t seed, Var **x, Var **y)
{
    TextData *data = text_data_load(CORPUS, 0.1);
    if (!data) fail_msg("%s", remat_last_error());
    int32_t *inputs = malloc((size_t)B * T * sizeof *inputs), *targets = malloc((size_t)B * T * sizeof *targets);
    assert_non_null(inputs);
    assert_non_null(targets);
    Pcg32 rng;
    pcg32_seed(&rng, seed, 4);
    assert_int_equal(text_data_batch(data, TEXT_TRAIN, &rng, B, T, inputs, targets), REMAT_OK);
    *x = ids_var(B, T, inputs);
    *y = ids_var(B, T, targets);
    free(inputs);
    free(targets);
    text_data_free(data);
}

/* One forward + backward; returns the loss value and leaves an empty tape. */
static float forward_backward(Model *m, Var *x, Var *y, TrainCtx *ctx)
{
    Var *loss = model_loss_planned(m, NULL, x, y, ctx);
    if (!loss) fail_msg("model_loss: %s", remat_last_error());
    assert_int_equal(backward(loss), REMAT_OK);
    float value = loss->value->f32[0];
    var_free(loss);
    tape_reset();
    return value;
}

/* The loss alone, with grad mode off. */
static double loss_only(Model *m, Var *x, Var *y)
{
    bool was = grad_set_enabled(false);
    TrainCtx ctx = {.training = false};
    Var *loss = model_loss_planned(m, NULL, x, y, &ctx);
    grad_set_enabled(was);
    if (!loss) fail_msg("model_loss: %s", remat_last_error());
    double value = loss->value->f32[0];
    var_free(loss);
    return value;
}

/* ---- parameters ------------------------------------------------------------------------ */

static void test_parameters_are_named_and_laid_out_as_hf_gpt2(void **state)
{
    (void)state;
    GptConfig c = tiny_config(0.0f);
    Model *m = gpt_create(&c);
    assert_non_null(m);
    assert_string_equal(m->kind, "gpt");
    assert_int_equal(gpt_config(m)->d_model, c.d_model);
    const int C = c.d_model;
    /* Hugging Face GPT-2's order and [in, out] layouts; decay on 2-D tensors only. */
    static const struct { const char *suffix; int rows, cols; } block[12] = {
        {"ln_1.weight", 16, 0},        {"ln_1.bias", 16, 0},
        {"attn.c_attn.weight", 16, 48}, {"attn.c_attn.bias", 48, 0},
        {"attn.c_proj.weight", 16, 16}, {"attn.c_proj.bias", 16, 0},
        {"ln_2.weight", 16, 0},        {"ln_2.bias", 16, 0},
        {"mlp.c_fc.weight", 16, 64},   {"mlp.c_fc.bias", 64, 0},
        {"mlp.c_proj.weight", 64, 16}, {"mlp.c_proj.bias", 16, 0},
    };
    assert_int_equal(m->n_params, 2 + 12 * c.n_layers + 2);
    assert_string_equal(m->params[0].var->name, "wte.weight");
    assert_int_equal(m->params[0].var->value->shape[0], c.vocab);
    assert_string_equal(m->params[1].var->name, "wpe.weight");
    assert_int_equal(m->params[1].var->value->shape[0], c.seq_len);
    for (int l = 0; l < c.n_layers; l++) {
        for (int j = 0; j < 12; j++) {
            const Param *p = &m->params[2 + 12 * l + j];
            char name[64];
            snprintf(name, sizeof name, "h.%d.%s", l, block[j].suffix);
            assert_string_equal(p->var->name, name);
            const Tensor *t = p->var->value;
            assert_int_equal(t->ndim, block[j].cols ? 2 : 1);
            assert_int_equal(t->shape[0], block[j].rows);
            if (block[j].cols) assert_int_equal(t->shape[1], block[j].cols);
            assert_true(p->decay == (t->ndim == 2));
        }
    }
    assert_string_equal(m->params[m->n_params - 2].var->name, "ln_f.weight");
    assert_string_equal(m->params[m->n_params - 1].var->name, "ln_f.bias");
    assert_true(m->params[0].decay && m->params[1].decay && !m->params[m->n_params - 1].decay);

    /* GPT-2's init: LayerNorm weight 1 and bias 0, biases 0, and the residual
     * projections' std scaled by 1/sqrt(2·L). Over 16·16 = 256 draws the sample std is
     * within ~5% (1/sqrt(2·256)) of the true one; 20% is 4 standard errors. */
    const Tensor *ln_1_w = m->params[2].var->value, *proj_w = m->params[2 + 4].var->value;
    const Tensor *attn_b = m->params[2 + 3].var->value;
    for (int i = 0; i < C; i++) assert_true(ln_1_w->f32[i] == 1.0f);
    for (size_t i = 0; i < attn_b->numel; i++) assert_true(attn_b->f32[i] == 0.0f);
    double sq = 0.0;
    for (size_t i = 0; i < proj_w->numel; i++) sq += (double)proj_w->f32[i] * proj_w->f32[i];
    double std = sqrt(sq / (double)proj_w->numel), want = 0.02 / sqrt(2.0 * c.n_layers);
    printf("  attn.c_proj.weight std %.4f, GPT-2's 0.02/sqrt(2L) = %.4f\n", std, want);
    assert_true(fabs(std - want) < 0.2 * want);
    model_free(m);
}

/* The block records its ops under their tags, in order, named under the block. */
static void test_block_records_the_tagged_ops(void **state)
{
    (void)state;
    GptConfig c = tiny_config(0.1f);
    Model *m = gpt_create(&c);
    Var *x, *y;
    corpus_batch(2, 8, 5, &x, &y);
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 6, 0);
    Var *loss = model_loss_planned(m, NULL, x, y, &ctx);
    assert_non_null(loss);
    static const char *const h0[] = {
        "h.0.attn.ln", "h.0.attn.qkv", "h.0.attn.split_q", "h.0.attn.split_k", "h.0.attn.split_v",
        "h.0.attn.scores", "h.0.attn.softmax", "h.0.attn.dropout", "h.0.attn.out", "h.0.attn.merge",
        "h.0.attn.proj", "h.0.attn.resid_dropout", "h.0.attn.residual", "h.0.mlp.ln", "h.0.mlp.fc",
        "h.0.mlp.gelu", "h.0.mlp.proj", "h.0.mlp.dropout", "h.0.mlp.residual"};
    const Tape *tape = tape_current();
    assert_string_equal(tape->nodes[0]->name, "embd");
    assert_string_equal(tape->nodes[1]->name, "embd.dropout");
    for (int i = 0; i < (int)(sizeof h0 / sizeof h0[0]); i++) assert_string_equal(tape->nodes[2 + i]->name, h0[i]);
    const int n = tape->count;
    assert_string_equal(tape->nodes[n - 3]->name, "ln_f");
    assert_string_equal(tape->nodes[n - 2]->name, "lm_head");
    assert_string_equal(tape->nodes[n - 1]->name, "loss");
    assert_int_equal(n, 2 + 19 * c.n_layers + 3);
    var_free(loss);
    tape_reset();
    var_free(x);
    var_free(y);
    model_free(m);
}

/* ---- the gradient ---------------------------------------------------------------------- */

/* The whole model's gradient against central finite differences of its loss, for a
 * sample of elements of every parameter tensor: the element with the largest gradient
 * and FD_SAMPLES − 1 drawn at random.
 *
 * Why the parameters are perturbed first: at GPT-2's init the blocks barely touch the
 * residual stream (attention is nearly uniform, LayerNorm weights get gradients of
 * ~3e-4), and those gradients sit near the noise of a float32 finite difference. Adding
 * U(−0.25, 0.25) to every parameter makes every path carry a gradient of 1e-2..1e-1.
 *
 * Tolerance. The loss is float32 (~5.5, half an ulp is 2.4e-7) computed through a few
 * hundred float operations, so each evaluation carries ~1e-6 of noise; divided by the
 * 2·eps = 2e-2 step that is ~5e-5 in the numeric gradient, and the central difference's
 * truncation error eps²·f''' adds up to ~1e-4 where the model is most curved. Errors are
 * measured as |analytic − numeric| / (|numeric| + 0.1·g_max), g_max the tensor's largest
 * gradient, so tiny gradients are judged on the tensor's scale rather than on noise.
 * The worst seen is 3e-3 (and up to 1e-2 over other draws of the sampled elements); a
 * tolerance of 3e-2 leaves a margin of 3 and is far below what a wiring mistake gives (a missing residual or tied-weight contribution, a lost 1/sqrt(D),
 * a transposed product: errors of order 1). */
#define FD_EPS 1e-2
#define FD_TOL 3e-2
#define FD_SAMPLES 6

static void check_gradient_against_finite_differences(AttentionKind attention)
{
    GptConfig c = tiny_config(0.0f);
    c.attention = attention;
    printf("  attention %s\n", name_of(&ATTENTION_KIND_NAMES, attention));
    Model *m = gpt_create(&c);
    Pcg32 rng;
    pcg32_seed(&rng, 7, 7);
    for (int i = 0; i < m->n_params; i++) {
        Tensor *t = m->params[i].var->value;
        for (size_t k = 0; k < t->numel; k++) t->f32[k] += 0.25f * (2.0f * pcg32_float(&rng) - 1.0f);
    }
    Var *x, *y;
    corpus_batch(4, 8, 8, &x, &y);
    TrainCtx ctx = {.training = true}; /* with dropout 0: the identity all the same */
    pcg32_seed(&ctx.rng, 9, 0);
    forward_backward(m, x, y, &ctx);

    double worst_all = 0.0;
    for (int i = 0; i < m->n_params; i++) {
        Var *p = m->params[i].var;
        Tensor *t = p->value;
        assert_non_null(p->grad);
        size_t largest = 0;
        for (size_t k = 1; k < t->numel; k++)
            if (fabsf(p->grad->f32[k]) > fabsf(p->grad->f32[largest])) largest = k;
        const double g_max = fabs(p->grad->f32[largest]);
        double worst = 0.0;
        for (int s = 0; s < FD_SAMPLES; s++) {
            size_t k = s == 0 ? largest : pcg32_bounded(&rng, (uint32_t)t->numel);
            const float saved = t->f32[k];
            const float up = (float)(saved + FD_EPS), down = (float)(saved - FD_EPS);
            t->f32[k] = up;
            double plus = loss_only(m, x, y);
            t->f32[k] = down;
            double minus = loss_only(m, x, y);
            t->f32[k] = saved;
            double numeric = (plus - minus) / ((double)up - (double)down);
            double err = fabs(p->grad->f32[k] - numeric) / (fabs(numeric) + 0.1 * g_max);
            if (err > worst) worst = err;
        }
        printf("  %-24s |grad| max %.2e, worst error %.2e\n", p->name, g_max, worst);
        if (worst > FD_TOL) fail_msg("%s: gradient off by %.3e (tolerance %.1e)", p->name, worst, FD_TOL);
        if (worst > worst_all) worst_all = worst;
    }
    printf("  worst over all parameters: %.2e (tolerance %.1e)\n", worst_all, FD_TOL);
    var_free(x);
    var_free(y);
    model_free(m);
}

static void test_model_gradient_matches_finite_differences(void **state)
{
    (void)state;
    check_gradient_against_finite_differences(ATTENTION_NAIVE);
    check_gradient_against_finite_differences(ATTENTION_FUSED);
}

/* ---- fused attention against naive ------------------------------------------------------ */

/* ||a − b|| / ||b|| over two tensors. */
static double norm_error(const Tensor *a, const Tensor *b)
{
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < b->numel; i++) {
        const double d = (double)a->f32[i] - (double)b->f32[i];
        diff += d * d;
        norm += (double)b->f32[i] * b->f32[i];
    }
    return sqrt(diff) / (norm > 0.0 ? sqrt(norm) : 1.0);
}

/* The same GPT (2 blocks, C 32, 2 heads) with naive and with fused attention on B random
 * sequences of T tokens, one forward and backward each, counter-based dropout p: the
 * worst relative error (a tensor's norm) over the loss and every gradient. The naive
 * path's attn.dropout and the fused kernel use the same key, so they drop the same
 * probabilities. */
static double fused_against_naive(int B, int T, float p)
{
    Model *m[2];
    for (int a = 0; a < 2; a++) {
        GptConfig c = {.n_layers = 2, .d_model = 32, .n_heads = 2, .seq_len = T, .vocab = TEXT_VOCAB_SIZE,
                       .dropout = p, .attention = a ? ATTENTION_FUSED : ATTENTION_NAIVE, .seed = 3};
        m[a] = gpt_create(&c);
        assert_non_null(m[a]);
    }
    int32_t *ids = malloc((size_t)B * T * sizeof *ids), *next = malloc((size_t)B * T * sizeof *next);
    assert_true(ids && next);
    Pcg32 rng;
    pcg32_seed(&rng, (uint64_t)T, 5);
    for (int i = 0; i < B * T; i++) {
        ids[i] = (int32_t)pcg32_bounded(&rng, TEXT_VOCAB_SIZE);
        next[i] = (int32_t)pcg32_bounded(&rng, TEXT_VOCAB_SIZE);
    }
    Var *x = ids_var(B, T, ids), *y = ids_var(B, T, next);
    float loss[2];
    for (int a = 0; a < 2; a++) {
        TrainCtx ctx = {.training = true, .dropout_rng = DROPOUT_RNG_COUNTER, .seed = 17, .step = 4};
        loss[a] = forward_backward(m[a], x, y, &ctx);
    }
    double worst = fabs((double)loss[1] - loss[0]) / fabs((double)loss[0]);
    for (int i = 0; i < m[0]->n_params; i++)
        worst = fmax(worst, norm_error(m[1]->params[i].var->grad, m[0]->params[i].var->grad));
    printf("  T = %4d, dropout %.1f: loss %.7f (naive %.7f), worst relative error %.2e\n", T, (double)p,
           (double)loss[1], (double)loss[0], worst);
    var_free(x), var_free(y);
    free(ids), free(next);
    model_free(m[0]), model_free(m[1]);
    return worst;
}

/* Lengths below, at and past the kernel's tile of 64, and many tiles. float32 rounding
 * over these sums gives ~1e-6; a wrong mask, a lost tile or an unscaled row gives errors
 * of order 1e-2 and more. */
static void test_fused_attention_matches_naive(void **state)
{
    (void)state;
    const int lengths[] = {1, 7, 64, 129, 1000};
    double worst = 0.0;
    for (size_t t = 0; t < sizeof lengths / sizeof lengths[0]; t++)
        for (int d = 0; d < 2; d++) worst = fmax(worst, fused_against_naive(lengths[t] < 1000 ? 2 : 1, lengths[t], d ? 0.1f : 0.0f));
    printf("  worst relative error over every length: %.2e (limit 1e-5)\n", worst);
    assert_true(worst < 1e-5);
}

/* ---- memory ---------------------------------------------------------------------------- */

/* After forward, backward and freeing the loss and the batch, nothing of the step is
 * left: no activation byte, no workspace, and no live block but one per parameter and
 * one per gradient (wte's gradient is one tensor, shared by its two uses). */
static void test_step_leaves_only_parameters_and_gradients(void **state)
{
    (void)state;
    GptConfig c = tiny_config(0.1f);
    Model *m = gpt_create(&c);
    Var *x, *y;
    corpus_batch(3, 8, 10, &x, &y);
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 11, 0);
    forward_backward(m, x, y, &ctx);
    var_free(x);
    var_free(y);
    assert_int_equal(mem_current(MEM_ACT), 0);
    assert_int_equal(mem_current(MEM_WORK), 0);
    assert_int_equal(mem_current(MEM_GRAD), model_param_bytes(m));
    assert_int_equal(mem_current(MEM_PARAM), model_param_bytes(m));
    assert_int_equal(mem_live_blocks(), 2 * (size_t)m->n_params);
    for (int i = 0; i < m->n_params; i++) assert_non_null(m->params[i].var->grad);
    model_free(m);
    assert_int_equal(mem_live_blocks(), 0);
}

/* ---- the loss -------------------------------------------------------------------------- */

/* At init the logits are ln_f(x)·wte^T: ln_f's output has unit variance per element and
 * wte's entries std 0.02, so each logit is ~N(0, s²) with s² = C·0.02² = 0.0064. The
 * expected loss is then ln V + s²/2 ≈ ln 256 + 0.003 (second order in s), and the mean of
 * the target logits over the B·T = 64 positions fluctuates by s/sqrt(64) = 0.01. So the
 * loss is ln 256 within 0.003 + 5·0.01 ≈ 0.05; a broken head (no ln_f, a missing 1/N,
 * a wrong init) is off by far more. */
static void test_initial_loss_is_close_to_ln_256(void **state)
{
    (void)state;
    GptConfig c = tiny_config(0.0f);
    Model *m = gpt_create(&c);
    Var *x, *y;
    corpus_batch(8, 8, 12, &x, &y);
    double loss = loss_only(m, x, y);
    printf("  loss at init %.4f, ln 256 = %.4f\n", loss, log(256.0));
    assert_true(fabs(loss - log(256.0)) < 0.05);
    var_free(x);
    var_free(y);
    model_free(m);
}

/* ---- determinism ----------------------------------------------------------------------- */

/* Builds the model and runs one training step with dropout on; copies out the loss and
 * every gradient, in parameter order. */
static float *dropout_step(float *loss, uint64_t ctx_seed, size_t *n_floats)
{
    GptConfig c = tiny_config(0.2f);
    Model *m = gpt_create(&c);
    Var *x, *y;
    corpus_batch(4, 8, 13, &x, &y);
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, ctx_seed, 0);
    *loss = forward_backward(m, x, y, &ctx);
    size_t n = 0;
    for (int i = 0; i < m->n_params; i++) n += m->params[i].var->grad->numel;
    float *grads = malloc(n * sizeof *grads);
    assert_non_null(grads);
    size_t at = 0;
    for (int i = 0; i < m->n_params; i++) {
        const Tensor *g = m->params[i].var->grad;
        memcpy(grads + at, g->f32, g->bytes);
        at += g->numel;
    }
    *n_floats = n;
    var_free(x);
    var_free(y);
    model_free(m);
    return grads;
}

static void test_dropout_runs_with_the_same_seeds_are_bit_identical(void **state)
{
    (void)state;
    float loss_a, loss_b, loss_c;
    size_t n_a, n_b, n_c;
    float *a = dropout_step(&loss_a, 14, &n_a);
    float *b = dropout_step(&loss_b, 14, &n_b);
    float *other = dropout_step(&loss_c, 15, &n_c);
    printf("  loss with dropout seed 14: %.7f and %.7f; seed 15: %.7f\n", (double)loss_a,
           (double)loss_b, (double)loss_c);
    assert_memory_equal(&loss_a, &loss_b, sizeof loss_a);
    assert_int_equal(n_a, n_b);
    assert_memory_equal(a, b, n_a * sizeof *a);
    /* And the masks do depend on the generator: another seed, another loss. */
    assert_true(loss_c != loss_a);
    free(a);
    free(b);
    free(other);
}

/* ---- training -------------------------------------------------------------------------- */

/* AdamW on one fixed batch: the model can memorise 4·8 next-byte predictions, so a
 * working gradient and optimizer take the loss far down in 40 steps (measured: from 5.53
 * to 0.81); asking for half the initial loss leaves a wide margin, while a wrong sign or
 * a dead path leaves it near ln 256 = 5.5. */
static void test_adamw_steps_on_a_fixed_batch_reduce_the_loss(void **state)
{
    (void)state;
    enum { STEPS = 40 };
    GptConfig c = tiny_config(0.0f);
    Model *m = gpt_create(&c);
    Var *x, *y;
    corpus_batch(4, 8, 16, &x, &y);
    OptimConfig adamw = optim_adamw_defaults(1e-2f);
    Optimizer *opt = optim_create(&adamw, m->params, m->n_params);
    assert_non_null(opt);
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 17, 0);
    float first = 0.0f, last = 0.0f;
    for (int s = 0; s < STEPS; s++) {
        optim_zero_grad(opt);
        last = forward_backward(m, x, y, &ctx);
        if (s == 0) first = last;
        assert_int_equal(optim_step(opt, NULL, NULL), REMAT_OK);
    }
    printf("  loss %.4f at step 1, %.4f at step %d\n", (double)first, (double)last, STEPS);
    assert_true(last < 0.5f * first);
    optim_free(opt);
    var_free(x);
    var_free(y);
    model_free(m);
}

/* ---- errors ---------------------------------------------------------------------------- */

static void test_bad_configs_are_rejected(void **state)
{
    (void)state;
    GptConfig c = tiny_config(0.0f);
    c.n_heads = 3; /* 16 channels do not split into 3 heads */
    assert_null(gpt_create(&c));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "d_model 16 is not a multiple of n_heads 3"));
    c = tiny_config(1.0f);
    assert_null(gpt_create(&c));
    assert_non_null(strstr(remat_last_error(), "dropout must be in [0, 1)"));
    c = tiny_config(-0.1f);
    assert_null(gpt_create(&c));
    for (int field = 0; field < 5; field++) { /* each size in turn set to 0 */
        c = tiny_config(0.0f);
        int *sizes[5] = {&c.n_layers, &c.d_model, &c.n_heads, &c.seq_len, &c.vocab};
        *sizes[field] = 0;
        assert_null(gpt_create(&c));
        assert_non_null(strstr(remat_last_error(), "must all be > 0"));
    }
    assert_null(gpt_create(NULL));
    assert_int_equal(mem_live_blocks(), 0); /* nothing half-built stays */
}

/* gpt_set_heads gives each block its own head count, or changes nothing: a count that does
 * not divide d_model in the last block leaves every block and parameter as it was. */
static void test_heads_per_block_are_all_or_nothing(void **state)
{
    (void)state;
    GptConfig c = tiny_config(0.0f);
    Model *m = gpt_create(&c);
    assert_non_null(m);
    Layer *const before[2] = {m->layers[0], m->layers[1]};
    const int n_params = m->n_params;
    Var *vars[64];
    assert_true(n_params <= 64);
    for (int i = 0; i < n_params; i++) vars[i] = m->params[i].var;
    assert_int_equal(gpt_set_heads(m, (int[]){4, 3}, 7), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "block h.1 of d_model 16 cannot have 3 heads"));
    assert_ptr_equal(m->layers[0], before[0]);
    assert_ptr_equal(m->layers[1], before[1]);
    assert_int_equal(m->n_params, n_params);
    for (int i = 0; i < n_params; i++) assert_ptr_equal(m->params[i].var, vars[i]);
    remat_clear_error();
    assert_int_equal(gpt_set_heads(m, (int[]){4, 1}, 7), REMAT_OK);
    assert_int_equal(m->n_params, n_params); /* as many parameters, of the same shapes */
    model_free(m);
}

static void test_sequences_longer_than_seq_len_are_rejected(void **state)
{
    (void)state;
    GptConfig c = tiny_config(0.0f);
    Model *m = gpt_create(&c);
    Var *x, *y;
    corpus_batch(2, 9, 18, &x, &y); /* T = 9 > seq_len = 8 */
    TrainCtx ctx = {.training = false};
    assert_null(model_loss_planned(m, NULL, x, y, &ctx));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "a sequence of 9 tokens is longer than the model's seq_len 8"));
    assert_int_equal(tape_current()->count, 0);
    /* float inputs are not token ids */
    Var *floats = var_create(tensor_zeros(MEM_ACT, 2, (int[]){2, 8}), false, "floats");
    assert_null(model_loss_planned(m, NULL, floats, y, &ctx));
    assert_non_null(strstr(remat_last_error(), "int32 token ids"));
    var_free(floats);
    var_free(x);
    var_free(y);
    model_free(m);
}

/* ---- generation ------------------------------------------------------------------------ */

static void test_generation_is_deterministic_for_a_seed(void **state)
{
    (void)state;
    enum { N_NEW = 20 }; /* longer than seq_len: the window slides */
    GptConfig c = tiny_config(0.1f);
    Model *m = gpt_create(&c);
    const int32_t prompt[4] = {'T', 'h', 'e', ' '};
    int32_t first[N_NEW], second[N_NEW], greedy[N_NEW], greedy2[N_NEW];
    Pcg32 rng;
    pcg32_seed(&rng, 19, 2);
    assert_int_equal(gpt_generate(m, prompt, 4, N_NEW, 1.0f, &rng, first), REMAT_OK);
    pcg32_seed(&rng, 19, 2);
    assert_int_equal(gpt_generate(m, prompt, 4, N_NEW, 1.0f, &rng, second), REMAT_OK);
    assert_memory_equal(first, second, sizeof first);
    for (int i = 0; i < N_NEW; i++) assert_true(first[i] >= 0 && first[i] < TEXT_VOCAB_SIZE);
    /* Greedy decoding draws nothing and needs no generator. */
    assert_int_equal(gpt_generate(m, prompt, 4, N_NEW, 0.0f, NULL, greedy), REMAT_OK);
    assert_int_equal(gpt_generate(m, prompt, 4, N_NEW, 0.0f, NULL, greedy2), REMAT_OK);
    assert_memory_equal(greedy, greedy2, sizeof greedy);
    /* Generation leaves no tape, no activations and no workspace behind, and grad mode on. */
    assert_int_equal(tape_current()->count, 0);
    assert_int_equal(mem_current(MEM_ACT), 0);
    assert_int_equal(mem_current(MEM_WORK), 0);
    assert_true(grad_enabled());

    const int32_t bad_prompt[2] = {'a', 300};
    assert_int_equal(gpt_generate(m, bad_prompt, 2, 3, 1.0f, &rng, first), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "prompt token 300 at 1"));
    assert_int_equal(gpt_generate(m, prompt, 0, 3, 1.0f, &rng, first), REMAT_EINVAL);
    assert_int_equal(gpt_generate(m, prompt, 4, 3, 1.0f, NULL, first), REMAT_EINVAL);
    assert_int_equal(gpt_generate(m, prompt, 4, 3, -1.0f, &rng, first), REMAT_EINVAL);
    model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parameters_are_named_and_laid_out_as_hf_gpt2, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_block_records_the_tagged_ops, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_model_gradient_matches_finite_differences, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_fused_attention_matches_naive, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_step_leaves_only_parameters_and_gradients, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_initial_loss_is_close_to_ln_256, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_dropout_runs_with_the_same_seeds_are_bit_identical, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_adamw_steps_on_a_fixed_batch_reduce_the_loss, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_bad_configs_are_rejected, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_heads_per_block_are_all_or_nothing, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_sequences_longer_than_seq_len_are_rejected, clean_state, clean_state),
        cmocka_unit_test_setup_teardown(test_generation_is_deterministic_for_a_seed, clean_state, clean_state),
    };
    return cmocka_run_group_tests_name("gpt", tests, NULL, NULL);
}
