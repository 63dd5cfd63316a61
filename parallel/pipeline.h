/*
 * pipeline.h — pipeline parallelism: P ranks, each a contiguous stage of the chain, and a
 * step's M micro-batches flowing through them. Stage s runs micro-batch r's forward on what
 * stage s−1 sent and sends its output to s+1; its backward takes the gradient s+1 sent and
 * sends its input's gradient to s−1. In which order is the schedule (pipe_actions): gpipe
 * (Huang et al. 2019) every forward, then every backward: stage 0 holds all M micro-batches
 * at once; 1f1b (PipeDream-Flush, Megatron) P−1−s forwards, then one forward and one backward
 * in turn: stage s holds at most P−s. Both idle (P−1)/(M+P−1) of a step in theory.
 *
 * Moves: every send is nonblocking (MPI_Isend), its tensor held until MPI is done with it;
 * every receive blocks (MPI_Recv), its wait counted as idle. A rank waits only for data it
 * needs next, never for its send to be taken, so neighbours that both send (1F1B: an
 * activation on, a gradient back) cannot deadlock; Open MPI moves pending sends meanwhile.
 * Not built: interleaved stages, Zero Bubble's split backward, parameters only on their stage.
 */
#ifndef REMAT_PARALLEL_PIPELINE_H
#define REMAT_PARALLEL_PIPELINE_H

#include "base/parse.h"
#include "parallel/group.h"
#include "tensor/rng.h"
#include "tensor/tensor.h"

typedef enum PipeSchedule { PIPE_GPIPE = 0, PIPE_1F1B } PipeSchedule;
extern const NameTable PIPE_SCHEDULE_NAMES; /* "gpipe", "1f1b" */
/* Layers [*first, *first + *count) of `stage` of `stages` over n_layers >= stages, as even
 * as can be: the first n_layers % stages stages hold one more (5 over 3: 2, 2, 1). */
void pipe_split(int n_layers, int stages, int stage, int *first, int *count);

typedef struct PipeAction { enum { PIPE_FORWARD, PIPE_BACKWARD } kind; int micro_batch; } PipeAction;
/* What `stage` runs for M micro-batches, in order: 2·M actions into out. Returns 2·M. */
int pipe_actions(PipeSchedule schedule, int stages, int stage, int M, PipeAction *out);

/* One action's tensors: the stage takes those coming in, the driver those going out. */
typedef struct PipeIO {
    Tensor *x, *y;   /* forward: the previous stage's output (NULL on the first); this one's (NULL on the last) */
    Pcg32 rng;       /* forward: the dropout stream where the previous stage left it; then where this one does */
    Tensor *dy, *dx; /* backward: the next stage's gradient (NULL on the last); x's (NULL on the first) */
    Tensor *tied;    /* backward: the last stage's gradient of a parameter the first uses too, to the first */
} PipeIO;

typedef struct PipeStage {
    RematStatus (*forward)(void *ctx, int micro_batch, PipeIO *io);
    RematStatus (*backward)(void *ctx, int micro_batch, PipeIO *io);
    void *ctx;
    int ndim, shape[4]; /* the activation crossing a boundary */
    size_t tied_numel;  /* floats of the tied parameter; 0: none */
} PipeStage;

/* What a rank moved and waited. Bytes are payload, not the generator state beside each activation. */
typedef struct PipeLedger {
    uint64_t sent_next, received_next; /* activations to stage s+1, gradients from it */
    uint64_t sent_prev, received_prev; /* gradients to stage s−1, activations from it */
    uint64_t tied;                     /* the tied parameter's gradients, last stage to first */
    double idle_seconds, seconds;      /* waiting in receives; in pipe_run in all */
    int live_peak; /* the most micro-batches whose forward had run and backward not yet */
} PipeLedger;

/* Stage g->rank's actions for one step, counted into `ledger`. On a stage's error returns at
 * once: the caller ends the job (dist_abort), since the others wait for it. */
RematStatus pipe_run(const DistGroup *g, PipeSchedule schedule, int M, const PipeStage *stage, PipeLedger *ledger);
void pipe_bcast(void *data, size_t bytes, int root); /* every rank's `data` = rank root's (< 2 GiB) */

#endif /* REMAT_PARALLEL_PIPELINE_H */
