/*
 * train.c — the training run (see train.h): build the model, its schedule, offloader and
 * optimizer; draw a batch and run the one training step (step.h) on it, again and again;
 * evaluate; resume and save files. Its command line is train_cli.c, what it prints
 * train_report.c.
 *
 * A step that fails (the memory budget, a file error) leaves the parameters and optimizer
 * state as they were before it (step.h: the optimizer runs last, and only after backward
 * worked); a step whose offload failed is redone with its activations in RAM.
 */
#include "models/train.h"

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
#include "train_report.h"
#include "offload/offload.h"
#include "tensor/parse.h"
#include "tensor/platform.h"

#ifndef REMAT_DATA_DIR
#define REMAT_DATA_DIR "data"
#endif

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
    char unpredicted[256]; /* --explain-memory: why the schedule's peak is not predicted */
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
        const Prediction *p = &run->schedule->predicted;
        explain_print(f.explain, out, result.act_stored, mem_peak(MEM_ACT), p->made ? p->peak_act : 0,
                      run->unpredicted);
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
static RematStatus profile_chain(Run *run, const Policy *policy)
{
    Pcg32 data = run->state.data_rng;
    Var *x = NULL, *y = NULL;
    FlopCounts before = flops_snapshot();
    RematStatus status = draw_batch(run, TEXT_TRAIN, &data, &x, &y);
    flops_restore(&before);
    if (status != REMAT_OK) return status;
    TrainCtx ctx = {.rng = run->state.dropout_rng, .training = true};
    run->cost = model_profile_policy(run->model, x, y, &ctx, policy);
    var_free(x);
    var_free(y);
    optim_zero_grad(run->optim);
    return run->cost ? REMAT_OK : remat_last_status();
}

static RematStatus plan_budget(Run *run)
{
    const StepOptions *o = &run->opt->step;
    if (profile_chain(run, NULL) != REMAT_OK) return remat_last_status();
    run->schedule = planner_plan(o->planner, run->cost, o->memory_budget);
    if (!run->schedule) return remat_last_status();
    run->schedule->preserve_rng = o->strategy.preserve_rng;
    run->schedule->determinism_check = o->strategy.determinism_check;
    return REMAT_OK;
}

/* For --explain-memory: the chain cost model's prediction of the strategy's schedule, as
 * the planner would make it (one profiling step, as plan_budget's, with the policy of the
 * schedule's regions when they have one). A schedule the model does not cover stays
 * unpredicted: explain_print says why. */
static RematStatus predict_schedule(Run *run)
{
    const Policy *policy = NULL;
    for (int i = 0; i < run->schedule->n_segments && !policy; i++) policy = run->schedule->segments[i].policy;
    if (profile_chain(run, policy) != REMAT_OK) return remat_last_status();
    if (schedule_predict(run->schedule, run->cost) != REMAT_OK) {
        snprintf(run->unpredicted, sizeof run->unpredicted, "%s", remat_last_error());
        remat_clear_error();
    }
    return REMAT_OK;
}

/* The model and its data, as the model flags say. */
static RematStatus build_model(Run *run)
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
    return run->model ? REMAT_OK : remat_last_status();
}

/* Everything a run needs: the model, its schedule (a budget's once the optimizer exists,
 * whose state the budget counts), the offloader, the optimizer, the generators, and the
 * resumed state. */
static RematStatus build(Run *run)
{
    const TrainOptions *o = run->opt;
    const StepOptions *step = &o->step;
    if (build_model(run) != REMAT_OK) return remat_last_status();
    if (step->strategy.kind != STRATEGY_BUDGET &&
        !(run->schedule = schedule_for_strategy(&step->strategy, run->model->n_layers)))
        return remat_last_status();
    if (step->offload && !(run->offload = offload_create(&step->offload_opts))) return remat_last_status();

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
    if (step->strategy.kind == STRATEGY_BUDGET) return plan_budget(run);
    return o->explain_memory ? predict_schedule(run) : REMAT_OK;
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

/* ---- train_run ------------------------------------------------------------------------ */

/* Builds the run and prints its header; then the ledger enforces a planned budget. */
static RematStatus run_start(Run *run, FILE *out)
{
    const TrainOptions *opt = run->opt;
    if (opt->threads && platform_set_threads(opt->threads) != REMAT_OK) return remat_last_status();
    if (platform_check() != REMAT_OK) fprintf(out, "  warning: %s\n", remat_last_error());
    RematStatus status = build(run);
    if (status != REMAT_OK) return status;
    report_header(out, opt, run->model, run->schedule, run->cost != NULL);
    if (run->cost) {
        fprintf(out, "  the ledger enforces the budget from here on\n");
        mem_set_budget(opt->step.memory_budget);
    }
    if (run->offload) {
        char spill[320];
        fprintf(out, "  offload: %s\n", offload_describe(run->offload, spill, sizeof spill));
    }
    if (run->state.step) fprintf(out, "  resumed from %s at step %d\n", opt->resume, run->state.step);
    return REMAT_OK;
}

/* Trains `to_run` steps (each redone in RAM if offload fails it), with progress and
 * validation as the options say; times[s] gets step s's seconds. */
static RematStatus run_steps(Run *run, int to_run, TrainReport *report, double *times, FILE *out)
{
    const TrainOptions *opt = run->opt;
    const bool tty = !opt->quiet && isatty(fileno(out));
    const int per_step = opt->batch * (run->gpt ? opt->seq : 1);
    RematStatus status = REMAT_OK;
    for (int s = 0; s < to_run && status == REMAT_OK; s++) {
        double t0 = platform_seconds();
        const Pcg32 data_rng = run->state.data_rng;
        status = train_step(run, &report->losses[s], s == 0, out);
        if (status != REMAT_OK && give_up_offload(run, out)) {
            run->state.data_rng = data_rng; /* the same batch again */
            status = train_step(run, &report->losses[s], s == 0, out);
        }
        if (status != REMAT_OK) break;
        times[s] = platform_seconds() - t0;
        report->steps_run = s + 1;
        const int step = run->state.step;
        if (!opt->quiet && (tty || step % 10 == 0 || s + 1 == to_run))
            report_progress(out, tty, step, opt->steps, report->losses[s], times[s], per_step, run->gpt ? "tok" : "ex");
        if (opt->eval_every && step % opt->eval_every == 0 && s + 1 < to_run) {
            float val;
            status = evaluate(run, &val);
            if (status == REMAT_OK) fprintf(out, "%s  step %5d  validation loss %.4f\n", tty ? "\n" : "", step, val);
        }
    }
    if (tty) fputc('\n', out);
    return status;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* After the steps: the last validation, the report, a sample and the saved file. */
static RematStatus run_finish(Run *run, RematStatus status, TrainReport *report, double *times, FILE *out)
{
    const TrainOptions *opt = run->opt;
    if (status == REMAT_OK) {
        status = evaluate(run, &report->last_val_loss);
        if (status == REMAT_OK)
            fprintf(out, "  step %5d  validation loss %.4f (was %.4f)\n", run->state.step, report->last_val_loss,
                    report->first_val_loss);
    }
    if (report->steps_run) {
        qsort(times, (size_t)report->steps_run, sizeof *times, compare_doubles);
        report->median_step_seconds = times[report->steps_run / 2];
    }
    report_ledgers(out, opt, report);
    if (status == REMAT_OK) report_sample(out, opt, run->model);
    if (status == REMAT_OK && opt->save) {
        char values[4][24];
        StMeta meta[5];
        int n_meta = config_meta(opt, values, meta);
        status = model_save(run->model, run->optim, &run->state, meta, n_meta, opt->save);
        if (status == REMAT_OK) fprintf(out, "  saved %s (step %d)\n", opt->save, run->state.step);
    }
    return status;
}

RematStatus train_run(const TrainOptions *opt, TrainReport *report, FILE *out)
{
    memset(report, 0, sizeof *report);
    report->first_val_loss = report->last_val_loss = NAN;
    Run run = {.opt = opt};
    report->resident = mem_resident_watch_start(); /* before the model is built */
    RematStatus status = run_start(&run, out);
    const int first = run.state.step;
    const int to_run = opt->steps > first ? opt->steps - first : 0;
    report->first_step = first;
    double *times = NULL;
    if (status == REMAT_OK) {
        report->losses = calloc((size_t)(to_run ? to_run : 1), sizeof *report->losses);
        times = calloc((size_t)(to_run ? to_run : 1), sizeof *times);
        if (!report->losses || !times) status = remat_fail(REMAT_ENOMEM, "train: no memory for the loss log");
    }
    if (status == REMAT_OK) {
        status = evaluate(&run, &report->first_val_loss);
        if (status == REMAT_OK) fprintf(out, "  step %5d  validation loss %.4f\n", first, report->first_val_loss);
        flops_reset();
        mem_reset_peaks();
        if (status == REMAT_OK) status = run_steps(&run, to_run, report, times, out);
        mem_resident_watch_stop(&report->resident);
        report->ledger_peak = mem_peak_resident();
        status = run_finish(&run, status, report, times, out);
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
