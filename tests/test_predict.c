/*
 * test_predict.c — the chain model from shapes (checkpoint/chain_model.c): equal, field by
 * field, byte and FLOP, to what chain_profile measures by running the step, over many small
 * configurations of both models; its prediction against the ledger of a real step; and
 * train --predict-only, which builds nothing, with the combinations it refuses and the
 * moment of its peak against the one the doctor finds after a real step.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/train.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "models/step.h"
#include "checkpoint/ops_plan.h"
#include "autograd/optim.h"
#include "app/paper_accounting.h"
#include "tensor/flops.h"

static int clean_state(void **state)
{
    (void)state;
    tape_reset();
    remat_clear_error();
    flops_reset();
    return mem_current(MEM_ACT) == 0 && mem_current(MEM_PARAM) == 0 ? 0 : -1;
}

/* Every figure of the two costs, named when one differs. */
static void assert_costs_equal(const ChainCost *got, const ChainCost *want, const char *what)
{
    assert_int_equal(got->n_layers, want->n_layers);
    const struct { const char *name; uint64_t got, want; } stage[] = {
        {"base", got->base, want->base}, {"embed", got->embed, want->embed},
        {"embed_peak", got->embed_peak, want->embed_peak}, {"head_peak", got->head_peak, want->head_peak},
        {"head_kept", got->head_kept, want->head_kept},
        {"resid", got->resid, want->resid}, {"tail_peak", got->tail_peak, want->tail_peak},
        {"fixed", got->fixed, want->fixed}, {"work_peak", got->work_peak, want->work_peak},
        {"forward_flops", got->forward_flops, want->forward_flops},
        {"kernel_recompute", got->kernel_recompute, want->kernel_recompute},
    };
    bool same = true;
    for (size_t i = 0; i < sizeof stage / sizeof stage[0]; i++)
        if (stage[i].got != stage[i].want) {
            printf("  %s: %s modelled %" PRIu64 ", measured %" PRIu64 "\n", what, stage[i].name, stage[i].got,
                   stage[i].want);
            same = false;
        }
    for (int k = 0; k < got->n_layers; k++) {
        const ChainLayer *g = &got->layers[k], *w = &want->layers[k];
        const struct { const char *name; uint64_t got, want; } layer[] = {
            {"in", g->in_bytes, w->in_bytes}, {"out", g->out_bytes, w->out_bytes},
            {"grad", g->grad_bytes, w->grad_bytes}, {"kept", g->kept, w->kept},
            {"fwd_peak", g->fwd_peak, w->fwd_peak}, {"nograd_peak", g->nograd_peak, w->nograd_peak},
            {"back_plain", g->back_plain, w->back_plain}, {"back_held", g->back_held, w->back_held},
            {"flops", g->flops, w->flops},
        };
        for (size_t i = 0; i < sizeof layer / sizeof layer[0]; i++)
            if (layer[i].got != layer[i].want) {
                printf("  %s: layer %d %s modelled %" PRIu64 ", measured %" PRIu64 "\n", what, k, layer[i].name,
                       layer[i].got, layer[i].want);
                same = false;
            }
    }
    assert_true(same);
}

/* The op-level models (--planner ops) of the two costs: each layer's Pareto points, and
 * each point's figures in that layer, named when one differs. */
static void assert_ops_equal(const ChainCost *got, const ChainCost *want, const char *what)
{
    assert_non_null(got->ops);
    assert_non_null(want->ops);
    bool same = true;
    for (int k = 0; k < got->n_layers; k++) {
        int n, m;
        const OpsPoint *g = ops_points(got->ops, k, &n), *w = ops_points(want->ops, k, &m);
        if (n != m) printf("  %s: layer %d has %d points modelled, %d measured\n", what, k, n, m);
        same = same && n == m;
        for (int p = 0; p < n && p < m; p++) {
            const SegmentFigures *gf = ops_figures(got->ops, k, &g[p].policy), *wf = ops_figures(want->ops, k, &w[p].policy);
            if (g[p].keep == w[p].keep && g[p].kept == w[p].kept && g[p].flops == w[p].flops && gf->adds == wf->adds &&
                gf->need == wf->need && gf->flops == wf->flops)
                continue;
            printf("  %s: layer %d point %d (%s): keep %x kept %zu flops %" PRIu64 ", adds %zu need %zu flops %" PRIu64
                   " modelled; keep %x kept %zu flops %" PRIu64 ", adds %zu need %zu flops %" PRIu64 " measured\n", what,
                   k, p, w[p].name, g[p].keep, g[p].kept, g[p].flops, gf->adds, gf->need, gf->flops, w[p].keep, w[p].kept,
                   w[p].flops, wf->adds, wf->need, wf->flops);
            same = false;
        }
    }
    assert_true(same);
}

/* ---- the MLP ----------------------------------------------------------------------------- */

typedef struct Built {
    Model *model;
    MlpTask *task;
    Var *x, *y;
} Built;

static void built_free(Built *b)
{
    var_free(b->x);
    var_free(b->y);
    mlp_task_free(b->task);
    model_free(b->model);
    tape_reset();
    *b = (Built){0};
}

static Built build_mlp(const MlpConfig *c, int batch)
{
    Built b = {.model = mlp_create(c), .task = mlp_task_create(c->width, 2)};
    assert_non_null(b.model);
    assert_non_null(b.task);
    Pcg32 data;
    pcg32_seed(&data, 3, 0);
    assert_int_equal(mlp_task_batch(b.task, &data, batch, &b.x, &b.y), REMAT_OK);
    return b;
}

static void test_mlp_model_equals_profile(void **state)
{
    (void)state;
    for (int n = 1; n <= 3; n++)
        for (int width = 4; width <= 20; width += 8)
            for (int batch = 1; batch <= 3; batch += 2) {
                const MlpConfig c = {.n_layers = n, .width = width, .seed = 1};
                Built b = build_mlp(&c, batch);
                TrainCtx ctx = {.training = true};
                ChainCost *measured = model_profile(b.model, b.x, b.y, &ctx, NULL, PLANNER_OPS);
                ChainCost *modelled = mlp_chain_model(&c, batch, NULL, true);
                assert_non_null(measured);
                assert_non_null(modelled);
                char what[64];
                snprintf(what, sizeof what, "mlp N %d W %d B %d", n, width, batch);
                assert_costs_equal(modelled, measured, what);
                assert_ops_equal(modelled, measured, what);
                chain_cost_free(measured);
                chain_cost_free(modelled);
                built_free(&b);
            }
}

/* ---- the GPT ----------------------------------------------------------------------------- */

static Var *token_batch(int B, int T, Var **targets)
{
    Tensor *x = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
    Tensor *t = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
    for (size_t i = 0; i < x->numel; i++) x->i32[i] = (int32_t)(i * 7 % 256), t->i32[i] = (int32_t)(i * 11 % 256);
    *targets = var_create(t, false, "targets");
    return var_create(x, false, "tokens");
}

static TrainCtx gpt_ctx(DropoutRng rng)
{
    TrainCtx ctx = {.training = true, .dropout_rng = rng, .seed = 4};
    pcg32_seed(&ctx.rng, 4, 4);
    return ctx;
}

/* One GPT configuration: the profile of a built model against the model from shapes. */
static void check_gpt(const GptConfig *c, int batch, DropoutRng rng)
{
    Built b = {.model = gpt_create(c)};
    assert_non_null(b.model);
    b.x = token_batch(batch, c->seq_len, &b.y);
    TrainCtx ctx = gpt_ctx(rng);
    ChainCost *measured = model_profile(b.model, b.x, b.y, &ctx, NULL, PLANNER_OPS);
    ChainCost *modelled = gpt_chain_model(c, batch, &ctx, NULL, true);
    assert_non_null(measured);
    assert_non_null(modelled);
    char what[128];
    snprintf(what, sizeof what, "gpt L %d C %d H %d T %d B %d %s dropout %g %s", c->n_layers, c->d_model, c->n_heads,
             c->seq_len, batch, name_of(&ATTENTION_KIND_NAMES, c->attention), (double)c->dropout,
             name_of(&DROPOUT_RNG_NAMES, rng));
    assert_costs_equal(modelled, measured, what);
    assert_ops_equal(modelled, measured, what);
    chain_cost_free(measured);
    chain_cost_free(modelled);
    built_free(&b);
}

/* Naive attention with dropout off and on from both generators, fused attention with
 * dropout off and from the counter's; shapes where the T² scores are smaller and larger
 * than a block's tensors. */
static void test_gpt_model_equals_profile(void **state)
{
    (void)state;
    const int shapes[][5] = {{1, 8, 2, 4, 1}, {2, 16, 2, 8, 2}, {2, 8, 1, 16, 1}, {1, 12, 3, 5, 3}, {3, 4, 4, 32, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 5; d++) {
            const GptConfig c = {.n_layers = shapes[s][0], .d_model = shapes[s][1], .n_heads = shapes[s][2],
                                 .seq_len = shapes[s][3], .vocab = 256, .dropout = d % 3 ? 0.1f : 0.0f, .seed = 3,
                                 .attention = d < 3 ? ATTENTION_NAIVE : ATTENTION_FUSED};
            check_gpt(&c, shapes[s][4], d >= 2 ? DROPOUT_RNG_COUNTER : DROPOUT_RNG_STREAM);
        }
}

/* ---- against a real training step ------------------------------------------------------ */

/* Two training steps of the built model (the GPT of `gpt`, or else the MLP of `mlp`, on
 * `batch`) under `st` with AdamW; the second's ledgers (every buffer of the first still
 * there, as in any later step) against the prediction from shapes, with the schedule's
 * policy: peak ACT and workspace, peak resident and RECOMPUTE FLOPs, to the byte and the
 * FLOP, but for regions of several layers on the GPT, which the cost model bounds within
 * one block input (`slack`: checkpoint/cost.h says why), and the resident peak, which
 * adds the workspace's peak (fused attention's scratch) to the activations' as if they
 * met. */
static void check_step(Built *b, const Strategy *st, const GptConfig *gpt, const MlpConfig *mlp, int batch,
                       TrainCtx ctx, size_t slack, const char *what)
{
    Schedule *s = schedule_for_strategy(st, b->model->n_layers);
    assert_non_null(s);
    ChainCost *cost = gpt ? gpt_chain_model(gpt, batch, &ctx, s->segments[0].policy, false)
                          : mlp_chain_model(mlp, batch, s->segments[0].policy, false);
    assert_non_null(cost);
    const OptimConfig adamw = optim_adamw_defaults(1e-3f);
    Optimizer *optim = optim_create(&adamw, b->model->params, b->model->n_params);
    assert_non_null(optim);
    cost->fixed += 2 * model_param_bytes(b->model); /* AdamW's m and v */
    assert_int_equal(schedule_predict(s, cost), REMAT_OK);
    const Step step = {.model = b->model, .schedule = s, .optim = optim};
    StepResult r;
    assert_int_equal(step_run(&step, &(MicroBatch){b->x, b->y}, 1, &ctx, NULL, &r), REMAT_OK);
    flops_reset();
    mem_reset_peaks();
    const size_t work = mem_current(MEM_WORK);
    assert_int_equal(step_run(&step, &(MicroBatch){b->x, b->y}, 1, &ctx, NULL, &r), REMAT_OK);
    const Prediction *p = &s->predicted;
    const size_t resident = mem_peak_moment().resident;
    printf("  %-44s %-9s ACT predicted %8zu, ledger %8zu; resident %8zu, %8zu; recompute %" PRIu64 ", %" PRIu64 "\n",
           what, s->segments[0].policy ? s->segments[0].policy->name : name_of(&STRATEGY_NAMES, st->kind), p->peak_act,
           mem_peak(MEM_ACT), p->peak_total, resident, p->recompute_flops, flops_get(PHASE_RECOMPUTE));
    if (st->kind != STRATEGY_SQRT) slack = 0;
    assert_true(p->peak_act >= mem_peak(MEM_ACT) && p->peak_act - mem_peak(MEM_ACT) <= slack);
    assert_int_equal(cost->work_peak, mem_peak(MEM_WORK) - work);
    assert_true(p->peak_total >= resident && p->peak_total - resident <= slack + cost->work_peak);
    assert_int_equal(p->recompute_flops, flops_get(PHASE_RECOMPUTE));
    optim_free(optim);
    schedule_free(s);
    chain_cost_free(cost);
}

/* none, full, sqrt, and selective under each preset. */
static const Strategy STRATEGIES[] = {{.kind = STRATEGY_NONE}, {.kind = STRATEGY_FULL}, {.kind = STRATEGY_SQRT},
                                      {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_ATTENTION_CORE},
                                      {.kind = STRATEGY_SELECTIVE, .policy = &POLICY_DOTS_SAVEABLE}};
enum { N_STRATEGIES = sizeof STRATEGIES / sizeof STRATEGIES[0] };

/* Both models; on the GPT, naive attention with dropout from either generator, and fused
 * attention without dropout and with the counter's. */
static void test_prediction_equals_the_ledger_of_a_step(void **state)
{
    (void)state;
    const MlpConfig mlp = {.n_layers = 5, .width = 16, .seed = 1};
    for (int i = 0; i < N_STRATEGIES; i++) {
        Built b = build_mlp(&mlp, 4);
        check_step(&b, &STRATEGIES[i], NULL, &mlp, 4, (TrainCtx){.training = true}, 0, "mlp N 5 W 16 B 4");
        built_free(&b);
    }
    for (int i = 0; i < N_STRATEGIES; i++)
        for (int run = 0; run < 4; run++) {
            const DropoutRng rng = run % 2 ? DROPOUT_RNG_COUNTER : DROPOUT_RNG_STREAM;
            const GptConfig c = {.n_layers = 4, .d_model = 16, .n_heads = 2, .seq_len = 8, .vocab = 256,
                                 .dropout = run == 2 ? 0.0f : 0.1f, .seed = 3,
                                 .attention = run < 2 ? ATTENTION_NAIVE : ATTENTION_FUSED};
            Built b = {.model = gpt_create(&c)};
            assert_non_null(b.model);
            b.x = token_batch(2, c.seq_len, &b.y);
            char what[64];
            snprintf(what, sizeof what, "gpt L 4 C 16 T 8 B 2 %s p %g %s", name_of(&ATTENTION_KIND_NAMES, c.attention),
                     (double)c.dropout, name_of(&DROPOUT_RNG_NAMES, rng));
            check_step(&b, &STRATEGIES[i], &c, NULL, 2, gpt_ctx(rng), 2 * 8 * 16 * sizeof(float), what); /* B·T·C */
            built_free(&b);
        }
}

/* Bad shapes are refused, saying why. */
static void test_chain_model_refuses_bad_shapes(void **state)
{
    (void)state;
    assert_null(mlp_chain_model(&(MlpConfig){.n_layers = 0, .width = 4}, 1, NULL, false));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_null(gpt_chain_model(&(GptConfig){.n_layers = 1, .d_model = 10, .n_heads = 3, .seq_len = 4, .vocab = 8},
                                1, NULL, NULL, false));
    assert_non_null(strstr(remat_last_error(), "multiple of n_heads"));
    const TrainCtx stream = gpt_ctx(DROPOUT_RNG_STREAM);
    assert_null(gpt_chain_model(&(GptConfig){.n_layers = 1, .d_model = 8, .n_heads = 2, .seq_len = 4, .vocab = 8,
                                             .dropout = 0.1f, .attention = ATTENTION_FUSED}, 1, &stream, NULL, false));
    assert_non_null(strstr(remat_last_error(), "counter-based"));
    const ChainOp op = {.in = {0, -1, -1}, .out = 4};
    const ChainStage empty = {NULL, 0, 4, true}, one = {&op, 1, 4, true};
    assert_null(chain_model(&(ChainShape){.layer = empty, .n_layers = 1, .head = one}));
    assert_null(chain_model(&(ChainShape){.layer = one, .n_layers = 0, .head = one}));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
}

/* ---- train --predict-only ---------------------------------------------------------------- */

/* train_parse_args on the words of `line`, then train_run; its status, or 2 for a bad line. */
static RematStatus train_line(const char *line, FILE *out)
{
    char copy[512], *argv[32] = {"train"};
    int argc = 1;
    snprintf(copy, sizeof copy, "%s", line);
    for (char *w = strtok(copy, " "); w && argc < 32; w = strtok(NULL, " ")) argv[argc++] = w;
    TrainOptions o;
    if (train_parse_args(argc, argv, &o, out, out) != 0) return 2;
    TrainReport r;
    const RematStatus status = train_run(&o, &r, out);
    train_report_free(&r);
    return status;
}

/* It builds nothing (no byte of any kind in the ledger), prints the peak and its moment,
 * and writes the JSON, whose activations are the prediction's. */
static void test_predict_only_builds_nothing_and_writes_json(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_predict_XXXXXX", line[256], path[64], json[1024] = "", want[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/predicted.json", dir);
    snprintf(line, sizeof line, "--model mlp --layers 5 --d-model 16 --batch 4 --strategy sqrt --predict-only "
             "--results %s", path);
    FILE *out = tmpfile();
    mem_reset_peaks();
    assert_int_equal(train_line(line, out), REMAT_OK);
    for (int k = 0; k < MEM_KIND_COUNT; k++) assert_int_equal(mem_peak((MemKind)k), 0);
    rewind(out);
    char printed[2048] = "";
    assert_true(fread(printed, 1, sizeof printed - 1, out) > 0);
    assert_non_null(strstr(printed, "all kinds at the same moment"));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_true(fread(json, 1, sizeof json - 1, f) > 0);
    fclose(f);
    ChainCost *cost = mlp_chain_model(&(MlpConfig){.n_layers = 5, .width = 16}, 4, NULL, false);
    Schedule *s = chain_schedule_for_strategy(cost, STRATEGY_SQRT);
    snprintf(want, sizeof want, "\"activations\": %zu,", s->predicted.peak_act);
    assert_non_null(strstr(json, want));
    for (int i = 0; i < 5; i++)
        assert_non_null(strstr(json, (const char *[]){"\"params\"", "\"grads\"", "\"optimizer\"", "\"peak\"",
                                                      "\"workspace\""}[i]));
    schedule_free(s);
    chain_cost_free(cost);
    fclose(out);
    remove(path);
    rmdir(dir);
}

/* The number after "key": in the JSON text, or UINT64_MAX. */
static uint64_t json_number(const char *json, const char *key)
{
    char quoted[32];
    snprintf(quoted, sizeof quoted, "\"%s\": ", key);
    const char *at = strstr(json, quoted);
    return at ? strtoull(at + strlen(quoted), NULL, 10) : UINT64_MAX;
}

/* train_line's JSON results of `line` with `extra` words after it. */
static void run_json(const char *line, const char *extra, char *json, size_t size)
{
    char full[512], path[] = "/tmp/test_predict_json_XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    snprintf(full, sizeof full, "%s %s --results %s", line, extra, path);
    FILE *out = tmpfile();
    assert_int_equal(train_line(full, out), REMAT_OK);
    fclose(out);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    json[fread(json, 1, size - 1, f)] = '\0';
    fclose(f);
    remove(path);
}

/* With --accumulate K, --predict-only against the ledger of a run of two steps: the
 * activations (the other micro-batches waiting beside the one running), the workspace,
 * the gradients (the sum and the next micro-batch's) and a step's RECOMPUTE FLOPs (K
 * micro-batches') alike to the byte and the FLOP; the peak of all kinds at once bounded.
 * And --strategy budget, planned by dp and chen on the model from shapes as the run plans
 * on its profile: the same schedule's figures. */
static void test_predict_only_equals_a_run(void **state)
{
    (void)state;
    const char *lines[] = {
        "--layers 2 --d-model 16 --heads 2 --seq 8 --batch 2 --dropout 0.1 --strategy budget --memory-budget 215000 "
        "--sample 0",
        "--model mlp --layers 3 --d-model 16 --batch 4 --strategy budget --planner chen --memory-budget 17200",
        "--layers 2 --d-model 16 --heads 2 --seq 8 --batch 2 --dropout 0.1 --strategy budget --planner ops "
        "--memory-budget 215000 --sample 0",
        "--model mlp --layers 3 --d-model 16 --batch 4 --strategy budget --planner ops --memory-budget 17200",
        "--layers 2 --d-model 16 --heads 2 --seq 8 --batch 2 --dropout 0.1 --strategy dtr --memory-budget 1MiB "
        "--sample 0",
        "--model mlp --layers 3 --d-model 16 --batch 4 --accumulate 3 --strategy selective --policy dots",
        "--layers 2 --d-model 16 --heads 2 --seq 8 --batch 2 --dropout 0.1 --accumulate 3 --strategy full --sample 0",
        "--layers 2 --d-model 16 --heads 2 --seq 8 --batch 2 --dropout 0.1 --attention fused --dropout-rng counter "
        "--accumulate 2 --strategy selective --sample 0",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        char predicted[1024], measured[1024];
        run_json(lines[i], "--predict-only", predicted, sizeof predicted);
        run_json(lines[i], "--steps 2 --eval-batches 1 --quiet", measured, sizeof measured);
        printf("  %s\n    %s    %s", lines[i], predicted, measured);
        for (int k = 0; k < 6; k++) {
            const char *key =
                (const char *[]){"activations", "workspace", "grads", "params", "disk", "recompute_flops"}[k];
            assert_int_equal(json_number(predicted, key), json_number(measured, key));
        }
        assert_true(json_number(predicted, "peak") >= json_number(measured, "peak"));
    }
    /* Under offload the measured JSON has the spill file's peak, as the ledger has it. */
    char measured[1024];
    run_json("--model mlp --layers 3 --d-model 128 --batch 128 --offload all", "--steps 1 --eval-batches 1 --quiet",
             measured, sizeof measured);
    assert_int_equal(json_number(measured, "disk"), mem_peak(MEM_DISK));
    assert_true(mem_peak(MEM_DISK) > 0);
}

/* With --offload, --predict-only against a run of two steps: ACT, DISK and the peak of all
 * kinds at once alike to the byte (fused: the peak a bound), for each policy on both models under none and with
 * regions (full on the GPT, whose regions of several blocks the model bounds; sqrt on the
 * MLP), and with the windows in bytes and the mapping's writes in the forward. The GPT with
 * dropout's masks and layernorm's statistics spilled, and fused, with its log-sum-exp.
 * Tensors of 64 KiB (and scores or MLP layers of 1 MiB, for large) so that something is
 * spilled. */
static void test_predict_only_with_offload_equals_a_run(void **state)
{
    (void)state;
    const char *models[] = {"--layers 2 --d-model 64 --heads 4 --seq 128 --batch 4 --sample 0 --strategy",
                            "--model mlp --layers 4 --d-model 512 --batch 512 --strategy",
                            "--layers 2 --d-model 64 --heads 4 --seq 128 --batch 4 --sample 0 --attention fused "
                            "--dropout-rng counter --strategy"};
    const char *runs[][2] = {{"none", "all"}, {"none", "large"}, {"full", "all"}, {"full", "large"},
                             {"full", "boundary"}, {"sqrt", "all"}, {"sqrt", "large"}, {"sqrt", "boundary"},
                             {"none", "all --offload-read-ahead 300KiB --offload-write-behind 200KiB"},
                             {"full", "all --offload-mmap --offload-read-ahead 1B"}};
    for (int m = 0; m < 3; m++)
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
            if (!strcmp(runs[i][0], m == 1 ? "full" : "sqrt")) continue;
            char line[256], predicted[1024], measured[1024];
            snprintf(line, sizeof line, "%s %s --offload %s", models[m], runs[i][0], runs[i][1]);
            run_json(line, "--predict-only", predicted, sizeof predicted);
            run_json(line, "--steps 2 --eval-batches 1 --quiet", measured, sizeof measured);
            printf("  %s\n    %s    %s", line, predicted, measured);
            assert_int_equal(json_number(predicted, "disk"), json_number(measured, "disk"));
            assert_int_equal(json_number(predicted, "activations"), json_number(measured, "activations"));
            const uint64_t peak = json_number(predicted, "peak"), found = json_number(measured, "peak");
            if (m == 2) assert_true(peak >= found); /* fused attention's scratch comes and goes: a bound */
            else assert_int_equal(peak, found);
        }
}

/* What train printed for `line`, into text. */
static void train_text(const char *line, char *text, size_t size)
{
    FILE *out = tmpfile();
    assert_int_equal(train_line(line, out), REMAT_OK);
    rewind(out);
    text[fread(text, 1, size - 1, out)] = '\0';
    fclose(out);
}

/* The moment of the peak --predict-only names, against what the doctor finds after a real
 * step: its phase ("at the peak (in backward)"), the op --explain-memory says set it (the
 * next event after the peak: in these GPTs, the op running then; Revolve's moment names
 * none), and that op's layer within the layers predicted (a region's replay among them),
 * or the head's. */
static void test_predict_only_names_the_moment_the_doctor_finds(void **state)
{
    (void)state;
    const char *strategies[] = {"none", "full", "sqrt", "selective",
                                "budget --planner revolve --memory-budget 500KiB"}; /* 2 slots for 3 blocks */
    static char predicted[4096], measured[1 << 17];
    for (int i = 0; i < 5; i++) {
        char line[256], cmd[300];
        snprintf(line, sizeof line, "--layers 3 --d-model 16 --heads 4 --seq 64 --batch 1 --sample 0 --threads 1 "
                 "--steps 1 --eval-every 0 --eval-batches 1 --quiet --strategy %s", strategies[i]);
        snprintf(cmd, sizeof cmd, "%s --predict-only", line);
        train_text(cmd, predicted, sizeof predicted);
        snprintf(cmd, sizeof cmd, "%s --explain-memory", line);
        train_text(cmd, measured, sizeof measured);
        const char *moment = strstr(predicted, "the peak is reached "), *event = strstr(measured, "just before event ");
        assert_non_null(moment);
        assert_non_null(event);
        printf("  %-9s %.*s|| %.*s\n", strategies[i], (int)strcspn(moment, "\n"), moment,
               (int)strcspn(event, ";"), event);
        const bool forward = strstr(moment, "in the forward of") || strstr(moment, "embedding's forward");
        assert_non_null(strstr(measured, forward ? "at the peak (in forward)" : "at the peak (in backward)"));
        const char *op = strchr(event, '(') + 1, *at = strstr(moment, ", at ");
        assert_true(at || i == 4);
        const int len = at ? (int)strcspn(at + 5, "\n") : 0;
        if (at && (len != (int)strcspn(op, ")") || strncmp(at + 5, op, (size_t)len)))
            fail_msg("%s: predicted at %.*s, the doctor's event is %s", strategies[i], len, at + 5, op);
        if (strstr(moment, "in the head")) {
            assert_true(!strncmp(op, "loss)", 5) || !strncmp(op, "lm_head)", 8) || !strncmp(op, "ln_f)", 5));
            continue;
        }
        int first, last = -1, layer = -1;
        assert_true(sscanf(strstr(moment, " h.") + 3, "%d-h.%d", &first, &last) >= 1);
        assert_int_equal(sscanf(op, "h.%d.", &layer), 1);
        assert_true(layer >= first && layer <= (last >= 0 ? last : first));
    }
}

/* What it cannot predict exactly is refused, naming it; a file it cannot write is an error. */
static void test_predict_only_refuses_what_it_cannot_predict(void **state)
{
    (void)state;
    FILE *out = tmpfile();
    const char *refused[][2] = {
        {"--model mlp --predict-only --offload all --strategy selective", "--offload with"},
        {"--model mlp --predict-only --offload all --ranks 2", "--offload with"},
        {"--model mlp --predict-only --ranks 2 --accumulate 2", "--accumulate"},
        {"--predict-only --ranks 2 --pipeline-stages 2", "--pipeline-stages"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        assert_int_equal(train_line(refused[i][0], out), REMAT_EINVAL);
        assert_non_null(strstr(remat_last_error(), "does not predict"));
        assert_non_null(strstr(remat_last_error(), refused[i][1]));
    }
    /* dtr is predicted where it evicts nothing; below, which tensors it evicts is the run's. */
    assert_int_equal(train_line("--model mlp --layers 3 --d-model 16 --batch 4 --predict-only --strategy dtr "
                                "--memory-budget 16KiB", out), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "dtr would evict under --memory-budget 16384 bytes"));
    char text[2048];
    train_text("--model mlp --layers 3 --d-model 16 --batch 4 --predict-only --strategy dtr --memory-budget 1MiB",
               text, sizeof text);
    assert_non_null(strstr(text, "the peak fits: dtr evicts nothing"));
    train_text("--model mlp --layers 3 --d-model 16 --batch 4 --predict-only --strategy full --memory-budget 1KiB",
               text, sizeof text); /* said, not refused: the run is what stops */
    assert_non_null(strstr(text, "the peak is over it: the run stops out of memory"));
    /* Started by a launcher (its environment says so; no MPI is started by train_run), it
     * would be one rank of several: data parallelism, ZeRO or a pipeline. */
    assert_int_equal(setenv("PMI_SIZE", "2", 1), 0);
    const RematStatus ranks = train_line("--model mlp --predict-only", out);
    unsetenv("PMI_SIZE");
    assert_int_equal(ranks, REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "--ranks K"));
    assert_int_equal(train_line("--model mlp --layers 2 --d-model 8 --predict-only --results /nonexistent-dir/x.json",
                                out), REMAT_EIO);
    fclose(out);
}

/* --accounting paper: the paper's figures (app/paper_accounting.c) printed and in the
 * JSON, nothing built; its flags refused where they would change nothing, and the models
 * and strategies the paper does not count refused by name. */
static void test_predict_only_paper_accounting(void **state)
{
    (void)state;
    char json[1024];
    mem_reset_peaks();
    run_json("--layers 4 --d-model 256 --heads 4 --seq 128 --batch 8 --strategy selective", "--predict-only "
             "--accounting paper --tensor-parallel 2", json, sizeof json);
    for (int k = 0; k < MEM_KIND_COUNT; k++) assert_int_equal(mem_peak((MemKind)k), 0);
    uint64_t per_layer, total;
    const PaperShape p = {.s = 128, .b = 8, .h = 256, .a = 4, .layers = 4, .t = 2};
    assert_int_equal(paper_activations(&p, STRATEGY_SELECTIVE, &per_layer, &total), REMAT_OK);
    assert_int_equal(json_number(json, "activations"), total);
    assert_int_equal(json_number(json, "per_layer"), per_layer);
    FILE *out = tmpfile();
    assert_int_equal(train_line("--tensor-parallel 2 --predict-only", out), 2);
    assert_non_null(strstr(remat_last_error(), "--tensor-parallel does not apply: remat has no tensor parallelism"));
    assert_int_equal(train_line("--accounting paper --steps 1", out), 2);
    assert_non_null(strstr(remat_last_error(), "--accounting does not apply"));
    assert_int_equal(train_line("--model mlp --predict-only --accounting paper", out), 2);
    assert_non_null(strstr(remat_last_error(), "--model gpt"));
    assert_int_equal(train_line("--predict-only --accounting paper --strategy sqrt", out), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "sqrt"));
    assert_int_equal(train_line("--predict-only --accounting paper --results /nonexistent-dir/x.json", out), REMAT_EIO);
    fclose(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_mlp_model_equals_profile, clean_state),
        cmocka_unit_test_setup(test_gpt_model_equals_profile, clean_state),
        cmocka_unit_test_setup(test_chain_model_refuses_bad_shapes, clean_state),
        cmocka_unit_test_setup(test_prediction_equals_the_ledger_of_a_step, clean_state),
        cmocka_unit_test_setup(test_predict_only_builds_nothing_and_writes_json, clean_state),
        cmocka_unit_test_setup(test_predict_only_equals_a_run, clean_state),
        cmocka_unit_test_setup(test_predict_only_with_offload_equals_a_run, clean_state),
        cmocka_unit_test_setup(test_predict_only_names_the_moment_the_doctor_finds, clean_state),
        cmocka_unit_test_setup(test_predict_only_refuses_what_it_cannot_predict, clean_state),
        cmocka_unit_test_setup(test_predict_only_paper_accounting, clean_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
