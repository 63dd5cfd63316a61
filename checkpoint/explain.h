/*
 * explain.h — what one training step keeps for backward, tensor by tensor
 * (`train --explain-memory`; JAX's print_saved_residuals, with the step's timeline).
 *
 * While started, it watches the saved-tensor path and every op, and records each
 * activation an op keeps — or would keep — for backward, with its fate:
 *
 *   kept        saved in the forward and held until backward used it
 *   dropped     would have been saved, but the op ran in a checkpoint region's first
 *               forward: it is recomputed in backward instead
 *   cached      kept by a selective policy's cache between the forward and the replay
 *   recomputed  saved again by a region's replay, and released within that region's backward
 *   hooked      handed to saved-tensor hooks (e.g. offloaded), named in the table
 *   regenerated never stored at all: the op's backward makes it again (a counter-based
 *               dropout's mask, fused attention's probabilities); listed with the bytes
 *               it would have taken, counted in no total of what was kept
 *
 * Parameters saved by reference (a linear's weight) are not activations and are left
 * out. A tensor saved by two ops (a relu's output is also the next linear's input) is
 * listed twice but counted once.
 *
 * Its prediction of the peak is the planner's (explain_print): the table shows saved tensors
 * only, and a step's peak also holds the batch, the loss, gradients and transients.
 *
 * What it is not: a profiler. It changes nothing the step computes or allocates (its own
 * records are host memory, outside the ledger).
 */
#ifndef REMAT_EXPLAIN_H
#define REMAT_EXPLAIN_H

#include "autograd/autograd.h"

typedef struct Explain Explain;

/* Starts recording. One at a time; NULL on error (another one is running, no memory). */
Explain *explain_start(void);

/* Stops recording; the records stay for explain_print. */
void explain_stop(Explain *ex);

/* Prints the table, the totals per fate, and the predicted against the measured peak:
 * `stored` is the ACT the ledger held between forward and backward, `peak` the step's
 * peak ACT, `predicted` the step's peak ACT as the chain cost model predicts it for the
 * step's schedule (cost.h; 0 when not predicted, with `why_not` saying why). */
void explain_print(const Explain *ex, FILE *out, size_t stored, size_t peak, size_t predicted, const char *why_not);

/* The saved tensors live when the step's resident peak was set: the op that saved the
 * largest ("cross_entropy" for the head's logits; NULL when unknown), and the bytes kept
 * and recomputed (by a region's replay). */
typedef struct ExplainPeak {
    const char *largest_op;
    size_t kept, recomputed;
} ExplainPeak;

/* Where the step's resident peak was set, if while recording: the event just after it and
 * what that event reports, then the bytes of the saved tensors (kept, recomputed or in a
 * policy's cache, that part shown apart) live at that moment, by layer. When the peak came
 * after the recording, prints nothing and returns an ExplainPeak of zeros. */
ExplainPeak explain_print_peak(const Explain *ex, FILE *out);

/* Bytes of the distinct tensors of one fate ("kept", "dropped", "cached", "recomputed",
 * "hooked", "regenerated"), as the totals print them; 0 for an unknown fate. */
size_t explain_bytes(const Explain *ex, const char *fate);

/* Frees the records (stopping first if needed). NULL is a no-op. */
void explain_free(Explain *ex);

/* For checkpoint.c: the cache of region `region` has kept `t`, the output of `op` (tag may
 * be NULL), for the replay. */
void explain_note_cached(const char *region, const char *op, const char *tag, const Tensor *t);

#endif /* REMAT_EXPLAIN_H */
