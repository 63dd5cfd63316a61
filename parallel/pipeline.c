/*
 * pipeline.c — the pipeline's schedules and its point-to-point moves (see pipeline.h).
 */
#include "parallel/pipeline.h"

#include <mpi.h>
#include <stdlib.h>

static const char *const SCHEDULES[] = {"gpipe", "1f1b"};
const NameTable PIPE_SCHEDULE_NAMES = {SCHEDULES, 2};

void pipe_split(int n_layers, int stages, int stage, int *first, int *count)
{
    const int base = n_layers / stages, extra = n_layers % stages;
    *first = stage * base + (stage < extra ? stage : extra);
    *count = base + (stage < extra ? 1 : 0);
}

int pipe_actions(PipeSchedule schedule, int stages, int stage, int M, PipeAction *out)
{
    int warm = schedule == PIPE_GPIPE ? M : stages - 1 - stage, n = 0; /* forwards before the first backward */
    if (warm > M) warm = M;
    for (int r = 0; r < warm; r++) out[n++] = (PipeAction){PIPE_FORWARD, r};
    for (int r = 0; r < M - warm; r++) { /* 1F1B's steady state */
        out[n++] = (PipeAction){PIPE_FORWARD, warm + r};
        out[n++] = (PipeAction){PIPE_BACKWARD, r};
    }
    for (int r = M - warm; r < M; r++) out[n++] = (PipeAction){PIPE_BACKWARD, r};
    return n;
}

enum { TAG_ACTIVATION = 0, TAG_RNG, TAG_GRADIENT, TAG_TIED, TAG_KINDS }; /* a tag: micro-batch and what */
#define TAG(r, kind) ((r) * TAG_KINDS + (kind))

typedef struct Driver { /* one rank's step: its stage, its sends in flight and what they read */
    const DistGroup *g;
    const PipeStage *stage;
    PipeLedger *ledger;
    MPI_Request *requests;
    Tensor **held;   /* freed once send i is done; NULL for a generator state */
    int n_sends;
    Pcg32 *rng_sent; /* the generator state sent with micro-batch r's activation */
} Driver;

/* Sends t (held until done, counted in *bytes), or with t NULL the raw `bytes_out` at buf. */
static void post(Driver *d, Tensor *t, const void *buf, int bytes_out, int to, int tag, uint64_t *bytes)
{
    if (t) *bytes += t->numel * sizeof(float);
    MPI_Isend(t ? t->f32 : buf, t ? (int)t->numel : bytes_out, t ? MPI_FLOAT : MPI_BYTE, to, tag, MPI_COMM_WORLD,
              &d->requests[d->n_sends]);
    d->held[d->n_sends++] = t;
}

/* Frees what the sends MPI is done with read, so no activation outlives its backward by long. */
static void reap(Driver *d)
{
    for (int i = 0, done = 0; i < d->n_sends; i++) /* a finished request becomes MPI_REQUEST_NULL */
        if (d->held[i] && MPI_Test(&d->requests[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done)
            tensor_free(d->held[i]), d->held[i] = NULL;
}

/* A blocking receive into `t` (its floats), or with t NULL `n` raw bytes at buf; the wait counted as idle. */
static Tensor *receive(Driver *d, Tensor *t, void *buf, int n, int from, int tag, uint64_t *bytes)
{
    if (!t && !buf) return NULL; /* the tensor to receive into did not fit the budget */
    const double t0 = MPI_Wtime();
    MPI_Recv(t ? t->f32 : buf, t ? (int)t->numel : n, t ? MPI_FLOAT : MPI_BYTE, from, tag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    d->ledger->idle_seconds += MPI_Wtime() - t0;
    *bytes += t ? t->numel * sizeof(float) : 0;
    reap(d);
    return t;
}

static RematStatus forward(Driver *d, int r)
{
    const PipeStage *st = d->stage;
    const int s = d->g->rank;
    PipeLedger *l = d->ledger;
    PipeIO io = {0};
    if (s > 0 && !(io.x = receive(d, tensor_create(MEM_ACT, DTYPE_F32, st->ndim, st->shape), NULL, 0, s - 1,
                                  TAG(r, TAG_ACTIVATION), &l->received_prev)))
        return remat_last_status();
    if (s > 0) receive(d, NULL, &io.rng, (int)sizeof io.rng, s - 1, TAG(r, TAG_RNG), &l->received_prev);
    const RematStatus status = st->forward(st->ctx, r, &io);
    if (status != REMAT_OK || s + 1 == d->g->size) return status; /* no y then */
    d->rng_sent[r] = io.rng;
    post(d, io.y, NULL, 0, s + 1, TAG(r, TAG_ACTIVATION), &l->sent_next);
    post(d, NULL, &d->rng_sent[r], (int)sizeof io.rng, s + 1, TAG(r, TAG_RNG), &l->sent_next);
    return REMAT_OK;
}

static RematStatus backward(Driver *d, int r)
{
    const PipeStage *st = d->stage;
    const int s = d->g->rank, last = d->g->size - 1;
    PipeLedger *l = d->ledger;
    PipeIO io = {0};
    if (s < last && !(io.dy = receive(d, tensor_create(MEM_ACT, DTYPE_F32, st->ndim, st->shape), NULL, 0, s + 1,
                                      TAG(r, TAG_GRADIENT), &l->received_next)))
        return remat_last_status();
    if (s == 0 && st->tied_numel &&
        !(io.tied = receive(d, tensor_create(MEM_GRAD, DTYPE_F32, 1, (int[]){(int)st->tied_numel}), NULL, 0, last,
                            TAG(r, TAG_TIED), &l->tied))) {
        tensor_free(io.dy);
        return remat_last_status();
    }
    const RematStatus status = st->backward(st->ctx, r, &io); /* no dx or tied on error */
    if (io.dx) post(d, io.dx, NULL, 0, s - 1, TAG(r, TAG_GRADIENT), &l->sent_prev);
    if (io.tied) post(d, io.tied, NULL, 0, 0, TAG(r, TAG_TIED), &l->tied);
    return status;
}

/* The schedule's actions, then every send waited for. On error the sends in flight are left
 * to the job's end (the caller ends every rank): their tensors may still be read. */
static RematStatus run_actions(Driver *d, PipeSchedule schedule, int M, PipeAction *actions)
{
    const int n = pipe_actions(schedule, d->g->size, d->g->rank, M, actions);
    int live = 0;
    for (int i = 0; i < n; i++) {
        const bool fwd = actions[i].kind == PIPE_FORWARD;
        const RematStatus status = fwd ? forward(d, actions[i].micro_batch) : backward(d, actions[i].micro_batch);
        if (status != REMAT_OK) return status;
        live += fwd ? 1 : -1;
        if (live > d->ledger->live_peak) d->ledger->live_peak = live;
    }
    const double t0 = MPI_Wtime();
    MPI_Waitall(d->n_sends, d->requests, MPI_STATUSES_IGNORE);
    d->ledger->idle_seconds += MPI_Wtime() - t0;
    for (int i = 0; i < d->n_sends; i++) tensor_free(d->held[i]);
    return REMAT_OK;
}

RematStatus pipe_run(const DistGroup *g, PipeSchedule schedule, int M, const PipeStage *stage, PipeLedger *ledger)
{
    const double t0 = MPI_Wtime();
    const size_t sends = 4 * (size_t)M; /* at most two per forward and two per backward */
    Driver d = {.g = g, .stage = stage, .ledger = ledger, .requests = malloc(sends * sizeof *d.requests),
                .held = malloc(sends * sizeof *d.held), .rng_sent = malloc((size_t)M * sizeof *d.rng_sent)};
    PipeAction *actions = malloc(2 * (size_t)M * sizeof *actions);
    const RematStatus status = d.requests && d.held && d.rng_sent && actions ? run_actions(&d, schedule, M, actions)
                               : remat_fail(REMAT_ENOMEM, "pipeline: no memory for a step of %d micro-batches", M);
    if (status == REMAT_OK) free(d.requests), free(d.held), free(d.rng_sent); /* else sends may read them */
    free(actions);
    ledger->seconds += MPI_Wtime() - t0;
    return status;
}

void pipe_bcast(void *data, size_t bytes, int root) { MPI_Bcast(data, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD); }
