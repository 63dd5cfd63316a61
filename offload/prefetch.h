/*
 * prefetch.h — helper threads that read parts of a file into memory ahead of need, and
 * write parts of memory to the file behind the caller's back.
 *
 * What it is: one thread (or a few) and a queue. The caller fills a PrefetchIo (read or
 * write, where in the file, which buffers), submits it, goes on computing, and later waits
 * for it; a thread does the preadv or pwritev meanwhile, so the disk's work overlaps the
 * caller's. Offload reads with it, in backward, the records it will unpack next, and
 * writes, in the forward, those it has just packed (offload.c); what it moves on its own
 * thread goes through prefetch_transfer, the same way or through a mapping of the file.
 * Requests start in the order they were submitted; with more than one thread they may
 * finish in any order, so the caller must not queue a read of bytes that a write not yet
 * waited for is writing.
 *
 * Why a thread rather than posix_fadvise(POSIX_FADV_WILLNEED): WILLNEED only starts the
 * disk reads, and the copy out of the page cache still happens on the computing thread
 * when backward asks; the helper thread does both while backward computes (measured in
 * docs/MEASUREMENTS.md, 8.7). Its price is memory: a record read ahead needs its tensor
 * before anyone asks for it.
 *
 * Contract: between prefetch_submit and prefetch_wait the caller must not touch the
 * PrefetchIo nor its buffers (the thread reads or writes them); after prefetch_wait it
 * owns them again. Every submitted request must be waited for before prefetch_free. The file
 * descriptor must stay open while requests are queued. Calls come from one thread.
 *
 * What it is not: a general thread pool, or a cache: it reads and writes what it is told,
 * in order.
 */
#ifndef REMAT_PREFETCH_H
#define REMAT_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

/* One read (as preadv) or write (as pwritev) of head_bytes + data_bytes at `offset`, from
 * or into two buffers, with the data's checksum computed on the thread too. With `evict`
 * set, the record (head, data and padding from `offset`) then leaves the page cache: a
 * write starts its write-back, a read drops it (prefetch_evict). */
typedef struct PrefetchIo {
    bool write;
    void *head;
    size_t head_bytes;
    void *data;
    size_t data_bytes;
    off_t offset;
    size_t pad_bytes;          /* the bytes after the data up to the end of the record's last
                                  page: a write writes them as zeros, so that no page is
                                  written in part; a read skips them */
    uint32_t *crc;             /* where to store the data's CRC-32C (a write: before writing,
                                  so it may point into `head`; a read: of what it read, if it
                                  succeeded), or NULL */
    bool evict;                /* then start its write-back (a write) or drop it (a read) */
    unsigned char *map;        /* the record's start in a MAP_SHARED mapping of the file: the
                                  transfer is memcpy, then MADV_DONTNEED; never submitted */
    int error;                 /* after prefetch_wait: 0, an errno, -1 for a short transfer,
                                  or PREFETCH_TRUNCATED */
    double seconds;            /* after prefetch_wait: how long the transfer took where it ran */
    double cpu_seconds;        /* of it, the CPU time of the thread that ran it */
    bool done;                 /* the thread's; read it only through prefetch_wait */
    struct PrefetchIo *next;   /* the queue's */
} PrefetchIo;

/* A copy through a mapping faulted (SIGBUS, caught): the file was truncated under it. */
#define PREFETCH_TRUNCATED (-2)

typedef struct Prefetcher Prefetcher;

/* The most threads one Prefetcher runs. */
#define PREFETCH_MAX_THREADS 4

/* Starts `threads` threads (0 to PREFETCH_MAX_THREADS, which the caller checks) that read
 * from and write to `fd`; with `direct` (fd is open with O_DIRECT), each has a bounce buffer
 * of its own (1 MiB), and so does the caller, for prefetch_transfer: every transfer goes
 * through it and moves the padding too, so a request's offset and head + data + pad must
 * be aligned as the file system asks. The caller owns the result and frees it with
 * prefetch_free. NULL, with nothing left running, on error: REMAT_ENOMEM if a thread or its
 * state cannot be made. */
Prefetcher *prefetch_create(int fd, bool direct, int threads);

/* Stops and joins the threads. NULL is a no-op. No request may still be queued. */
void prefetch_free(Prefetcher *p);

/* Queues `io` (its direction, offset and buffers filled in by the caller); returns at once. */
void prefetch_submit(Prefetcher *p, PrefetchIo *io);

/* Blocks until `io`, submitted earlier, is done; then io->error says how it went. Returns
 * whether it had to block (false: the thread had already finished it). */
bool prefetch_wait(Prefetcher *p, PrefetchIo *io);

/* Does `io` now, on the calling thread, as a helper thread would (or through io->map), and
 * returns io->error; io->seconds and io->cpu_seconds are set as after prefetch_wait. */
int prefetch_transfer(Prefetcher *p, PrefetchIo *io);

/* Takes `bytes` of `fd` from `offset` out of the page cache without an fsync of the whole
 * file: sync_file_range writes the range's dirty pages back and, with `drop`, waits for
 * them, then posix_fadvise(POSIX_FADV_DONTNEED) drops its clean pages (only clean pages
 * can be dropped, hence the order; pages mapped by a process stay). Without `drop` it
 * only starts the write-back (it may wait for a full device queue), so that a later call
 * with `drop` finds little left to wait for. 0 or an errno. */
int prefetch_evict(int fd, off_t offset, size_t bytes, bool drop);

#endif /* REMAT_PREFETCH_H */
