/*
 * memory.h — the memory ledger: every byte of tensor data, by kind.
 *
 * All tensor storage in remat is allocated and freed here, tagged with what it is for.
 * The ledger keeps the current and peak bytes of each kind and of everything resident,
 * so a training step can say exactly what it held and why (quiz questions 2, 4 and 8).
 *
 *   PARAM  model parameters            ACT   activations and other forward intermediates
 *   GRAD   parameter gradients         WORK  kernel scratch
 *   OPTIM  optimizer state (AdamW m,v) DISK  bytes sitting in the offload file
 *
 * DISK is not memory: it is accounted with mem_account() by the offload room and is left
 * out of the "resident" total and of the budget. Everything else is resident.
 *
 * A budget (mem_set_budget) makes the ledger behave like a device of that size: an
 * allocation that would take resident bytes past it fails with REMAT_EOOM and a message
 * listing what is resident by kind. The ledger counts the bytes callers ask for, not the
 * allocator's small per-block header, so its figures are exact and predictable.
 *
 * What this is not: a pool allocator. Blocks come from aligned_alloc and go back to free.
 * The ledger is a process-wide singleton for the main thread; kernels never allocate
 * inside their parallel loops.
 */
#ifndef REMAT_MEMORY_H
#define REMAT_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/parse.h"
#include "tensor/flops.h"

#define MEM_ALIGNMENT 64 /* bytes; every block starts on a cache line (and an AVX-512 vector) */

typedef enum MemKind {
    MEM_PARAM = 0,
    MEM_GRAD,
    MEM_OPTIM,
    MEM_ACT,
    MEM_WORK,
    MEM_DISK,
    MEM_KIND_COUNT
} MemKind;

/* ---- allocation ------------------------------------------------------------------- */

/* Allocates `bytes` (> 0) of 64-byte-aligned storage of a resident `kind` and records it.
 * The contents are uninitialised. The caller owns the block and returns it with mem_free.
 * On error returns NULL and records nothing: REMAT_EINVAL for zero bytes or MEM_DISK,
 * REMAT_EOOM when the budget would be crossed (the message lists resident bytes by kind),
 * REMAT_ENOMEM when the host allocator fails. */
void *mem_alloc(MemKind kind, size_t bytes);

/* Like mem_alloc, but the block is zero-filled. */
void *mem_calloc(MemKind kind, size_t bytes);

/* Returns a block from mem_alloc and removes its bytes from the ledger. NULL is a no-op.
 * Freeing anything else, or freeing twice, is a bug: it prints what went wrong and aborts. */
void mem_free(void *block);

/* Records `delta` bytes of `kind` that were not allocated with mem_alloc (the offload
 * room uses it for MEM_DISK). A resident kind is checked against the budget like an
 * allocation. On error (a negative balance, or the budget) changes nothing. */
RematStatus mem_account(MemKind kind, int64_t delta);

/* ---- what the ledger knows -------------------------------------------------------- */

size_t mem_current(MemKind kind);   /* bytes of `kind` now */
size_t mem_peak(MemKind kind);      /* the most bytes of `kind` at any moment since the last reset */
size_t mem_resident(void);          /* bytes of all kinds but MEM_DISK now */
size_t mem_live_blocks(void);       /* blocks allocated and not yet freed */

/* The moment the resident peak was set since the last reset: the resident bytes then (the
 * peak itself), every kind's bytes then, and the FLOP ledger's phase. Copied when the peak
 * rises, so it costs nothing per byte. */
typedef struct MemPeakMoment {
    size_t resident; /* the most bytes of all kinds but MEM_DISK at any moment */
    size_t current[MEM_KIND_COUNT];
    Phase phase;
} MemPeakMoment;
MemPeakMoment mem_peak_moment(void);

/* Sets every peak to its current value, so the next peaks describe what happens next. */
void mem_reset_peaks(void);

/* ---- budget ----------------------------------------------------------------------- */

/* Makes resident bytes above `bytes` fail to allocate; 0 removes the budget. Blocks already
 * allocated are kept even when they exceed a newly set budget. */
void mem_set_budget(size_t bytes);
size_t mem_budget(void); /* 0 when there is none */

/* The memory the machine has for this process (train: what is available less an eighth):
 * resident bytes above it fail as a budget does, naming it, instead of the kernel ending
 * the process. The lower of budget and ceiling holds; DTR evicts for the budget only.
 * Returns the ceiling it replaces, for a caller to give back. */
size_t mem_set_ceiling(size_t bytes);
size_t mem_ceiling(void); /* 0 when there is none */

/* Who may make room before an allocation crosses the budget (DTR's eviction, checkpoint/dtr.h):
 * told that `bytes` more would cross it, it frees resident bytes and returns true to have the
 * budget checked again, or returns false to let the allocation fail with the budget's message.
 * It must not allocate. One at a time; mem_set_pressure(NULL, NULL) removes it. */
typedef bool (*MemPressureFn)(void *ctx, size_t bytes);
void mem_set_pressure(MemPressureFn fn, void *ctx);

/* ---- timeline --------------------------------------------------------------------- */

/* One change to the ledger, with every kind's bytes right after it. */
typedef struct MemEvent {
    double seconds;                  /* since mem_timeline_start */
    uint64_t flops;                  /* the FLOP ledger's count, all phases, when it happened:
                                        a clock that ticks with the work done, not the machine */
    Phase phase;                     /* the FLOP ledger's phase when it happened */
    MemKind kind;                    /* what changed */
    int64_t delta;                   /* + allocated, - freed; 0 for a mark */
    const char *label;               /* a mark's ("dtr.evict"); NULL for a change */
    size_t current[MEM_KIND_COUNT];  /* every kind's bytes after the change */
} MemEvent;

/* Starts recording up to `capacity` events (older recording is discarded). The event
 * buffer is instrumentation, not tensor data, and is not itself in the ledger.
 * On error returns REMAT_EINVAL or REMAT_ENOMEM and leaves recording off. */
RematStatus mem_timeline_start(size_t capacity);

/* Records, when recording, an event that changes no bytes: something that happened to
 * bytes of `kind`, named by `label` (a string that outlives the events: "dtr.evict",
 * "dtr.remat" of checkpoint/dtr_run.c). The bytes it moves are their own events. */
void mem_timeline_mark(MemKind kind, const char *label);

/* Stops recording; the events stay readable until the next start or mem_timeline_free. */
void mem_timeline_stop(void);

/* Recorded events, oldest first; valid until the next start or mem_timeline_free. */
const MemEvent *mem_timeline_events(size_t *count);

/* Events that did not fit in the buffer since the last start. */
size_t mem_timeline_dropped(void);

/* Stops recording and releases the event buffer. */
void mem_timeline_free(void);

/* ---- names and formatting --------------------------------------------------------- */

/* The names of the kinds, "params", "grads", "optimizer", "activations", "workspace",
 * "disk": name_of(&MEM_KIND_NAMES, kind) (base/parse.h). */
extern const NameTable MEM_KIND_NAMES;

/* Writes `bytes` in binary units ("512 B", "3.0 KiB", "12.5 MiB", "1.25 GiB") into `buf`;
 * returns `buf`. */
char *mem_format_bytes(char *buf, size_t size, size_t bytes);

/* Writes "params 12.0 MiB, grads 12.0 MiB, ..." for the resident kinds into `buf`;
 * returns `buf`. */
char *mem_describe_resident(char *buf, size_t size);

#endif /* REMAT_MEMORY_H */
