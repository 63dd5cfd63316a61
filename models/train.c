/*
 * train.c — the training loop: options, the step, evaluation, files, and the report of
 * what the ledgers measured (see train.h).
 *
 * One training step, as every strategy will see it:
 *
 *     draw a batch          (data generator; counted before the step is measured)
 *     zero the gradients
 *     loss = model_loss()   FORWARD FLOPs; activations saved for backward
 *     backward(loss)        BACKWARD FLOPs; saved activations freed as they are used
 *     optimizer step        OPTIMIZER FLOPs; only if everything before succeeded
 *
 * A step that fails (the memory budget, a file error) leaves the parameters and optimizer
 * state as they were before it: the optimizer runs last, and only after backward worked.
 */
#include "models/train.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/data.h"
#include "checkpoint/explain.h"
#include "tensor/flops.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "models/model_file.h"
#include "models/step.h"
#include "offload/offload.h"
#include "tensor/parse.h"
#include "tensor/platform.h"

#ifndef REMAT_DATA_DIR
#define REMAT_DATA_DIR "data"
#endif

/* ---- options ------------------------------------------------------------------------- */

TrainOptions train_defaults(const char *model)
{
    const bool mlp = model && !strcmp(model, "mlp");
    return (TrainOptions){
        .model = mlp ? "mlp" : "gpt",
        .layers = mlp ? 16 : 4,
        .d_model = mlp ? 256 : 128,
        .heads = 4,
        .seq = 64,
        .batch = mlp ? 64 : 16,
        .dropout = mlp ? 0.0f : 0.1f,
        .strategy = "none",
        .planner = "dp",
        .optimizer = "adamw",
        .lr = mlp ? 1e-3f : 2e-3f,
        .momentum = 0.9f,
        .weight_decay = 0.01f,
        .steps = 300,
        .seed = 1337,
        .threads = 0,
        .eval_every = 50,
        .eval_batches = 8,
        .sample_chars = 300,
        .data = REMAT_DATA_DIR "/corpus.txt",
    };
}

void train_usage(FILE *out)
{
    fprintf(out,
        "usage: train [--model gpt|mlp] [options]\n"
        "Trains one of remat's two reference models and reports what the memory and FLOP\n"
        "ledgers measured.\n\n"
        "model\n"
        "  --model gpt|mlp     the char-level GPT on data/ (default) or the MLP chain\n"
        "  --layers N          GPT blocks or MLP layers (gpt 4, mlp 16)\n"
        "  --d-model D         GPT channels, or the MLP's width (gpt 128, mlp 256)\n"
        "  --heads H           GPT attention heads; D must divide by H (4)\n"
        "  --seq T             GPT tokens per sequence (64)\n"
        "  --dropout P         GPT dropout probability in [0, 1) (0.1)\n"
        "checkpointing\n"
        "  --strategy S        none, full (every layer a region), sqrt (segments of about\n"
        "                      sqrt(N) layers), selective (every layer, with a policy) or\n"
        "                      budget (the cheapest schedule that fits --memory-budget) (none)\n"
        "  --memory-budget S   budget: bytes a training step may hold in all (params, grads,\n"
        "                      optimizer, activations), with a unit: B, KiB, MiB or GiB\n"
        "  --planner P         budget: dp (the exact optimum over single-level schedules,\n"
        "                      default), chen (Chen et al. 2016's search) or revolve\n"
        "                      (binomial schedules for chains of identical layers, which\n"
        "                      recompute layers more than once and fit tighter budgets);\n"
        "                      the schedule is printed before training\n"
        "  --policy P          selective's policy: attention_core (default) or dots\n"
        "  --no-rng-replay     replay regions without restoring the generator: dropout\n"
        "                      draws new masks and gradients come out wrong (quiz question 7)\n"
        "  --determinism-check check that every replay reproduced its first forward\n"
        "offload (saved activations written to a spill file on disk, read back in backward)\n"
        "  --offload P         all (every saved activation of 64 KiB or more), large (1 MiB\n"
        "                      or more) or boundary (the inputs checkpoint regions keep)\n"
        "  --offload-dir DIR   where the spill file goes ($TMPDIR, else /tmp)\n"
        "  --offload-no-cache  drop spilled records from the page cache: backward reads the\n"
        "                      disk. A step whose offload fails is redone without offload\n"
        "  --offload-mmap      move the bytes through a MAP_SHARED mapping of the spill file\n"
        "                      instead of pwritev/preadv (slower here: see offload/README.md)\n"
        "training\n"
        "  --batch B           sequences (GPT) or examples (MLP) per step (gpt 16, mlp 64)\n"
        "  --optimizer adamw|sgd  (adamw)\n"
        "  --lr X              learning rate (gpt 2e-3, mlp 1e-3)\n"
        "  --momentum X        SGD momentum in [0, 1) (0.9)\n"
        "  --weight-decay X    AdamW weight decay on weight matrices (0.01)\n"
        "  --steps N           total training steps; a resumed run continues up to N (300)\n"
        "  --seed S            seeds initialisation, batches and dropout (1337)\n"
        "  --threads N         threads for BLAS and remat's loops (all cores)\n"
        "  --eval-every N      validation loss every N steps, 0 for only at the end (50)\n"
        "  --eval-batches N    batches per validation (8)\n"
        "  --data FILE         GPT training text (" REMAT_DATA_DIR "/corpus.txt)\n"
        "  --sample N          GPT: characters of text generated at the end (300)\n"
        "files\n"
        "  --save FILE         write parameters, optimizer and training state (safetensors)\n"
        "  --resume FILE       continue a run saved with --save, bit-identically\n"
        "  --dump-step FILE    write the first step's parameters, batch, loss and gradients\n"
        "  --dump-graph FILE   write the first step's tape as a Graphviz .dot file\n"
        "  --print-tape        print the first step's tape: every node, what it saved, its bytes\n"
        "  --explain-memory    print every activation the first step kept, dropped for\n"
        "                      recomputation or cached, when it came and went, and the totals\n"
        "output\n"
        "  --quiet             no per-step lines or progress bar\n"
        "  --help              this text\n");
}

/* Parses a finite float in [lo, hi) (hi_inclusive: [lo, hi]). */
static bool parse_float(const char *text, double lo, double hi, bool hi_inclusive, float *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < lo || v > hi || (!hi_inclusive && v == hi))
        return false;
    *out = (float)v;
    return true;
}

int train_parse_args(int argc, char **argv, TrainOptions *opt, FILE *out, FILE *err)
{
    /* --model decides the defaults, so find it first. */
    const char *model = "gpt";
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--model")) model = argv[i + 1];
    if (strcmp(model, "gpt") && strcmp(model, "mlp")) {
        fprintf(err, "train: --model must be gpt or mlp, not '%s'\n", model);
        train_usage(err);
        return 2;
    }
    *opt = train_defaults(model);

    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) {
            train_usage(out);
            return 1;
        }
        if (!strcmp(flag, "--quiet") || !strcmp(flag, "--no-rng-replay") || !strcmp(flag, "--determinism-check") ||
            !strcmp(flag, "--print-tape") || !strcmp(flag, "--explain-memory")) {
            if (!strcmp(flag, "--explain-memory")) opt->explain_memory = true;
            if (!strcmp(flag, "--quiet")) opt->quiet = true;
            if (!strcmp(flag, "--print-tape")) opt->print_tape = true;
            if (!strcmp(flag, "--no-rng-replay")) opt->no_rng_replay = true;
            if (!strcmp(flag, "--determinism-check")) opt->determinism_check = true;
            continue;
        }
        if (!strcmp(flag, "--offload-no-cache") || !strcmp(flag, "--offload-mmap")) {
            if (!strcmp(flag, "--offload-no-cache")) opt->offload_no_cache = true;
            else opt->offload_mmap = true;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        bool ok = v != NULL;
        if (!ok) {
            fprintf(err, "train: %s needs a value\n", flag);
            train_usage(err);
            return 2;
        }
        if (!strcmp(flag, "--model")) continue; /* handled above */
        else if (!strcmp(flag, "--layers")) ok = parse_int(v, 1, 4096, &opt->layers);
        else if (!strcmp(flag, "--d-model")) ok = parse_int(v, 1, 65536, &opt->d_model);
        else if (!strcmp(flag, "--heads")) ok = parse_int(v, 1, 1024, &opt->heads);
        else if (!strcmp(flag, "--seq")) ok = parse_int(v, 1, 65536, &opt->seq);
        else if (!strcmp(flag, "--batch")) ok = parse_int(v, 1, 1 << 20, &opt->batch);
        else if (!strcmp(flag, "--dropout")) ok = parse_float(v, 0.0, 1.0, false, &opt->dropout);
        else if (!strcmp(flag, "--strategy")) {
            StrategyKind kind;
            ok = strategy_parse(v, &kind) == REMAT_OK;
            opt->strategy = v;
        }
        else if (!strcmp(flag, "--memory-budget")) {
            if (parse_memory_size(v, &opt->memory_budget) != REMAT_OK) {
                fprintf(err, "train: --memory-budget: %s\n", remat_last_error());
                train_usage(err);
                return 2;
            }
        }
        else if (!strcmp(flag, "--planner")) {
            PlannerKind kind;
            ok = planner_parse(v, &kind) == REMAT_OK;
            opt->planner = v;
        }
        else if (!strcmp(flag, "--policy")) {
            ok = policy_by_name(v) != NULL;
            opt->policy = v;
        }
        else if (!strcmp(flag, "--offload")) {
            OffloadPolicy policy;
            ok = offload_policy_parse(v, &policy) == REMAT_OK;
            opt->offload = v;
        }
        else if (!strcmp(flag, "--offload-dir")) opt->offload_dir = v;
        else if (!strcmp(flag, "--optimizer")) {
            ok = !strcmp(v, "adamw") || !strcmp(v, "sgd");
            opt->optimizer = v;
        }
        else if (!strcmp(flag, "--lr")) ok = parse_float(v, 1e-12, 10.0, true, &opt->lr);
        else if (!strcmp(flag, "--momentum")) ok = parse_float(v, 0.0, 1.0, false, &opt->momentum);
        else if (!strcmp(flag, "--weight-decay")) ok = parse_float(v, 0.0, 10.0, true, &opt->weight_decay);
        else if (!strcmp(flag, "--steps")) ok = parse_int(v, 0, 100000000, &opt->steps);
        else if (!strcmp(flag, "--seed")) {
            char *end = NULL;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            ok = !errno && end != v && !*end && v[0] != '-';
            opt->seed = s;
        }
        else if (!strcmp(flag, "--threads")) ok = parse_int(v, 1, 1024, &opt->threads);
        else if (!strcmp(flag, "--eval-every")) ok = parse_int(v, 0, 100000000, &opt->eval_every);
        else if (!strcmp(flag, "--eval-batches")) ok = parse_int(v, 1, 100000, &opt->eval_batches);
        else if (!strcmp(flag, "--sample")) ok = parse_int(v, 0, 1000000, &opt->sample_chars);
        else if (!strcmp(flag, "--data")) opt->data = v;
        else if (!strcmp(flag, "--save")) opt->save = v;
        else if (!strcmp(flag, "--resume")) opt->resume = v;
        else if (!strcmp(flag, "--dump-step")) opt->dump_step = v;
        else if (!strcmp(flag, "--dump-graph")) opt->dump_graph = v;
        else {
            fprintf(err, "train: unknown flag %s\n", flag);
            train_usage(err);
            return 2;
        }
        if (!ok) {
            fprintf(err, "train: bad value for %s: '%s'\n", flag, v);
            train_usage(err);
            return 2;
        }
    }
    if (!strcmp(opt->model, "gpt") && opt->d_model % opt->heads != 0) {
        fprintf(err, "train: --d-model %d does not divide into %d heads\n", opt->d_model, opt->heads);
        train_usage(err);
        return 2;
    }
    const bool budget = !strcmp(opt->strategy, "budget");
    if (budget != (opt->memory_budget > 0)) {
        fprintf(err, "train: %s\n", budget ? "--strategy budget needs --memory-budget (e.g. 300MiB)"
                                            : "--memory-budget is for --strategy budget");
        train_usage(err);
        return 2;
    }
    if (budget && !strcmp(opt->planner, "revolve") && (opt->no_rng_replay || opt->determinism_check)) {
        fprintf(err, "train: --planner revolve always replays the generator and has no determinism check; "
                "--no-rng-replay and --determinism-check are for regions (dp, chen or the other strategies)\n");
        train_usage(err);
        return 2;
    }
    if (budget && opt->offload) {
        fprintf(err, "train: --strategy budget plans for activations in RAM; it does not combine with --offload\n");
        train_usage(err);
        return 2;
    }
    if (!opt->offload && (opt->offload_dir || opt->offload_no_cache || opt->offload_mmap)) {
        fprintf(err, "train: --offload-dir, --offload-no-cache and --offload-mmap need --offload\n");
        train_usage(err);
        return 2;
    }
    return 0;
}

/* ---- a run --------------------------------------------------------------------------- */

typedef struct Run {
    const TrainOptions *opt;
    bool gpt;
    Model *model;
    Schedule *schedule;  /* what a step keeps: the strategy's, or the one the planner chose */
    ChainCost *cost;     /* budget: the chain's measured cost model */
    Optimizer *optim;
    TrainState state;
    TextData *text; /* GPT */
    MlpTask *task;  /* MLP */
    Offload *offload; /* --offload: the forward's saves go to a spill file; NULL when off */
} Run;

/* A batch: input and targets as new constant Vars (int32 tokens for the GPT). */
static RematStatus draw_batch(Run *run, TextSplit split, Pcg32 *rng, Var **input, Var **targets)
{
    const TrainOptions *o = run->opt;
    if (!run->gpt) return mlp_task_batch(run->task, rng, o->batch, input, targets);
    *input = *targets = NULL;
    Tensor *in = tensor_create_typed(MEM_ACT, DTYPE_I32, 2, (int[]){o->batch, o->seq});
    Tensor *tg = in ? tensor_create_typed(MEM_ACT, DTYPE_I32, 2, (int[]){o->batch, o->seq}) : NULL;
    RematStatus status = tg ? text_data_batch(run->text, split, rng, o->batch, o->seq, in->i32, tg->i32)
                            : remat_last_status();
    if (status != REMAT_OK) {
        tensor_free(in);
        tensor_free(tg);
        return status;
    }
    *input = var_create(in, false, "tokens");
    *targets = var_create(tg, false, "targets");
    return *input && *targets ? REMAT_OK : remat_last_status();
}

/* Mean loss over opt->eval_batches validation batches, with grad mode and dropout off.
 * The batches come from a generator seeded the same way each time, so successive
 * evaluations compare like with like and never disturb the training generators. */
static RematStatus evaluate(Run *run, float *mean_loss)
{
    Pcg32 rng;
    pcg32_seed(&rng, run->opt->seed, 0x7a1);
    TrainCtx ctx = {.training = false};
    bool was = grad_set_enabled(false);
    FlopCounts before = flops_snapshot(); /* evaluation is not part of training */
    double sum = 0.0;
    RematStatus status = REMAT_OK;
    for (int b = 0; b < run->opt->eval_batches && status == REMAT_OK; b++) {
        Var *x, *y;
        status = draw_batch(run, run->gpt ? TEXT_VAL : TEXT_TRAIN, &rng, &x, &y);
        if (status != REMAT_OK) break;
        Var *loss = model_loss_planned(run->model, run->schedule, x, y, &ctx);
        if (loss) sum += loss->value->f32[0];
        else status = remat_last_status();
        var_free(loss);
        var_free(x);
        var_free(y);
    }
    grad_set_enabled(was);
    flops_restore(&before);
    *mean_loss = (float)(sum / run->opt->eval_batches);
    return status;
}

static RematStatus dump_step(const Run *run, Var *input, Var *targets, Var *loss, const char *path)
{
    const Model *m = run->model;
    const int n = m->n_params;
    StEntry *entries = calloc((size_t)(2 * n + 3), sizeof *entries);
    char (*names)[NODE_NAME_LEN + 8] = calloc((size_t)n, sizeof *names);
    if (!entries || !names) {
        free(entries), free(names);
        return remat_fail(REMAT_ENOMEM, "--dump-step: no memory for the file's index");
    }
    int k = 0;
    for (int i = 0; i < n; i++) entries[k++] = (StEntry){m->params[i].var->name, m->params[i].var->value};
    entries[k++] = (StEntry){"input", input->value};
    entries[k++] = (StEntry){"target", targets->value};
    entries[k++] = (StEntry){"loss", loss->value};
    for (int i = 0; i < n; i++) {
        if (!m->params[i].var->grad) continue;
        snprintf(names[i], sizeof names[i], "grad.%s", m->params[i].var->name);
        entries[k++] = (StEntry){names[i], m->params[i].var->grad};
    }
    const StMeta meta[] = {{"remat.model", run->opt->model}, {"remat.contents", "first step before the update"}};
    RematStatus status = st_save(path, entries, k, meta, 2);
    free(entries);
    free(names);
    return status;
}

/* After a failed step: if offload is what failed (a full disk, a corrupted record), says
 * so, turns offload off and returns true, so that the caller redoes the step with its
 * activations in RAM; the failed step changed no parameter or optimizer state. */
static bool give_up_offload(Run *run, FILE *out)
{
    if (!run->offload || offload_stats(run->offload).failures == 0) return false;
    fprintf(out, "\n  offload failed: %s\n  continuing without offload: step %d is redone with its "
            "activations in RAM\n", remat_last_error(), run->state.step + 1);
    offload_free(run->offload);
    run->offload = NULL;
    return true;
}

/* What the first step shows on the way, as train's flags ask: its tape after the forward
 * (--print-tape, --dump-graph), what it kept for backward (--explain-memory), and its
 * gradients before the update (--dump-step). */
typedef struct FirstStep {
    Run *run;
    Var *input, *targets;
    Explain *explain;
    FILE *out;
} FirstStep;

static RematStatus first_forward_done(void *user, Var *loss)
{
    (void)loss;
    const FirstStep *f = user;
    const TrainOptions *o = f->run->opt;
    if (o->dump_graph) {
        const RematStatus status = tape_dump_dot(tape_current(), o->dump_graph);
        if (status != REMAT_OK) return status;
    }
    if (o->print_tape) {
        fprintf(f->out, "\n  the tape of step %d after its forward:\n", f->run->state.step + 1);
        tape_print(tape_current(), f->out);
        fputc('\n', f->out);
    }
    return REMAT_OK;
}

static RematStatus first_backward_done(void *user, Var *loss)
{
    FirstStep *f = user;
    explain_stop(f->explain); /* what the backward released is all it records */
    return f->run->opt->dump_step ? dump_step(f->run, f->input, f->targets, loss, f->run->opt->dump_step) : REMAT_OK;
}

/* One training step (models/step.h) on the next batch; *loss_value gets the loss. On
 * error nothing has been updated, the generators included. */
static RematStatus train_step(Run *run, float *loss_value, bool first, FILE *out)
{
    Var *x = NULL, *y = NULL;
    FlopCounts before = flops_snapshot(); /* the MLP's teacher is data, not training work */
    RematStatus status = draw_batch(run, TEXT_TRAIN, &run->state.data_rng, &x, &y);
    flops_restore(&before);
    if (status != REMAT_OK) return status;

    TrainCtx ctx = {.rng = run->state.dropout_rng, .training = true};
    FirstStep f = {.run = run, .input = x, .targets = y, .out = out,
                   .explain = first && run->opt->explain_memory ? explain_start() : NULL};
    const StepHooks hooks = {.forward_done = first_forward_done, .backward_done = first_backward_done, .user = &f};
    const Step step = {.model = run->model, .schedule = run->schedule, .offload = run->offload, .optim = run->optim};
    StepResult result;
    status = step_run(&step, x, y, &ctx, first ? &hooks : NULL, &result);
    if (f.explain) {
        explain_stop(f.explain);
        fprintf(out, "\n");
        explain_print(f.explain, out, result.act_stored, mem_peak(MEM_ACT));
        fprintf(out, "\n");
        explain_free(f.explain);
    }
    if (status == REMAT_OK) {
        *loss_value = result.loss;
        run->state.dropout_rng = ctx.rng;
        run->state.step++;
    }
    var_free(x);
    var_free(y);
    return status;
}

/* The model's configuration as file metadata, to check a resumed file against. */
static int config_meta(const TrainOptions *o, char values[][24], StMeta *meta)
{
    const char *keys[] = {"remat.layers", "remat.d_model", "remat.heads", "remat.seq"};
    const int nums[] = {o->layers, o->d_model, o->heads, o->seq};
    const int n = !strcmp(o->model, "gpt") ? 4 : 2;
    meta[0] = (StMeta){"remat.model", o->model};
    for (int i = 0; i < n; i++) {
        snprintf(values[i], 24, "%d", nums[i]);
        meta[i + 1] = (StMeta){keys[i], values[i]};
    }
    return n + 1;
}

static RematStatus check_resume_config(const TrainOptions *o)
{
    char values[4][24], found[64];
    StMeta meta[5];
    const char *flags[] = {"--model", "--layers", "--d-model", "--heads", "--seq"};
    int n = config_meta(o, values, meta);
    for (int i = 0; i < n; i++) {
        if (model_file_meta(o->resume, meta[i].key, found, sizeof found) != REMAT_OK) return remat_last_status();
        if (strcmp(found, meta[i].value))
            return remat_fail(REMAT_EINVAL, "%s was trained with %s %s, not %s: pass the same model "
                              "flags to resume it", o->resume, flags[i], found, meta[i].value);
    }
    return REMAT_OK;
}

/* --strategy budget: measures the chain on one batch (drawn from a copy of the data
 * generator, so training sees the same batches) and asks the planner for the cheapest
 * schedule that fits, whose regions replay as `strategy` says. Needs the optimizer, whose
 * state is part of the fixed memory. The profiling step's gradients are zeroed by every
 * step before use. */
static RematStatus plan_budget(Run *run, const Strategy *strategy)
{
    const TrainOptions *o = run->opt;
    PlannerKind kind;
    if (planner_parse(o->planner, &kind) != REMAT_OK) return remat_last_status();
    Pcg32 data = run->state.data_rng;
    Var *x = NULL, *y = NULL;
    FlopCounts before = flops_snapshot();
    RematStatus status = draw_batch(run, TEXT_TRAIN, &data, &x, &y);
    flops_restore(&before);
    if (status != REMAT_OK) return status;
    TrainCtx ctx = {.rng = run->state.dropout_rng, .training = true};
    run->cost = model_profile(run->model, x, y, &ctx);
    var_free(x);
    var_free(y);
    optim_zero_grad(run->optim);
    if (!run->cost) return remat_last_status();
    run->schedule = planner_plan(kind, run->cost, o->memory_budget);
    if (!run->schedule) return remat_last_status();
    run->schedule->preserve_rng = strategy->preserve_rng;
    run->schedule->determinism_check = strategy->determinism_check;
    return REMAT_OK;
}

static RematStatus build(Run *run)
{
    const TrainOptions *o = run->opt;
    run->gpt = !strcmp(o->model, "gpt");
    if (run->gpt) {
        run->text = text_data_load(o->data, 0.1);
        if (!run->text) return remat_last_status();
        GptConfig c = {.n_layers = o->layers, .d_model = o->d_model, .n_heads = o->heads,
                       .seq_len = o->seq, .vocab = 256, .dropout = o->dropout, .seed = o->seed};
        run->model = gpt_create(&c);
    } else {
        run->task = mlp_task_create(o->d_model, o->seed + 1);
        if (!run->task) return remat_last_status();
        run->model = mlp_create(&(MlpConfig){.n_layers = o->layers, .width = o->d_model, .seed = o->seed});
    }
    if (!run->model) return remat_last_status();

    Strategy strategy = strategy_defaults(STRATEGY_NONE);
    if (strategy_parse(o->strategy, &strategy.kind) != REMAT_OK) return remat_last_status();
    strategy.policy = policy_by_name(o->policy);
    strategy.preserve_rng = !o->no_rng_replay;
    strategy.determinism_check = o->determinism_check;
    if (strategy.kind != STRATEGY_BUDGET) {
        run->schedule = schedule_for_strategy(&strategy, run->model->n_layers);
        if (!run->schedule) return remat_last_status();
    }

    if (o->offload) {
        OffloadOptions oo = offload_defaults(OFFLOAD_ALL);
        if (offload_policy_parse(o->offload, &oo.policy) != REMAT_OK) return remat_last_status();
        oo.dir = o->offload_dir;
        oo.drop_cache = o->offload_no_cache;
        oo.io = o->offload_mmap ? OFFLOAD_IO_MMAP : OFFLOAD_IO_SYSCALLS;
        run->offload = offload_create(&oo);
        if (!run->offload) return remat_last_status();
    }

    OptimConfig oc = !strcmp(o->optimizer, "sgd") ? optim_sgd_defaults(o->lr, o->momentum)
                                                  : optim_adamw_defaults(o->lr);
    oc.weight_decay = o->weight_decay;
    run->optim = optim_create(&oc, run->model->params, run->model->n_params);
    if (!run->optim) return remat_last_status();

    pcg32_seed(&run->state.data_rng, o->seed, 0xda7a);
    pcg32_seed(&run->state.dropout_rng, o->seed, 0xd0);
    if (o->resume) {
        if (check_resume_config(o) != REMAT_OK) return remat_last_status();
        if (model_load(run->model, run->optim, &run->state, o->resume) != REMAT_OK) return remat_last_status();
    }
    return strategy.kind == STRATEGY_BUDGET ? plan_budget(run, &strategy) : REMAT_OK;
}

static void destroy(Run *run)
{
    schedule_free(run->schedule);
    chain_cost_free(run->cost);
    optim_free(run->optim);
    model_free(run->model);
    text_data_free(run->text);
    mlp_task_free(run->task);
    offload_free(run->offload);
}

/* ---- output -------------------------------------------------------------------------- */

/* `unit` is what tokens_per_step counts: "tok" for the GPT, "ex" (examples) for the MLP. */
static void progress(FILE *out, bool tty, int step, int total, float loss, double seconds_per_step, int tokens_per_step,
                     const char *unit)
{
    if (tty) {
        enum { WIDTH = 30 };
        int filled = total ? (int)((long)WIDTH * step / total) : WIDTH;
        char bar[WIDTH + 1];
        for (int i = 0; i < WIDTH; i++) bar[i] = i < filled ? '#' : '.';
        bar[WIDTH] = '\0';
        fprintf(out, "\r  step %5d/%d [%s] loss %.4f  %.1f ms/step  %.0f %s/s   ", step, total, bar, loss,
                1e3 * seconds_per_step, tokens_per_step / seconds_per_step, unit);
        fflush(out);
    } else {
        fprintf(out, "  step %5d/%d  loss %.6f  %.1f ms/step  %.0f %s/s\n", step, total, loss,
                1e3 * seconds_per_step, tokens_per_step / seconds_per_step, unit);
    }
}

/* "checkpointing: sqrt, 3 regions", with Revolve's slots, the policy and whether the
 * generator is replayed; the line is left open for the planner's words. */
static void print_checkpointing(FILE *out, const Schedule *s)
{
    fprintf(out, "  checkpointing: %s", strategy_name(s->strategy));
    const int regions = schedule_regions(s), slots = schedule_revolve_slots(s);
    if (slots) fprintf(out, ", Revolve with %d slot%s", slots, slots == 1 ? "" : "s");
    else if (s->strategy != STRATEGY_NONE)
        fprintf(out, ", %d region%s", regions, regions == 1 ? "" : "s");
    for (int i = 0; i < s->n_segments; i++) {
        if (s->segments[i].kind != SEGMENT_REGION || !s->segments[i].policy) continue;
        fprintf(out, ", policy %s", s->segments[i].policy->name);
        break;
    }
    if (s->strategy != STRATEGY_NONE && !s->preserve_rng) fprintf(out, ", generator NOT replayed");
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_report(FILE *out, const Run *run, const TrainReport *r)
{
    char buf[32];
    fprintf(out, "\n  peak memory by kind over the run\n");
    for (int k = 0; k < MEM_DISK; k++)
        fprintf(out, "    %-12s %12s\n", mem_kind_name((MemKind)k), mem_format_bytes(buf, sizeof buf, mem_peak((MemKind)k)));
    fprintf(out, "    %-12s %12s  (all kinds at the same moment)\n", "resident", mem_format_bytes(buf, sizeof buf, mem_peak_resident()));
    if (run->opt->offload)
        fprintf(out, "    %-12s %12s  (in the spill file: not resident)\n", mem_kind_name(MEM_DISK),
                mem_format_bytes(buf, sizeof buf, mem_peak(MEM_DISK)));
    if (r->steps_run == 0) return;
    fprintf(out, "\n  FLOPs per training step by phase\n");
    for (int p = 0; p < PHASE_COUNT; p++)
        fprintf(out, "    %-12s %10.3f GFLOP\n", phase_name((Phase)p), (double)flops_get((Phase)p) / r->steps_run * 1e-9);
    const double per_step = (double)flops_total() / r->steps_run;
    const int tokens = run->opt->batch * (run->gpt ? run->opt->seq : 1);
    fprintf(out, "\n  median step %.2f ms: %.1f GFLOP/s, %.0f %s/s\n", 1e3 * r->median_step_seconds,
            per_step / r->median_step_seconds * 1e-9, tokens / r->median_step_seconds,
            run->gpt ? "tokens" : "examples");
}

static void print_sample(FILE *out, Run *run)
{
    const int n = run->opt->sample_chars;
    if (!run->gpt || n <= 0) return;
    int32_t *text = malloc((size_t)n * sizeof *text);
    if (!text) return;
    Pcg32 rng;
    pcg32_seed(&rng, run->opt->seed, 0x5a);
    const int32_t prompt[] = {'\n'};
    if (gpt_generate(run->model, prompt, 1, n, 0.8f, &rng, text) == REMAT_OK) {
        fprintf(out, "\n  sample (temperature 0.8):\n  ");
        for (int i = 0; i < n; i++) {
            fputc(text[i] == '\n' ? '\n' : (int)text[i], out);
            if (text[i] == '\n') fputs("  ", out);
        }
        fputc('\n', out);
    } else {
        fprintf(out, "\n  sample: %s\n", remat_last_error());
    }
    free(text);
}

/* ---- train_run ------------------------------------------------------------------------ */

RematStatus train_run(const TrainOptions *opt, TrainReport *report, FILE *out)
{
    memset(report, 0, sizeof *report);
    report->first_val_loss = report->last_val_loss = NAN;
    if (opt->threads && platform_set_threads(opt->threads) != REMAT_OK) return remat_last_status();
    PlatformInfo info = platform_info();
    if (platform_check() != REMAT_OK) fprintf(out, "  warning: %s\n", remat_last_error());

    Run run = {.opt = opt};
    RematStatus status = build(&run);
    if (status != REMAT_OK) {
        destroy(&run);
        return status;
    }
    const int first = run.state.step;
    const int to_run = opt->steps > first ? opt->steps - first : 0;
    report->first_step = first;
    report->losses = calloc((size_t)(to_run ? to_run : 1), sizeof *report->losses);
    double *times = calloc((size_t)(to_run ? to_run : 1), sizeof *times);
    if (!report->losses || !times) {
        free(times);
        destroy(&run);
        return remat_fail(REMAT_ENOMEM, "train: no memory for the loss log");
    }

    char pbytes[32];
    fprintf(out, "remat train: %s, %d %s, %s %d, %s of parameters, %s, %d threads (OpenBLAS %s, %s)\n",
            opt->model, opt->layers, run.gpt ? "blocks" : "layers", run.gpt ? "d_model" : "width",
            opt->d_model, mem_format_bytes(pbytes, sizeof pbytes, model_param_bytes(run.model)),
            opt->optimizer, info.threads, info.blas_threading, info.blas_core);
    print_checkpointing(out, run.schedule);
    if (run.cost) {
        char budget[32];
        fprintf(out, ", planner %s, budget %s\n", opt->planner,
                mem_format_bytes(budget, sizeof budget, opt->memory_budget));
        schedule_print(run.schedule, run.model->layers, out);
        fprintf(out, "  the ledger enforces the budget from here on\n");
        mem_set_budget(opt->memory_budget);
    } else {
        fputc('\n', out);
    }
    if (run.offload) {
        char spill[320];
        fprintf(out, "  offload: %s\n", offload_describe(run.offload, spill, sizeof spill));
    }
    if (first) fprintf(out, "  resumed from %s at step %d\n", opt->resume, first);

    const bool tty = !opt->quiet && isatty(fileno(out));
    const int tokens_per_step = opt->batch * (run.gpt ? opt->seq : 1);
    status = evaluate(&run, &report->first_val_loss);
    if (status == REMAT_OK) fprintf(out, "  step %5d  validation loss %.4f\n", first, report->first_val_loss);

    flops_reset();
    mem_reset_peaks();
    for (int s = 0; s < to_run && status == REMAT_OK; s++) {
        double t0 = platform_seconds();
        const Pcg32 data_rng = run.state.data_rng;
        status = train_step(&run, &report->losses[s], s == 0, out);
        if (status != REMAT_OK && give_up_offload(&run, out)) {
            run.state.data_rng = data_rng; /* the same batch again */
            status = train_step(&run, &report->losses[s], s == 0, out);
        }
        if (status != REMAT_OK) break;
        times[s] = platform_seconds() - t0;
        report->steps_run = s + 1;
        const int step = run.state.step;
        if (!opt->quiet && (tty || step % 10 == 0 || s + 1 == to_run))
            progress(out, tty, step, opt->steps, report->losses[s], times[s], tokens_per_step,
                     run.gpt ? "tok" : "ex");
        if (opt->eval_every && step % opt->eval_every == 0 && s + 1 < to_run) {
            float val;
            status = evaluate(&run, &val);
            if (status == REMAT_OK) fprintf(out, "%s  step %5d  validation loss %.4f\n", tty ? "\n" : "", step, val);
        }
    }
    if (tty) fputc('\n', out);
    if (status == REMAT_OK) {
        status = evaluate(&run, &report->last_val_loss);
        if (status == REMAT_OK)
            fprintf(out, "  step %5d  validation loss %.4f (was %.4f)\n", run.state.step,
                    report->last_val_loss, report->first_val_loss);
    }
    if (report->steps_run) {
        qsort(times, (size_t)report->steps_run, sizeof *times, compare_doubles);
        report->median_step_seconds = times[report->steps_run / 2];
    }
    print_report(out, &run, report);
    if (status == REMAT_OK) print_sample(out, &run);
    if (status == REMAT_OK && opt->save) {
        char values[4][24];
        StMeta meta[5];
        int n_meta = config_meta(opt, values, meta);
        status = model_save(run.model, run.optim, &run.state, meta, n_meta, opt->save);
        if (status == REMAT_OK) fprintf(out, "  saved %s (step %d)\n", opt->save, run.state.step);
    }
    if (run.cost) mem_set_budget(0);
    free(times);
    destroy(&run);
    return status;
}

void train_report_free(TrainReport *report)
{
    if (!report) return;
    free(report->losses);
    report->losses = NULL;
}
