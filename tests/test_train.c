/*
 * test_train.c — the training program's contract: its command line, its files, and that a
 * resumed run continues with bit-identical losses.
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
#include <unistd.h>

#include "tests/fixture_train.h"
#include "models/gpt.h"
#include "app/model_file.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "app/safetensors.h"
#include "app/train.h"

static FILE *sink;
static char dir[] = "/tmp/remat_train_XXXXXX";

static int group_setup(void **state)
{
    (void)state;
    sink = fopen("/dev/null", "w");
    return sink && mkdtemp(dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    fclose(sink);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

static int parse(TrainOptions *opt, int argc, char **argv)
{
    return train_parse_args(argc, argv, opt, sink, sink);
}

static void path_in_dir(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

/* ---- command line --------------------------------------------------------------------- */

static void test_parse_accepts_every_documented_flag(void **state)
{
    (void)state;
    TrainOptions o;
    char *argv[] = {"train", "--model", "mlp", "--layers", "3", "--d-model", "16", "--batch", "4",
                    "--steps", "7", "--lr", "0.01", "--optimizer", "sgd", "--momentum", "0.5",
                    "--seed", "42", "--threads", "1", "--eval-every", "0", "--eval-batches", "2",
                    "--quiet", "--save", "x.st"};
    assert_int_equal(parse(&o, 28, argv), 0);
    assert_int_equal(o.model, MODEL_MLP);
    assert_int_equal(o.layers, 3);
    assert_int_equal(o.d_model, 16);
    assert_int_equal(o.steps, 7);
    assert_int_equal(o.optimizer, OPTIM_SGD);
    assert_float_equal(o.momentum, 0.5f, 0.0f);
    assert_int_equal(o.seed, 42);
    assert_true(o.quiet);
    assert_string_equal(o.save, "x.st");
}

static void test_parse_rejects_bad_input_with_exit_code_2(void **state)
{
    (void)state;
    TrainOptions o;
    char *unknown[] = {"train", "--bogus"};
    char *missing[] = {"train", "--layers"};
    char *negative[] = {"train", "--layers", "-3"};
    char *junk[] = {"train", "--lr", "fast"};
    char *dropout[] = {"train", "--dropout", "1.0"};
    char *model[] = {"train", "--model", "rnn"};
    char *heads[] = {"train", "--d-model", "100", "--heads", "3"};
    char *optimizer[] = {"train", "--optimizer", "adam"};
    char *nan[] = {"train", "--lr", "nan"};
    char *rng[] = {"train", "--dropout-rng", "philox"};
    assert_int_equal(parse(&o, 3, rng), 2);
    char *counter[] = {"train", "--dropout-rng", "counter"};
    assert_int_equal(parse(&o, 3, counter), 0);
    assert_int_equal(o.dropout_rng, DROPOUT_RNG_COUNTER);
    /* Fused attention: with counter-based masks or without dropout; not with the stream's
     * masks, which it could not make again, and not for the MLP, which has no attention. */
    char *fused_stream[] = {"train", "--attention", "fused"};
    char *fused_counter[] = {"train", "--attention", "fused", "--dropout-rng", "counter"};
    char *fused_no_dropout[] = {"train", "--attention", "fused", "--dropout", "0"};
    char *fused_mlp[] = {"train", "--model", "mlp", "--attention", "fused"};
    char *bad_attention[] = {"train", "--attention", "flash"};
    assert_int_equal(parse(&o, 3, fused_stream), 2);
    assert_int_equal(parse(&o, 5, fused_counter), 0);
    assert_int_equal(o.attention, ATTENTION_FUSED);
    assert_int_equal(parse(&o, 5, fused_no_dropout), 0);
    assert_int_equal(parse(&o, 5, fused_mlp), 2);
    assert_int_equal(parse(&o, 3, bad_attention), 2);
    assert_int_equal(parse(&o, 2, unknown), 2);
    assert_int_equal(parse(&o, 2, missing), 2);
    assert_int_equal(parse(&o, 3, negative), 2);
    assert_int_equal(parse(&o, 3, junk), 2);
    assert_int_equal(parse(&o, 3, dropout), 2);
    assert_int_equal(parse(&o, 3, model), 2);
    assert_int_equal(parse(&o, 5, heads), 2);
    assert_int_equal(parse(&o, 3, optimizer), 2);
    assert_int_equal(parse(&o, 3, nan), 2);
    char *help[] = {"train", "--help"};
    assert_int_equal(parse(&o, 2, help), 1);
}

static void test_parse_budget_flags(void **state)
{
    (void)state;
    TrainOptions o;
    char *good[] = {"train", "--strategy", "budget", "--memory-budget", "300MiB", "--planner", "chen"};
    assert_int_equal(parse(&o, 7, good), 0);
    assert_int_equal(o.step.memory_budget, 300u << 20);
    assert_int_equal(o.step.planner, PLANNER_CHEN);
    char *garbage[] = {"train", "--strategy", "budget", "--memory-budget", "lots"};
    char *unit[] = {"train", "--strategy", "budget", "--memory-budget", "300MB"};
    char *negative[] = {"train", "--strategy", "budget", "--memory-budget", "-1GiB"};
    char *no_budget[] = {"train", "--strategy", "budget"};
    char *no_strategy[] = {"train", "--memory-budget", "300MiB"};
    char *planner[] = {"train", "--strategy", "budget", "--memory-budget", "1GiB", "--planner", "greedy"};
    char *revolve[] = {"train", "--strategy", "budget", "--memory-budget", "1GiB", "--planner", "revolve"};
    char *revolve_no_replay[] = {"train", "--strategy", "budget", "--memory-budget", "1GiB", "--planner", "revolve",
                                 "--no-rng-replay"};
    char *offload[] = {"train", "--strategy", "budget", "--memory-budget", "1GiB", "--offload", "all"};
    assert_int_equal(parse(&o, 5, garbage), 2);
    assert_int_equal(parse(&o, 5, unit), 2);
    assert_int_equal(parse(&o, 5, negative), 2);
    assert_int_equal(parse(&o, 3, no_budget), 2);
    assert_int_equal(parse(&o, 3, no_strategy), 0); /* every strategy runs under a budget */
    assert_int_equal(o.step.memory_budget, 300u << 20);
    assert_int_equal(parse(&o, 7, planner), 2);
    assert_int_equal(parse(&o, 7, revolve), 0);
    assert_int_equal(o.step.planner, PLANNER_REVOLVE);
    assert_int_equal(parse(&o, 8, revolve_no_replay), 2); /* Revolve always replays the generator */
    assert_int_equal(parse(&o, 7, offload), 2);
}

/* Issue 16: one rule for every flag, train's own and the step's: one that would change
 * nothing in the run the others describe is refused with exit 2 and says why, where
 * before --policy, --planner, --momentum, the GPT's flags with the MLP and --offload
 * boundary with strategy none were silently ignored; --threads beyond the machine's
 * limit failed only later, with exit 1. */
static void test_parse_refuses_flags_that_do_not_apply(void **state)
{
    (void)state;
    static const struct {
        const char *args[4];
        const char *why;
    } cases[] = {
        {{"--policy", "dots"}, "--policy does not apply: it is the policy of --strategy selective"},
        {{"--strategy", "full", "--policy", "dots"}, "--policy does not apply"},
        {{"--planner", "chen"}, "--planner does not apply: it is for --strategy budget"},
        {{"--no-rng-replay"}, "--no-rng-replay does not apply"},
        {{"--determinism-check"}, "--determinism-check does not apply"},
        {{"--offload", "boundary"}, "--offload does not apply: boundary spills the inputs checkpoint regions keep"},
        {{"--offload-dir", "/tmp"}, "--offload-dir does not apply: it says how --offload spills"},
        {{"--offload-mmap"}, "--offload-mmap does not apply"},
        {{"--momentum", "0.5"}, "--momentum does not apply: it is SGD's"},
        {{"--optimizer", "sgd", "--weight-decay", "0.1"}, "--weight-decay does not apply: it is AdamW's"},
        {{"--dropout", "0.2"}, "--dropout does not apply: it is the GPT's"},
        {{"--heads", "2"}, "--heads does not apply"},
        {{"--seq", "8"}, "--seq does not apply"},
        {{"--data", "data/corpus.txt"}, "--data does not apply"},
        {{"--sample", "10"}, "--sample does not apply"},
        {{"--threads", "100000"}, "--threads: '100000' is not a whole number in 1.."},
        {{"--offload", "all", "--offload-dir", ""}, "--offload-dir needs a value"},
        {{"--layers", " 2"}, "--layers: ' 2' is not a whole number"},
        {{"--seed", " -1"}, "--seed: ' -1' is not a whole number"},
        {{"--save", ""}, "--save needs a value (FILE)"},
        {{"--save", "a.st", "--save", "b.st"}, "--save is given twice"},
        {{"--strategy", "full", "--strategy", "sqrt"}, "--strategy is given twice"},
        {{"--model", "gpt"}, "--model is given twice"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *argv[8] = {"train", "--model", "mlp"};
        int argc = 3;
        for (int a = 0; a < 4 && cases[c].args[a]; a++) argv[argc++] = (char *)cases[c].args[a];
        char *err_text = NULL;
        size_t err_size = 0;
        FILE *err = open_memstream(&err_text, &err_size);
        assert_non_null(err);
        TrainOptions o;
        const int parsed = train_parse_args(argc, argv, &o, sink, err);
        fclose(err);
        if (parsed != 2 || !strstr(err_text, cases[c].why))
            fail_msg("train --model mlp %s %s ...: exit %d, wanted 2 and \"%s\"; it said: %.200s", cases[c].args[0],
                     cases[c].args[1] ? cases[c].args[1] : "", parsed, cases[c].why, err_text);
        free(err_text);
    }
    /* The same flags where they apply are taken. */
    char *gpt[] = {"train", "--strategy", "selective", "--policy", "dots", "--dropout", "0.2", "--heads", "2",
                   "--offload", "boundary", "--no-rng-replay"};
    TrainOptions o;
    assert_int_equal(parse(&o, 12, gpt), 0);
    char *sgd[] = {"train", "--model", "mlp", "--optimizer", "sgd", "--momentum", "0.5"};
    assert_int_equal(parse(&o, 7, sgd), 0);
}

/* Two flags were taken where they change nothing: --zero in one process, which has no
 * ranks to shard across, and --no-rng-replay with counter dropout, whose masks are made
 * again from their counters in a replay, so there is no generator to restore. Both are
 * refused with exit 2 and the reason; under mpirun, --zero is taken (test_dist_train). */
static void test_parse_refuses_zero_alone_and_rng_replay_of_counter_masks(void **state)
{
    (void)state;
    static const struct {
        const char *args[6];
        const char *why;
    } cases[] = {
        {{"--zero", "3"}, "--zero does not apply: it says what the ranks of mpirun shard, and this is one process"},
        {{"--zero", "0"}, "--zero does not apply"},
        {{"--strategy", "full", "--dropout-rng", "counter", "--no-rng-replay"},
         "--no-rng-replay does not apply: --dropout-rng counter makes each mask again from its counters"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *argv[8] = {"train"};
        int argc = 1;
        for (int a = 0; a < 6 && cases[c].args[a]; a++) argv[argc++] = (char *)cases[c].args[a];
        char *err_text = NULL;
        size_t err_size = 0;
        FILE *err = open_memstream(&err_text, &err_size);
        assert_non_null(err);
        TrainOptions o;
        const int parsed = train_parse_args(argc, argv, &o, sink, err);
        fclose(err);
        if (parsed != 2 || !strstr(err_text, cases[c].why))
            fail_msg("train %s %s ...: exit %d, wanted 2 and \"%s\"; it said: %.200s", cases[c].args[0],
                     cases[c].args[1], parsed, cases[c].why, err_text);
        free(err_text);
    }
    /* The stream's masks are what a replay restores: there the flag is taken. */
    char *stream[] = {"train", "--strategy", "full", "--dropout-rng", "stream", "--no-rng-replay"};
    TrainOptions o;
    assert_int_equal(parse(&o, 6, stream), 0);
}

/* A bench is checked by the same table against what it runs: its sweep when --strategy
 * is not given, and offload when it offloads by itself (bench_offload). */
static void test_step_flags_are_checked_against_the_run(void **state)
{
    (void)state;
    StepOptions o = step_options_defaults();
    o.given = STEP_FLAG_POLICY;
    const StepScope sweep = {.strategies = 1u << STRATEGY_NONE | 1u << STRATEGY_SELECTIVE};
    const StepScope full = {.strategies = 1u << STRATEGY_FULL};
    assert_int_equal(step_options_check(&o, sweep), REMAT_OK);
    assert_int_equal(step_options_check(&o, full), REMAT_EINVAL);
    o = step_options_defaults();
    o.given = STEP_FLAG_OFFLOAD_DIR;
    assert_int_equal(step_options_check(&o, full), REMAT_EINVAL);
    assert_int_equal(step_options_check(&o, (StepScope){.strategies = 1u << STRATEGY_NONE, .offloads = true}),
                     REMAT_OK);
}

/* The table of a step's flags (app/step_options.h) parses each flag once into its
 * typed field, takes only the flags a program accepts, and says which flag was wrong. */
static void test_step_options_parse_into_typed_fields(void **state)
{
    (void)state;
    char *argv[] = {"bench", "--strategy", "selective", "--policy", "dots", "--no-rng-replay", "--offload-dir",
                    "/tmp", "--quick"};
    StepOptions o = step_options_defaults();
    const unsigned accepted = STEP_FLAG_STRATEGY | STEP_FLAG_POLICY | STEP_FLAG_NO_RNG_REPLAY;
    FlagSet set = step_options_flags(&o, accepted);
    assert_int_equal(flags_parse(&set, 1, 6, argv), FLAGS_RUN);
    assert_int_equal(o.strategy.kind, STRATEGY_SELECTIVE);
    assert_ptr_equal(o.strategy.policy, &POLICY_DOTS_SAVEABLE);
    assert_false(o.strategy.replay.preserve_rng); /* a switch takes no value */
    assert_int_equal(o.given, accepted);
    o = step_options_defaults(); /* a flag of the table this program does not take */
    assert_int_equal(flags_parse(&set, 1, 8, argv), FLAGS_BAD); /* argv[6] */
    assert_non_null(strstr(remat_last_error(), "--offload-dir does not apply"));
    assert_null(o.offload_opts.dir);
    o = step_options_defaults(); /* not a flag of the table at all */
    char *other[] = {"bench", "--quick"};
    assert_int_equal(flags_parse(&set, 1, 2, other), FLAGS_BAD);
    assert_non_null(strstr(remat_last_error(), "unknown flag --quick"));
    char *bad[] = {"train", "--planner", "greedy"};
    o = step_options_defaults();
    set = step_options_flags(&o, STEP_FLAGS_ALL);
    assert_int_equal(flags_parse(&set, 1, 3, bad), FLAGS_BAD);
    assert_non_null(strstr(remat_last_error(), "--planner: 'greedy' is not one of chen, dp, revolve"));
    assert_int_equal(o.planner, PLANNER_DP);
}

static void test_parse_accumulate_and_zero(void **state)
{
    (void)state;
    TrainOptions o;
    char *good[] = {"train", "--accumulate", "3"};
    assert_int_equal(parse(&o, 3, good), 0);
    assert_int_equal(o.step.accumulate, 3);
    char *none[] = {"train", "--accumulate", "0"};
    char *junk[] = {"train", "--accumulate", "2x"};
    char *four[] = {"train", "--zero", "4"};
    assert_int_equal(parse(&o, 3, none), 2);
    assert_int_equal(parse(&o, 3, junk), 2);
    assert_int_equal(parse(&o, 3, four), 2);
    assert_non_null(strstr(remat_last_error(), "--zero: '4' is not a whole number in 0..3"));
}

/* ---- runs ----------------------------------------------------------------------------- */

/* What a fake capability saw of a step. */
typedef struct PlugLog {
    int forward_begin, forward_end, pass_begin, pass_end, reduce, optimizer_step;
    float loss;
} PlugLog;

static RematStatus log_forward_begin(void *ctx) { return ((PlugLog *)ctx)->forward_begin++, REMAT_OK; }
static RematStatus log_forward_end(void *ctx) { return ((PlugLog *)ctx)->forward_end++, REMAT_OK; }
static void log_pass_begin(void *ctx) { ((PlugLog *)ctx)->pass_begin++; }
static void log_pass_end(void *ctx) { ((PlugLog *)ctx)->pass_end++; }

static RematStatus log_reduce(void *ctx, float loss, float *mean_loss)
{
    PlugLog *log = ctx;
    log->reduce++;
    log->loss = loss;
    *mean_loss = 42.0f;
    return REMAT_OK;
}

static RematStatus log_optimizer_step(void *ctx, Optimizer *opt)
{
    (void)opt;
    ((PlugLog *)ctx)->optimizer_step++;
    return REMAT_OK;
}

/* step.h: a plug's moments come where the step says, once each for one micro-batch, and a
 * plug that reduces replaces the mean and the optimizer step (which then does not run:
 * the parameters' step count stays 0). */
static void test_plugs_run_where_the_step_says(void **state)
{
    (void)state;
    const Trainee mlp = {"mlp", 2, 16, DROPOUT_RNG_STREAM, ATTENTION_NAIVE, 0.0f};
    Model *m = fixture_model(&mlp);
    Pcg32 data;
    pcg32_seed(&data, 3, 4);
    Var *y, *x = fixture_batch(&mlp, &data, &y);
    Optimizer *opt = optim_create(&(OptimConfig){.kind = OPTIM_SGD, .lr = 0.1f}, m->params, m->n_params);
    PlugLog watch = {0}, ranks = {0};
    const Step step = {.model = m, .optim = opt,
                       .plugs = {{.forward_begin = log_forward_begin, .forward_end = log_forward_end,
                                  .pass_begin = log_pass_begin, .pass_end = log_pass_end, .ctx = &watch},
                                 {.reduce = log_reduce, .optimizer_step = log_optimizer_step, .ctx = &ranks}}};
    TrainCtx ctx = {.training = true};
    StepResult result;
    assert_int_equal(step_run(&step, &(MicroBatch){x, y}, 1, &ctx, NULL, &result), REMAT_OK);
    assert_int_equal(watch.forward_begin, 1);
    assert_int_equal(watch.forward_end, 1);
    assert_int_equal(watch.pass_begin, 1);
    assert_int_equal(watch.pass_end, 1);
    assert_int_equal(ranks.reduce, 1);
    assert_int_equal(ranks.optimizer_step, 1);
    assert_true(isfinite(ranks.loss));
    assert_true(result.loss == 42.0f);
    assert_int_equal(optim_steps(opt), 0);
    optim_free(opt);
    var_free(x);
    var_free(y);
    model_free(m);
}

/* What the parameter-use hooks saw: the stages entered, in order, and every parameter a
 * node about to run its backward read. */
typedef struct UseLog {
    const void *stages[8];
    int n_stages;
    const Var *read[64];
    int n_read;
} UseLog;

static RematStatus log_enter(void *ctx, const void *stage)
{
    UseLog *log = ctx;
    if (log->n_stages < 8) log->stages[log->n_stages] = stage;
    log->n_stages++;
    return REMAT_OK;
}

static RematStatus log_before_backward(void *ctx, const Node *node)
{
    UseLog *log = ctx;
    for (int k = 0; k < node->n_inputs; k++)
        if (node->inputs[k].leaf && log->n_read < 64) log->read[log->n_read++] = node->inputs[k].leaf;
    return REMAT_OK;
}

/* autograd.h: the model's embedding, each layer and the head are entered in order, and
 * before backward every parameter is seen among the inputs of a node about to run, which
 * is how ZeRO stage 3 knows what to gather. */
static void test_param_use_hooks_see_every_stage_and_parameter(void **state)
{
    (void)state;
    const Trainee gpt = {"gpt", 2, 0, DROPOUT_RNG_STREAM, ATTENTION_NAIVE, 0.0f};
    Model *m = fixture_model(&gpt);
    Pcg32 data;
    pcg32_seed(&data, 3, 4);
    Var *y, *x = fixture_batch(&gpt, &data, &y);
    UseLog log = {0};
    const ParamUseHooks hooks = {.enter = log_enter, .before_backward = log_before_backward, .ctx = &log};
    const ParamUseHooks *outer = param_use_hooks_set(&hooks);
    TrainCtx ctx = {.training = true};
    StepResult result;
    assert_int_equal(step_run(&(Step){.model = m}, &(MicroBatch){x, y}, 1, &ctx, NULL, &result), REMAT_OK);
    param_use_hooks_set(outer);
    const void *want[] = {m, m->layers[0], m->layers[1], m};
    assert_int_equal(log.n_stages, 4);
    for (int i = 0; i < 4; i++) assert_ptr_equal(log.stages[i], want[i]);
    for (int i = 0; i < m->n_params; i++) {
        bool seen = false;
        for (int k = 0; k < log.n_read; k++) seen |= log.read[k] == m->params[i].var;
        assert_true(seen);
    }
    var_free(x);
    var_free(y);
    model_free(m);
}

/* A copy of every parameter's gradient, in MEM_WORK. */
static void copy_grads(const Model *m, Tensor **out)
{
    for (int i = 0; i < m->n_params; i++) assert_non_null(out[i] = tensor_clone(m->params[i].var->grad, MEM_WORK));
}

/* step.h's contract for a step of micro-batches: micro-batch r is computed alone, its
 * dropout drawn from the step's generator moved on by r · 2^40, and the gradient is
 * (g_0 + g_1) · (1/2) to the bit; the generator ends where micro-batch 0's ended. */
static void test_accumulation_is_the_scaled_sum_of_micro_batches(void **state)
{
    (void)state;
    const Trainee gpt = {"gpt", 2, 0, DROPOUT_RNG_STREAM, ATTENTION_NAIVE, 0.0f};
    Model *m = fixture_model(&gpt);
    Pcg32 data;
    pcg32_seed(&data, 3, 4);
    MicroBatch mb[2];
    for (int r = 0; r < 2; r++) mb[r].input = fixture_batch(&gpt, &data, &mb[r].targets);
    const Step step = {.model = m}; /* no optimizer: the parameters stay as they are */
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 5, 6);
    const Pcg32 start = ctx.rng;
    Tensor *g[2][FIXTURE_MAX_PARAMS];
    Pcg32 after0 = start;
    float losses[2];
    StepResult result;
    for (int r = 0; r < 2; r++) {
        ctx.rng = start;
        pcg32_advance(&ctx.rng, (uint64_t)r << 40);
        assert_int_equal(step_run(&step, &mb[r], 1, &ctx, NULL, &result), REMAT_OK);
        if (r == 0) after0 = ctx.rng;
        losses[r] = result.loss;
        copy_grads(m, g[r]);
    }
    ctx.rng = start;
    assert_int_equal(step_run(&step, mb, 2, &ctx, NULL, &result), REMAT_OK);
    assert_true(result.loss == (losses[0] + losses[1]) / 2.0f);
    assert_memory_equal(&ctx.rng, &after0, sizeof after0);
    for (int i = 0; i < m->n_params; i++) {
        const Tensor *got = m->params[i].var->grad;
        for (size_t k = 0; k < got->numel; k++) {
            const float want = (g[0][i]->f32[k] + g[1][i]->f32[k]) * (1.0f / 2.0f);
            assert_memory_equal(&got->f32[k], &want, sizeof want);
        }
        tensor_free(g[0][i]);
        tensor_free(g[1][i]);
    }
    for (int r = 0; r < 2; r++) {
        var_free(mb[r].input);
        var_free(mb[r].targets);
    }
    model_free(m);
}

static TrainOptions small_gpt(int steps, int accumulate, StrategyKind strategy)
{
    TrainOptions o = train_defaults(MODEL_GPT);
    o.layers = 2;
    o.d_model = 16;
    o.heads = 2;
    o.seq = 8;
    o.batch = 2;
    o.steps = steps;
    o.eval_every = 0;
    o.eval_batches = 1;
    o.sample_chars = 0;
    o.quiet = true;
    o.step.accumulate = accumulate;
    o.step.strategy = strategy_defaults(strategy);
    return o;
}

/* --accumulate 3 trains alike under none, full and selective (dropout on), and unlike
 * --accumulate 1; --dump-step, a one-micro-batch file, is refused with it. */
static void test_accumulate_is_bit_identical_across_strategies(void **state)
{
    (void)state;
    TrainReport none, other, one;
    TrainOptions o = small_gpt(3, 3, STRATEGY_NONE);
    assert_int_equal(train_run(&o, &none, sink), REMAT_OK);
    const StrategyKind kinds[] = {STRATEGY_FULL, STRATEGY_SELECTIVE};
    for (int k = 0; k < 2; k++) {
        o = small_gpt(3, 3, kinds[k]);
        assert_int_equal(train_run(&o, &other, sink), REMAT_OK);
        assert_memory_equal(other.losses, none.losses, 3 * sizeof(float));
        assert_true(other.last_val_loss == none.last_val_loss);
        train_report_free(&other);
    }
    o = small_gpt(3, 1, STRATEGY_NONE);
    assert_int_equal(train_run(&o, &one, sink), REMAT_OK);
    assert_false(one.losses[2] == none.losses[2]);
    train_report_free(&one);
    train_report_free(&none);

    char dump[256];
    path_in_dir(dump, sizeof dump, "dump.safetensors");
    o = small_gpt(1, 2, STRATEGY_NONE);
    o.dump_step = dump;
    assert_int_equal(train_run(&o, &one, sink), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "--dump-step writes a step of one micro-batch"));
    assert_int_equal(access(dump, F_OK), -1);
    train_report_free(&one);
    assert_int_equal(mem_live_blocks(), 0);
}

static TrainOptions small_mlp(int steps)
{
    TrainOptions o = train_defaults(MODEL_MLP);
    o.layers = 3;
    o.d_model = 16;
    o.batch = 8;
    o.steps = steps;
    o.eval_every = 0;
    o.eval_batches = 2;
    o.quiet = true;
    return o;
}

/* A 2-block GPT on the corpus: C 32, 4 heads, 16 tokens, batch 4, dropout 0.1. */
static TrainOptions small_gpt_with_masks(int steps, DropoutRng dropout_rng)
{
    TrainOptions o = train_defaults(MODEL_GPT);
    o.layers = 2;
    o.d_model = 32;
    o.seq = 16;
    o.batch = 4;
    o.steps = steps;
    o.eval_every = 0;
    o.eval_batches = 1;
    o.sample_chars = 0;
    o.quiet = true;
    o.dropout_rng = dropout_rng;
    return o;
}

/* The smallest feasible budget `planner` states for `o` when its budget is too small (the
 * run fails with EOOM before any step). */
static size_t smallest_budget(TrainOptions *o, PlannerKind planner)
{
    TrainReport r;
    o->step.planner = planner;
    /* One byte more than parameters, gradients and AdamW's two states: below any schedule,
     * which needs activations too, but past the check made before building the model. */
    const double params = mlp_param_count(&(MlpConfig){.n_layers = o->layers, .width = o->d_model});
    o->step.memory_budget = (size_t)(params * sizeof(float) * 4) + 1;
    assert_int_equal(train_run(o, &r, sink), REMAT_EOOM);
    assert_int_equal(r.steps_run, 0);
    train_report_free(&r);
    const char *at = strstr(remat_last_error(), "the smallest feasible budget is");
    unsigned long long smallest = 0;
    assert_non_null(at);
    assert_non_null(strstr(at, "= "));
    assert_int_equal(sscanf(strstr(at, "= "), "= %llu bytes", &smallest), 1);
    return (size_t)smallest;
}

/* A budget below the leanest schedule is a clear error that names the smallest feasible
 * budget and changes nothing; a run at exactly that budget trains like none, to the bit,
 * with the ledger enforcing the budget throughout. */
/* train --dropout-rng counter --strategy full --no-rng-replay loses nothing: its losses
 * are none's, bit for bit, where the stream's are not. */
static void test_counter_dropout_trains_like_none_without_rng_replay(void **state)
{
    (void)state;
    enum { STEPS = 4 };
    for (int g = 0; g < 2; g++) {
        const DropoutRng rng = g ? DROPOUT_RNG_COUNTER : DROPOUT_RNG_STREAM;
        TrainOptions plain = small_gpt_with_masks(STEPS, rng), o = small_gpt_with_masks(STEPS, rng);
        o.step.strategy = strategy_defaults(STRATEGY_FULL);
        o.step.strategy.replay.preserve_rng = false;
        TrainReport reference, r;
        assert_int_equal(train_run(&plain, &reference, sink), REMAT_OK);
        assert_int_equal(train_run(&o, &r, sink), REMAT_OK);
        const bool same = !memcmp(r.losses, reference.losses, STEPS * sizeof(float));
        printf("  --dropout-rng %s --strategy full --no-rng-replay: losses %s none's\n",
               name_of(&DROPOUT_RNG_NAMES, rng), same ? "identical to" : "differ from");
        assert_true(same == (rng == DROPOUT_RNG_COUNTER));
        train_report_free(&reference);
        train_report_free(&r);
    }
}

static void test_budget_strategy_trains_like_none(void **state)
{
    (void)state;
    TrainOptions plain = small_mlp(5);
    TrainReport reference, r;
    assert_int_equal(train_run(&plain, &reference, sink), REMAT_OK);

    TrainOptions o = small_mlp(5);
    o.step.strategy.kind = STRATEGY_BUDGET;
    const size_t smallest = smallest_budget(&o, PLANNER_DP);

    for (int k = 0; k < 2; k++) {
        o.step.planner = k ? PLANNER_CHEN : PLANNER_DP;
        o.step.memory_budget = smallest;
        const RematStatus status = train_run(&o, &r, sink);
        printf("  --planner %s at the smallest feasible budget (%zu bytes): %s\n",
               name_of(&PLANNER_NAMES, o.step.planner), smallest,
               status == REMAT_OK ? "trained, losses identical to none" : remat_last_error());
        if (!k || status == REMAT_OK) { /* Chen's search may not reach the exact optimum's budget */
            assert_int_equal(status, REMAT_OK);
            assert_memory_equal(r.losses, reference.losses, 5 * sizeof(float));
        }
        assert_int_equal(mem_budget(), 0); /* the run takes its budget away again */
        train_report_free(&r);
    }
    train_report_free(&reference);
}

/* --strategy dtr through train: at budgets below none's peak, down to where nothing fits, the
 * ledger holds the budget and the losses are none's, on the MLP chain and on the GPT with
 * dropout 0.2 from either generator; without --memory-budget, or with --offload, it is refused. */
static void test_dtr_strategy_trains_like_none(void **state)
{
    (void)state;
    TrainOptions o = small_mlp(1);
    char *no_budget[] = {"train", "--strategy", "dtr"};
    char *offload[] = {"train", "--strategy", "dtr", "--memory-budget", "1GiB", "--offload", "all"};
    assert_int_equal(parse(&o, 3, no_budget), 2);
    assert_int_equal(parse(&o, 7, offload), 2);
    for (int k = 0; k < 3; k++) {
        const DropoutRng rng = k == 1 ? DROPOUT_RNG_STREAM : DROPOUT_RNG_COUNTER;
        TrainOptions plain = k ? small_gpt_with_masks(4, rng) : small_mlp(4);
        plain.dropout = k ? 0.2f : plain.dropout;
        TrainReport reference, r;
        assert_int_equal(train_run(&plain, &reference, sink), REMAT_OK);
        int trained = 0;
        for (int percent = 95; percent > 0; percent -= 5) {
            o = plain;
            o.step.strategy = strategy_defaults(STRATEGY_DTR);
            o.step.memory_budget = reference.ledger_peak * (size_t)percent / 100;
            const RematStatus status = train_run(&o, &r, sink);
            if (status == REMAT_OK) {
                assert_memory_equal(r.losses, reference.losses, 4 * sizeof(float));
                assert_true(r.ledger_peak <= o.step.memory_budget);
                trained++;
            } else {
                assert_int_equal(status, REMAT_EOOM);
                printf("  %s, dtr at %d%% of none's peak: %s\n", k ? "gpt" : "mlp", percent,
                       remat_last_error());
            }
            train_report_free(&r);
            if (status != REMAT_OK) break;
        }
        printf("  %s: dtr trained like none at %d budgets below none's peak\n", k ? "gpt" : "mlp", trained);
        assert_true(trained > 0);
        assert_int_equal(mem_budget(), 0);
        train_report_free(&reference);
    }
}

/* What `top` shows against what the ledger says: on the MLP chain, whose blocks are all of
 * a few sizes so that the heap reuses every freed one, the process's resident peak over
 * the steps is the ledger's resident peak plus what the process held before the model was
 * built, within 4 MiB, for none, full and sqrt. */
static void test_resident_peak_is_the_ledger_plus_the_baseline(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    /* AddressSanitizer's allocator holds freed memory in quarantine: the resident set is
     * the sanitizer's, not the program's. The Release build runs this test. */
    skip();
#endif
    if (getenv("REMAT_UNDER_VALGRIND")) skip(); /* valgrind's own allocator and shadow memory */
    static const StrategyKind KINDS[] = {STRATEGY_NONE, STRATEGY_FULL, STRATEGY_SQRT};
    for (int k = 0; k < 3; k++) {
        TrainOptions o = train_defaults(MODEL_MLP); /* 16 layers of width 256, batch 64, AdamW */
        o.steps = 4;
        o.eval_batches = 1;
        o.quiet = true;
        o.step.strategy = strategy_defaults(KINDS[k]);
        TrainReport r;
        assert_int_equal(train_run(&o, &r, sink), REMAT_OK);
        const ResidentWatch *w = &r.resident;
        assert_true(w->known && w->peak_of_work);
        const double mib = 1048576.0, expected = (double)(w->baseline + r.ledger_peak);
        printf("  %-5s: before the model %.2f MiB + the ledger's peak %.2f MiB = %.2f MiB; the kernel's peak "
               "%.2f MiB\n", name_of(&STRATEGY_NAMES, KINDS[k]), w->baseline / mib, r.ledger_peak / mib, expected / mib,
               w->peak / mib);
        assert_true(fabs((double)w->peak - expected) < 4 * mib);
        assert_true(r.ledger_peak > 16 * mib); /* params, grads and AdamW's state: the test measures something */
        train_report_free(&r);
    }
}

/* --explain-memory prints the peak the chain cost model predicts for the run's schedule,
 * selective included, beside the ledger's; on the MLP chain they are equal. */
static void test_explain_memory_prints_the_predicted_peak(void **state)
{
    (void)state;
    static const char *const POLICY[] = {NULL, "dots"};
    for (int k = 0; k < 2; k++) {
        TrainOptions o = small_mlp(1);
        o.explain_memory = true;
        o.step.strategy = strategy_defaults(k ? STRATEGY_SELECTIVE : STRATEGY_SQRT);
        if (POLICY[k]) o.step.strategy.policy = policy_by_name(POLICY[k]);
        char path[512];
        path_in_dir(path, sizeof path, "explain.txt");
        FILE *out = fopen(path, "w+");
        assert_non_null(out);
        TrainReport r;
        assert_int_equal(train_run(&o, &r, out), REMAT_OK);
        train_report_free(&r);
        static char text[1 << 16];
        rewind(out);
        text[fread(text, 1, sizeof text - 1, out)] = '\0';
        fclose(out);
        assert_non_null(strstr(text, "predicted by the chain cost model"));
        assert_non_null(strstr(text, "0 B above the measured peak"));
        assert_null(strstr(text, "largest replay"));
    }
}

/* What train printed for `o` (one run, its first step explained when o->explain_memory). */
static const char *doctor_text(const TrainOptions *o)
{
    char path[512];
    path_in_dir(path, sizeof path, "doctor.txt");
    FILE *out = fopen(path, "w+");
    assert_non_null(out);
    TrainReport r;
    assert_int_equal(train_run(o, &r, out), REMAT_OK);
    train_report_free(&r);
    static char text[1 << 18];
    rewind(out);
    text[fread(text, 1, sizeof text - 1, out)] = '\0';
    fclose(out);
    assert_non_null(strstr(text, "    at the peak (in ")); /* after every run, the mix by kind */
    return text;
}

/* Each of the doctor's sentences, in a run built so that its rule holds, and none where
 * checkpointing did what it could: the MLP chain under full, its peak mostly activations,
 * the kept region inputs more than the one layer replayed. */
static void test_the_doctor_says_why_checkpointing_did_not_help_more(void **state)
{
    (void)state;
    TrainOptions q8 = small_gpt(2, 1, STRATEGY_SQRT); /* 2 blocks of d_model 16: the parameters dominate */
    assert_non_null(strstr(doctor_text(&q8), "the peak is the optimizer state (quiz question 8)"));

    TrainOptions fused = small_gpt(2, 1, STRATEGY_SELECTIVE);
    fused.attention = ATTENTION_FUSED;
    fused.dropout_rng = DROPOUT_RNG_COUNTER;
    assert_non_null(strstr(doctor_text(&fused), "fused attention already keeps no T^2 tensor"));

    TrainOptions logits = small_gpt(2, 1, STRATEGY_FULL); /* V = 256 against d_model 16 */
    logits.seq = 32;
    logits.batch = 8;
    logits.explain_memory = true;
    const char *text = doctor_text(&logits);
    assert_non_null(strstr(text, "the peak was set just before event"));
    assert_non_null(strstr(text, "the peak is the head's logits, B*T*V = 8*32*256 floats"));

    TrainOptions chain = train_defaults(MODEL_MLP); /* 16 layers of 64, batches of 512 */
    chain.d_model = 64;
    chain.batch = 512;
    chain.steps = 1;
    chain.eval_every = 0;
    chain.eval_batches = 1;
    chain.quiet = true;
    chain.explain_memory = true;
    chain.step.strategy = strategy_defaults(STRATEGY_SQRT); /* 4 regions of 4 layers */
    assert_non_null(strstr(doctor_text(&chain), "the peak is one region's replay working set (896.0 KiB recomputed "
                                                "against 512.0 KiB kept)"));
    chain.step.strategy = strategy_defaults(STRATEGY_FULL); /* 16 inputs kept, one layer replayed */
    text = doctor_text(&chain);
    assert_non_null(strstr(text, "at the peak (in backward)"));
    assert_null(strstr(text, "why checkpointing did not lower it more"));
}

/* --explain-memory's live list at the peak counts what a selective policy's cache holds,
 * under the layer that owns it: here the peak is in the replay of the last block, h.2,
 * which has taken most of its cache back; h.0's and h.1's are whole. */
static void test_the_doctor_counts_a_policys_cache_at_the_peak(void **state)
{
    (void)state;
    TrainOptions o = small_gpt(1, 1, STRATEGY_SELECTIVE);
    o.layers = 3;
    o.heads = 4;
    o.seq = 64;
    o.batch = 1;
    o.threads = 1;
    o.explain_memory = true;
    const char *text = doctor_text(&o);
    assert_non_null(strstr(text, "the peak was set just before event 231 (h.2.attn.out)"));
    assert_non_null(strstr(text, "    h.0                  71.0 KiB  (67.0 KiB of it in its policy's cache)\n"));
    assert_non_null(strstr(text, "    h.1                  67.0 KiB  (67.0 KiB of it in its policy's cache)\n"));
    assert_non_null(strstr(text, "    h.2                 163.0 KiB  (3.00 KiB of it in its policy's cache)\n"));
    o.step.strategy = strategy_defaults(STRATEGY_FULL); /* no policy, no cache */
    text = doctor_text(&o);
    assert_non_null(strstr(text, "the peak was set just before event"));
    assert_null(strstr(text, "policy's cache"));
}

/* --planner revolve on the 8-layer MLP: it fits a budget below dp's smallest, where dp
 * fails with EOOM, and trains there like none, to the bit, printing its schedule first. */
static void test_revolve_planner_trains_below_dp(void **state)
{
    (void)state;
    TrainOptions plain = small_mlp(4);
    plain.layers = 8;
    TrainReport reference, r;
    assert_int_equal(train_run(&plain, &reference, sink), REMAT_OK);
    TrainOptions o = plain;
    o.step.strategy.kind = STRATEGY_BUDGET;
    const size_t dp = smallest_budget(&o, PLANNER_DP), revolve = smallest_budget(&o, PLANNER_REVOLVE);
    printf("  MLP of 8 layers: smallest feasible budget dp %zu bytes, revolve %zu bytes\n", dp, revolve);
    assert_true(revolve < dp);
    o.step.memory_budget = revolve;
    o.step.planner = PLANNER_DP;
    assert_int_equal(train_run(&o, &r, sink), REMAT_EOOM);
    assert_non_null(strstr(remat_last_error(), "planner revolve, which recomputes layers more than once, fits from"));
    train_report_free(&r);
    o.step.planner = PLANNER_REVOLVE;
    char printed[8192] = "";
    FILE *out = fmemopen(printed, sizeof printed - 1, "w");
    assert_non_null(out);
    const RematStatus status = train_run(&o, &r, out);
    fclose(out);
    assert_int_equal(status, REMAT_OK);
    assert_memory_equal(r.losses, reference.losses, 4 * sizeof(float));
    assert_non_null(strstr(printed, "Revolve with 1 slot"));
    assert_non_null(strstr(printed, "recomputed per layer:"));
    printf("%s", strstr(printed, "  checkpointing"));
    assert_int_equal(mem_budget(), 0);
    train_report_free(&r);
    train_report_free(&reference);
}

static void test_resume_continues_bit_identically(void **state)
{
    (void)state;
    char saved[256];
    path_in_dir(saved, sizeof saved, "half.safetensors");

    TrainOptions whole = small_mlp(20);
    TrainReport straight;
    assert_int_equal(train_run(&whole, &straight, sink), REMAT_OK);
    assert_int_equal(straight.steps_run, 20);

    TrainOptions first = small_mlp(10);
    first.save = saved;
    TrainReport a;
    assert_int_equal(train_run(&first, &a, sink), REMAT_OK);

    TrainOptions second = small_mlp(20);
    second.resume = saved;
    TrainReport b;
    assert_int_equal(train_run(&second, &b, sink), REMAT_OK);
    assert_int_equal(b.first_step, 10);
    assert_int_equal(b.steps_run, 10);

    assert_memory_equal(a.losses, straight.losses, 10 * sizeof(float));
    assert_memory_equal(b.losses, straight.losses + 10, 10 * sizeof(float));
    assert_true(b.last_val_loss == straight.last_val_loss);
    train_report_free(&straight);
    train_report_free(&a);
    train_report_free(&b);
    assert_int_equal(mem_live_blocks(), 0);
}

/* Trains small_mlp(steps) and saves it as `name` in the scratch directory, whose path goes
 * to path[size]. */
static void save_small_run(int steps, const char *name, char *path, size_t size)
{
    path_in_dir(path, size, name);
    TrainOptions o = small_mlp(steps);
    o.save = path;
    TrainReport r;
    assert_int_equal(train_run(&o, &r, sink), REMAT_OK);
    train_report_free(&r);
}

/* --memory-budget holds under every strategy, not only budget's planner: too small for
 * the parameters, gradients and AdamW state, the run is refused naming them; large enough
 * for those but not for the activations, the ledger stops the step, naming what is
 * resident; large enough for all, it changes no bit. */
static void test_a_memory_budget_holds_under_every_strategy(void **state)
{
    (void)state;
    TrainReport r, free_run;
    TrainOptions o = small_mlp(2);
    o.step.strategy = strategy_defaults(STRATEGY_FULL);
    assert_int_equal(train_run(&o, &free_run, sink), REMAT_OK);

    o.step.memory_budget = 8 << 10; /* params, grads and AdamW's two states are 12.75 KiB */
    assert_int_equal(train_run(&o, &r, sink), REMAT_EOOM);
    assert_non_null(strstr(remat_last_error(), "and adamw state (2 x 3.19 KiB)"));
    train_report_free(&r);

    o.step.memory_budget = 14 << 10;
    assert_int_equal(train_run(&o, &r, sink), REMAT_EOOM);
    assert_non_null(strstr(remat_last_error(), "out of memory: tried to allocate"));
    assert_non_null(strstr(remat_last_error(), "optimizer 6.38 KiB"));
    train_report_free(&r);

    o.step.memory_budget = 40 << 10;
    assert_int_equal(train_run(&o, &r, sink), REMAT_OK);
    assert_memory_equal(r.losses, free_run.losses, 2 * sizeof(float));
    assert_true(mem_peak_moment().resident <= (size_t)40 << 10);
    train_report_free(&r);
    train_report_free(&free_run);
    assert_int_equal(mem_budget(), 0); /* the run leaves no budget behind */
    assert_int_equal(mem_live_blocks(), 0);
}

/* The first `size` bytes of the file at `path` into `buf`; how many there were. */
static size_t file_bytes(const char *path, unsigned char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    const size_t n = fread(buf, 1, size, f);
    fclose(f);
    return n;
}

/* A step whose loss is not finite stops the run before its update: the checkpoint it
 * resumed from, which it would have been saved over, keeps its bytes. */
static void test_a_diverged_step_saves_nothing(void **state)
{
    (void)state;
    char saved[256];
    path_in_dir(saved, sizeof saved, "diverging.safetensors");
    TrainOptions o = small_mlp(2);
    o.save = saved;
    o.optimizer = OPTIM_SGD;
    o.momentum = 0.99f;
    TrainReport r;
    assert_int_equal(train_run(&o, &r, sink), REMAT_OK);
    train_report_free(&r);
    static unsigned char before[1 << 16], after[1 << 16];
    const size_t n = file_bytes(saved, before, sizeof before);
    assert_true(n > 0 && n < sizeof before);

    o.steps = 60; /* resumed from step 2 with a learning rate far too large */
    o.resume = saved;
    o.lr = 10.0f;
    assert_int_equal(train_run(&o, &r, sink), REMAT_ESTATE);
    assert_non_null(strstr(remat_last_error(), "is not finite"));
    train_report_free(&r);
    assert_int_equal(file_bytes(saved, after, sizeof after), n);
    assert_memory_equal(before, after, n);
    assert_int_equal(mem_live_blocks(), 0);
}

/* Issue 27 C1: activations past what the machine has used to reach the kernel's OOM killer.
 * The ledger holds the run to the memory available (here a caller's lower ceiling, the
 * step's own peak less a byte): the step fails naming it, and the file it resumed from
 * and would save to is untouched. */
static void test_a_step_past_the_machine_fails_and_saves_nothing(void **state)
{
    (void)state;
    char saved[256];
    path_in_dir(saved, sizeof saved, "ceiling.safetensors");
    TrainOptions o = small_mlp(2);
    o.save = saved;
    TrainReport r;
    assert_int_equal(train_run(&o, &r, sink), REMAT_OK);
    const size_t peak = r.ledger_peak;
    train_report_free(&r);
    static unsigned char before[1 << 16], after[1 << 16];
    const size_t n = file_bytes(saved, before, sizeof before);
    assert_true(n > 0 && n < sizeof before);

    o.steps = 4;
    o.resume = saved;
    mem_set_ceiling(peak - 1);
    assert_int_equal(train_run(&o, &r, sink), REMAT_EOOM);
    assert_non_null(strstr(remat_last_error(), "the ceiling of this machine's memory"));
    assert_int_equal(mem_ceiling(), peak - 1); /* the caller's ceiling is given back */
    mem_set_ceiling(0);
    train_report_free(&r);
    assert_int_equal(file_bytes(saved, after, sizeof after), n);
    assert_memory_equal(before, after, n);
    assert_int_equal(mem_live_blocks(), 0);
}

static void test_resume_refuses_another_configuration(void **state)
{
    (void)state;
    char saved[256];
    save_small_run(2, "small.safetensors", saved, sizeof saved);
    TrainReport r;

    TrainOptions other = small_mlp(4);
    other.layers = 4;
    other.resume = saved;
    assert_int_equal(train_run(&other, &r, sink), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "trained with --layers 3, not 4"));
    train_report_free(&r);
    assert_int_equal(mem_live_blocks(), 0);
}

static void test_missing_files_are_clear_errors(void **state)
{
    (void)state;
    TrainReport r;
    TrainOptions gpt = train_defaults(MODEL_GPT);
    gpt.data = "/nonexistent/corpus.txt";
    gpt.quiet = true;
    assert_int_equal(train_run(&gpt, &r, sink), REMAT_EIO);
    assert_non_null(strstr(remat_last_error(), "/nonexistent/corpus.txt"));
    train_report_free(&r);

    TrainOptions o = small_mlp(2);
    o.resume = "/nonexistent/run.safetensors";
    assert_int_equal(train_run(&o, &r, sink), REMAT_EIO);
    train_report_free(&r);
    assert_int_equal(mem_live_blocks(), 0);
}

static void test_dump_step_holds_parameters_batch_loss_and_gradients(void **state)
{
    (void)state;
    char dumped[256];
    path_in_dir(dumped, sizeof dumped, "step.safetensors");
    TrainOptions o = small_mlp(1);
    o.dump_step = dumped;
    TrainReport r;
    assert_int_equal(train_run(&o, &r, sink), REMAT_OK);
    StFile *f = st_load(dumped);
    assert_non_null(f);
    /* 3 layers x (weight, bias), their 6 gradients, input, target, loss. */
    assert_int_equal(st_count(f), 15);
    Tensor *loss = st_get(f, "loss", MEM_WORK);
    assert_non_null(loss);
    assert_memory_equal(loss->f32, &r.losses[0], sizeof(float));
    Tensor *grad = st_get(f, "grad.h.0.weight", MEM_WORK);
    assert_non_null(grad);
    assert_int_equal(grad->shape[0], 16);
    tensor_free(loss);
    tensor_free(grad);
    st_close(f);
    train_report_free(&r);
}

/* Issue 16: --save, --dump-step and --dump-graph into a directory that does not exist
 * trained every step and then failed, losing the run (--dump-graph without a reason).
 * Each is now checked before anything is built, saying which flag and why. */
static void test_output_paths_are_checked_before_training(void **state)
{
    (void)state;
    char missing[256];
    path_in_dir(missing, sizeof missing, "no/such/dir/out.st");
    for (int k = 0; k < 3; k++) {
        TrainOptions o = small_mlp(3);
        const char **field = k == 0 ? &o.save : k == 1 ? &o.dump_step : &o.dump_graph;
        const char *flag = k == 0 ? "--save: " : k == 1 ? "--dump-step: " : "--dump-graph: ";
        *field = missing;
        TrainReport r;
        assert_int_equal(train_run(&o, &r, sink), REMAT_EIO);
        assert_int_equal(r.steps_run, 0);
        assert_non_null(strstr(remat_last_error(), flag));
        assert_non_null(strstr(remat_last_error(), "No such file or directory"));
        train_report_free(&r);
    }
    /* Two outputs on one file, or an output over a file the run reads, would lose one of
     * them: --dump-step over --save, --dump-graph over the file resumed, --save over the
     * corpus. Only --save may replace the file it resumed (that is how a run continues). */
    char saved[256], dotted[256];
    path_in_dir(saved, sizeof saved, "out.st");
    snprintf(dotted, sizeof dotted, "%s/./out.st", dir);
    TrainOptions same = small_mlp(1);
    same.save = saved;
    same.dump_step = dotted;
    TrainReport r;
    assert_int_equal(train_run(&same, &r, sink), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "--save and --dump-step name the same file"));
    train_report_free(&r);
    TrainOptions corpus = train_defaults(MODEL_GPT);
    corpus.save = corpus.data;
    assert_int_equal(train_run(&corpus, &r, sink), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "--save and --data name the same file"));
    train_report_free(&r);
    assert_int_equal(mem_live_blocks(), 0);
}

/* Issue 16: a model whose parameters, gradients and optimizer state cannot fit the budget
 * (or the machine) grew past 3 GB before anything stopped it. The check now comes before
 * the model is built: nothing of it is ever allocated. */
static void test_memory_is_checked_before_the_model_is_built(void **state)
{
    (void)state;
    TrainOptions o = train_defaults(MODEL_GPT);
    o.layers = 4096;
    o.d_model = 1024;
    o.heads = 1;
    o.seq = 8;
    o.batch = 1;
    o.quiet = true;
    o.step.strategy.kind = STRATEGY_BUDGET;
    o.step.memory_budget = 100u << 20;
    TrainReport r;
    mem_reset_peaks();
    assert_int_equal(train_run(&o, &r, sink), REMAT_EOOM);
    assert_non_null(strstr(remat_last_error(), "more than --memory-budget 100.0 MiB: no schedule fits"));
    assert_int_equal(mem_peak_moment().resident, 0);
    train_report_free(&r);
    /* Without a budget, against the machine: 4096 blocks of 65536 channels are 2.4 PiB. */
    o.step = step_options_defaults();
    o.d_model = 65536;
    assert_int_equal(train_run(&o, &r, sink), REMAT_ENOMEM);
    assert_non_null(strstr(remat_last_error(), "this machine has available"));
    assert_int_equal(mem_peak_moment().resident, 0);
    train_report_free(&r);
    /* The counts the check uses are those of the models built. */
    Model *m = mlp_create(&(MlpConfig){.n_layers = 3, .width = 16, .seed = 1});
    assert_int_equal(model_param_bytes(m), mlp_param_count(&(MlpConfig){.n_layers = 3, .width = 16}) * sizeof(float));
    model_free(m);
    const GptConfig c = {.n_layers = 2, .d_model = 8, .n_heads = 2, .seq_len = 5, .vocab = 256, .seed = 1};
    m = gpt_create(&c);
    assert_non_null(m);
    assert_int_equal(model_param_bytes(m), gpt_param_count(&c) * sizeof(float));
    model_free(m);
}

/* Issue 16: resuming a file saved at step 3 with --steps 2 trained nothing and said
 * nothing. --steps counts every step, so that is refused, saying why. */
static void test_resume_with_nothing_left_to_train_is_refused(void **state)
{
    (void)state;
    char saved[256];
    save_small_run(3, "step3.safetensors", saved, sizeof saved);
    TrainReport r;
    for (int steps = 2; steps <= 3; steps++) {
        TrainOptions again = small_mlp(steps);
        again.resume = saved;
        assert_int_equal(train_run(&again, &r, sink), REMAT_EINVAL);
        assert_non_null(strstr(remat_last_error(), "was saved at step 3"));
        assert_non_null(strstr(remat_last_error(), "nothing is left to train"));
        train_report_free(&r);
    }
    TrainOptions more = small_mlp(4);
    more.resume = saved;
    assert_int_equal(train_run(&more, &r, sink), REMAT_OK);
    assert_int_equal(r.steps_run, 1);
    train_report_free(&r);
}

/* ---- model files ------------------------------------------------------------------------ */

static void test_damaged_file_changes_nothing(void **state)
{
    (void)state;
    char good[256], bad[256];
    path_in_dir(good, sizeof good, "good.safetensors");
    path_in_dir(bad, sizeof bad, "bad.safetensors");
    Model *m = mlp_create(&(MlpConfig){.n_layers = 2, .width = 8, .seed = 1});
    assert_int_equal(model_save(m, NULL, NULL, NULL, 0, good), REMAT_OK);

    /* A copy cut short in the middle of the last tensor. */
    FILE *in = fopen(good, "rb"), *out = fopen(bad, "wb");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, in);
    fwrite(buf, 1, n - 12, out);
    fclose(in);
    fclose(out);

    Model *other = mlp_create(&(MlpConfig){.n_layers = 2, .width = 8, .seed = 2});
    Tensor *before = tensor_clone(other->params[0].var->value, MEM_WORK);
    assert_int_equal(model_load(other, NULL, NULL, bad, NULL), REMAT_ECORRUPT);
    assert_memory_equal(before->data, other->params[0].var->value->data, before->bytes);
    /* A file of another width is refused by name, also without changing anything. */
    Model *wide = mlp_create(&(MlpConfig){.n_layers = 2, .width = 9, .seed = 3});
    assert_int_equal(model_load(wide, NULL, NULL, good, NULL), REMAT_ECORRUPT);
    assert_non_null(strstr(remat_last_error(), "h.0.weight"));
    /* The good file loads, and then the parameters are the saved ones. */
    assert_int_equal(model_load(other, NULL, NULL, good, NULL), REMAT_OK);
    assert_memory_equal(m->params[3].var->value->data, other->params[3].var->value->data,
                        m->params[3].var->value->bytes);
    tensor_free(before);
    model_free(m);
    model_free(other);
    model_free(wide);
    assert_int_equal(mem_live_blocks(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_accepts_every_documented_flag),
        cmocka_unit_test(test_parse_rejects_bad_input_with_exit_code_2),
        cmocka_unit_test(test_parse_budget_flags),
        cmocka_unit_test(test_parse_refuses_flags_that_do_not_apply),
        cmocka_unit_test(test_parse_refuses_zero_alone_and_rng_replay_of_counter_masks),
        cmocka_unit_test(test_step_flags_are_checked_against_the_run),
        cmocka_unit_test(test_step_options_parse_into_typed_fields),
        cmocka_unit_test(test_parse_accumulate_and_zero),
        cmocka_unit_test(test_plugs_run_where_the_step_says),
        cmocka_unit_test(test_param_use_hooks_see_every_stage_and_parameter),
        cmocka_unit_test(test_accumulation_is_the_scaled_sum_of_micro_batches),
        cmocka_unit_test(test_accumulate_is_bit_identical_across_strategies),
        cmocka_unit_test(test_counter_dropout_trains_like_none_without_rng_replay),
        cmocka_unit_test(test_budget_strategy_trains_like_none),
        cmocka_unit_test(test_dtr_strategy_trains_like_none),
        cmocka_unit_test(test_revolve_planner_trains_below_dp),
        cmocka_unit_test(test_resident_peak_is_the_ledger_plus_the_baseline),
        cmocka_unit_test(test_explain_memory_prints_the_predicted_peak),
        cmocka_unit_test(test_the_doctor_says_why_checkpointing_did_not_help_more),
        cmocka_unit_test(test_the_doctor_counts_a_policys_cache_at_the_peak),
        cmocka_unit_test(test_resume_continues_bit_identically),
        cmocka_unit_test(test_a_memory_budget_holds_under_every_strategy),
        cmocka_unit_test(test_a_diverged_step_saves_nothing),
        cmocka_unit_test(test_resume_refuses_another_configuration),
        cmocka_unit_test(test_missing_files_are_clear_errors),
        cmocka_unit_test(test_output_paths_are_checked_before_training),
        cmocka_unit_test(test_memory_is_checked_before_the_model_is_built),
        cmocka_unit_test(test_resume_with_nothing_left_to_train_is_refused),
        cmocka_unit_test(test_dump_step_holds_parameters_batch_loss_and_gradients),
        cmocka_unit_test(test_damaged_file_changes_nothing),
        cmocka_unit_test(test_a_step_past_the_machine_fails_and_saves_nothing),
    };
    return cmocka_run_group_tests_name("train", tests, group_setup, group_teardown);
}
