/*
 * offload.h — activation offload: tensors saved for backward go to a spill file on disk
 * during the forward and come back, prefetched, during the backward (quiz question 6).
 *
 * On a GPU, offload moves activations from device memory to CPU memory or NVMe. Here the
 * scarce memory is the process's resident RAM and the slow, large one is the disk: a saved
 * tensor is copied into a spill file, by one of three ways (OffloadIo), and backward reads
 * it back into a new tensor. It plugs into the saved-tensor path (autograd.h) as a pair of
 * pack/unpack hooks, so no op knows it exists, and combines with checkpointing: a region's
 * input is saved through the same path.
 *
 *     Offload *off = offload_create(&(OffloadOptions){...});   opens the spill file
 *     offload_push(off);                     the forward's saves now go through it
 *     Var *loss = model_loss_planned(...);
 *     offload_pop(off);                      starts reading the last records back
 *     backward(loss);                        each record is read back, checked, released
 *     tape_reset();                          the file's space is reused by the next step
 *     offload_free(off);
 *
 * Push the hooks for the forward only. Each saved slot remembers the hooks that packed
 * it, so backward reads the records back whether or not the hooks are still pushed; left
 * pushed through backward, they would also spill what a checkpoint region's replay saves,
 * only to read it back a moment later.
 *
 * Ownership. pack is given a tensor it does not own; the hooks keep a reference to a
 * tensor they spill only until its record is written, so its RAM is freed when its other
 * holders drop it (a tensor someone else keeps stays resident, and is also on disk). DISK
 * goes up by the tensor's bytes when its write is seen finished and down when its record
 * is released; ACT goes up again when backward reads it back into a new tensor.
 *
 * Write-behind and prefetch. pack hands a record to a helper thread (prefetch.h), which
 * checksums and writes it while the forward goes on (write_behind; not io mmap, which
 * writes in the forward); backward unpacks in the reverse order of the packs, so the same
 * thread reads the next records into their tensors ahead of need (prefetch). The ledger
 * moves where the oldest writes are waited for, at points fixed by the records' count and
 * sizes, never by the thread's speed, so its figures are the same run after run.
 *
 * What is spilled. Never a tensor that is not MEM_ACT (a linear's saved weight is a
 * parameter, and stays), never one smaller than min_bytes (a record's fixed cost, about
 * 14 microseconds, is what copying 64 KiB takes: docs/MEASUREMENTS.md, 8.7), and of the
 * rest what the policy chooses:
 *   all       every saved activation;
 *   large     tensors of at least large_bytes, or saved by a node whose tag starts with
 *             tag_prefix;
 *   boundary  only what checkpoints keep to replay from — regions' inputs and Revolve's
 *             states, saved by nodes tagged TAG_CHECKPOINT_INPUT (autograd.h):
 *             with sqrt, the segment boundaries go to disk, and resident activations stay
 *             near one segment's working set.
 *
 * The spill file is created in a directory the caller chooses (default $TMPDIR, or /tmp)
 * and unlinked at once, so a crash leaves nothing behind. It grows with posix_fallocate,
 * so a full disk is an error from the growth, never a record half written, and each step
 * reuses it from byte 0. Each record carries a header and a CRC-32C of its bytes, which
 * unpack checks against what pack remembered; a file truncated under the process fails
 * that check, or through a mapping is caught as a SIGBUS (prefetch.c).
 *
 * Errors. A failure of the file is REMAT_EIO (the directory is missing or unwritable, the
 * disk is full, the file-size limit was reached, a write was cut short, a write-back
 * failed) or REMAT_ECORRUPT (a record whose header or checksum does not match, or a file
 * shorter than its records or its mapping), with a message naming the cause and the
 * tensor; reading a record back allocates, so it can also meet the budget (REMAT_EOOM). A
 * failed pack saves nothing and accounts nothing, so the op fails and so does the forward;
 * a failed unpack fails backward. The caller must then not apply the step (app/train.c
 * redoes it without offload).
 *
 * What this is not: callable from several threads (the helper thread only moves bytes
 * between the file and tensors it is handed), or a cache of the same tensor saved twice:
 * two nodes saving one tensor get two records.
 */
#ifndef REMAT_OFFLOAD_H
#define REMAT_OFFLOAD_H

#include <stddef.h>

#include "autograd/autograd.h"
#include "base/parse.h"

typedef enum OffloadPolicy { OFFLOAD_ALL = 0, OFFLOAD_LARGE, OFFLOAD_BOUNDARY } OffloadPolicy;

#define OFFLOAD_MIN_BYTES ((size_t)64 << 10)   /* default: smaller saved tensors stay in RAM */
#define OFFLOAD_LARGE_BYTES ((size_t)1 << 20)  /* default: what "large" means */
#define OFFLOAD_GROW_BYTES ((size_t)64 << 20)  /* the file grows this much at a time */
#define OFFLOAD_PREFETCH 2                     /* default: records read ahead in backward */
#define OFFLOAD_WRITE_BEHIND 2                 /* default: records written behind the forward */
#define OFFLOAD_ANY_COUNT (1 << 20)            /* a count of records that never limits a window of bytes */
#define OFFLOAD_IO_THREADS 1                   /* default: helper threads moving the records */
#define OFFLOAD_MAX_IO_THREADS 4

/* How the bytes move between a tensor and the file (offload.c describes all three). */
typedef enum OffloadIo {
    OFFLOAD_IO_SYSCALLS = 0, /* pwritev and preadv: the kernel copies, nothing is mapped */
    OFFLOAD_IO_MMAP,         /* memcpy through a MAP_SHARED mapping, then MADV_DONTNEED */
    OFFLOAD_IO_DIRECT,       /* pwrite and pread with O_DIRECT, through an aligned bounce
                                buffer: the page cache never holds the records */
} OffloadIo;

typedef struct OffloadOptions {
    OffloadPolicy policy;
    OffloadIo io;
    const char *dir;        /* where the spill file is created; NULL: $TMPDIR, else /tmp (copied) */
    size_t min_bytes;       /* saved tensors smaller than this stay in RAM, for every policy */
    size_t large_bytes;     /* large: spill tensors of at least this many bytes, ... */
    const char *tag_prefix; /* large: ... or saved by a node whose tag starts with this
                               (NULL: size only; the string must outlive the Offload) */
    bool drop_cache;        /* records leave the page cache (offload.c says how), so
                               backward reads the disk (io direct: nothing to drop) */
    int prefetch;           /* in backward, records a helper thread reads ahead of the one
                               being unpacked, into tensors allocated (ACT) when the read is
                               queued; 0: no thread, each record is read when unpacked */
    size_t prefetch_bytes;  /* and, if > 0, no more than this many bytes of data between the
                               records read ahead (but always the next record); 0: the count
                               alone decides */
    int write_behind;       /* records the helper thread may still be writing while the
                               forward goes on, each keeping its tensor (ACT) until its write
                               is seen finished. 0, or io mmap: pack writes before it returns */
    size_t write_behind_bytes; /* and, if > 0, no more than this many bytes of data in flight
                               (a larger record is still written behind, alone); 0: the count
                               alone decides */
    int io_threads;         /* helper threads that write behind and read ahead (0 or 1: one;
                               at most OFFLOAD_MAX_IO_THREADS); records are still waited
                               for, and the ledger moved, in order */
} OffloadOptions;

/* The defaults for `policy` (no tag prefix, the page cache kept, windows of records only, the
 * directory from $TMPDIR). A value, not a call: a run that never offloads runs no code of
 * offload/. */
#define OFFLOAD_DEFAULTS(policy_)                                                                              \
    ((OffloadOptions){.policy = (policy_), .io = OFFLOAD_IO_SYSCALLS, .min_bytes = OFFLOAD_MIN_BYTES,          \
                      .large_bytes = OFFLOAD_LARGE_BYTES, .prefetch = OFFLOAD_PREFETCH,                        \
                      .io_threads = OFFLOAD_IO_THREADS, .write_behind = OFFLOAD_WRITE_BEHIND})

/* "all", "large", "boundary": the names of OffloadPolicy's values. */
extern const NameTable OFFLOAD_POLICY_NAMES;

/* Whether the policy of `o` sends a saved activation (MEM_ACT) of `bytes`, saved by a node
 * tagged `tag` (NULL: none), to disk, as pack decides (app/predict.c predicts with it). */
bool offload_spills(const OffloadOptions *o, size_t bytes, const char *tag);

typedef struct Offload Offload;

/* Creates an offloader and its spill file: created in the directory and unlinked at
 * once. The caller owns the result and frees it with offload_free. NULL on error, with
 * nothing left behind: REMAT_EINVAL for bad options (an empty directory path among them),
 * REMAT_EIO when the file cannot be made ("offload: cannot create a spill file in /nope:
 * No such file or directory"), REMAT_ENOMEM. */
Offload *offload_create(const OffloadOptions *opts);

/* Closes the spill file and frees the offloader. NULL is a no-op. Every record it wrote
 * must have been released first (reset the tape that saved them): freeing it under live
 * records is a bug, which prints what happened and aborts. */
void offload_free(Offload *off);

/* Pushes the offloader's hooks on the saved-tensor stack: from now on every tensor an op
 * saves goes through them. REMAT_EINVAL if the stack is full. */
RematStatus offload_push(Offload *off);

/* Pops the hooks (they must be the top of the stack); waits for the records still being
 * written behind; with drop_cache, waits for the write-back their writes started and
 * drops them from the page cache (stats.cached_after_forward); with prefetch, starts
 * reading back the last records written, which backward wants first. REMAT_EIO if a
 * record could not be written (the message names it, unless a pack already failed with
 * it) or could not reach the disk: they may be lost, do not run backward; REMAT_EINVAL
 * for a NULL offloader. The hooks are popped in every case but that one. */
RematStatus offload_pop(Offload *off);

/* What the offloader has done since it was created. */
typedef struct OffloadStats {
    size_t records_written; /* tensors spilled (written behind: once their writes are seen done) */
    size_t bytes_written;   /* their bytes (what DISK was charged) */
    size_t kept;            /* saves kept in RAM: below min_bytes, not MEM_ACT, or not chosen */
    size_t records_read;    /* records read back by unpack */
    size_t prefetched;      /* records read ahead by the helper thread */
    size_t live_records;    /* written (or in flight), not yet released */
    size_t file_bytes;      /* the spill file's size (it grows, and is reused) */
    size_t failures;        /* packs, unpacks and pops that failed because of the spill file
                               (REMAT_EIO, REMAT_ECORRUPT; not the memory budget) */
    double write_seconds;   /* time the forward spent on writes: in pack (writing, or handing
                               over and waiting for an older write) and in offload_pop
                               waiting for the last ones */
    double read_seconds;    /* time spent in unpack reading them back */
    double read_wait_seconds; /* of it, unpack blocked on a read ahead the thread had not
                               finished */
    size_t reads_waited;    /* records read ahead that unpack had to wait for */
    double thread_write_seconds; /* the helper threads' time writing behind, summed over
                               the threads, counted as each write is seen done */
    size_t thread_write_bytes; /* the bytes of those records in the file (headers, padding) */
    double thread_read_seconds; /* their time reading ahead, summed over the threads */
    size_t thread_read_bytes; /* the bytes of those records in the file */
    double thread_cpu_seconds; /* of the helper threads' time both ways, their CPU time:
                               what they take from the computing threads' cores */
    size_t cached_after_forward; /* drop_cache or io direct: bytes of the last forward's
                               records in the page cache when offload_pop returned
                               (mincore); 0 otherwise */
} OffloadStats;

OffloadStats offload_stats(const Offload *off);

/* Writes a one-line description of what the offloader does into `buf` and returns it:
 * "all (every saved activation) of 64.0 KiB or more, to a spill file in /tmp by
 * pwritev/preadv; page cache kept; prefetch 2 records ahead on a helper thread". */
char *offload_describe(const Offload *off, char *buf, size_t size);

/* ---- for tests that damage the spill file ------------------------------------------- */

/* The spill file's descriptor, for a test that changes the file behind the offloader's
 * back (pwrite a flipped byte, ftruncate it). It stays owned by the offloader. */
int offload_debug_fd(const Offload *off);

/* For tests: while `refuse` is true, offload_create with io direct acts as if the file
 * system refused O_DIRECT (EINVAL, as one without direct I/O answers). */
void offload_debug_refuse_direct(bool refuse);

#endif /* REMAT_OFFLOAD_H */
