/*
 * train.c — the training run (see train.h): check what can be checked before anything is
 * built (the files it will write, what the model's parameters, gradients and optimizer
 * state will need, the resumed file's flags and step); build the model, its schedule,
 * offloader and optimizer; draw a step's micro-batches and run the one training step
 * (step.h) on them, again and again; evaluate; resume and save files. Its command line is
 * train_cli.c, what it prints train_report.c.
 *
 * Under mpirun every rank runs this same loop: each draws all K micro-batches of a step
 * (so the data generator moves as in one process) and runs the one of its rank; the step
 * reduces the gradients over the ranks (parallel/zero.h). Every rank evaluates the same
 * replicated parameters; rank 0 alone prints and saves.
 *
 * A step that fails (the memory budget, a file error) leaves the parameters and optimizer
 * state as they were before it (step.h: the optimizer runs last, and only after backward
 * worked); a step whose offload failed is redone with its activations in RAM.
 */
#include "app/train.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/data.h"
#include "models/mlp.h"
#include "app/model_file.h"
#include "app/train_report.h"
#include "base/file.h"
#include "base/progress.h"

/* ---- a run --------------------------------------------------------------------------- */

typedef struct Run {
    const TrainOptions *opt;
    Model *model;
    Schedule *schedule;  /* what a step keeps: the strategy's, or the one the planner chose */
    ChainCost *cost;     /* budget: the chain's measured cost model */
    Optimizer *optim;
    TrainState state;
    StFile *resumed; /* --resume's file, opened and parsed once (open_resumed) */
    TextData *text; /* GPT */
    MlpTask *task;  /* MLP */
    Offload *offload; /* --offload: the forward's saves go to a spill file; NULL when off */
    DistGroup world;  /* the job's ranks: {0, 1} for one process */
    Zero *zero;       /* data parallelism over more than one rank; NULL in one process */
    StepPipeline *pipe; /* --pipeline-stages: this rank's stage; NULL without a pipeline */
    int micro_batches; /* K per step: the ranks, or --accumulate in one process */
    char unpredicted[256]; /* --explain-memory: why the schedule's peak is not predicted */
} Run;

/* A batch: input and targets as new constant Vars (int32 tokens for the GPT). */
static RematStatus draw_batch(Run *run, TextSplit split, Pcg32 *rng, Var **input, Var **targets)
{
    const TrainOptions *o = run->opt;
    if (o->model == MODEL_MLP) return mlp_task_batch(run->task, rng, o->batch, input, targets);
    const int shape[] = {o->batch, o->seq};
    Tensor *in = tensor_create(MEM_ACT, DTYPE_I32, 2, shape);
    *input = in ? var_create(in, false, "tokens") : NULL; /* each Var frees its tensor if it fails */
    Tensor *tg = *input ? tensor_create(MEM_ACT, DTYPE_I32, 2, shape) : NULL;
    *targets = tg ? var_create(tg, false, "targets") : NULL;
    RematStatus status = *targets ? text_data_batch(run->text, split, rng, o->batch, o->seq, in->i32, tg->i32)
                                  : remat_last_status();
    if (status == REMAT_OK) return REMAT_OK;
    var_free(*input);
    var_free(*targets);
    *input = *targets = NULL;
    return status;
}

/* ---- before anything is built -------------------------------------------------------- */

/* Every file the run will write, checked before hours of training rather than after (a
 * missing directory, a path that is a device or a directory; two outputs on one file, or
 * an output over a file the run reads: only --save may replace the file it resumed). */
static RematStatus check_files(const TrainOptions *o)
{
    const char *flags[] = {"--save", "--dump-step", "--dump-graph", "--results", "--resume", "--data"};
    const char *paths[] = {o->save, o->dump_step, o->dump_graph, o->results, o->resume,
                           o->model == MODEL_GPT ? o->data : NULL};
    enum { OUTPUTS = 4, RESUME = 4, ALL = 6 };
    for (int i = 0; i < OUTPUTS; i++) {
        for (int j = i + 1; j < ALL; j++)
            if (paths[i] && file_same_path(paths[i], paths[j]) && !(i == 0 && j == RESUME))
                return remat_fail(REMAT_EINVAL, "%s and %s name the same file, %s: one would replace the other",
                                  flags[i], flags[j], paths[i]);
        if (!paths[i] || file_check_writable(paths[i]) == REMAT_OK) continue;
        char why[768];
        snprintf(why, sizeof why, "%s", remat_last_error());
        return remat_fail(remat_last_status(), "%s: %s", flags[i], why);
    }
    return REMAT_OK;
}

/* The model's configuration as file metadata, to check a resumed file against (open_resumed). */
static int config_meta(const TrainOptions *o, char values[][24], StMeta *meta)
{
    const char *keys[] = {"remat.layers", "remat.d_model", "remat.heads", "remat.seq"};
    const int nums[] = {o->layers, o->d_model, o->heads, o->seq};
    const int n = o->model == MODEL_GPT ? 4 : 2;
    meta[0] = (StMeta){"remat.model", name_of(&MODEL_KIND_NAMES, o->model)};
    for (int i = 0; i < n; i++) {
        snprintf(values[i], 24, "%d", nums[i]);
        meta[i + 1] = (StMeta){keys[i], values[i]};
    }
    return n + 1;
}

/* --resume: opens and parses the file once, for every check and value taken from it, and
 * checks its model flags against the run's, and its step against --steps: it must leave
 * something to train. */
static RematStatus open_resumed(Run *run)
{
    const TrainOptions *o = run->opt;
    if (!(run->resumed = st_load(o->resume))) return remat_last_status();
    char values[4][24];
    StMeta meta[5];
    const char *flags[] = {"--model", "--layers", "--d-model", "--heads", "--seq"};
    const int n = config_meta(o, values, meta);
    for (int i = 0; i < n; i++) {
        const char *found = st_meta(run->resumed, meta[i].key);
        if (!found) return remat_fail(REMAT_EINVAL, "%s has no metadata %s", o->resume, meta[i].key);
        if (strcmp(found, meta[i].value))
            return remat_fail(REMAT_EINVAL, "%s was trained with %s %s, not %s: pass the same model "
                              "flags to resume it", o->resume, flags[i], found, meta[i].value);
    }
    const char *text = st_meta(run->resumed, "remat.step");
    int step;
    if (!text) return remat_fail(REMAT_EINVAL, "%s has no metadata remat.step", o->resume);
    if (!parse_int(text, 0, 100000000, &step))
        return remat_fail(REMAT_ECORRUPT, "%s: metadata remat.step is '%s', not a step count", o->resume, text);
    if (step >= o->steps)
        return remat_fail(REMAT_EINVAL, "%s was saved at step %d and --steps %d counts every step of the run, "
                          "those before the file's included: nothing is left to train (give --steps above %d)",
                          o->resume, step, o->steps, step);
    return REMAT_OK;
}

/* What the model's parameters, gradients and optimizer state will need on this rank,
 * checked before any of them is allocated: against --memory-budget (which applies per
 * rank), below which no schedule fits, and against the memory the machine has available.
 * Under mpirun with ZeRO a rank holds its shard of what the stage shards (parallel/zero.h):
 * the optimizer state from stage 1, the gradients from 2, the parameters at 3.
 * REMAT_EOOM or REMAT_ENOMEM saying what each needs. */
static RematStatus check_memory(const TrainOptions *o, const DistGroup *world)
{
    const bool gpt = o->model == MODEL_GPT, sgd = o->optimizer == OPTIM_SGD;
    const double params = gpt ? gpt_param_count(&(GptConfig){.n_layers = o->layers, .d_model = o->d_model,
                                                             .seq_len = o->seq, .vocab = TEXT_VOCAB_SIZE})
                              : mlp_param_count(&(MlpConfig){.n_layers = o->layers, .width = o->d_model});
    const int states = sgd ? (o->momentum > 0.0f ? 1 : 0) : 2; /* AdamW: m and v */
    const int ranks = world->size, stage = o->step.zero_stage, r = world->rank;
    const double p = params * sizeof(float);
    double fixed = p * (2 + states); /* one process holds every byte, and asks parallel/ nothing */
    char pb[32], fb[32], lim[32], where[64] = "", need[384];
    if (ranks > 1) {
        const uint64_t total = (uint64_t)fmin(params, 1e17); /* any more is far past every budget */
        const uint64_t shard = shard_begin(total, r + 1, ranks) - shard_begin(total, r, ranks);
        const ZeroBytes b = zero_resident_bytes(stage, total, shard, states);
        fixed = (double)b.params + (double)b.grads + (double)b.optimizer;
        snprintf(where, sizeof where, " on each of %d ranks under ZeRO stage %d", ranks, stage);
    }
    mem_format_bytes(pb, sizeof pb, (size_t)fmin(p, 1e18));
    mem_format_bytes(fb, sizeof fb, (size_t)fmin(fixed, 1e18));
    snprintf(need, sizeof need, "the model's parameters (%s), their gradients (%s) and %s state (%.0f x %s) need %s%s "
             "before any activation", pb, pb, name_of(&OPTIM_KIND_NAMES, o->optimizer), (double)states, pb, fb, where);
    const size_t budget = o->step.memory_budget;
    if (budget && fixed > (double)budget)
        return remat_fail(REMAT_EOOM, "%s, more than --memory-budget %s: no schedule fits; give a larger budget or "
                          "a smaller model", need, mem_format_bytes(lim, sizeof lim, budget));
    const double teacher = gpt ? 0.0 : mlp_task_bytes(o->d_model);
    const size_t available = platform_available_memory();
    if (available && fixed + teacher > (double)available)
        return remat_fail(REMAT_ENOMEM, "%s, more than the %s this machine has available: give a smaller model", need,
                          mem_format_bytes(lim, sizeof lim, available));
    return REMAT_OK;
}

/* Under mpirun: the flags every rank must be given alike, or one rank would wait in a
 * collective the others never reach, or train other numbers without a word. Not paths
 * (each rank may read its own copies; a resumed state is compared once loaded), nor
 * --memory-budget, --threads or output flags, which are each rank's own; the strategy only
 * at --zero 3, where it decides which parameters a step gathers and when. */
static RematStatus check_ranks_agree(const TrainOptions *o, const DistGroup *world)
{
    const StepOptions *s = &o->step;
    const DistFact facts[] = {
        dist_fact("--model", "%s", name_of(&MODEL_KIND_NAMES, o->model)), dist_fact("--layers", "%d", o->layers),
        dist_fact("--d-model", "%d", o->d_model), dist_fact("--heads", "%d", o->heads),
        dist_fact("--seq", "%d", o->seq), dist_fact("--batch", "%d", o->batch),
        dist_fact("--dropout", "%.9g", (double)o->dropout),
        dist_fact("--dropout-rng", "%s", name_of(&DROPOUT_RNG_NAMES, o->dropout_rng)),
        dist_fact("--attention", "%s", name_of(&ATTENTION_KIND_NAMES, o->attention)),
        dist_fact("--optimizer", "%s", name_of(&OPTIM_KIND_NAMES, o->optimizer)),
        dist_fact("--lr", "%.9g", (double)o->lr), dist_fact("--momentum", "%.9g", (double)o->momentum),
        dist_fact("--weight-decay", "%.9g", (double)o->weight_decay), dist_fact("--steps", "%d", o->steps),
        dist_fact("--seed", "%" PRIu64, o->seed), dist_fact("--eval-every", "%d", o->eval_every),
        dist_fact("--eval-batches", "%d", o->eval_batches), dist_fact("--zero", "%d", s->zero_stage),
        dist_fact("--resume", "%s", o->resume ? "given" : "not given"), dist_fact("--accumulate", "%d", s->accumulate),
        dist_fact("--strategy", "%s", s->zero_stage == 3 ? name_of(&STRATEGY_NAMES, s->strategy.kind) : "any"),
        dist_fact("--pipeline-stages", "%d", s->pipeline_stages), dist_fact("--micro-batches", "%d", s->micro_batches),
        dist_fact("--pipeline-schedule", "%s", name_of(&PIPE_SCHEDULE_NAMES, s->pipeline_schedule))};
    return dist_agree(world, facts, (int)(sizeof facts / sizeof *facts), "every rank must be given the same flags");
}

/* ---- building the run ---------------------------------------------------------------- */

/* The chain's costs, measured on one batch (drawn from a copy of the data generator, so
 * training sees the same batches; every step zeroes the profiling step's gradients before
 * use), for one of two ends. --strategy budget: the planner's cheapest schedule that fits,
 * whose regions replay as the flags say (the optimizer must exist: its state is part of the
 * fixed memory). --explain-memory: the cost model's prediction of the strategy's schedule,
 * profiled with the policy of its regions when they have one; a schedule the model does
 * not cover stays unpredicted, and explain_print says why. */
static RematStatus plan_schedule(Run *run)
{
    const StepOptions *o = &run->opt->step;
    const bool budget = o->strategy.kind == STRATEGY_BUDGET;
    const Policy *policy = budget ? NULL : run->schedule->segments[0].policy; /* a strategy's regions share one */
    Pcg32 data = run->state.data_rng;
    Var *x, *y;
    if (draw_batch(run, TEXT_TRAIN, &data, &x, &y) != REMAT_OK) return remat_last_status();
    TrainCtx ctx = {.rng = run->state.dropout_rng, .training = true, .dropout_rng = run->opt->dropout_rng,
                    .seed = run->opt->seed, .step = (uint64_t)run->state.step}; /* as the first step's */
    run->cost = model_profile(run->model, x, y, &ctx, policy, budget ? o->planner : PLANNER_DP);
    var_free(x);
    var_free(y);
    optim_zero_grad(run->optim);
    if (!run->cost) return remat_last_status();
    if (budget) {
        if (!(run->schedule = planner_plan(o->planner, run->cost, o->memory_budget))) return remat_last_status();
        run->schedule->replay = o->strategy.replay;
    } else if (schedule_predict(run->schedule, run->cost) != REMAT_OK) {
        snprintf(run->unpredicted, sizeof run->unpredicted, "%s", remat_last_error());
        remat_clear_error();
    }
    return REMAT_OK;
}

/* The optimizer as the flags say: over every parameter, or under ZeRO stage 1 or more
 * over this rank's shard. `whole` asks for one over every parameter in any case (for
 * files). */
static Optimizer *create_optimizer(const Run *run, bool whole)
{
    const TrainOptions *o = run->opt;
    OptimConfig oc = o->optimizer == OPTIM_SGD ? optim_sgd_defaults(o->lr, o->momentum) : optim_adamw_defaults(o->lr);
    oc.weight_decay = o->weight_decay;
    if (run->zero && !whole) return zero_optimizer_create(run->zero, &oc);
    return optim_create(&oc, run->model->params, run->model->n_params);
}

/* On more than one rank: a pipeline's stages, or K micro-batches a step, one per rank, and
 * the reduction over them. */
static RematStatus build_parallel(Run *run)
{
    const StepOptions *step = &run->opt->step;
    if (step->pipeline_stages) { /* the ranks are the stages of one step, not replicas (models/step.h) */
        run->micro_batches = step->micro_batches;
        return (run->pipe = step_pipeline_create(run->model, &step->strategy, &run->world, step->pipeline_schedule,
                                                 step->micro_batches)) ? REMAT_OK : remat_last_status();
    }
    if (step->accumulate > 1)
        return remat_fail(REMAT_EINVAL, "--accumulate %d on %d ranks: --accumulate K is the one-process equivalent "
                          "of mpirun -np K (one micro-batch per rank); use one or the other", step->accumulate,
                          run->world.size);
    run->micro_batches = run->world.size;
    if (step->zero_stage == 3 && step->strategy.kind == STRATEGY_BUDGET)
        return remat_fail(REMAT_EINVAL, "--strategy budget plans with every parameter resident; it does not combine "
                          "with --zero 3");
    return (run->zero = step_zero_create(run->model, &run->world, step->zero_stage)) ? REMAT_OK : remat_last_status();
}

/* Resumes from opt->resume: the model, the optimizer (through one over every parameter when
 * this rank keeps only a shard of its state) and the training state. */
static RematStatus resume(Run *run)
{
    const bool sharded = run->zero && zero_stage(run->zero) > 0;
    Optimizer *full = sharded ? create_optimizer(run, true) : run->optim;
    /* Under ZeRO stage 3 the parameters exist in full only while used: loading, saving and
     * sampling gather them on every rank first and let them go afterwards. */
    RematStatus status = !full ? remat_last_status() : run->zero ? zero_params_gather(run->zero) : REMAT_OK;
    if (status == REMAT_OK) status = model_load(run->model, full, &run->state, run->opt->resume, run->resumed);
    if (status == REMAT_OK && (run->zero || run->pipe)) /* each rank read its own copy of the file */
        status = zero_agree_state(&run->world, run->state.step, run->model->params, run->model->n_params, full,
                                  "every rank must resume the same state, and --resume reads each rank's own copy");
    if (status == REMAT_OK && sharded) status = zero_scatter_optimizer(run->zero, run->optim, full);
    if (run->zero) zero_params_scatter(run->zero); /* this rank keeps its part of what was loaded */
    if (sharded) optim_free(full);
    return status;
}

/* Everything a run needs: the model and its data, its schedule (a budget's once the
 * optimizer exists, whose state the budget counts), the offloader, the data parallelism, the
 * optimizer, the generators, and the resumed state. */
static RematStatus build(Run *run)
{
    const TrainOptions *o = run->opt;
    const StepOptions *step = &o->step;
    if (o->model == MODEL_GPT) {
        if (!(run->text = text_data_load(o->data, 0.1))) return remat_last_status();
        run->model = gpt_create(&(GptConfig){.n_layers = o->layers, .d_model = o->d_model, .n_heads = o->heads,
                                             .seq_len = o->seq, .vocab = TEXT_VOCAB_SIZE, .dropout = o->dropout,
                                             .attention = o->attention, .seed = o->seed});
    } else {
        if (!(run->task = mlp_task_create(o->d_model, o->seed + 1))) return remat_last_status();
        run->model = mlp_create(&(MlpConfig){.n_layers = o->layers, .width = o->d_model, .seed = o->seed});
    }
    if (!run->model) return remat_last_status();
    if (step->strategy.kind != STRATEGY_BUDGET &&
        !(run->schedule = schedule_for_strategy(&step->strategy, run->model->n_layers)))
        return remat_last_status();
    if (step->offload && !(run->offload = offload_create(&step->offload_opts))) return remat_last_status();
    run->micro_batches = step->accumulate; /* in one process; build_parallel sets the ranks' */
    if (run->world.size > 1 && build_parallel(run) != REMAT_OK) return remat_last_status();
    if (run->micro_batches > 1 && o->dump_step)
        return remat_fail(REMAT_EINVAL, "--dump-step writes a step of one micro-batch: use it without "
                          "--accumulate and without mpirun");
    if (!(run->optim = create_optimizer(run, false))) return remat_last_status();

    pcg32_seed(&run->state.data_rng, o->seed, 0xda7a);
    pcg32_seed(&run->state.dropout_rng, o->seed, 0xd0);
    if (o->resume && resume(run) != REMAT_OK) return remat_last_status();
    return step->strategy.kind == STRATEGY_BUDGET || o->explain_memory ? plan_schedule(run) : REMAT_OK;
}

/* ---- a step, and an evaluation ------------------------------------------------------- */

static RematStatus dump_step(const Run *run, Var *input, Var *targets, Var *loss, const char *path)
{
    const Model *m = run->model;
    const int n = m->n_params;
    typedef char GradName[NODE_NAME_LEN + 8];
    StEntry *entries = calloc(1, (size_t)(2 * n + 3) * sizeof *entries + (size_t)n * sizeof(GradName));
    if (!entries) return remat_fail(REMAT_ENOMEM, "--dump-step: no memory for the file's index");
    GradName *names = (GradName *)(entries + 2 * n + 3); /* after the entries, in their block */
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
    const StMeta meta[] = {{"remat.model", name_of(&MODEL_KIND_NAMES, run->opt->model)},
                           {"remat.contents", "first step before the update"}};
    RematStatus status = st_save(path, entries, k, meta, 2);
    free(entries);
    return status;
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
    if (o->dump_graph && tape_dump_dot(tape_current(), o->dump_graph) != REMAT_OK) return remat_last_status();
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

/* One training step (models/step.h) on the next micro-batches; *loss_value gets the loss.
 * On error nothing has been updated, the generators included. */
static RematStatus train_step(Run *run, float *loss_value, bool first, FILE *out)
{
    const TrainOptions *o = run->opt;
    const Pcg32 data_rng = run->state.data_rng;
    /* The step's K micro-batches, drawn in order from the data generator (the MLP's teacher
     * is data, not training work: mlp_task_batch counts none of its FLOPs). */
    MicroBatch *mb = calloc((size_t)run->micro_batches, sizeof *mb);
    RematStatus status = mb ? REMAT_OK : remat_fail(REMAT_ENOMEM, "train: no memory for a step");
    for (int r = 0; r < run->micro_batches && status == REMAT_OK; r++)
        status = draw_batch(run, TEXT_TRAIN, &run->state.data_rng, &mb[r].input, &mb[r].targets);

    /* Dropout on, from the run's stream, or keyed by the run's seed and this step (the step
     * numbers its micro-batches from 0). */
    TrainCtx ctx = {.rng = run->state.dropout_rng, .training = true, .dropout_rng = o->dropout_rng,
                    .seed = o->seed, .step = (uint64_t)run->state.step, .micro_batch = 0};
    StepResult result;
    if (status == REMAT_OK) {
        const MicroBatch *mine = run->zero ? &mb[run->world.rank] : mb; /* a rank runs its own */
        const int n = run->zero ? 1 : run->micro_batches;
        FirstStep f = {.run = run, .input = mine->input, .targets = mine->targets, .out = out,
                       .explain = first && o->explain_memory ? explain_start() : NULL};
        const StepHooks hooks = {.forward_done = first_forward_done, .backward_done = first_backward_done, .user = &f};
        /* the first step's looks, and the plugs, only when a flag asks for them: a plain step runs none */
        const bool look = first && (o->dump_graph || o->print_tape || f.explain || o->dump_step);
        Step step = {.model = run->model, .schedule = run->schedule, .optim = run->optim};
        int plugs = 0;
        if (run->offload) step.plugs[plugs++] = step_offload_plug(run->offload);
        if (run->zero) step.plugs[plugs++] = step_zero_plug(run->zero);
        status = run->pipe ? step_pipeline_run(run->pipe, run->optim, mb, &ctx, &result)
                           : step_run(&step, mine, n, &ctx, look ? &hooks : NULL, &result);
        if (f.explain) report_explained(out, o, f.explain, &result, &run->schedule->predicted, run->unpredicted);
    }
    if (status == REMAT_OK) {
        *loss_value = result.loss;
        run->state.dropout_rng = ctx.rng;
        run->state.step++;
    } else {
        run->state.data_rng = data_rng; /* the same micro-batches again, if the step is redone */
    }
    for (int r = 0; mb && r < run->micro_batches; r++) {
        var_free(mb[r].input);
        var_free(mb[r].targets);
    }
    free(mb);
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

/* Mean loss over opt->eval_batches validation batches, with grad mode and dropout off.
 * The batches come from a generator seeded the same way each time, so successive
 * evaluations compare like with like and never disturb the training generators. At ZeRO
 * stage 3 it gathers one group of parameters at a time, as a step does. */
static RematStatus evaluate(Run *run, float *mean_loss)
{
    if (run->zero) zero_step_begin(run->zero);
    Pcg32 rng;
    pcg32_seed(&rng, run->opt->seed, 0x7a1);
    TrainCtx ctx = {.training = false};
    bool was = grad_set_enabled(false);
    FlopCounts before = flops_snapshot(); /* evaluation is not part of training */
    double sum = 0.0;
    RematStatus status = REMAT_OK;
    for (int b = 0; b < run->opt->eval_batches && status == REMAT_OK; b++) {
        Var *x, *y;
        status = draw_batch(run, run->opt->model == MODEL_GPT ? TEXT_VAL : TEXT_TRAIN, &rng, &x, &y);
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
    if (run->zero) zero_step_end(run->zero);
    return status;
}

/* ---- train_run ----------------------------------------------------------------------- */

/* Checks what it can before building anything, builds the run and prints its header; then
 * the ledger enforces a planned budget. */
static RematStatus run_start(Run *run, FILE *out)
{
    const TrainOptions *opt = run->opt;
    if ((run->world.size > 1 && check_ranks_agree(opt, &run->world) != REMAT_OK) || check_files(opt) != REMAT_OK ||
        (opt->resume && open_resumed(run) != REMAT_OK) || check_memory(opt, &run->world) != REMAT_OK ||
        (opt->threads && platform_set_threads(opt->threads) != REMAT_OK) || platform_check_address_space() != REMAT_OK)
        return remat_last_status();
    const char *blas_warning = platform_info().blas_warning;
    if (blas_warning) fprintf(out, "  warning: %s\n", blas_warning);
    /* A budget holds from the first byte, the model's own included; a planner's only once
     * it has profiled the chain it plans for. */
    const size_t budget = opt->step.memory_budget;
    if (budget && opt->step.strategy.kind != STRATEGY_BUDGET) mem_set_budget(budget);
    if (build(run) != REMAT_OK) return remat_last_status();
    report_header(out, opt, run->model, run->schedule, run->cost != NULL);
    if (budget) {
        fprintf(out, "  the ledger enforces the budget from here on\n");
        mem_set_budget(budget);
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
    const bool tty = !opt->quiet && isatty(fileno(out)), gpt = opt->model == MODEL_GPT;
    const int per_step = run->micro_batches * opt->batch * (gpt ? opt->seq : 1);
    RematStatus status = REMAT_OK;
    for (int s = 0; s < to_run && status == REMAT_OK; s++) {
        double t0 = platform_seconds();
        status = train_step(run, &report->losses[s], s == 0, out);
        if (status != REMAT_OK && !run->zero && give_up_offload(run, out)) /* the same micro-batches again */
            status = train_step(run, &report->losses[s], s == 0, out);
        if (status != REMAT_OK) break;
        times[s] = platform_seconds() - t0;
        report->steps_run = s + 1;
        const int step = run->state.step;
        if (!opt->quiet && (tty || step % 10 == 0 || s + 1 == to_run)) {
            char bar[PROGRESS_BAR_SIZE]; /* a terminal's line is redrawn in place, with the bar */
            fprintf(out, "%s  step %5d/%d %s loss %.*f  %.1f ms/step  %.0f %s/s%s", tty ? "\r" : "", step, opt->steps,
                    tty ? progress_bar(bar, step, opt->steps) : "", tty ? 4 : 6, report->losses[s], 1e3 * times[s],
                    per_step / times[s], gpt ? "tok" : "ex", tty ? "   " : "\n");
            if (tty) fflush(out);
        }
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

/* --save, once run_finish has gathered the parameters: rank 0 writes the model, the whole
 * optimizer state (gathered from the ranks' shards under ZeRO stage 1 or more) and the
 * training state, as one process would. */
static RematStatus save(Run *run, FILE *out)
{
    const TrainOptions *opt = run->opt;
    const bool sharded = run->zero && zero_stage(run->zero) > 0, writer = run->world.rank == 0;
    Optimizer *full = sharded && writer ? create_optimizer(run, true) : NULL;
    RematStatus status = sharded && writer && !full ? remat_last_status() : REMAT_OK;
    if (status == REMAT_OK && sharded) status = zero_gather_optimizer(run->zero, run->optim, full, 0);
    if (status == REMAT_OK && writer) {
        char values[4][24];
        StMeta meta[5];
        int n_meta = config_meta(opt, values, meta);
        status = model_save(run->model, sharded ? full : run->optim, &run->state, meta, n_meta, opt->save);
        if (status == REMAT_OK) fprintf(out, "  saved %s (step %d)\n", opt->save, run->state.step);
    }
    optim_free(full);
    return status;
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
        report->fastest_step_seconds = times[0];
        report->slowest_step_seconds = times[report->steps_run - 1];
    }
    report_ledgers(out, opt, report);
    if (status == REMAT_OK && opt->results && run->world.rank == 0)
        status = train_write_measured(opt->results, report->steps_run);
    if (status == REMAT_OK && run->zero) status = report_ranks(out, &run->world, run->zero, report->steps_run);
    if (status == REMAT_OK && run->pipe) status = report_pipeline(out, opt, &run->world, run->pipe, report->steps_run);
    if (status == REMAT_OK && run->zero) status = zero_params_gather(run->zero); /* every rank, sample or not */
    if (status == REMAT_OK && opt->model == MODEL_GPT && opt->sample_chars > 0) report_sample(out, opt, run->model);
    if (status == REMAT_OK && opt->save) status = save(run, out);
    if (run->zero) zero_params_scatter(run->zero);
    return status;
}

RematStatus train_run(const TrainOptions *opt, TrainReport *report, FILE *out)
{
    TrainReport printed; /* for a caller that wants only what is printed */
    if (!report) report = &printed;
    *report = (TrainReport){.first_val_loss = NAN, .last_val_loss = NAN};
    if (opt->predict_only) return train_predict(opt, out);
    Run run = {.opt = opt, .world = dist_under_launcher() ? dist_world() : (DistGroup){.rank = 0, .size = 1}};
    /* What the ledger may hold on this rank: the memory available, shared by the job's
     * ranks, less an eighth for what the ledger does not count (kept free blocks, the tape:
     * 9% of the ledger's peak on a deep GPT), or a caller's lower ceiling. Crossing it fails
     * the step, changing nothing, where the kernel would end the process without a word. */
    const size_t share = platform_available_memory() / (size_t)run.world.size / 8 * 7;
    const size_t caller_ceiling = mem_set_ceiling(0); /* given back at the end */
    mem_set_ceiling(caller_ceiling && (!share || caller_ceiling < share) ? caller_ceiling : share);
    report->resident = platform_resident_watch_start(); /* before the model is built */
    RematStatus status = run_start(&run, out);
    const int first = run.state.step;
    const int to_run = opt->steps > first ? opt->steps - first : 0;
    report->first_step = first;
    report->losses = calloc((size_t)(to_run ? to_run : 1), sizeof *report->losses);
    double *times = calloc((size_t)(to_run ? to_run : 1), sizeof *times);
    if (status == REMAT_OK && (!report->losses || !times))
        status = remat_fail(REMAT_ENOMEM, "train: no memory for the loss log");
    if (status == REMAT_OK) {
        status = evaluate(&run, &report->first_val_loss);
        if (status == REMAT_OK) fprintf(out, "  step %5d  validation loss %.4f\n", first, report->first_val_loss);
        flops_reset();
        mem_reset_peaks();
        if (run.zero) comm_reset();
        if (status == REMAT_OK) status = run_steps(&run, to_run, report, times, out);
        platform_resident_watch_stop(&report->resident);
        report->ledger_peak = mem_peak_moment().resident;
        for (int k = 0; k < MEM_KIND_COUNT; k++) report->peaks[k] = mem_peak((MemKind)k);
        status = run_finish(&run, status, report, times, out);
    }
    if (opt->step.memory_budget) mem_set_budget(0);
    mem_set_ceiling(caller_ceiling);
    free(times);
    if (report == &printed) free(printed.losses);
    /* A run without them calls nothing of offload/, parallel/ or the planners. */
    schedule_free(run.schedule);
    if (run.cost) chain_cost_free(run.cost);
    optim_free(run.optim);
    model_free(run.model);
    if (run.text) text_data_free(run.text);
    if (run.task) mlp_task_free(run.task);
    if (run.offload) offload_free(run.offload);
    if (run.zero) zero_free(run.zero);
    if (run.pipe) step_pipeline_free(run.pipe);
    if (run.resumed) st_close(run.resumed);
    return status;
}

void train_report_free(TrainReport *report)
{
    if (!report) return;
    free(report->losses);
    report->losses = NULL;
}
