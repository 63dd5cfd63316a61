/*
 * train_cli.c — train's command line: its defaults, its usage, and the parse of every flag
 * into TrainOptions (see train.h). The flags of what a step keeps (strategy, planner,
 * budget, offload) come from the table in step_options.h, which the benches share.
 */
#include "models/train.h"

#include <stdlib.h>
#include <string.h>

#include "tensor/parse.h"

#ifndef REMAT_DATA_DIR
#define REMAT_DATA_DIR "data"
#endif

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
        .step = step_options_defaults(),
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
        "  --dropout-rng stream|counter  where dropout masks come from: a PCG32 stream\n"
        "                      whose state regions replay, masks kept for backward (stream,\n"
        "                      default); or Philox keyed by (seed, step, micro-batch, op),\n"
        "                      masks never kept, made again in backward (counter)\n"
        "  --attention naive|fused  GPT attention core: primitive ops keeping the (T,T)\n"
        "                      probabilities (naive, default), or one fused op keeping one\n"
        "                      float per row and recomputing them in backward (fused;\n"
        "                      with dropout > 0 it needs --dropout-rng counter)\n"
        );
    step_options_usage(STEP_FLAGS_ALL, true, out);
    fprintf(out,
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

/* Sets a switch of train's own; false if `flag` is none of them. */
static bool parse_switch(const char *flag, TrainOptions *opt)
{
    bool *on = !strcmp(flag, "--quiet")          ? &opt->quiet
             : !strcmp(flag, "--print-tape")     ? &opt->print_tape
             : !strcmp(flag, "--explain-memory") ? &opt->explain_memory
                                                 : NULL;
    if (on) *on = true;
    return on != NULL;
}

/* Sets a flag of train's own that takes a value: 1 when set, 0 for a bad value, -1 when
 * `flag` is none of them. */
static int parse_valued(const char *flag, const char *v, TrainOptions *opt)
{
    if (!strcmp(flag, "--model")) return 1; /* handled first: it decides the defaults */
    if (!strcmp(flag, "--layers")) return parse_int(v, 1, 4096, &opt->layers);
    if (!strcmp(flag, "--d-model")) return parse_int(v, 1, 65536, &opt->d_model);
    if (!strcmp(flag, "--heads")) return parse_int(v, 1, 1024, &opt->heads);
    if (!strcmp(flag, "--seq")) return parse_int(v, 1, 65536, &opt->seq);
    if (!strcmp(flag, "--batch")) return parse_int(v, 1, 1 << 20, &opt->batch);
    if (!strcmp(flag, "--dropout")) return parse_float(v, 0.0, 1.0, false, &opt->dropout);
    if (!strcmp(flag, "--dropout-rng")) return dropout_rng_parse(v, &opt->dropout_rng) == REMAT_OK;
    if (!strcmp(flag, "--attention")) return attention_kind_parse(v, &opt->attention) == REMAT_OK;
    if (!strcmp(flag, "--optimizer")) return (opt->optimizer = v, !strcmp(v, "adamw") || !strcmp(v, "sgd"));
    if (!strcmp(flag, "--lr")) return parse_float(v, 1e-12, 10.0, true, &opt->lr);
    if (!strcmp(flag, "--momentum")) return parse_float(v, 0.0, 1.0, false, &opt->momentum);
    if (!strcmp(flag, "--weight-decay")) return parse_float(v, 0.0, 10.0, true, &opt->weight_decay);
    if (!strcmp(flag, "--steps")) return parse_int(v, 0, 100000000, &opt->steps);
    if (!strcmp(flag, "--seed")) return parse_u64(v, 0, UINT64_MAX, &opt->seed);
    if (!strcmp(flag, "--threads")) return parse_int(v, 1, 1024, &opt->threads);
    if (!strcmp(flag, "--eval-every")) return parse_int(v, 0, 100000000, &opt->eval_every);
    if (!strcmp(flag, "--eval-batches")) return parse_int(v, 1, 100000, &opt->eval_batches);
    if (!strcmp(flag, "--sample")) return parse_int(v, 0, 1000000, &opt->sample_chars);
    const char **path = !strcmp(flag, "--data")       ? &opt->data
                      : !strcmp(flag, "--save")       ? &opt->save
                      : !strcmp(flag, "--resume")     ? &opt->resume
                      : !strcmp(flag, "--dump-step")  ? &opt->dump_step
                      : !strcmp(flag, "--dump-graph") ? &opt->dump_graph
                                                      : NULL;
    if (!path) return -1;
    *path = v;
    return 1;
}

/* What the flags given say together; REMAT_EINVAL with the reason when it makes no sense. */
static RematStatus check_options(const TrainOptions *opt)
{
    const bool gpt = !strcmp(opt->model, "gpt");
    if (gpt && opt->d_model % opt->heads != 0)
        return remat_fail(REMAT_EINVAL, "--d-model %d does not divide into %d heads", opt->d_model, opt->heads);
    if (!gpt && (opt->attention != ATTENTION_NAIVE || opt->dropout_rng != DROPOUT_RNG_STREAM))
        return remat_fail(REMAT_EINVAL, "--attention and --dropout-rng are for --model gpt: the MLP chain has "
                          "neither attention nor dropout");
    if (opt->attention == ATTENTION_FUSED && opt->dropout > 0.0f && opt->dropout_rng != DROPOUT_RNG_COUNTER)
        return remat_fail(REMAT_EINVAL, "--attention fused with --dropout %g needs --dropout-rng counter: the "
                          "fused kernel makes its dropout mask again in backward and never stores it, which a "
                          "running stream cannot do (or use --dropout 0)", (double)opt->dropout);
    return step_options_check(&opt->step);
}

/* Prints "train: <why>" and the usage to `err`; returns 2, the exit status of a bad flag. */
static int refuse(FILE *err, const char *why)
{
    fprintf(err, "train: %s\n", why);
    train_usage(err);
    return 2;
}

/* The value of --model, which decides the defaults of every other flag. */
static const char *model_of(int argc, char **argv)
{
    const char *model = "gpt";
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--model")) model = argv[i + 1];
    return model;
}

int train_parse_args(int argc, char **argv, TrainOptions *opt, FILE *out, FILE *err)
{
    const char *model = model_of(argc, argv);
    if (strcmp(model, "gpt") && strcmp(model, "mlp")) {
        fprintf(err, "train: --model must be gpt or mlp, not '%s'\n", model);
        train_usage(err);
        return 2;
    }
    *opt = train_defaults(model);
    char why[512];
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) {
            train_usage(out);
            return 1;
        }
        const int step_flag = step_options_parse(argc, argv, &i, STEP_FLAGS_ALL, &opt->step);
        if (step_flag < 0) return refuse(err, remat_last_error());
        if (step_flag > 0 || parse_switch(flag, opt)) continue;
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        const int set = v ? parse_valued(flag, v, opt) : -1;
        if (set == 1) continue;
        if (!v) snprintf(why, sizeof why, "%s needs a value", flag);
        else if (set == 0) snprintf(why, sizeof why, "bad value for %s: '%s'", flag, v);
        else snprintf(why, sizeof why, "unknown flag %s", flag);
        return refuse(err, why);
    }
    return check_options(opt) == REMAT_OK ? 0 : refuse(err, remat_last_error());
}
