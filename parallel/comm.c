/*
 * comm.c — flat views, the communication ledger and the collectives (see comm.h), over
 * MPI_COMM_WORLD with point-to-point messages whose order this file fixes.
 */
#include "parallel/comm.h"

#include <mpi.h>
#include <string.h>

#include "tensor/flat.h"
#include "tensor/kernels.h"

enum { TAG_REDUCE_SCATTER = 101, TAG_ALL_GATHER = 102, TAG_GATHER = 103 };

/* ---- flat views ------------------------------------------------------------------------ */

size_t shard_begin(size_t total, int k, int size)
{
    return (size_t)((unsigned __int128)total * (unsigned)k / (unsigned)size);
}

/* Where a walk over a view's runs is: the next piece, and its first element. */
typedef struct RunWalk {
    int piece;
    size_t first;
} RunWalk;

/* The next run of the view's elements [begin, end), from where *w is (start at {0}): its
 * data and length; false when no run is left. */
static bool next_run(const FlatView *v, size_t begin, size_t end, RunWalk *w, float **data, size_t *len)
{
    while (w->piece < v->n && w->first < end) {
        const FlatPiece *p = &v->pieces[w->piece++];
        size_t from;
        *len = flat_overlap(begin, end, w->first, p->numel, &from);
        w->first += p->numel;
        if (*len) {
            *data = p->data + from;
            return true;
        }
    }
    return false;
}

void flat_read(const FlatView *v, size_t begin, size_t end, float *out)
{
    float *p;
    size_t len, at = 0;
    for (RunWalk w = {0}; next_run(v, begin, end, &w, &p, &len); at += len) memcpy(out + at, p, len * sizeof *p);
}

void flat_write(const FlatView *v, size_t begin, size_t end, const float *in)
{
    float *p;
    size_t len, at = 0;
    for (RunWalk w = {0}; next_run(v, begin, end, &w, &p, &len); at += len) memcpy(p, in + at, len * sizeof *p);
}

void flat_copy(const FlatView *to, size_t to_begin, const FlatView *from, size_t from_begin, size_t n)
{
    float *p;
    size_t len, at = from_begin;
    for (RunWalk w = {0}; next_run(to, to_begin, to_begin + n, &w, &p, &len); at += len)
        flat_read(from, at, at + len, p);
}

/* The MPI datatype of the view's elements [begin, end): one block per piece it touches, at
 * the piece's absolute address (sent from MPI_BOTTOM). The caller frees it. */
static MPI_Datatype region_type(const FlatView *v, size_t begin, size_t end)
{
    MPI_Aint *addresses = malloc((size_t)v->n * (sizeof *addresses + sizeof(int)));
    if (!addresses) return MPI_DATATYPE_NULL;
    int *lengths = (int *)(addresses + v->n); /* in the same allocation */
    int blocks = 0;
    float *p;
    size_t len;
    for (RunWalk w = {0}; next_run(v, begin, end, &w, &p, &len); blocks++) {
        MPI_Get_address(p, &addresses[blocks]);
        lengths[blocks] = (int)len;
    }
    MPI_Datatype type;
    MPI_Type_create_hindexed(blocks, lengths, addresses, MPI_FLOAT, &type);
    MPI_Type_commit(&type);
    free(addresses);
    return type;
}

/* ---- the ledger ------------------------------------------------------------------------ */

static CommCounts counts;

CommCounts comm_counts(void) { return counts; }
void comm_reset(void) { memset(&counts, 0, sizeof counts); }

static void count(CommOp op, CommPhase phase, uint64_t sent, uint64_t received)
{
    counts.sent[op][phase] += sent;
    counts.received[op][phase] += received;
}

/* One phase's column of a table of counts, summed over the collectives. */
static uint64_t phase_sum(const uint64_t by_op[COMM_OP_COUNT][COMM_PHASE_COUNT], CommPhase phase)
{
    uint64_t sum = 0;
    for (int op = 0; op < COMM_OP_COUNT; op++) sum += by_op[op][phase];
    return sum;
}

uint64_t comm_sent(const CommCounts *c, CommPhase phase) { return phase_sum(c->sent, phase); }
uint64_t comm_received(const CommCounts *c, CommPhase phase) { return phase_sum(c->received, phase); }

static const char *const PHASE_NAMES[COMM_PHASE_COUNT] = {"gradient reduction", "parameter gathering", "optimizer",
                                                          "control"};
const NameTable COMM_PHASE_NAMES = {PHASE_NAMES, COMM_PHASE_COUNT};

/* ---- collectives ----------------------------------------------------------------------- */

/* Posts a send of the view's elements [b, e) to rank `peer`, or a receive of them from it
 * (nothing when empty); returns the bytes it moves. */
static uint64_t post_range(const FlatView *x, size_t b, size_t e, int peer, int tag, bool send, MPI_Request *req)
{
    *req = MPI_REQUEST_NULL;
    if (b == e) return 0;
    MPI_Datatype type = region_type(x, b, e);
    if (send) MPI_Isend(MPI_BOTTOM, 1, type, peer, tag, MPI_COMM_WORLD, req);
    else MPI_Irecv(MPI_BOTTOM, 1, type, peer, tag, MPI_COMM_WORLD, req);
    MPI_Type_free(&type); /* freed once the transfer no longer needs it */
    return (e - b) * sizeof(float);
}

size_t dist_scratch_floats(size_t n) { return n < DIST_CHUNK ? n : DIST_CHUNK; }

RematStatus dist_reduce_scatter(const DistGroup *g, const FlatView *x, float scale, float *shard, float *scratch,
                                 CommPhase phase)
{
    const int K = g->size, me = g->rank;
    const size_t b = shard_begin(x->total, me, K), n = shard_begin(x->total, me + 1, K) - b;
    /* The chunks of the longest region (regions differ by one float at most), to each other rank. */
    const size_t most = (size_t)(K - 1) * ((x->total / (size_t)K + DIST_CHUNK) / DIST_CHUNK);
    MPI_Request *sends = calloc(most ? most : 1, sizeof *sends);
    if (!sends) return remat_fail(REMAT_ENOMEM, "reduce-scatter: no memory for %zu requests", most);
    uint64_t sent = 0;
    size_t k = 0; /* the sends posted */
    for (int r = 0; r < K; r++) { /* every other rank's region, chunk by chunk, in order */
        const size_t rb = shard_begin(x->total, r, K), re = shard_begin(x->total, r + 1, K);
        for (size_t c = rb; r != me && c < re; c += DIST_CHUNK)
            sent += post_range(x, c, c + DIST_CHUNK < re ? c + DIST_CHUNK : re, r, TAG_REDUCE_SCATTER, true,
                               &sends[k++]);
    }
    for (size_t c = 0; c < n; c += DIST_CHUNK) {
        const size_t len = c + DIST_CHUNK < n ? DIST_CHUNK : n - c;
        for (int r = 0; r < K; r++) { /* in rank order: s = x_0, then s + x_1, ... */
            float *dst = r == 0 ? shard + c : scratch;
            if (r == me) flat_read(x, b + c, b + c + len, dst);
            else MPI_Recv(dst, (int)len, MPI_FLOAT, r, TAG_REDUCE_SCATTER, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (r > 0) k_add(shard + c, shard + c, scratch, len);
        }
    }
    k_scale(shard, shard, scale, n);
    if (k) MPI_Waitall((int)k, sends, MPI_STATUSES_IGNORE);
    free(sends);
    if (K > 1) count(COMM_REDUCE_SCATTER, phase, sent, (uint64_t)(K - 1) * n * sizeof(float));
    return REMAT_OK;
}

/* Where rank r's region of an all-gather starts: bounds[r], or with bounds NULL its shard's. */
static size_t region_begin(const FlatView *x, const size_t *bounds, int r, int K)
{
    return bounds ? bounds[r] : shard_begin(x->total, r, K);
}

RematStatus dist_all_gather(const DistGroup *g, const FlatView *x, const size_t *bounds, CommPhase phase)
{
    const int K = g->size, me = g->rank;
    if (K == 1) return REMAT_OK;
    MPI_Request *reqs = calloc((size_t)(2 * K), sizeof *reqs);
    if (!reqs) return remat_fail(REMAT_ENOMEM, "all-gather: no memory for %d requests", 2 * K);
    const size_t b = region_begin(x, bounds, me, K), e = region_begin(x, bounds, me + 1, K);
    uint64_t sent = 0, received = 0;
    for (int r = 0; r < K; r++) {
        reqs[2 * r] = reqs[2 * r + 1] = MPI_REQUEST_NULL;
        if (r == me) continue;
        const size_t rb = region_begin(x, bounds, r, K), re = region_begin(x, bounds, r + 1, K);
        sent += post_range(x, b, e, r, TAG_ALL_GATHER, true, &reqs[2 * r]);
        received += post_range(x, rb, re, r, TAG_ALL_GATHER, false, &reqs[2 * r + 1]);
    }
    MPI_Waitall(2 * K, reqs, MPI_STATUSES_IGNORE);
    free(reqs);
    count(COMM_ALL_GATHER, phase, sent, received);
    return REMAT_OK;
}

RematStatus dist_gather(const DistGroup *g, const FlatView *mine, const FlatView *full, int root, CommPhase phase)
{
    const int K = g->size;
    MPI_Request req; /* nothing to wait for when there is nothing to move */
    if (g->rank != root) {
        const uint64_t sent = post_range(mine, 0, mine->total, root, TAG_GATHER, true, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (sent) count(COMM_GATHER, phase, sent, 0);
        return REMAT_OK;
    }
    uint64_t received = 0;
    for (int r = 0; r < K; r++) {
        const size_t rb = shard_begin(full->total, r, K), re = shard_begin(full->total, r + 1, K);
        if (r == root) {
            flat_copy(full, rb, mine, 0, re - rb);
            continue;
        }
        received += post_range(full, rb, re, r, TAG_GATHER, false, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    if (K > 1) count(COMM_GATHER, phase, 0, received);
    return REMAT_OK;
}

RematStatus dist_all_reduce(const DistGroup *g, float *x, size_t n, CommPhase phase)
{
    if (g->size == 1) return REMAT_OK;
    MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    /* Counted as a reduce-scatter + all-gather would move it: MPI does not say what it sent. */
    const uint64_t bytes = 2 * (uint64_t)n * sizeof(float) * (uint64_t)(g->size - 1) / (uint64_t)g->size;
    count(COMM_ALL_REDUCE, phase, bytes, bytes);
    return REMAT_OK;
}

RematStatus dist_all_gather_u64(const DistGroup *g, const uint64_t *mine, int n, uint64_t *all)
{
    if (g->size == 1) memcpy(all, mine, (size_t)n * sizeof *mine);
    else MPI_Allgather(mine, n, MPI_UINT64_T, all, n, MPI_UINT64_T, MPI_COMM_WORLD);
    return REMAT_OK;
}
