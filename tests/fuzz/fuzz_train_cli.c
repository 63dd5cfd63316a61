/*
 * fuzz_train_cli.c — libFuzzer target for train's command line (app/train_cli.c and
 * the step flags' table, app/step_options.c).
 *
 * Each input is a command line: its arguments separated by NUL bytes (at most 32). The
 * parse must end in one of its three answers — 0 (run), 1 (--help printed) or 2 (refused)
 * — and a command line it accepts must describe a run that makes sense: every number in
 * its documented range, the GPT's channels divisible by its heads, and no flag given that
 * would change nothing (the same check run again must pass). A broken promise aborts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/train.h"
#include "base/platform.h"

static void broken(const char *what)
{
    fprintf(stderr, "fuzz_train_cli: %s\n", what);
    abort();
}

/* Whether an accepted command line describes a run train can start. */
static void check_accepted(const TrainOptions *o)
{
    const bool gpt = o->model == MODEL_GPT;
    if (!gpt && o->model != MODEL_MLP) broken("accepted a model that is neither gpt nor mlp");
    if (o->layers < 1 || o->layers > 4096 || o->d_model < 1 || o->d_model > 65536 || o->heads < 1 ||
        o->seq < 1 || o->batch < 1 || o->steps < 0 || o->eval_batches < 1 || o->threads < 0 ||
        o->threads > platform_info().max_threads)
        broken("accepted a size out of its range");
    if (!(o->dropout >= 0.0f && o->dropout < 1.0f) || !(o->lr > 0.0f) || !(o->momentum >= 0.0f && o->momentum < 1.0f))
        broken("accepted a rate out of its range");
    if (gpt && o->d_model % o->heads) broken("accepted channels that do not divide into the heads");
    if (o->optimizer != OPTIM_ADAMW && o->optimizer != OPTIM_SGD) broken("accepted an unknown optimizer");
    const char *paths[] = {o->data, o->save, o->resume, o->dump_step, o->dump_graph, o->step.offload_opts.dir};
    for (int i = 0; i < 6; i++)
        if (paths[i] && !paths[i][0]) broken("accepted an empty path");
    const StepScope more = {.counter_masks = gpt && o->dropout_rng == DROPOUT_RNG_COUNTER};
    if (step_options_check(&o->step, more) != REMAT_OK)
        broken("accepted step flags its own check refuses");
    if (o->step.strategy.kind == STRATEGY_BUDGET && !o->step.memory_budget) broken("accepted budget without a budget");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { MAX_ARGS = 32 };
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w"))) broken("cannot open /dev/null");
    char *text = malloc(size + 1);
    if (!text) broken("no memory for the input");
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[MAX_ARGS + 2] = {"train"};
    int argc = 1;
    for (size_t at = 0; at <= size && argc <= MAX_ARGS; at += strlen(text + at) + 1) argv[argc++] = text + at;
    TrainOptions o;
    remat_clear_error();
    const int parsed = train_parse_args(argc, argv, &o, sink, sink);
    if (parsed < 0 || parsed > 2) broken("train_parse_args gave an answer outside 0, 1 and 2");
    if (parsed == 0) check_accepted(&o);
    free(text);
    return 0;
}
