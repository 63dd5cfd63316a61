/*
 * comm.h — the collectives a data-parallel step needs, and the communication ledger that
 * counts every byte they move.
 *
 * The data is a FlatView: pieces of float storage (each parameter's values, or each one's
 * gradient) read as one flat array of `total` floats, piece 0 first. Sharding cuts that
 * array into one contiguous region per rank, rank k owning [shard_begin(k), shard_begin(k+1))
 * with shard_begin(k) = floor(total · k / K): regions differ by at most one float when K
 * does not divide the total. Nothing is packed into a flat copy: a region that spans
 * several pieces travels as one message whose MPI datatype lists the pieces' addresses.
 *
 * Deterministic reduction. MPI_Reduce_scatter and MPI_Allreduce promise no order of
 * summation (Open MPI picks an algorithm by size and rank count). dist_reduce_scatter
 * fixes it: rank k receives region k of every rank's array, one rank after the other,
 * and adds them in rank order, s = x_0, s = s + x_1, ..., s = s + x_{K-1}, then scales
 * once; the same float operations, in the same order, as one process summing K
 * micro-batches' gradients (models/step.h). An all-gather then gives every rank the whole
 * array. docs/MEASUREMENTS.md (9.2) has what this costs against MPI_Allreduce.
 *
 * The ledger counts, per collective and per phase of the step, the bytes this rank sent
 * and received (payload only, as the ZeRO paper counts volume). A group of one moves
 * nothing and counts nothing.
 */
#ifndef REMAT_PARALLEL_COMM_H
#define REMAT_PARALLEL_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "base/parse.h"
#include "parallel/group.h"

/* ---- flat views ------------------------------------------------------------------------ */

typedef struct FlatPiece {
    float *data;
    size_t numel;
} FlatPiece;

typedef struct FlatView {
    const FlatPiece *pieces; /* borrowed */
    int n;
    size_t total; /* the sum of the pieces' numel */
} FlatView;

/* The first element of rank k's region among `size` ranks: floor(total · k / size). */
size_t shard_begin(size_t total, int k, int size);

/* Copies the view's elements [begin, end) into `out`, or `in` into them (end − begin floats). */
void flat_read(const FlatView *v, size_t begin, size_t end, float *out);
void flat_write(const FlatView *v, size_t begin, size_t end, const float *in);

/* Copies n elements of `from`, from its element from_begin on, into `to`, from its
 * element to_begin on. */
void flat_copy(const FlatView *to, size_t to_begin, const FlatView *from, size_t from_begin, size_t n);

/* ---- the ledger ------------------------------------------------------------------------ */

typedef enum CommOp { COMM_REDUCE_SCATTER = 0, COMM_ALL_GATHER, COMM_ALL_REDUCE, COMM_GATHER, COMM_OP_COUNT } CommOp;

typedef enum CommPhase {
    COMM_GRAD_REDUCE = 0, /* gradients reduced over the ranks */
    COMM_PARAM_GATHER,    /* parameters gathered after a sharded update, or for a save */
    COMM_OPTIMIZER,       /* optimizer state gathered for a save */
    COMM_CONTROL,         /* the step's losses */
    COMM_PHASE_COUNT
} CommPhase;

typedef struct CommCounts {
    uint64_t sent[COMM_OP_COUNT][COMM_PHASE_COUNT];
    uint64_t received[COMM_OP_COUNT][COMM_PHASE_COUNT];
} CommCounts;

/* This rank's counts since the last reset. */
CommCounts comm_counts(void);
void comm_reset(void);

/* Bytes this rank sent (or received) in `phase`, over every collective. */
uint64_t comm_sent(const CommCounts *c, CommPhase phase);
uint64_t comm_received(const CommCounts *c, CommPhase phase);

/* "gradient reduction", "parameter gathering", "optimizer", "control": the names of CommPhase's values. */
extern const NameTable COMM_PHASE_NAMES;

/* ---- collectives ----------------------------------------------------------------------- */

/* Every rank calls each collective with views of the same total. On an MPI error the job
 * ends (MPI's default handler): a collective never returns half done. */

/* How many floats a reduce-scatter receives at a time: its scratch buffer holds at most
 * this many (256 KiB), whatever the shard's length. */
#define DIST_CHUNK ((size_t)1 << 16)

/* The scratch a reduce-scatter of a region of n floats needs: min(n, DIST_CHUNK) floats. */
size_t dist_scratch_floats(size_t n);

/* shard (this rank's region length, caller-owned) = scale · (x_0 + x_1 + ... + x_{K-1})
 * over this rank's region, summed in rank order, where x_r is rank r's view. The region
 * travels in chunks of DIST_CHUNK floats, each received from rank 0, 1, ... in turn into
 * `scratch` (caller-owned, dist_scratch_floats of the region's length) and added. Counted
 * under `phase`. */
RematStatus dist_reduce_scatter(const DistGroup *g, const FlatView *x, float scale, float *shard, float *scratch,
                                 CommPhase phase);

/* Every rank's region of its view is copied into the same region of every other rank's
 * view; afterwards all views hold the same array. Rank r's region is the view's elements
 * [bounds[r], bounds[r + 1]) (bounds holds g->size + 1 ascending offsets into the view;
 * regions may be empty: for part of a sharded array, one parameter of many), or with
 * bounds NULL its shard, [shard_begin(total, r), shard_begin(total, r + 1)). */
RematStatus dist_all_gather(const DistGroup *g, const FlatView *x, const size_t *bounds, CommPhase phase);

/* Rank `root`'s `full` view (the whole array; NULL on other ranks) receives every rank's
 * `mine`, a view of that rank's region alone (its total is the region's length): the
 * parts of a sharded array put together on one rank, for a save. */
RematStatus dist_gather(const DistGroup *g, const FlatView *mine, const FlatView *full, int root, CommPhase phase);

/* x (n floats) = the sum of every rank's x, by MPI_Allreduce in MPI's own order: for
 * measuring the ordered reduction against it, never for training. */
RematStatus dist_all_reduce(const DistGroup *g, float *x, size_t n, CommPhase phase);

/* Every rank's `mine` (n uint64 values) into all (g->size · n, rank r's at r · n), for
 * gathering small figures such as each rank's ledger. Not counted. */
RematStatus dist_all_gather_u64(const DistGroup *g, const uint64_t *mine, int n, uint64_t *all);

#endif /* REMAT_PARALLEL_COMM_H */
