/*
 * train.h — the training loop behind the `train` program, callable from tests.
 *
 * train_parse_args turns a command line into TrainOptions (every flag is documented in
 * its usage text; train_cli.c); train_run builds the model, trains it, evaluates it, saves
 * it (train.c) and reports what the ledgers measured (train_report.c). The `train`
 * program is these two calls and nothing else.
 */
#ifndef REMAT_TRAIN_H
#define REMAT_TRAIN_H

#include "base/platform.h"
#include "models/gpt.h"
#include "app/step_options.h"

/* The two reference models: the char-level GPT (models/gpt.h) and the MLP chain. */
typedef enum ModelKind { MODEL_GPT, MODEL_MLP } ModelKind;

/* "gpt", "mlp": the names of ModelKind's values. */
extern const NameTable MODEL_KIND_NAMES;

/* --predict-only's: remat's exact figures, or Korthikanti et al.'s (app/paper_accounting.h). */
typedef enum Accounting { ACCOUNTING_REMAT, ACCOUNTING_PAPER } Accounting;

typedef struct TrainOptions {
    ModelKind model;
    int layers;             /* L (GPT blocks) or N (MLP layers) */
    int d_model;            /* the GPT's channels, or the MLP's width */
    int heads;              /* GPT only */
    int seq;                /* GPT only: tokens per sequence (T) */
    int batch;              /* B */
    float dropout;          /* GPT only */
    DropoutRng dropout_rng; /* GPT only: where masks come from, stream (PCG32) or counter (Philox) */
    AttentionKind attention; /* GPT only: naive or fused attention cores */
    StepOptions step;       /* what a step keeps and where: strategy, planner, budget, offload */
    OptimKind optimizer;
    float lr;
    float momentum;         /* SGD only */
    float weight_decay;     /* AdamW only */
    int steps;              /* total steps; a resumed run continues up to this count */
    uint64_t seed;
    int threads;
    int eval_every;         /* 0: evaluate only at the end */
    int eval_batches;
    int sample_chars;       /* GPT only: characters of text generated at the end */
    const char *data;       /* GPT only: the text file */
    const char *save;       /* write the model and training state here at the end */
    const char *resume;     /* continue from a file written with --save */
    const char *dump_step;  /* write step 1's parameters, batch, loss and gradients here */
    const char *dump_graph; /* write step 1's tape as Graphviz here */
    bool print_tape;        /* print step 1's tape, one line per node */
    bool explain_memory;    /* print what step 1 kept for backward, tensor by tensor */
    bool quiet;             /* no per-step output */
    bool predict_only;      /* build nothing: print the step's predicted memory (train_predict) */
    Accounting accounting;  /* --predict-only: remat's or the paper's */
    int tensor_parallel;    /* the paper's accounting only: remat itself has no tensor parallelism */
    int ranks;              /* --predict-only: the ranks of mpirun it predicts rank 0 of (1) */
    const char *results;    /* write the ledger's peaks (or --predict-only's prediction) here as JSON */
    unsigned given;         /* train_parse_args: a bit per flag of train's own given (train_cli.c) */
} TrainOptions;

/* The defaults for `model`. */
TrainOptions train_defaults(ModelKind model);

/* Parses argv into *opt. Returns 0 to go on, 1 when --help was printed (exit 0), 2 for a
 * bad flag or value, or a flag that would change nothing in the run the others describe
 * (--dropout with --model mlp, --momentum with adamw, --policy without selective: a
 * message saying why and the usage went to `err`; exit 2). */
int train_parse_args(int argc, char **argv, TrainOptions *opt, FILE *out, FILE *err);

/* What a run measured. */
typedef struct TrainReport {
    int first_step;        /* 0, or the step a resumed run started from */
    int steps_run;
    float *losses;         /* steps_run training losses (owned; free with train_report_free) */
    float first_val_loss;  /* validation loss before the first step run (NaN if not measured) */
    float last_val_loss;   /* validation loss after the last */
    double median_step_seconds;  /* of the steps run (the upper median for an even count) */
    double fastest_step_seconds, slowest_step_seconds; /* their spread */
    /* The process as the operating system counts it, from before the model was built to
     * the end of the steps (base/platform.h), beside the ledger's resident peak over the
     * steps. */
    ResidentWatch resident;
    size_t ledger_peak;
    size_t peaks[MEM_KIND_COUNT]; /* the ledger's by kind over the steps */
} TrainReport;

/* Runs training as `opt` says, printing progress to `out` (a progress bar when `out` is a
 * terminal, plain lines otherwise), and fills *report (may be NULL: what is printed is all
 * the caller wants). On error returns the status with a clear message; the report then
 * holds the steps that did complete. */
RematStatus train_run(const TrainOptions *opt, TrainReport *report, FILE *out);

void train_report_free(TrainReport *report);

/* train --predict-only (predict.c): one step's peak by kind and recompute FLOPs predicted
 * from shapes, nothing built; printed, and written to opt->results as JSON if given.
 * REMAT_EINVAL naming what it does not predict exactly; REMAT_EIO for the file. */
RematStatus train_predict(const TrainOptions *opt, FILE *out);

/* One step's memory as train_predict predicts it for rank 0 of opt->ranks: bytes by kind
 * (MEM_DISK none), the peak of them all at once, the step's FORWARD and RECOMPUTE FLOPs,
 * and where the peak is reached ("in the backward of"), in layers first .. first + count − 1
 * (count 0: the embedding or the head), at op (its tag, in layer op_layer, −1 for the
 * embedding's or the head's; NULL when not named, as under Revolve). */
typedef struct MemoryPrediction {
    size_t kinds[MEM_KIND_COUNT];
    size_t peak;
    uint64_t recompute_flops, forward_flops;
    const char *moment, *op;
    int first, count, op_layer;
} MemoryPrediction;

/* train_predict's figures without its table, for a GPT of `vocab` tokens (the train
 * program's is TEXT_VOCAB_SIZE; bench_zero's projection takes GPT-2's); the schedule a
 * --strategy budget run plans is printed to `plan` (may be NULL). REMAT_EINVAL for a run
 * it does not predict, naming it. */
RematStatus train_predict_memory(const TrainOptions *opt, int vocab, MemoryPrediction *p, FILE *plan);

/* Under --offload, into p's ACT and DISK and the moment ACT peaks (p->moment, first,
 * count), one step run as `s` with its saves under `opts`, walked on chain_model's shape
 * (predict_spill.c; the loss also saves the targets, the batch's other half). REMAT_EINVAL
 * for a cost not from chain_model, or a segment but plain ones and regions without a policy. */
RematStatus train_predict_spilled(const struct ChainCost *cost, const struct Schedule *s, const OffloadOptions *opts,
                                  MemoryPrediction *p);

/* train --results after a run: the ledger's peaks since their reset, in the same JSON
 * under "measured", with the RECOMPUTE FLOPs per step of `steps`; REMAT_EIO on error. */
RematStatus train_write_measured(const char *path, int steps);

#endif /* REMAT_TRAIN_H */
