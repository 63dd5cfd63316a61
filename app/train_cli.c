/*
 * train_cli.c — train's command line: its defaults, its usage, and the parse of every flag
 * into TrainOptions (see train.h). The flags of what a step keeps (strategy, planner,
 * budget, offload) come from the table in step_options.h, which the benches share; train's
 * own are the table TRAIN_FLAGS below, a row per flag with its type, its range and the
 * runs it applies to. One rule for both tables: an unknown flag, a bad value, a flag given
 * twice and a flag that would change nothing in the run the others describe are refused
 * with the reason (exit 2), never ignored.
 */
#include "app/train.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"
#include "base/platform.h"

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
        "  --batch B           sequences (GPT) or examples (MLP) per micro-batch: a step is\n"
        "                      --accumulate of them, or one per rank (gpt 16, mlp 64)\n"
        "  --optimizer adamw|sgd  (adamw)\n"
        "  --lr X              learning rate (gpt 2e-3, mlp 1e-3)\n"
        "  --momentum X        SGD momentum in [0, 1) (0.9)\n"
        "  --weight-decay X    AdamW weight decay on weight matrices (0.01)\n"
        "  --steps N           total training steps; a resumed run continues up to N (300)\n"
        "  --seed S            seeds initialisation, batches and dropout (1337)\n"
        "  --threads N         threads for BLAS and remat's loops, 1..4 per core (all cores)\n"
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
        "  --help              this text\n"
        "A flag that would change nothing in the run the others describe (a GPT flag with\n"
        "--model mlp, --momentum with adamw, --policy without selective) is refused.\n");
}

/* ---- train's own flags, in one table --------------------------------------------------- */

/* Which runs a flag changes something in: every run, the GPT's (the MLP chain has no
 * attention, tokens, dropout or text), SGD's or AdamW's. A flag given to a run it does
 * not apply to is refused (check_options), as the step flags are. */
typedef enum FlagScope { FOR_ALL, FOR_GPT, FOR_SGD, FOR_ADAMW } FlagScope;

typedef enum FlagType { FLAG_INT, FLAG_FLOAT, FLAG_SEED, FLAG_TEXT, FLAG_SWITCH, FLAG_DROPOUT_RNG, FLAG_ATTENTION } FlagType;

typedef struct TrainFlag {
    const char *name;
    FlagType type;
    size_t offset;          /* of its field in TrainOptions */
    double lo, hi;          /* FLAG_INT, FLAG_FLOAT: the range */
    bool hi_inclusive;      /* FLAG_FLOAT: hi itself allowed */
    const char *const *choices; /* FLAG_TEXT: the values allowed, NULL-terminated; NULL: any */
    FlagScope scope;
} TrainFlag;

static const char *const MODELS[] = {"gpt", "mlp", NULL};
static const char *const OPTIMIZERS[] = {"adamw", "sgd", NULL};

#define AT(field) offsetof(TrainOptions, field)
static const TrainFlag TRAIN_FLAGS[] = {
    {"--model", FLAG_TEXT, AT(model), 0, 0, false, MODELS, FOR_ALL},
    {"--layers", FLAG_INT, AT(layers), 1, 4096, true, NULL, FOR_ALL},
    {"--d-model", FLAG_INT, AT(d_model), 1, 65536, true, NULL, FOR_ALL},
    {"--heads", FLAG_INT, AT(heads), 1, 1024, true, NULL, FOR_GPT},
    {"--seq", FLAG_INT, AT(seq), 1, 65536, true, NULL, FOR_GPT},
    {"--dropout", FLAG_FLOAT, AT(dropout), 0.0, 1.0, false, NULL, FOR_GPT},
    {"--dropout-rng", FLAG_DROPOUT_RNG, AT(dropout_rng), 0, 0, false, NULL, FOR_GPT},
    {"--attention", FLAG_ATTENTION, AT(attention), 0, 0, false, NULL, FOR_GPT},
    {"--batch", FLAG_INT, AT(batch), 1, 1 << 20, true, NULL, FOR_ALL},
    {"--optimizer", FLAG_TEXT, AT(optimizer), 0, 0, false, OPTIMIZERS, FOR_ALL},
    {"--lr", FLAG_FLOAT, AT(lr), 1e-12, 10.0, true, NULL, FOR_ALL},
    {"--momentum", FLAG_FLOAT, AT(momentum), 0.0, 1.0, false, NULL, FOR_SGD},
    {"--weight-decay", FLAG_FLOAT, AT(weight_decay), 0.0, 10.0, true, NULL, FOR_ADAMW},
    {"--steps", FLAG_INT, AT(steps), 0, 100000000, true, NULL, FOR_ALL},
    {"--seed", FLAG_SEED, AT(seed), 0, 0, false, NULL, FOR_ALL},
    {"--threads", FLAG_INT, AT(threads), 1, 0 /* platform_max_threads() */, true, NULL, FOR_ALL},
    {"--eval-every", FLAG_INT, AT(eval_every), 0, 100000000, true, NULL, FOR_ALL},
    {"--eval-batches", FLAG_INT, AT(eval_batches), 1, 100000, true, NULL, FOR_ALL},
    {"--sample", FLAG_INT, AT(sample_chars), 0, 1000000, true, NULL, FOR_GPT},
    {"--data", FLAG_TEXT, AT(data), 0, 0, false, NULL, FOR_GPT},
    {"--save", FLAG_TEXT, AT(save), 0, 0, false, NULL, FOR_ALL},
    {"--resume", FLAG_TEXT, AT(resume), 0, 0, false, NULL, FOR_ALL},
    {"--dump-step", FLAG_TEXT, AT(dump_step), 0, 0, false, NULL, FOR_ALL},
    {"--dump-graph", FLAG_TEXT, AT(dump_graph), 0, 0, false, NULL, FOR_ALL},
    {"--print-tape", FLAG_SWITCH, AT(print_tape), 0, 0, false, NULL, FOR_ALL},
    {"--explain-memory", FLAG_SWITCH, AT(explain_memory), 0, 0, false, NULL, FOR_ALL},
    {"--quiet", FLAG_SWITCH, AT(quiet), 0, 0, false, NULL, FOR_ALL},
};
#undef AT
enum { N_TRAIN_FLAGS = sizeof TRAIN_FLAGS / sizeof TRAIN_FLAGS[0] };
_Static_assert(N_TRAIN_FLAGS <= 32, "TrainOptions.given has a bit per flag");

static bool is_choice(const char *v, const char *const *choices)
{
    for (int k = 0; choices[k]; k++)
        if (!strcmp(v, choices[k])) return true;
    return false;
}

/* Sets flag `f` from its value `v` (NULL for a switch) in *opt; false for a bad value. */
static bool set_flag(const TrainFlag *f, const char *v, TrainOptions *opt)
{
    void *field = (char *)opt + f->offset;
    switch (f->type) {
    case FLAG_INT: {
        const long hi = f->hi > 0 ? (long)f->hi : platform_max_threads();
        return parse_int(v, (long)f->lo, hi, field);
    }
    case FLAG_FLOAT: return parse_float(v, f->lo, f->hi, f->hi_inclusive, field);
    case FLAG_SEED: return parse_u64(v, 0, UINT64_MAX, field);
    case FLAG_TEXT:
        if (!v[0] || (f->choices && !is_choice(v, f->choices))) return false;
        *(const char **)field = v;
        return true;
    case FLAG_SWITCH: *(bool *)field = true; return true;
    case FLAG_DROPOUT_RNG: return dropout_rng_parse(v, field) == REMAT_OK;
    case FLAG_ATTENTION: return attention_kind_parse(v, field) == REMAT_OK;
    }
    return false;
}

/* What flag `f` takes, for the message about a bad value: "a whole number in 1..8". */
static void expected(const TrainFlag *f, char *buf, size_t size)
{
    switch (f->type) {
    case FLAG_INT:
        snprintf(buf, size, "a whole number in %ld..%ld", (long)f->lo, f->hi > 0 ? (long)f->hi : (long)platform_max_threads());
        break;
    case FLAG_FLOAT: snprintf(buf, size, "a number in [%g, %g%c", f->lo, f->hi, f->hi_inclusive ? ']' : ')'); break;
    case FLAG_SEED: snprintf(buf, size, "a whole number in 0..%llu", (unsigned long long)UINT64_MAX); break;
    case FLAG_TEXT:
        if (f->choices) snprintf(buf, size, "%s or %s", f->choices[0], f->choices[1]);
        else snprintf(buf, size, "a path");
        break;
    case FLAG_SWITCH: snprintf(buf, size, "no value"); break;
    case FLAG_DROPOUT_RNG: snprintf(buf, size, "stream or counter"); break;
    case FLAG_ATTENTION: snprintf(buf, size, "naive or fused"); break;
    }
}

/* Why flag `f` changes nothing in the run `opt` describes, or NULL if it applies. */
static const char *out_of_scope(const TrainFlag *f, const TrainOptions *opt)
{
    const bool gpt = !strcmp(opt->model, "gpt"), sgd = !strcmp(opt->optimizer, "sgd");
    switch (f->scope) {
    case FOR_GPT: return gpt ? NULL : "it is the GPT's, and the MLP chain (--model mlp) has none";
    case FOR_SGD: return sgd ? NULL : "it is SGD's, and the optimizer is adamw (give --optimizer sgd)";
    case FOR_ADAMW: return !sgd ? NULL : "it is AdamW's, and the optimizer is sgd";
    case FOR_ALL: return NULL;
    }
    return NULL;
}

/* What the flags given say together; REMAT_EINVAL with the reason when it makes no sense. */
static RematStatus check_options(const TrainOptions *opt)
{
    for (int k = 0; k < N_TRAIN_FLAGS; k++) {
        const char *why = opt->given & 1u << k ? out_of_scope(&TRAIN_FLAGS[k], opt) : NULL;
        if (why) return remat_fail(REMAT_EINVAL, "%s does not apply: %s", TRAIN_FLAGS[k].name, why);
    }
    if (!strcmp(opt->model, "gpt") && opt->d_model % opt->heads != 0)
        return remat_fail(REMAT_EINVAL, "--d-model %d does not divide into %d heads", opt->d_model, opt->heads);
    if (opt->attention == ATTENTION_FUSED && opt->dropout > 0.0f && opt->dropout_rng != DROPOUT_RNG_COUNTER)
        return remat_fail(REMAT_EINVAL, "--attention fused with --dropout %g needs --dropout-rng counter: the "
                          "fused kernel makes its dropout mask again in backward and never stores it, which a "
                          "running stream cannot do (or use --dropout 0)", (double)opt->dropout);
    return step_options_check(&opt->step, step_options_scope(&opt->step));
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
        if (step_flag > 0) continue;
        int k = 0;
        while (k < N_TRAIN_FLAGS && strcmp(flag, TRAIN_FLAGS[k].name)) k++;
        if (k == N_TRAIN_FLAGS) {
            snprintf(why, sizeof why, "unknown flag %s", flag);
            return refuse(err, why);
        }
        const TrainFlag *f = &TRAIN_FLAGS[k];
        if (opt->given & 1u << k) { /* the first value would be silently dropped */
            snprintf(why, sizeof why, "%s is given twice", flag);
            return refuse(err, why);
        }
        const char *v = f->type == FLAG_SWITCH ? NULL : i + 1 < argc ? argv[++i] : "";
        if (!set_flag(f, v, opt)) {
            char wanted[64];
            expected(f, wanted, sizeof wanted);
            if (!v[0]) snprintf(why, sizeof why, "%s needs a value: %s", flag, wanted);
            else snprintf(why, sizeof why, "bad value for %s: '%s' (expected %s)", flag, v, wanted);
            return refuse(err, why);
        }
        opt->given |= 1u << k;
    }
    return check_options(opt) == REMAT_OK ? 0 : refuse(err, remat_last_error());
}
