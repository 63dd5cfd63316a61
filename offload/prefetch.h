/*
 * prefetch.h — a helper thread that reads parts of a file into memory ahead of need.
 *
 * What it is: one thread and a queue. The caller fills a PrefetchRead (where in the file,
 * into which buffers), submits it, goes on computing, and later waits for it; the thread
 * does the preadv meanwhile, so a read from the disk overlaps the caller's work. Offload
 * uses it in backward to read the records it will unpack next (offload.c).
 *
 * Why a thread rather than posix_fadvise(POSIX_FADV_WILLNEED), which asks the kernel to
 * read ahead with no thread at all: WILLNEED only starts the disk reads, and the copy out
 * of the page cache (with a wait for what has not arrived yet) still happens on the
 * computing thread when backward asks; the helper thread does both while backward
 * computes. Measured with the page cache dropped (offload/README.md), backward waited
 * 110 ms a step for its records on the MLP chain with WILLNEED, no less than without
 * prefetch, and 37 ms with the thread; 45 and 35 ms on the GPT. With the page cache kept
 * the two cost the same. The price of the thread is memory: a record read ahead needs its
 * tensor before anyone asks for it.
 *
 * Contract: between prefetch_submit and prefetch_wait the caller must not touch the
 * PrefetchRead nor its buffers (the thread writes them); after prefetch_wait it owns them
 * again. Every submitted read must be waited for before prefetch_free. The file
 * descriptor must stay open while reads are queued. Calls come from one thread.
 *
 * What it is not: a general thread pool, or a cache: it reads what it is told, in order.
 */
#ifndef REMAT_PREFETCH_H
#define REMAT_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tensor/error.h"

/* One read of head_bytes + data_bytes at `offset` into two buffers (as preadv). */
typedef struct PrefetchRead {
    void *head;
    size_t head_bytes;
    void *data;
    size_t data_bytes;
    off_t offset;
    int error;                 /* after prefetch_wait: 0, an errno, or -1 for a short read */
    bool done;                 /* the thread's; read it only through prefetch_wait */
    struct PrefetchRead *next; /* the queue's */
} PrefetchRead;

typedef struct Prefetcher Prefetcher;

/* Starts a thread that reads from `fd`. The caller owns the result and frees it with
 * prefetch_free. NULL with REMAT_ENOMEM if the thread or its state cannot be made. */
Prefetcher *prefetch_create(int fd);

/* Stops and joins the thread. NULL is a no-op. No read may still be queued. */
void prefetch_free(Prefetcher *p);

/* Queues `read` (its offset and buffers filled in by the caller); returns at once. */
void prefetch_submit(Prefetcher *p, PrefetchRead *read);

/* Blocks until `read`, submitted earlier, is done; then read->error says how it went. */
void prefetch_wait(Prefetcher *p, PrefetchRead *read);

#endif /* REMAT_PREFETCH_H */
