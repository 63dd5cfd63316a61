/*
 * fixture_train.h — a few training steps of a small model, for the tests that prove a way
 * of keeping activations changes nothing that training computes.
 *
 * A test names a small model (a Trainee) and a way of running its steps (a Way: a
 * checkpoint strategy or any schedule, offload), trains a few AdamW steps from fixed seeds, and
 * compares the Outcome — every loss, the first step's gradients, the final parameters —
 * with the Outcome of plain training, byte for byte. After each step it checks that no
 * activation outlived it, in RAM or on disk.
 *
 * Used by test_checkpoint.c, test_offload.c, test_revolve.c and test_planner.c.
 */
#ifndef REMAT_TEST_FIXTURE_TRAIN_H
#define REMAT_TEST_FIXTURE_TRAIN_H

#include "models/gpt.h"
#include "models/model.h"
#include "models/step.h"
#include "offload/offload.h"
#include "checkpoint/planner.h"
#include "checkpoint/schedule.h"

enum { FIXTURE_STEPS = 3, FIXTURE_MAX_PARAMS = 64 };

/* A small model: the MLP chain (`layers` blocks of `width`, on its teacher task, batches of
 * 4) or the GPT (`layers` blocks, d_model 16, 2 heads, 8 tokens, dropout 0.1 everywhere,
 * batches of 2 random sequences), its dropout masks from a PCG32 stream or, with
 * DROPOUT_RNG_COUNTER, counter-based (seed 77, step = the step's number). */
typedef struct Trainee {
    const char *kind; /* "mlp" or "gpt" */
    int layers;
    int width;        /* the MLP's; the GPT's d_model is 16 */
    DropoutRng dropout_rng;
    AttentionKind attention; /* the GPT's: naive or fused (which needs DROPOUT_RNG_COUNTER) */
    float dropout;           /* the GPT's everywhere; 0: 0.1 */
} Trainee;

/* The TrainCtx the fixture trains step `step` of `t` with (stream seeded (77, 1) before
 * the first step). */
TrainCtx fixture_ctx(const Trainee *t, int step);

/* How the steps run. All zero: plainly (strategy none, in RAM). */
typedef struct Way {
    const Strategy *strategy; /* NULL: none */
    Offload *offload;         /* the forward's saves go through its hooks; NULL: in RAM */
    const Schedule *schedule; /* a schedule (schedule.h) for a chain of this many layers —
                                 a planner's, Revolve's — instead of the strategy's */
    size_t memory_budget;     /* the ledger's budget while each step runs (0: none) */
    bool step_peaks;          /* record the steps' peaks in the Outcome (resets the ledger's peaks) */
} Way;

/* What a few steps computed: copies in MEM_WORK. */
typedef struct Outcome {
    float losses[FIXTURE_STEPS];
    Tensor *grads[FIXTURE_MAX_PARAMS];  /* the first step's gradients */
    Tensor *params[FIXTURE_MAX_PARAMS]; /* every parameter after the last step */
    int n_params;
    const Model *model; /* while training: whose gradients the first step copies */
    size_t peak, peak_act; /* Way.step_peaks: the most resident and ACT bytes while a step ran */
} Outcome;

/* A cmocka setup and teardown for every test of these files: clears the tape, the last
 * error and the FLOP ledger, and returns -1 (the test fails) if any parameter, gradient,
 * optimizer state, activation or spilled record is alive. */
int fixture_clean_state(void **state);

/* The trainee built fresh from its seed. */
Model *fixture_model(const Trainee *t);

/* A batch of the trainee's task drawn from `rng`: the inputs, and the targets in *y. */
Var *fixture_batch(const Trainee *t, Pcg32 *rng, Var **y);

/* The loss with the chain under Revolve with `slots` slots: embed, the chain as one Revolve
 * node, head. NULL on error. */
Var *fixture_revolve_loss(Model *m, int slots, Var *x, Var *y, TrainCtx *ctx);

/* Builds the trainee, trains FIXTURE_STEPS AdamW steps (models/step.h) the way `way` says on batches drawn
 * from a fixed seed (dropout from another), and records *out (free it with outcome_free,
 * whatever the status). Returns the first error (e.g. a determinism check's REMAT_ESTATE),
 * after which no further step runs. */
RematStatus fixture_train(const Trainee *t, const Way *way, Outcome *out);

void outcome_free(Outcome *o);

/* Fails the test, saying `what` and where, unless a and b are the same to the bit. */
void assert_same_outcome(const Outcome *a, const Outcome *b, const char *what);

#endif /* REMAT_TEST_FIXTURE_TRAIN_H */
