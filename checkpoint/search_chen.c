/*
 * search_chen.c — Chen et al. 2016's budget search: their Algorithm 3 cuts the chain
 * wherever the activations kept since the last cut pass a threshold b, and the appendix's
 * search tries a few b (see search.h).
 */
#include "checkpoint/search.h"

#include <math.h>
#include <stdlib.h>

/* Their Algorithm 3 on the chain with threshold b: walk the layers adding up what each
 * keeps (kept_k); when the running sum passes b, the layer's output becomes a stored
 * segment boundary and the sum starts again. x is the bytes of the stored boundaries, y
 * the largest segment. Every segment but the last is a region; the last runs plainly,
 * since its backward comes first and would recompute what it just computed. With no
 * boundary at all the chain is one plain segment: nothing is recomputed. */
static int chen_segments(const ChainCost *c, double b, Segment *segs, double *x, double *y)
{
    int n = 0, first = 0;
    double running = 0.0;
    *x = *y = 0.0;
    for (int k = 0; k < c->n_layers; k++) {
        running += (double)c->layers[k].kept;
        if (k < c->n_layers - 1 && running > b) {
            *x += (double)c->layers[k].out_bytes;
            *y = fmax(*y, running);
            segs[n++] = (Segment){first, k + 1 - first, SEGMENT_REGION, NULL, 0};
            first = k + 1;
            running = 0.0;
        }
    }
    segs[n++] = (Segment){first, c->n_layers - first, SEGMENT_PLAIN, NULL, 0};
    return n;
}

enum { CHEN_GUESSES = 3, CHEN_GRID = 6 };

/* The thresholds the appendix's search tries: b = 0 (every layer its own segment), then
 * b = sqrt(x·y) from the x and y of the previous run, CHEN_GUESSES times, then CHEN_GRID
 * equal steps from the smallest y seen to sqrt(2) times the last guess; and b = ∞, where
 * no boundary is stored. Returns how many, at most CHEN_GUESSES + CHEN_GRID + 2. */
static int chen_thresholds(const ChainCost *c, Segment *scratch, double *b)
{
    int n = 0;
    double x, y, guess = 0.0, min_y = INFINITY;
    for (int i = 0; i <= CHEN_GUESSES; i++) {
        b[n++] = guess;
        chen_segments(c, guess, scratch, &x, &y);
        if (y > 0.0) min_y = fmin(min_y, y);
        guess = sqrt(x * y);
    }
    const double top = sqrt(2.0) * b[n - 1];
    if (isfinite(min_y) && top > min_y) {
        const double step = (top - min_y) / CHEN_GRID;
        for (int i = 1; i <= CHEN_GRID; i++) b[n++] = min_y + step * i;
    }
    b[n++] = INFINITY;
    return n;
}

Schedule *search_chen(const ChainCost *c, size_t act_budget, size_t *leanest)
{
    const int L = c->n_layers;
    Segment *segs = calloc((size_t)L, sizeof *segs);
    double b[CHEN_GUESSES + CHEN_GRID + 2];
    if (!segs) {
        remat_fail(REMAT_ENOMEM, "planner: no memory for %d segments", L);
        return NULL;
    }
    const int n_b = chen_thresholds(c, segs, b);
    Schedule *best = NULL;
    *leanest = SIZE_MAX;
    for (int i = 0; i < n_b; i++) {
        double x, y;
        const int n = chen_segments(c, b[i], segs, &x, &y);
        Schedule *s = chain_schedule(c, segs, n);
        if (!s) break;
        schedule_keep_best(&best, s, act_budget, leanest);
    }
    free(segs);
    return best;
}

