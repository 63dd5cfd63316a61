/*
 * train_cli.c — train's command line: its defaults, its usage, and its flags, as rows parsed
 * by base/flags.h into TrainOptions (see train.h). The flags of what a step keeps
 * (strategy, planner, budget, offload) are the table of step_options.h, which the benches
 * share; train's own are the table TRAIN_FLAGS below, a row per flag with its type, its
 * range, its help and the runs it applies to. One rule for both tables: an unknown flag, a
 * bad value, a flag given twice and a flag that would change nothing in the run the others
 * describe are refused with the reason (exit 2), never ignored.
 */
#include "app/train.h"

#include <string.h>

#include "parallel/group.h"

#ifndef REMAT_DATA_DIR
#define REMAT_DATA_DIR "data"
#endif

static const char *const MODELS[] = {"gpt", "mlp"};
const NameTable MODEL_KIND_NAMES = {MODELS, 2};
static const char *const ACCOUNTINGS[] = {"remat", "paper"};
static const NameTable ACCOUNTING_NAMES = {ACCOUNTINGS, 2};

TrainOptions train_defaults(ModelKind model)
{
    const bool mlp = model == MODEL_MLP;
    return (TrainOptions){
        .model = model,
        .layers = mlp ? 16 : 4,
        .d_model = mlp ? 256 : 128,
        .heads = 4,
        .seq = 64,
        .batch = mlp ? 64 : 16,
        .dropout = mlp ? 0.0f : 0.1f,
        .step = step_options_defaults(),
        .optimizer = OPTIM_ADAMW,
        .lr = mlp ? 1e-3f : 2e-3f,
        .momentum = 0.9f,
        .weight_decay = 0.01f,
        .steps = 300,
        .seed = 1337,
        .threads = 0,
        .eval_every = 50,
        .eval_batches = 8,
        .sample_chars = 300,
        .tensor_parallel = 1,
        .ranks = 1,
        .data = REMAT_DATA_DIR "/corpus.txt",
    };
}

/* ---- train's own flags, in one table --------------------------------------------------- */

/* Which runs a flag changes something in (FlagSet.traits): every run (no `needs`), the
 * GPT's (the MLP chain has no attention, tokens, dropout or text), SGD's or AdamW's, a
 * GPT's --predict-only or one with the paper's accounting. */
enum {
    GPT_RUN = 1u << 0, SGD_RUN = 1u << 1, ADAMW_RUN = 1u << 2, GPT_PREDICT_RUN = 1u << 3, PAPER_RUN = 1u << 4,
    PREDICT_RUN = 1u << 5
};
static const char GPT_ONLY[] = "it is the GPT's, and the MLP chain (--model mlp) has none";

#define AT(field) offsetof(TrainOptions, field)
static const Flag TRAIN_FLAGS[] = {
    {.name = "--model", .type = FLAG_NAME, .offset = AT(model), .names = &MODEL_KIND_NAMES, .value = "gpt|mlp",
     .heading = "model", .help = "the char-level GPT on data/ (default) or the MLP chain"},
    {.name = "--layers", .type = FLAG_INT, .offset = AT(layers), .value = "N", .lo = 1, .hi = 4096,
     .help = "GPT blocks or MLP layers (gpt 4, mlp 16)"},
    {.name = "--d-model", .type = FLAG_INT, .offset = AT(d_model), .value = "D", .lo = 1, .hi = 65536,
     .help = "GPT channels, or the MLP's width (gpt 128, mlp 256)"},
    {.name = "--heads", .type = FLAG_INT, .offset = AT(heads), .value = "H", .lo = 1, .hi = 1024,
     .needs = GPT_RUN, .unneeded = GPT_ONLY, .help = "GPT attention heads; D must divide by H (4)"},
    {.name = "--seq", .type = FLAG_INT, .offset = AT(seq), .value = "T", .lo = 1, .hi = 65536,
     .needs = GPT_RUN, .unneeded = GPT_ONLY, .help = "GPT tokens per sequence (64)"},
    {.name = "--dropout", .type = FLAG_FLOAT, .offset = AT(dropout), .value = "P", .lo = 0, .hi = 1, .hi_open = true,
     .needs = GPT_RUN, .unneeded = GPT_ONLY, .help = "GPT dropout probability in [0, 1) (0.1)"},
    {.name = "--dropout-rng", .type = FLAG_NAME, .offset = AT(dropout_rng), .names = &DROPOUT_RNG_NAMES,
     .value = "stream|counter", .needs = GPT_RUN, .unneeded = GPT_ONLY,
     .help = "where dropout masks come from: a PCG32 stream whose state\n"
             "regions replay, masks kept for backward (stream, default); or\n"
             "Philox keyed by (seed, step, micro-batch, op), masks never\n"
             "kept, made again in backward (counter)"},
    {.name = "--attention", .type = FLAG_NAME, .offset = AT(attention), .names = &ATTENTION_KIND_NAMES,
     .value = "naive|fused", .needs = GPT_RUN, .unneeded = GPT_ONLY,
     .help = "GPT attention core: primitive ops keeping the (T,T)\n"
             "probabilities (naive, default), or one fused op keeping one\n"
             "float per row and recomputing them in backward (fused; with\n"
             "dropout > 0 it needs --dropout-rng counter)"},
    {.name = "--batch", .type = FLAG_INT, .offset = AT(batch), .value = "B", .lo = 1, .hi = 1 << 20,
     .heading = "training",
     .help = "sequences (GPT) or examples (MLP) per micro-batch: a step is\n"
             "--accumulate of them, or one per rank (gpt 16, mlp 64)"},
    {.name = "--optimizer", .type = FLAG_NAME, .offset = AT(optimizer), .names = &OPTIM_KIND_NAMES,
     .value = "adamw|sgd", .help = "AdamW, or SGD with momentum (adamw)"},
    {.name = "--lr", .type = FLAG_FLOAT, .offset = AT(lr), .value = "X", .lo = 1e-12, .hi = 10.0,
     .help = "learning rate (gpt 2e-3, mlp 1e-3)"},
    {.name = "--momentum", .type = FLAG_FLOAT, .offset = AT(momentum), .value = "X", .lo = 0, .hi = 1, .hi_open = true,
     .needs = SGD_RUN, .unneeded = "it is SGD's, and the optimizer is adamw (give --optimizer sgd)",
     .help = "SGD momentum in [0, 1) (0.9)"},
    {.name = "--weight-decay", .type = FLAG_FLOAT, .offset = AT(weight_decay), .value = "X", .lo = 0, .hi = 10.0,
     .needs = ADAMW_RUN, .unneeded = "it is AdamW's, and the optimizer is sgd",
     .help = "AdamW weight decay on weight matrices (0.01)"},
    {.name = "--steps", .type = FLAG_INT, .offset = AT(steps), .value = "N", .lo = 0, .hi = 100000000,
     .help = "total training steps; a resumed run continues up to N (300)"},
    {.name = "--seed", .type = FLAG_U64, .offset = AT(seed), .value = "S",
     .help = "seeds initialisation, batches and dropout (1337)"},
    {.name = "--threads", .type = FLAG_INT, .offset = AT(threads), .value = "N", .lo = 1, .hi = 0 /* the machine's */,
     .help = "threads for BLAS and remat's loops, 1..4 per core (all cores)"},
    {.name = "--eval-every", .type = FLAG_INT, .offset = AT(eval_every), .value = "N", .lo = 0, .hi = 100000000,
     .help = "validation loss every N steps, 0 for only at the end (50)"},
    {.name = "--eval-batches", .type = FLAG_INT, .offset = AT(eval_batches), .value = "N", .lo = 1, .hi = 100000,
     .help = "batches per validation (8)"},
    {.name = "--data", .type = FLAG_TEXT, .offset = AT(data), .value = "FILE", .needs = GPT_RUN,
     .unneeded = GPT_ONLY, .help = "GPT training text (" REMAT_DATA_DIR "/corpus.txt)"},
    {.name = "--sample", .type = FLAG_INT, .offset = AT(sample_chars), .value = "N", .lo = 0, .hi = 1000000,
     .needs = GPT_RUN, .unneeded = GPT_ONLY, .help = "GPT: characters of text generated at the end (300)"},
    {.name = "--save", .type = FLAG_TEXT, .offset = AT(save), .value = "FILE", .heading = "files",
     .help = "write parameters, optimizer and training state (safetensors)"},
    {.name = "--resume", .type = FLAG_TEXT, .offset = AT(resume), .value = "FILE",
     .help = "continue a run saved with --save, bit-identically"},
    {.name = "--dump-step", .type = FLAG_TEXT, .offset = AT(dump_step), .value = "FILE",
     .help = "write the first step's parameters, batch, loss and gradients"},
    {.name = "--dump-graph", .type = FLAG_TEXT, .offset = AT(dump_graph), .value = "FILE",
     .help = "write the first step's tape as a Graphviz .dot file"},
    {.name = "--print-tape", .type = FLAG_SWITCH, .offset = AT(print_tape),
     .help = "print the first step's tape: every node, what it saved, its bytes"},
    {.name = "--explain-memory", .type = FLAG_SWITCH, .offset = AT(explain_memory),
     .help = "print every activation the first step kept, dropped for\n"
             "recomputation or cached, when it came and went, and the totals"},
    {.name = "--quiet", .type = FLAG_SWITCH, .offset = AT(quiet), .heading = "output",
     .help = "no per-step lines or progress bar"},
    {.name = "--predict-only", .type = FLAG_SWITCH, .offset = AT(predict_only),
     .help = "build nothing: print one step's predicted peak memory by kind\n"
             "and its recompute FLOPs (none, full, sqrt, selective, budget\n"
             "and its schedule, dtr where it evicts nothing). Add it to a\n"
             "run's own command line: the flags only a run uses are checked,\n"
             "unused"},
    {.name = "--accounting", .type = FLAG_NAME, .offset = AT(accounting), .names = &ACCOUNTING_NAMES,
     .value = "remat|paper", .needs = GPT_PREDICT_RUN,
     .unneeded = "it says how --predict-only counts a GPT's step: give both --predict-only and --model gpt",
     .help = "--predict-only's figures: remat's, exact (remat), or the GPT's\n"
             "activations as Korthikanti et al. count them (paper)"},
    {.name = "--tensor-parallel", .type = FLAG_INT, .offset = AT(tensor_parallel), .value = "T", .lo = 1, .hi = 1024,
     .needs = PAPER_RUN, .unneeded = "remat has no tensor parallelism: T is for --accounting paper",
     .help = "the paper's tensor-parallel degree, dividing the heads (1)"},
    {.name = "--ranks", .type = FLAG_INT, .offset = AT(ranks), .value = "K", .lo = 1, .hi = 1 << 20,
     .needs = PREDICT_RUN, .unneeded = "a run's ranks are mpirun's (mpirun -np K build/app/train ...); K is "
                                       "for --predict-only",
     .help = "--predict-only: rank 0 of K ranks of data parallelism, with\n"
             "--zero S (1)"},
    {.name = "--results", .type = FLAG_TEXT, .offset = AT(results), .value = "FILE",
     .help = "the ledger's peaks by kind in bytes as JSON (measured.*), or\n"
             "with --predict-only the prediction's (predicted.*, paper.*)"},
};
#undef AT
enum { N_TRAIN_FLAGS = sizeof TRAIN_FLAGS / sizeof TRAIN_FLAGS[0] };
_Static_assert(N_TRAIN_FLAGS <= 32, "TrainOptions.given has a bit per flag");

/* Prints the usage text of the two tables of train's command line. */
static void train_usage(const FlagSet sets[2], FILE *out)
{
    fprintf(out, "usage: train [--model gpt|mlp] [options]\n"
                 "Trains one of remat's two reference models and reports what the memory and FLOP\n"
                 "ledgers measured.\n\n");
    const char *const headings[] = {"model", NULL /* the step's flags */, "training", "files", "output"};
    for (int i = 0; i < 5; i++) flags_usage(&sets[headings[i] ? 0 : 1], headings[i], true, out);
    fprintf(out, "  --help              this text\n"
                 "A flag that would change nothing in the run the others describe (a GPT flag with\n"
                 "--model mlp, --momentum with adamw, --policy without selective) is refused.\n");
}

/* A pipeline: the GPT, one stage per rank, a block at least per stage, none of the rest. */
static RematStatus check_pipeline(const TrainOptions *opt)
{
    const int P = opt->step.pipeline_stages, ranks = opt->predict_only ? P : dist_world().size;
    if (opt->model != MODEL_GPT || P != ranks || P > opt->layers)
        return remat_fail(REMAT_EINVAL, "--pipeline-stages %d needs the GPT, one stage per rank (mpirun -np %d) and "
                          "a block at least per stage; got --model %s, %d ranks, %d blocks", P, P,
                          name_of(&MODEL_KIND_NAMES, opt->model), ranks, opt->layers);
    if (opt->step.given & (STEP_FLAG_ZERO | STEP_FLAG_ACCUMULATE) || opt->step.offload || opt->dump_step ||
        opt->step.strategy.kind == STRATEGY_BUDGET || opt->dump_graph || opt->print_tape || opt->explain_memory)
        return remat_fail(REMAT_EINVAL, "--pipeline-stages does not combine with --zero, --accumulate (its step is "
                          "--micro-batches), --offload, --strategy budget (which plans one process's chain), or the "
                          "looks at one process's step: --dump-step, --dump-graph, --print-tape, --explain-memory");
    return REMAT_OK;
}

int train_parse_args(int argc, char **argv, TrainOptions *opt, FILE *out, FILE *err)
{
    int model = MODEL_GPT; /* --model decides the defaults of every other flag; a bad one is refused below */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--model")) name_parse(&MODEL_KIND_NAMES, argv[i + 1], &model);
    *opt = train_defaults((ModelKind)model);
    FlagSet sets[2] = {{.flags = TRAIN_FLAGS, .n = N_TRAIN_FLAGS, .opts = opt, .accepted = ~0u, .given = &opt->given},
                       step_options_flags(&opt->step, STEP_FLAGS_ALL)};
    const int parsed = flags_parse(sets, 2, argc, argv);
    if (parsed == FLAGS_HELP) {
        train_usage(sets, out);
        return 1;
    }
    /* Then what the flags given say together, refused with the reason when it makes no sense. */
    const bool gpt = opt->model == MODEL_GPT;
    sets[0].traits = (gpt ? GPT_RUN : 0) | (opt->optimizer == OPTIM_SGD ? SGD_RUN : ADAMW_RUN) |
                     (opt->predict_only && gpt ? GPT_PREDICT_RUN : 0) |
                     (opt->accounting == ACCOUNTING_PAPER ? PAPER_RUN : 0) | (opt->predict_only ? PREDICT_RUN : 0);
    /* main has started MPI by now; --predict-only takes the ranks from --ranks or --pipeline-stages */
    const StepScope more = {.counter_masks = gpt && opt->dropout_rng == DROPOUT_RNG_COUNTER,
                            .several_ranks = (dist_under_launcher() && dist_world().size > 1) ||
                                             (opt->predict_only && (opt->step.pipeline_stages > 1 || opt->ranks > 1))};
    RematStatus status = parsed == FLAGS_RUN ? flags_check(&sets[0], NULL) : REMAT_EINVAL;
    if (status == REMAT_OK && gpt && opt->d_model % opt->heads != 0)
        status = remat_fail(REMAT_EINVAL, "--d-model %d does not divide into %d heads", opt->d_model, opt->heads);
    if (status == REMAT_OK && opt->attention == ATTENTION_FUSED && opt->dropout > 0.0f &&
        opt->dropout_rng != DROPOUT_RNG_COUNTER)
        status = remat_fail(REMAT_EINVAL, "--attention fused with --dropout %g needs --dropout-rng counter: the "
                            "fused kernel makes its dropout mask again in backward and never stores it, which a "
                            "running stream cannot do (or use --dropout 0)", (double)opt->dropout);
    if (status == REMAT_OK) status = step_options_check(&opt->step, more);
    if (status == REMAT_OK && opt->step.pipeline_stages) status = check_pipeline(opt);
    if (status == REMAT_OK) return 0;
    fprintf(err, "train: %s\n", remat_last_error());
    train_usage(sets, err);
    return 2;
}
