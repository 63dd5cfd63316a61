/*
 * test_checkpoint.c — activation checkpointing, shown by the ledgers.
 *
 * Every strategy gives the same losses and parameters as none, to the bit, dropout
 * included; the activation memory of the MLP chain scales as derived for each strategy;
 * recomputation costs exactly one extra forward of the checkpointed layers; without RNG
 * replay, dropout's gradients come out wrong and the determinism check names the region.
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

#include "checkpoint/checkpoint.h"
#include "checkpoint/explain.h"
#include "tests/fixture_train.h"
#include "tensor/flops.h"
#include "tensor/kernels.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "autograd/optim.h"
#include "checkpoint/schedule.h"

static int group_teardown(void **state)
{
    (void)state;
    return mem_live_blocks() == 0 ? 0 : -1;
}

/* ---- a few training steps under a strategy (fixture_train.h) ------------------------------ */

/* The models: an 8-block MLP chain, and a 3-block GPT with dropout 0.1 everywhere. */
static const Trainee MLP8 = {.kind = "mlp", .layers = 8, .width = 16}, GPT3 = {.kind = "gpt", .layers = 3, .width = 0},
                     GPT3_COUNTER = {.kind = "gpt", .layers = 3, .width = 0, .dropout_rng = DROPOUT_RNG_COUNTER},
                     GPT3_FUSED = {.kind = "gpt", .layers = 3, .dropout_rng = DROPOUT_RNG_COUNTER,
                                   .attention = ATTENTION_FUSED};

static RematStatus train(const Trainee *t, const Strategy *s, Outcome *out)
{
    return fixture_train(t, &(Way){.strategy = s}, out);
}

/* Every strategy against none; with `replay` false, every region replays without
 * restoring the generator and checks each replay against its first forward (which only
 * a counter-based dropout survives). */
static void check_strategies(const Trainee *t, bool replay)
{
    Outcome reference = {0};
    Strategy none = strategy_defaults(STRATEGY_NONE);
    assert_int_equal(train(t, &none, &reference), REMAT_OK);
    Strategy others[] = {
        strategy_defaults(STRATEGY_FULL),
        strategy_defaults(STRATEGY_SQRT),
        {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_ATTENTION_CORE, .replay.preserve_rng = true},
        {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_DOTS_SAVEABLE, .replay.preserve_rng = true},
        {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_NOTHING_SAVEABLE, .replay.preserve_rng = true},
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        Outcome o = {0};
        char what[128];
        others[i].replay.preserve_rng = replay;
        others[i].replay.determinism_check = !replay;
        snprintf(what, sizeof what, "%s%s%s, %s%s%s%s", t->kind, t->dropout_rng == DROPOUT_RNG_COUNTER ? " (counter)" : "",
                 t->attention == ATTENTION_FUSED ? " (fused)" : "",
                 name_of(&STRATEGY_NAMES, others[i].kind), others[i].policy ? " " : "",
                 others[i].policy ? others[i].policy->name : "", replay ? "" : ", no rng replay");
        assert_int_equal(train(t, &others[i], &o), REMAT_OK);
        assert_same_outcome(&reference, &o, what);
        printf("  %-40s losses, gradients and parameters identical to none\n", what);
        outcome_free(&o);
    }
    outcome_free(&reference);
}

static void test_every_strategy_is_bit_identical_on_the_mlp(void **state)
{
    (void)state;
    check_strategies(&MLP8, true);
}

static void test_every_strategy_is_bit_identical_on_the_gpt_with_dropout(void **state)
{
    (void)state;
    check_strategies(&GPT3, true);
}

/* Counter-based masks: every strategy equals none, with RNG replay and without it (where
 * the determinism check finds every replay equal to its first forward). */
static void test_every_strategy_is_bit_identical_with_counter_dropout_replay_or_not(void **state)
{
    (void)state;
    check_strategies(&GPT3_COUNTER, true);
    check_strategies(&GPT3_COUNTER, false);
}

/* Fused attention, dropout inside: every strategy equals none, replayed or not. */
static void test_every_strategy_is_bit_identical_with_fused_attention(void **state)
{
    (void)state;
    check_strategies(&GPT3_FUSED, true);
    check_strategies(&GPT3_FUSED, false);
}

/* The two generators draw different masks: the counter run is not the stream run. */
static void test_counter_dropout_draws_other_masks_than_the_stream(void **state)
{
    (void)state;
    Outcome stream = {0}, counter = {0};
    Strategy none = strategy_defaults(STRATEGY_NONE);
    assert_int_equal(train(&GPT3, &none, &stream), REMAT_OK);
    assert_int_equal(train(&GPT3_COUNTER, &none, &counter), REMAT_OK);
    assert_memory_not_equal(&stream.losses[0], &counter.losses[0], sizeof(float));
    outcome_free(&stream);
    outcome_free(&counter);
}

/* ---- RNG replay ----------------------------------------------------------------------- */

static void test_without_rng_replay_dropout_gradients_are_wrong(void **state)
{
    (void)state;
    Outcome reference = {0}, wrong = {0};
    Strategy none = strategy_defaults(STRATEGY_NONE);
    Strategy no_replay = strategy_defaults(STRATEGY_FULL);
    no_replay.replay.preserve_rng = false;
    assert_int_equal(train(&GPT3, &none, &reference), REMAT_OK);
    assert_int_equal(train(&GPT3, &no_replay, &wrong), REMAT_OK);
    /* The first loss is the same (the first forward is not a replay); the gradients were
     * computed through masks the forward never used, so the parameters after one update
     * differ, and with them every later loss. */
    assert_memory_equal(&reference.losses[0], &wrong.losses[0], sizeof(float));
    double worst = 0.0;
    for (int i = 0; i < reference.n_params; i++)
        for (size_t j = 0; j < reference.params[i]->numel; j++)
            worst = fmax(worst, fabs(reference.params[i]->f32[j] - wrong.params[i]->f32[j]));
    printf("  without RNG replay: max |parameter difference| after %d steps %.3e\n", FIXTURE_STEPS, worst);
    assert_true(worst > 1e-4);
    outcome_free(&reference);
    outcome_free(&wrong);

    /* The determinism check catches it in the first region backward reaches, the last. */
    Outcome checked = {0};
    Strategy check = no_replay;
    check.replay.determinism_check = true;
    assert_int_equal(train(&GPT3, &check, &checked), REMAT_ESTATE);
    printf("  determinism check: %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "checkpoint region h.2: the replay computed a different output"));
    outcome_free(&checked);

    /* Under a selective policy the region's output comes from the cache, so comparing it
     * alone would miss the divergence; the check compares every recomputed op. */
    Outcome selective = {0};
    Strategy sel = {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_ATTENTION_CORE, .replay.preserve_rng = false,
                    .replay.determinism_check = true};
    assert_int_equal(train(&GPT3, &sel, &selective), REMAT_ESTATE);
    assert_non_null(strstr(remat_last_error(), "first at dropout (attn.dropout)"));
    outcome_free(&selective);

    /* With replay, the check passes. */
    Outcome fine = {0};
    Strategy replay = strategy_defaults(STRATEGY_FULL);
    replay.replay.determinism_check = true;
    assert_int_equal(train(&GPT3, &replay, &fine), REMAT_OK);
    outcome_free(&fine);
}

/* ---- nested regions ----------------------------------------------------------------------- */

typedef struct Pair {
    Layer **layers; /* two layers, each its own inner region */
} Pair;

static Var *one_layer(void *fn_ctx, Var *x, TrainCtx *ctx) { return layers_forward((Layer *[]){fn_ctx}, 1, x, ctx); }

static Var *two_layers(void *fn_ctx, Var *x, TrainCtx *ctx)
{
    Pair *p = fn_ctx;
    Var *h = layers_forward(&p->layers[0], 1, x, ctx);
    Var *y = h ? layers_forward(&p->layers[1], 1, h, ctx) : NULL;
    var_free(h);
    return y;
}

static Var *two_regions(void *fn_ctx, Var *x, TrainCtx *ctx)
{
    Pair *p = fn_ctx;
    CheckpointOptions o = checkpoint_defaults();
    o.name = "inner";
    Var *h = checkpoint(one_layer, p->layers[0], x, ctx, &o);
    Var *y = h ? checkpoint(one_layer, p->layers[1], h, ctx, &o) : NULL;
    var_free(h);
    return y;
}

static void test_nested_regions_give_the_same_gradients(void **state)
{
    (void)state;
    Tensor *grads[2][4];
    for (int nested = 0; nested < 2; nested++) {
        Model *m = gpt_create(&(GptConfig){.n_layers = 2, .d_model = 16, .n_heads = 2, .seq_len = 8,
                                           .vocab = 256, .dropout = 0.1f, .seed = 9});
        Pcg32 data;
        pcg32_seed(&data, 10, 0);
        Var *y, *x = fixture_batch(&GPT3, &data, &y);
        TrainCtx ctx = {.training = true};
        pcg32_seed(&ctx.rng, 11, 0);
        Var *h = m->embed(m, x, &ctx);
        Pair pair = {m->layers};
        CheckpointOptions outer = checkpoint_defaults();
        outer.name = "outer";
        /* Plain layers, or an outer region holding two inner ones. */
        Var *z = nested ? checkpoint(two_regions, &pair, h, &ctx, &outer) : two_layers(&pair, h, &ctx);
        var_free(h);
        Var *loss = m->head(m, z, y, &ctx);
        var_free(z);
        assert_int_equal(backward(loss), REMAT_OK);
        for (int i = 0; i < 4; i++) grads[nested][i] = tensor_clone(m->layers[i / 2]->params[i % 2 * 2].var->grad, MEM_WORK);
        var_free(loss);
        var_free(x);
        var_free(y);
        tape_reset();
        model_free(m);
    }
    for (int i = 0; i < 4; i++) {
        assert_memory_equal(grads[0][i]->data, grads[1][i]->data, grads[0][i]->bytes);
        tensor_free(grads[0][i]);
        tensor_free(grads[1][i]);
    }
}

/* ---- memory and FLOPs on the MLP chain ---------------------------------------------------- */

typedef struct StepMeasure {
    size_t peak_act;
    uint64_t forward, backward, recompute;
} StepMeasure;

/* One forward + backward of an N-block chain (W = 32, B = 4) under `kind`. */
static StepMeasure measure_mlp(int N, StrategyKind kind)
{
    Model *m = mlp_create(&(MlpConfig){.n_layers = N, .width = 32, .seed = 1});
    MlpTask *wide = mlp_task_create(32, 2);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    Var *x, *y;
    assert_int_equal(mlp_task_batch(wide, &data, 4, &x, &y), REMAT_OK);
    Strategy s = strategy_defaults(kind);
    Schedule *schedule = schedule_for_strategy(&s, m->n_layers);
    TrainCtx ctx = {.training = true};
    flops_reset();
    mem_reset_peaks();
    Var *loss = model_loss_planned(m, schedule, x, y, &ctx);
    assert_int_equal(backward(loss), REMAT_OK);
    StepMeasure r = {mem_peak(MEM_ACT), flops_get(PHASE_FORWARD), flops_get(PHASE_BACKWARD),
                     flops_get(PHASE_RECOMPUTE)};
    var_free(loss);
    tape_reset();
    var_free(x);
    var_free(y);
    schedule_free(schedule);
    mlp_task_free(wide);
    model_free(m);
    return r;
}

static void test_recompute_costs_one_extra_forward_of_the_chain(void **state)
{
    (void)state;
    enum { N = 16, B = 4, W = 32 };
    StepMeasure none = measure_mlp(N, STRATEGY_NONE);
    StepMeasure full = measure_mlp(N, STRATEGY_FULL);
    StepMeasure sqrt_ = measure_mlp(N, STRATEGY_SQRT);
    /* The forward of the chain is everything the forward counts but the loss (mse: 3
     * FLOPs per element of the (B,W) output). full and sqrt both run it exactly once more. */
    const uint64_t chain_forward = none.forward - 3 * (uint64_t)B * W;
    printf("  FLOPs, N=%d: forward %llu, backward %llu; recompute: none %llu, full %llu, sqrt %llu\n", N,
           (unsigned long long)none.forward, (unsigned long long)none.backward,
           (unsigned long long)none.recompute, (unsigned long long)full.recompute,
           (unsigned long long)sqrt_.recompute);
    assert_int_equal(none.recompute, 0);
    assert_int_equal(full.recompute, chain_forward);
    assert_int_equal(sqrt_.recompute, chain_forward);
    /* The first forward and the backward are the same work whatever the strategy. */
    assert_int_equal(full.forward, none.forward);
    assert_int_equal(full.backward, none.backward);
    assert_int_equal(sqrt_.backward, none.backward);
}

/* Peak ACT of one training step of the N-block residual MLP chain, in units of one
 * activation a = B·W·4 bytes (plus 8 bytes: the loss and its seed gradient). Each block
 * keeps two activations for backward — its input x_k and its relu's output r_k — and the
 * peak always comes in backward, at the last block's relu, when the gradient of its input
 * has just been allocated (test_mlp.c spells out none's count).
 *
 *   none   2N + 4      2 (the batch: x_0 and the targets) + 2N − 2 (every r_k and x_k
 *                      still stored) + 1 (r_{N−1}) + 3 gradients (of x_{N−1}, r_{N−1} and
 *                      the relu's input)
 *   full   N + 6       2 + N − 1 (the regions' inputs x_1 … x_{N−1}) + 2 (the last region's
 *                      output gradient, and the buffer for its input gradient) + 1 (r_{N−1},
 *                      replayed) + 2 (gradients of r_{N−1} and of the relu's input). One
 *                      stored activation per block instead of two: full's slope is half of
 *                      none's, because a block keeps its input and one more tensor.
 *   sqrt   s + 2k + 5  with k = ceil(sqrt(N)) blocks per segment and s = ceil(N/k) segments:
 *                      2 + s − 1 (segment inputs) + 2 (the last segment's output and input
 *                      gradients) + 2k − 1 (its replayed blocks' r_j and inner x_j) + 3
 *                      gradients at its last relu, as in none.
 *
 * So from N = 16 to 256 none grows 516/36 = 14.3x (16x in the limit: linear) and sqrt
 * 53/17 = 3.1x (4x in the limit: sqrt(N)). The test checks every figure exactly, and the
 * ratios against those limits with the distance the +4 and +5 terms leave at these N. */
static size_t units_none(int N) { return (size_t)(2 * N + 4); }
static size_t units_full(int N) { return (size_t)(N + 6); }
static size_t units_sqrt(int N)
{
    int k = (int)ceil(sqrt((double)N)), s = (N + k - 1) / k;
    return (size_t)(s + 2 * k + 5);
}

static void test_activation_memory_scales_as_derived(void **state)
{
    (void)state;
    const int depths[] = {4, 16, 64, 256};
    const size_t a = 4 * 32 * sizeof(float);
    size_t peak[4][3];
    printf("  peak ACT of one step, in units of one activation a = B·W·4 = %zu bytes (+8 B)\n", a);
    printf("  %5s %8s %8s %8s\n", "N", "none", "full", "sqrt");
    for (int d = 0; d < 4; d++) {
        const int N = depths[d];
        for (int k = 0; k < 3; k++) peak[d][k] = measure_mlp(N, (StrategyKind)k).peak_act;
        printf("  %5d %8zu %8zu %8zu\n", N, (peak[d][0] - 8) / a, (peak[d][1] - 8) / a, (peak[d][2] - 8) / a);
        assert_int_equal(peak[d][0], units_none(N) * a + 8);
        assert_int_equal(peak[d][1], units_full(N) * a + 8);
        assert_int_equal(peak[d][2], units_sqrt(N) * a + 8);
    }
    const double none_ratio = (double)peak[3][0] / peak[1][0], sqrt_ratio = (double)peak[3][2] / peak[1][2];
    printf("  peak(256)/peak(16): none %.2f (linear: 16), sqrt %.2f (sqrt(N): 4)\n", none_ratio, sqrt_ratio);
    assert_true(none_ratio > 13.0 && none_ratio <= 16.0);
    assert_true(sqrt_ratio > 2.8 && sqrt_ratio <= 4.0);
}

/* ---- selective policies on the GPT ------------------------------------------------------ */

typedef struct GptMeasure {
    size_t stored;      /* ACT held between the forward and the backward */
    size_t peak;        /* peak ACT of the step */
    uint64_t recompute; /* RECOMPUTE FLOPs */
} GptMeasure;

/* A GPT's sizes: L blocks, batch B, T tokens, width C, H heads. */
typedef struct Dims {
    int L, B, T, C, H;
} Dims;

/* T large against C: the attention core dominates what a block stores. */
static const Dims LONG = {.L = 2, .B = 2, .T = 256, .C = 128, .H = 4};
/* C large against T: the matmuls dominate what a block computes. */
static const Dims WIDE = {.L = 2, .B = 2, .T = 32, .C = 256, .H = 4};

static GptMeasure measure_gpt(const Dims *d, const Strategy *s)
{
    Model *m = gpt_create(&(GptConfig){.n_layers = d->L, .d_model = d->C, .n_heads = d->H,
                                       .seq_len = d->T, .vocab = 256, .dropout = 0.1f, .seed = 3});
    Schedule *schedule = schedule_for_strategy(s, m->n_layers);
    Tensor *x = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){d->B, d->T});
    Tensor *t = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){d->B, d->T});
    for (size_t i = 0; i < x->numel; i++) x->i32[i] = (int32_t)(i * 7 % 256), t->i32[i] = (int32_t)(i * 11 % 256);
    Var *xv = var_create(x, false, NULL), *tv = var_create(t, false, NULL);
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 4, 4);
    flops_reset();
    mem_reset_peaks();
    Var *loss = model_loss_planned(m, schedule, xv, tv, &ctx);
    GptMeasure r = {.stored = mem_current(MEM_ACT)};
    assert_int_equal(backward(loss), REMAT_OK);
    r.peak = mem_peak(MEM_ACT);
    r.recompute = flops_get(PHASE_RECOMPUTE);
    var_free(loss);
    tape_reset();
    var_free(xv);
    var_free(tv);
    schedule_free(schedule);
    model_free(m);
    return r;
}

/* FLOPs of one layer's attention core, as the kernels count them: the scores and the
 * weights·V products, 2·(2·B·H·T·T·D) = 4·B·T²·C; the causal softmax and the dropout,
 * measured by running their kernels once on buffers of the same size. */
static uint64_t core_flops_per_layer(const Dims *d)
{
    const int BH = d->B * d->H;
    const size_t n = (size_t)BH * d->T * d->T;
    float *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    uint8_t *mask = calloc(n, 1);
    Pcg32 rng;
    pcg32_seed(&rng, 1, 1);
    FlopCounts before = flops_snapshot();
    k_softmax_forward(b, a, BH * d->T, d->T, true);
    k_dropout_forward(a, mask, b, 0.1f, &rng, n);
    uint64_t elementwise = flops_total();
    flops_restore(&before);
    elementwise -= flops_total();
    free(a), free(b), free(mask);
    return 4ull * d->B * d->T * d->T * d->C + elementwise;
}

/* The four strategies on a GPT of sizes *d, with their table in the test output. */
typedef struct PolicyRun {
    GptMeasure none, full, core, dots;
} PolicyRun;

static PolicyRun run_policies(const Dims *d)
{
    Strategy none = strategy_defaults(STRATEGY_NONE), full = strategy_defaults(STRATEGY_FULL);
    Strategy core = {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_ATTENTION_CORE, .replay.preserve_rng = true};
    Strategy dots = {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_DOTS_SAVEABLE, .replay.preserve_rng = true};
    const PolicyRun r = {measure_gpt(d, &none), measure_gpt(d, &full), measure_gpt(d, &core), measure_gpt(d, &dots)};
    printf("  GPT L=%d B=%d T=%d C=%d H=%d, dropout 0.1\n", d->L, d->B, d->T, d->C, d->H);
    printf("  %-26s %12s %12s %16s %9s\n", "strategy", "stored ACT", "peak ACT", "RECOMPUTE FLOPs", "of full");
    const struct { const char *name; GptMeasure m; } rows[] = {
        {"none", r.none}, {"full", r.full}, {"selective attention_core", r.core}, {"selective dots_saveable", r.dots}};
    for (int i = 0; i < 4; i++)
        printf("  %-26s %12zu %12zu %16llu %8.1f%%\n", rows[i].name, rows[i].m.stored, rows[i].m.peak,
               (unsigned long long)rows[i].m.recompute, 100.0 * (double)rows[i].m.recompute / (double)r.full.recompute);
    return r;
}

/* What attention_core drops and recomputes, exactly, on a GPT of sizes *d. */
static void check_attention_core(const Dims *d, const PolicyRun *r)
{
    /* attention_core stores what none stores minus, per layer, exactly the core's saved
     * tensors: the softmax's output (float), the dropout's mask (1 byte) and the dropout's
     * output (float), each B·H·T·T elements. (The scores are not in that list: without
     * checkpointing the softmax does not keep them either.) */
    const size_t core_bytes = (size_t)d->L * d->B * d->H * d->T * d->T * (4 + 1 + 4);
    assert_int_equal(r->none.stored - r->core.stored, core_bytes);
    /* It recomputes exactly the core: its two matmuls, the softmax and the dropout. */
    assert_int_equal(r->core.recompute, (uint64_t)d->L * core_flops_per_layer(d));
    /* dots_saveable keeps every matmul's output and recomputes only the elementwise ops:
     * the least recomputation, and in between none and attention_core in stored bytes
     * when T is large against C. */
    assert_true(r->dots.recompute < r->core.recompute);
    assert_true(r->full.stored < r->core.stored);
}

/* The core's share of full's recomputation is a block's attention matmuls over all its
 * matmuls, 4BT²C / (24BTC² + 4BT²C) = T / (6C + T), plus the elementwise ops both
 * recompute. So the two halves of Korthikanti et al.'s claim hold in different regimes:
 * with T large against C the core is most of what a block stores, and costs a sizeable
 * share to recompute (T = 2C: 25%); with C large against T it costs little (C = 8T: 2%)
 * and saves less. Both are measured here. */
static void test_selective_policies_keep_what_they_promise(void **state)
{
    (void)state;
    const PolicyRun r = run_policies(&LONG);
    check_attention_core(&LONG, &r);
    const double share = (double)r.core.recompute / (double)r.full.recompute;
    assert_true(share > 0.2 && share < 0.3); /* T/(6C + T) = 0.25 */
    assert_true(r.dots.stored < r.none.stored && r.dots.stored > r.core.stored);
    /* At T = 2C the core is nearly half of what none keeps (49% here). */
    assert_true((double)(r.none.stored - r.core.stored) > 0.4 * (double)r.none.stored);
}

static void test_attention_core_recomputes_little_on_a_wide_model(void **state)
{
    (void)state;
    const PolicyRun r = run_policies(&WIDE);
    check_attention_core(&WIDE, &r);
    const double share = (double)r.core.recompute / (double)r.full.recompute;
    assert_true(share < 0.10); /* T/(6C + T) = 0.02, plus the elementwise ops */
}

/* explain (train --explain-memory) accounts for what the ledger holds between forward and
 * backward: the tensors kept and cached, plus the loss value (4 bytes), which no op saves. */
/* Fused attention with counter-based masks, no checkpointing: what the step kept is the
 * ledger's stored bytes but the loss (the log-sum-exp rows among them, and the token ids
 * the embedding and the loss keep), and what it regenerates instead
 * is listed to the byte: per block the (B,H,T,T) probabilities and their mask and the two
 * residual masks, and the embedding's mask. */
static void test_explain_lists_what_fused_attention_regenerates(void **state)
{
    (void)state;
    enum { L = 3, B = 2, T = 8, C = 16, H = 2 }; /* the fixture's GPT and batch */
    Model *m = fixture_model(&GPT3_FUSED);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    Var *y, *x = fixture_batch(&GPT3_FUSED, &data, &y);
    TrainCtx ctx = fixture_ctx(&GPT3_FUSED, 0);
    Explain *ex = explain_start();
    assert_non_null(ex);
    Var *loss = model_loss_planned(m, NULL, x, y, &ctx);
    assert_non_null(loss);
    const size_t stored = mem_current(MEM_ACT); /* the batch too: the embedding and the loss keep it */
    assert_int_equal(backward(loss), REMAT_OK);
    explain_stop(ex);
    const size_t bhtt = (size_t)B * H * T * T, btc = (size_t)B * T * C;
    const size_t regenerated = btc + L * (bhtt * sizeof(float) + bhtt + 2 * btc);
    printf("  fused attention, counter masks: kept %zu B (stored %zu B with the loss), regenerated %zu B\n",
           explain_bytes(ex, "kept"), stored, explain_bytes(ex, "regenerated"));
    assert_int_equal(explain_bytes(ex, "regenerated"), regenerated);
    assert_int_equal(stored, explain_bytes(ex, "kept") + sizeof(float));
    explain_free(ex);
    var_free(loss);
    tape_reset();
    var_free(x);
    var_free(y);
    model_free(m);
}

static void test_explain_accounts_for_the_stored_bytes(void **state)
{
    (void)state;
    const StrategyKind kinds[] = {STRATEGY_NONE, STRATEGY_FULL, STRATEGY_SQRT, STRATEGY_SELECTIVE};
    for (int k = 0; k < 4; k++) {
        Model *m = mlp_create(&(MlpConfig){.n_layers = 9, .width = 16, .seed = 1});
        Strategy s = strategy_defaults(kinds[k]);
        s.policy = &POLICY_DOTS_SAVEABLE;
        Schedule *schedule = schedule_for_strategy(&s, m->n_layers);
        Pcg32 data;
        pcg32_seed(&data, 3, 0);
        Var *y, *x = fixture_batch(&MLP8, &data, &y); /* width 16, as this chain */
        TrainCtx ctx = {.training = true};
        Explain *ex = explain_start();
        assert_non_null(ex);
        Var *loss = model_loss_planned(m, schedule, x, y, &ctx);
        const size_t stored = mem_current(MEM_ACT);
        assert_int_equal(backward(loss), REMAT_OK);
        explain_stop(ex);
        const size_t kept = explain_bytes(ex, "kept"), cached = explain_bytes(ex, "cached");
        printf("  %-9s stored %6zu B = kept %6zu + cached %6zu + the loss 4; dropped %6zu, recomputed %6zu\n",
               name_of(&STRATEGY_NAMES, kinds[k]), stored, kept, cached, explain_bytes(ex, "dropped"),
               explain_bytes(ex, "recomputed"));
        assert_int_equal(stored, kept + cached + sizeof(float));
        if (kinds[k] == STRATEGY_NONE) assert_int_equal(explain_bytes(ex, "dropped"), 0);
        else assert_true(explain_bytes(ex, "recomputed") > 0);
        explain_free(ex);
        var_free(loss);
        tape_reset();
        var_free(x);
        var_free(y);
        schedule_free(schedule);
        model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_strategy_is_bit_identical_on_the_mlp, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_every_strategy_is_bit_identical_on_the_gpt_with_dropout, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_every_strategy_is_bit_identical_with_counter_dropout_replay_or_not, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_counter_dropout_draws_other_masks_than_the_stream, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_every_strategy_is_bit_identical_with_fused_attention, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_without_rng_replay_dropout_gradients_are_wrong, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_nested_regions_give_the_same_gradients, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_recompute_costs_one_extra_forward_of_the_chain, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_activation_memory_scales_as_derived, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_selective_policies_keep_what_they_promise, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_attention_core_recomputes_little_on_a_wide_model, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_explain_accounts_for_the_stored_bytes, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_explain_lists_what_fused_attention_regenerates, fixture_clean_state, fixture_clean_state),
    };
    return cmocka_run_group_tests_name("checkpoint", tests, NULL, group_teardown);
}
