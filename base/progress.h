/*
 * progress.h — the one progress bar: work of a known number of units, on a stream. On a
 * terminal it is a bar redrawn in place, "  [#########.....................]   12/40   N=64";
 * elsewhere (a log, a pipe, a test) one line each time the label changes, "  measuring
 * N=64 (12/40)". train draws its own line around progress_bar.
 *
 *     Progress p;
 *     progress_begin(&p, stdout, 40);
 *     for (...) progress_tick(&p, "N=64");
 *     progress_end(&p);
 *
 * What this is not: a logger. It holds no lines and decides nothing about what is measured.
 */
#ifndef REMAT_BASE_PROGRESS_H
#define REMAT_BASE_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

enum { PROGRESS_BAR_SIZE = 33 }; /* "[", 30 marks, "]", NUL */

typedef struct Progress {
    FILE *out;
    int total, done;
    bool tty;        /* `out` is a terminal: the bar is drawn; else a line per new label */
    char label[64];  /* the last label given */
} Progress;

/* Starts a bar of `total` units on `out` (borrowed), drawn as the top of this file says. */
void progress_begin(Progress *p, FILE *out, int total);

/* `done` units done in all (a comparison that stopped early skips the rounds it did not
 * need), `label` saying what is under way ("N=64 sqrt", "loss 5.5421  12.3 ms/step"). */
void progress_set(Progress *p, int done, const char *label);

/* One unit done: progress_set(p, p->done + 1, label). */
void progress_tick(Progress *p, const char *label);

/* Clears the bar (on a terminal), so that a table can follow. */
void progress_end(Progress *p);

/* The bar alone for `done` of `total` units, "[#########.....................]", into
 * `buf` (PROGRESS_BAR_SIZE bytes), for a caller that draws its own line around it (train's
 * "step 12/40 [...] loss 5.4539"). Returns `buf`. */
char *progress_bar(char buf[PROGRESS_BAR_SIZE], int done, int total);

#endif /* REMAT_BASE_PROGRESS_H */
