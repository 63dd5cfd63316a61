/*
 * offload.c — the spill file and the pack, unpack and release hooks (see offload.h).
 *
 * The file is a run of records appended one after the other, each starting on a page:
 *
 *     [ header | data ............ | pad ][ header | data ... | pad ][ ...
 *     ^ offset 0                          ^ the next record's offset     ^ tail
 *
 * The header (64 bytes) says what the record holds; the data follows it, on a cache line.
 * Starting each record on a page lets madvise and posix_fadvise act on exactly its pages.
 *
 * Three ways of moving the bytes (OffloadOptions.io), all done by prefetch.c:
 *
 *   syscalls  a record is one pwritev (header and data) at its offset: the kernel copies
 *             the tensor into the page cache, and the process never maps those pages.
 *             Written behind, pack only reserves the record's place and queues the write,
 *             with the checksum, on the helper thread. unpack is one preadv.
 *   mmap      the whole file is mapped MAP_SHARED. pack memcpys into the mapping, on the
 *             computing thread, then madvise(MADV_DONTNEED): the pages leave the process,
 *             their dirty contents stay in the page cache to be written back. unpack
 *             memcpys out of the mapping and hands the pages back.
 *   direct    as syscalls, with the file open O_DIRECT: header, data and padding go
 *             between the tensor and the disk through an aligned bounce buffer (one per
 *             thread), so every transfer is whole pages. The page cache never holds a
 *             record; a bounce buffer, rather than tensors allocated on pages, keeps the
 *             tensor room out of it.
 *
 * With drop_cache, each record's write-back starts as soon as it is written
 * (sync_file_range, not waiting); offload_pop waits for what is left and drops every record
 * from the page cache (prefetch_evict), and each record read back is dropped again. No
 * fsync: the unlinked file's metadata need not reach the disk. Read-ahead is off
 * (POSIX_FADV_RANDOM, and MADV_RANDOM in backward: advise_mapping), so reading a record
 * does not bring back its neighbours already read and dropped.
 *
 * The helper thread reads with preadv in every mode: a file descriptor stays valid while
 * the file grows, a mapping may be replaced. syscalls is the default: the mmap path pays a
 * page fault per page each way and a TLB flush per madvise (docs/MEASUREMENTS.md, 8.7).
 */
#define _GNU_SOURCE /* madvise, statx, asprintf */

#include "offload/offload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/platform.h"
#include "offload/prefetch.h"

_Static_assert(OFFLOAD_MAX_IO_THREADS <= PREFETCH_MAX_THREADS, "the prefetcher runs every thread offload allows");

#define RECORD_MAGIC 0x464f4d52u /* "RMOF" */
#define HEADER_BYTES 64

/* A record's header, as written at its start. Every field is fixed-size and there is no
 * padding, so a header read back can be compared with the one kept in RAM by memcmp. */
typedef struct RecordHeader {
    uint32_t magic;
    uint32_t dtype;
    uint64_t sequence;                 /* records this offloader wrote before this one */
    uint64_t bytes;                    /* the data's size */
    int32_t ndim;
    int32_t shape[TENSOR_MAX_DIMS];
    uint32_t crc;                      /* CRC-32C of the data */
} RecordHeader;

_Static_assert(sizeof(RecordHeader) == 48 && sizeof(RecordHeader) <= HEADER_BYTES,
               "the header has no padding and fits before the data");

/* What a saved slot holds: a tensor kept in RAM, or where its record is in the file. */
typedef struct Record {
    Tensor *kept;          /* one reference, if the tensor stayed in RAM; NULL: on disk */
    size_t index;          /* position among the records written since the last reset */
    size_t offset;         /* where the record starts in the file (page-aligned) */
    size_t span;           /* its length in the file: whole pages */
    RecordHeader header;   /* what was written, to check what is read back */
    Tensor *busy;          /* the tensor the helper thread writes from (written behind: until
                              the write is seen finished) or reads into (read ahead: handed to
                              unpack); one reference, or NULL */
    PrefetchIo io;         /* its write or read (record_io), owned by the thread while queued
                              (a record's write is finished before its read is queued) */
    union {                /* the header written, or read back */
        RecordHeader header;
        unsigned char bytes[HEADER_BYTES];
    } head;
    uint32_t read_crc;     /* read back: the CRC-32C of the data read */
    bool prefetched;       /* a read-ahead was asked for, or unpack read it itself: no read
                              ahead of it is wanted any more */
    bool failed;           /* its write behind failed: it holds nothing and DISK was not charged */
    char what[NODE_NAME_LEN + 64]; /* "saved tensor 0 of ...", for messages */
} Record;

struct Offload {
    OffloadOptions opts;
    char *dir;             /* owned copy of where the file lives */
    SavedHooks hooks;      /* pack, unpack and release with this offloader as ctx */
    int fd;                /* the spill file, unlinked */
    unsigned char *map;    /* io mmap: the whole file, MAP_SHARED; NULL otherwise or while empty */
    size_t capacity;       /* the file's size */
    size_t tail;           /* where the next record goes */
    size_t page;
    Record **order;        /* records written since the last reset, in order; NULL once released */
    size_t count, order_capacity;
    size_t finished;       /* order[finished, count) are still being written behind */
    size_t writing_bytes;  /* their data's bytes */
    bool write_failed;     /* a write behind failed and was reported, since the last reset */
    uint64_t sequence;
    Prefetcher *prefetcher; /* moves the bytes: here, and on helper threads (prefetch.h) */
    OffloadStats stats;
};

static size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

/* "short write", or the errno's text, with a hint for the errors of a full disk. */
static const char *io_error_str(char *buf, size_t size, int err, bool write)
{
    snprintf(buf, size, "%s%s", err < 0 ? (write ? "short write" : "short read") : strerror(err),
             err == ENOSPC ? " (the disk is full)"
             : err == EFBIG ? " (the file-size limit, ulimit -f, was reached)"
             : err == EDQUOT ? " (the disk quota is used up)" : "");
    return buf;
}

/* ---- options ------------------------------------------------------------------------- */

static const char *const POLICY_NAMES[] = {"all", "large", "boundary"};
const NameTable OFFLOAD_POLICY_NAMES = {POLICY_NAMES, sizeof POLICY_NAMES / sizeof POLICY_NAMES[0]};

bool offload_spills(const OffloadOptions *o, size_t bytes, const char *tag)
{
    if (bytes < o->min_bytes) return false;
    switch (o->policy) {
    case OFFLOAD_ALL:
        return true;
    case OFFLOAD_LARGE:
        return bytes >= o->large_bytes ||
               (o->tag_prefix && tag && !strncmp(tag, o->tag_prefix, strlen(o->tag_prefix)));
    case OFFLOAD_BOUNDARY:
        return tag && !strcmp(tag, TAG_CHECKPOINT_INPUT);
    }
    return false;
}

/* ---- the spill file ------------------------------------------------------------------ */

/* Grows the file to hold `need` bytes, in steps of OFFLOAD_GROW_BYTES (and, for io mmap,
 * maps all of it). posix_fallocate reserves the blocks, so a full disk shows here, as an
 * error, rather than as a failed write — or, through a mapping, a SIGBUS — in the middle
 * of a record. On error the file and mapping stay as they were. */
static RematStatus grow(Offload *off, size_t need, const char *what)
{
    const size_t capacity = round_up(need, OFFLOAD_GROW_BYTES);
    char from[32], to[32], cause[128];
    mem_format_bytes(from, sizeof from, off->capacity);
    mem_format_bytes(to, sizeof to, capacity);
    int err = posix_fallocate(off->fd, (off_t)off->capacity, (off_t)(capacity - off->capacity));
    if (err)
        return remat_fail(REMAT_EIO, "offload: cannot write %s: the spill file in %s cannot grow from %s to %s: %s",
                          what, off->dir, from, to, io_error_str(cause, sizeof cause, err, true));
    if (off->opts.io == OFFLOAD_IO_MMAP) {
        void *map = mmap(NULL, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, off->fd, 0);
        if (map == MAP_FAILED)
            return remat_fail(REMAT_EIO, "offload: cannot write %s: mapping the %s spill file in %s failed: %s",
                              what, to, off->dir, strerror(errno));
        if (off->map) munmap(off->map, off->capacity);
        off->map = map;
    }
    off->capacity = capacity;
    return REMAT_OK;
}

/* REMAT_ECORRUPT: the spill file, `size` bytes, is shorter than record `r` (it was truncated
 * behind our back). The mapping goes (touching its missing pages would raise SIGBUS) and
 * the next write grows the file anew. */
static RematStatus truncated(Offload *off, const Record *r, bool write, long long size, const char *how)
{
    if (off->map) munmap(off->map, off->capacity);
    off->map = NULL;
    off->capacity = 0;
    return remat_fail(REMAT_ECORRUPT, "offload: cannot %s %s: the spill file in %s is %lld bytes long but its "
                      "record %zu ends at byte %zu (the file was truncated%s)", write ? "write" : "read back", r->what,
                      off->dir, size, r->index, r->offset + r->span, how);
}

/* ---- moving the bytes ---------------------------------------------------------------- */

/* Fills r->io, the transfer of record `r` between the file and `t`, on the computing thread
 * or the helper's: written, its header (r->header, with the checksum of the data stored
 * in it first) and `t`'s bytes; read back, the header into r->head and the data into `t`,
 * and the data's checksum into r->read_crc. With drop_cache the record then leaves the
 * page cache (prefetch_evict). */
static void record_io(const Offload *off, Record *r, bool write, Tensor *t)
{
    memset(r->head.bytes, 0, sizeof r->head.bytes);
    if (write) r->head.header = r->header;
    r->io = (PrefetchIo){.write = write, .head = r->head.bytes, .head_bytes = HEADER_BYTES, .data = t->data,
                         .data_bytes = t->bytes, .pad_bytes = r->span - HEADER_BYTES - t->bytes,
                         .offset = (off_t)r->offset, .crc = write ? &r->head.header.crc : &r->read_crc,
                         .evict = off->opts.drop_cache && off->opts.io != OFFLOAD_IO_DIRECT};
}

/* r->io failed: REMAT_EIO with its errno (or -1: cut short), or REMAT_ECORRUPT if a copy
 * through the mapping faulted because the file was truncated. */
static RematStatus transfer_failed(Offload *off, const Record *r)
{
    const bool write = r->io.write;
    struct stat st;
    if (r->io.error == PREFETCH_TRUNCATED)
        return truncated(off, r, write, fstat(off->fd, &st) == 0 ? (long long)st.st_size : -1, "; SIGBUS caught");
    char cause[128];
    return remat_fail(REMAT_EIO, "offload: cannot %s %s %s the spill file in %s: %s", write ? "write" : "read back",
                      r->what, write ? "to" : "from", off->dir, io_error_str(cause, sizeof cause, r->io.error, write));
}

/* Does r->io (record_io) now, on the computing thread, by prefetch_transfer: for io mmap
 * through the mapping (see the top of this file). */
static RematStatus transfer(Offload *off, Record *r)
{
    r->io.map = off->opts.io == OFFLOAD_IO_MMAP ? off->map + r->offset : NULL;
    return prefetch_transfer(off->prefetcher, &r->io) ? transfer_failed(off, r) : REMAT_OK;
}

/* ---- records ------------------------------------------------------------------------- */

/* Whether records are written behind the forward, on the helper thread (io syscalls and direct:
 * the mmap path copies into the mapping on the computing thread). */
static bool writes_behind(const OffloadOptions *o) { return o->write_behind > 0 && o->io != OFFLOAD_IO_MMAP; }

/* The helper threads that write behind and read ahead: none if nothing is, else io_threads
 * (at least one). */
static int helper_threads(const OffloadOptions *o)
{
    return o->prefetch == 0 && !writes_behind(o) ? 0 : o->io_threads > 0 ? o->io_threads : 1;
}

/* A record's write is done and was seen to be: DISK is charged its bytes. */
static void count_written(Offload *off, Record *r)
{
    r->header = r->head.header; /* with the checksum computed as it was written */
    mem_account(MEM_DISK, (int64_t)r->header.bytes); /* DISK is not resident: no budget to cross */
    off->stats.records_written++;
    off->stats.bytes_written += r->header.bytes;
}

/* The helper thread's time on `r`'s transfer, once waited for. */
static void count_thread(Offload *off, const Record *r, double *seconds, size_t *bytes)
{
    *seconds += r->io.seconds;
    off->stats.thread_cpu_seconds += r->io.cpu_seconds;
    if (!r->io.error) *bytes += r->span;
}

/* Waits for the writes behind, oldest first, until at most `in_flight` are left and, when
 * `bytes` more are about to be written behind with write_behind_bytes set, until they fit
 * in that many beside those left (or none is left). Each write seen done lets its tensor
 * go (ACT falls if that was the last reference) and charges DISK, or marks its record
 * failed; the first failure since the last reset is reported (REMAT_EIO). Deterministic:
 * which writes are finished at a given point depends on the records' count and sizes
 * only, never on the thread's speed, so the ledger's figures are the same run after run. */
static RematStatus finish_writes(Offload *off, size_t in_flight, size_t bytes)
{
    const size_t budget = bytes ? off->opts.write_behind_bytes : 0;
    RematStatus status = REMAT_OK;
    while (off->count - off->finished > in_flight ||
           (budget && off->count > off->finished && off->writing_bytes + bytes > budget)) {
        Record *r = off->order[off->finished++];
        prefetch_wait(off->prefetcher, &r->io);
        off->writing_bytes -= r->header.bytes;
        tensor_free(r->busy);
        r->busy = NULL;
        count_thread(off, r, &off->stats.thread_write_seconds, &off->stats.thread_write_bytes);
        r->failed = r->io.error != 0;
        if (!r->failed) count_written(off, r);
        if (!r->failed || off->write_failed) continue; /* the step already failed with the first one */
        off->write_failed = true;
        off->stats.failures++;
        if (status == REMAT_OK) status = transfer_failed(off, r);
    }
    return status;
}

/* Appends `t` to the file as a record described by `r`: written now, or handed to the
 * helper thread when writing behind. On error the ledger is unchanged and the tail does
 * not move, so nothing of it counts. */
static RematStatus write_record(Offload *off, Record *r, Tensor *t)
{
    if (off->count == off->order_capacity) {
        size_t capacity = off->order_capacity ? 2 * off->order_capacity : 64;
        Record **order = realloc(off->order, capacity * sizeof *order);
        if (!order) return remat_fail(REMAT_ENOMEM, "offload: cannot write %s: no memory for its record", r->what);
        off->order = order;
        off->order_capacity = capacity;
    }
    const size_t span = round_up(HEADER_BYTES + t->bytes, off->page);
    RematStatus status = off->tail + span > off->capacity ? grow(off, off->tail + span, r->what) : REMAT_OK;
    if (status != REMAT_OK) return status;
    r->index = off->count;
    r->offset = off->tail;
    r->span = span;
    r->header = (RecordHeader){.magic = RECORD_MAGIC, .dtype = (uint32_t)t->dtype, .sequence = off->sequence,
                               .bytes = t->bytes, .ndim = t->ndim};
    for (int d = 0; d < TENSOR_MAX_DIMS; d++) r->header.shape[d] = t->shape[d];
    record_io(off, r, true, t);
    if (writes_behind(&off->opts)) { /* `r` keeps `t` until finish_writes sees the write done */
        r->busy = tensor_retain(t);
        off->writing_bytes += t->bytes;
        prefetch_submit(off->prefetcher, &r->io);
    } else {
        status = transfer(off, r);
        if (status != REMAT_OK) return status;
        count_written(off, r);
        off->finished++; /* nothing is in flight */
    }
    off->order[off->count++] = r;
    off->stats.live_records++;
    off->tail += span;
    off->sequence++;
    return REMAT_OK;
}

/* Reads record `r` back into a new tensor (one reference, the caller's) and checks it:
 * the file still holds the whole record, its header is the one written, its data has the
 * checksum it was written with. NULL on error. */
static Tensor *read_record(Offload *off, Record *r)
{
    const char *what = r->what;
    struct stat st;
    if (fstat(off->fd, &st) != 0)
        return remat_fail_null(REMAT_EIO, "offload: cannot read back %s: fstat of the spill file failed: %s", what,
                               strerror(errno));
    if ((size_t)st.st_size < r->offset + r->span || r->offset + r->span > off->capacity) {
        truncated(off, r, false, (long long)st.st_size, "");
        return NULL;
    }
    const RecordHeader *h = &r->header;
    RematStatus status = REMAT_OK;
    Tensor *t = r->busy; /* its write was seen finished: a tensor here was read ahead */
    if (t) { /* read ahead, and checksummed, by the helper thread: wait for it, counting the wait */
        r->busy = NULL;
        const double start = platform_seconds();
        const bool waited = prefetch_wait(off->prefetcher, &r->io);
        off->stats.reads_waited += waited;
        off->stats.read_wait_seconds += waited ? platform_seconds() - start : 0.0;
        count_thread(off, r, &off->stats.thread_read_seconds, &off->stats.thread_read_bytes);
        if (r->io.error) status = transfer_failed(off, r);
    } else {
        r->prefetched = true; /* read here: a window moving past it must not read it again */
        t = tensor_create(MEM_ACT, (DType)h->dtype, h->ndim, h->shape);
        if (!t) return NULL;
        record_io(off, r, false, t);
        status = transfer(off, r);
    }
    if (status == REMAT_OK && memcmp(&r->head.header, h, sizeof *h))
        status = remat_fail(REMAT_ECORRUPT, "offload: cannot read back %s: the header of its record %zu (at byte "
                            "%zu of the spill file in %s) is not the one written: the file was changed", what,
                            r->index, r->offset, off->dir);
    if (status == REMAT_OK && r->read_crc != h->crc) {
        char size[32];
        status = remat_fail(REMAT_ECORRUPT, "offload: %s is corrupt in the spill file in %s: record %zu (%s at "
                            "byte %zu) has checksum 0x%08x, it was written with 0x%08x (the file was changed "
                            "after it was written, or the disk returned bad data)", what, off->dir, r->index,
                            mem_format_bytes(size, sizeof size, t->bytes), r->offset + HEADER_BYTES, r->read_crc,
                            h->crc);
    }
    if (status == REMAT_OK) return t;
    tensor_free(t);
    return NULL;
}

/* Starts reading back the live records written just before position `end` — backward
 * unpacks in the reverse order of the forward's packs — as many as the window holds: at
 * most `prefetch` records, and with prefetch_bytes at most that many bytes of data between
 * them, but always the next one. Records already read ahead count in the window: their
 * tensors are resident. A record whose tensor cannot be allocated now (the budget) is
 * simply read when unpack asks for it. */
static void prefetch_before(Offload *off, size_t end)
{
    const size_t budget = off->opts.prefetch_bytes;
    int window = off->opts.prefetch;
    size_t bytes = 0;
    for (size_t i = end; i > 0 && window > 0; i--) {
        Record *r = off->order[i - 1];
        if (!r) continue;
        if (budget && bytes > 0 && bytes + r->header.bytes > budget) break;
        window--;
        bytes += r->header.bytes;
        if (r->prefetched) continue;
        const RecordHeader *h = &r->header;
        r->busy = tensor_create(MEM_ACT, (DType)h->dtype, h->ndim, h->shape);
        if (!r->busy) continue;
        r->prefetched = true;
        record_io(off, r, false, r->busy);
        prefetch_submit(off->prefetcher, &r->io);
        off->stats.prefetched++;
    }
}

/* io mmap with drop_cache: how page faults read the file. In backward (MADV_RANDOM) a
 * fault reads its page and no neighbours, which read-around would bring back into the
 * cache when they were already read and dropped. In the forward (MADV_NORMAL) a write
 * fault on a page no longer cached reads it from the disk before the copy overwrites it,
 * and read-around batches those reads, 10 to 50 times faster than one page at a time
 * (docs/MEASUREMENTS.md, 8.4; FALLOC_FL_ZERO_RANGE first was slower still). */
static void advise_mapping(Offload *off, int advice)
{
    if (off->map && off->opts.drop_cache) (void)madvise(off->map, off->capacity, advice);
}

/* How many bytes of the records written since the file was last reset (their pages, header
 * and padding included) are in the page cache now, into *cached: mincore on a mapping of
 * the records made for the question (it maps no page in, and is gone at once). REMAT_EIO
 * if the kernel cannot tell. */
static RematStatus cached_bytes(const Offload *off, size_t *cached)
{
    const size_t bytes = off->tail;
    *cached = 0;
    if (bytes == 0) return REMAT_OK;
    void *map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, off->fd, 0);
    const size_t pages = (bytes + off->page - 1) / off->page;
    unsigned char *in = map == MAP_FAILED ? NULL : malloc(pages);
    const int err = map == MAP_FAILED ? errno : !in ? ENOMEM : mincore(map, bytes, in) != 0 ? errno : 0;
    for (size_t i = 0; !err && i < pages; i++) *cached += (in[i] & 1) ? off->page : 0;
    free(in);
    if (map != MAP_FAILED) munmap(map, bytes);
    if (err) return remat_fail(REMAT_EIO, "offload: cannot tell what of the spill file in %s is in the page cache: "
                               "%s", off->dir, strerror(err));
    return REMAT_OK;
}

/* ---- the hooks ----------------------------------------------------------------------- */

/* Counts the last failure if the spill file caused it (not, say, the memory budget). */
static void count_failure(Offload *off)
{
    const RematStatus s = remat_last_status();
    if (s == REMAT_EIO || s == REMAT_ECORRUPT) off->stats.failures++;
}

static void *offload_pack(void *ctx, Tensor *t, const Node *node, int slot)
{
    Offload *off = ctx;
    Record *r = calloc(1, sizeof *r);
    if (!r)
        return remat_fail_null(REMAT_ENOMEM, "offload: no memory to save tensor %d of %s #%d", slot, node->op->name,
                               node->index);
    if (t->kind != MEM_ACT || !offload_spills(&off->opts, t->bytes, node->tag)) {
        r->kept = tensor_retain(t);
        off->stats.kept++;
        return r;
    }
    snprintf(r->what, sizeof r->what, "saved tensor %d of %s #%d (%s)", slot, node->op->name, node->index, node->name);
    const double start = platform_seconds();
    /* Writing behind: at most write_behind records (and write_behind_bytes) in flight, this
     * one included. A failed earlier write fails this pack: the next point where the
     * forward can hear of it. */
    const size_t in_flight = (size_t)off->opts.write_behind - 1;
    RematStatus status = writes_behind(&off->opts) ? finish_writes(off, in_flight, t->bytes) : REMAT_OK;
    if (status == REMAT_OK) {
        status = write_record(off, r, t);
        if (status != REMAT_OK) count_failure(off);
    }
    off->stats.write_seconds += platform_seconds() - start;
    if (status == REMAT_OK) return r;
    free(r);
    return NULL;
}

static Tensor *offload_unpack(void *ctx, void *packed, const Node *node, int slot)
{
    Offload *off = ctx;
    Record *r = packed;
    if (r->kept) return tensor_retain(r->kept);
    (void)node; /* the record names what it holds: r->what */
    (void)slot;
    const double start = platform_seconds();
    Tensor *t = NULL;
    if (finish_writes(off, off->count - r->index - 1, 0) != REMAT_OK) {
        /* still being written (hooks left pushed into backward), and a write failed */
    } else if (r->failed) {
        remat_fail(REMAT_EIO, "offload: cannot read back %s: its record could not be written", r->what);
        off->stats.failures++;
    } else {
        prefetch_before(off, r->index);
        t = read_record(off, r);
        if (!t) count_failure(off);
    }
    off->stats.read_seconds += platform_seconds() - start;
    if (t) off->stats.records_read++;
    return t;
}

static void offload_release(void *ctx, void *packed)
{
    Offload *off = ctx;
    Record *r = packed;
    if (r->kept) {
        tensor_free(r->kept);
    } else {
        /* Still being written (the forward failed before offload_pop): wait for it. */
        (void)finish_writes(off, off->count - r->index - 1, 0);
        if (r->busy) { /* read ahead but never unpacked (backward stopped early) */
            prefetch_wait(off->prefetcher, &r->io);
            tensor_free(r->busy);
        }
        if (!r->failed) mem_account(MEM_DISK, -(int64_t)r->header.bytes);
        off->order[r->index] = NULL;
        if (--off->stats.live_records == 0) { /* the next step starts at byte 0 */
            advise_mapping(off, MADV_NORMAL);
            off->count = off->finished = off->tail = off->writing_bytes = 0;
            off->write_failed = false;
        }
    }
    free(r);
}

/* ---- the offloader ------------------------------------------------------------------- */

static bool refuse_direct; /* offload_debug_refuse_direct */

/* io direct: turns O_DIRECT on for the spill file `fd` in `dir`, once sure that what
 * offload transfers meets the file system's alignment: every record starts on a page and
 * is whole pages long, and the bounce buffers are page-aligned, so an alignment of at
 * most the page that divides it will do. The kernel tells it (statx, STATX_DIOALIGN)
 * where it can; else the page is assumed, and a file system that wants more fails the
 * first transfer with EINVAL, a clear error too. */
static RematStatus open_direct(int fd, const char *dir, size_t page)
{
    struct statx sx;
    size_t align = page;
    int err = 0;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        align = sx.stx_dio_offset_align > sx.stx_dio_mem_align ? sx.stx_dio_offset_align : sx.stx_dio_mem_align;
        if (sx.stx_dio_offset_align == 0) err = EINVAL; /* the kernel's way of saying: no direct I/O here */
    }
    if (!err && (align > page || page % align))
        return remat_fail(REMAT_EIO, "offload: the file system of %s asks direct I/O to be aligned to %zu bytes, "
                          "more than a page (%zu): records cannot be written there with O_DIRECT; put the spill "
                          "file elsewhere (--offload-dir) or keep the page cache", dir, align, page);
    const int flags = fcntl(fd, F_GETFL);
    if (!err) err = refuse_direct ? EINVAL : flags < 0 || fcntl(fd, F_SETFL, flags | O_DIRECT) != 0 ? errno : 0;
    if (err)
        return remat_fail(REMAT_EIO, "offload: the file system of %s refuses direct I/O (O_DIRECT: %s); put the "
                          "spill file elsewhere (--offload-dir) or move the bytes through the page cache", dir,
                          strerror(err));
    return REMAT_OK;
}

/* Creates the spill file in `dir` without a name (O_TMPFILE), so that a process killed at
 * any moment leaves nothing behind; where the file system lacks O_TMPFILE, as
 * remat-spill-XXXXXX, unlinked at once. Returns its descriptor (close-on-exec, as
 * file_create_new makes it: a child process has no business with it); -1 with REMAT_EIO
 * saying why (and what to check) on error. */
static int spill_file_open(const char *dir)
{
    char *path;
    if (asprintf(&path, "%s/remat-spill-XXXXXX", dir) < 0)
        return remat_fail(REMAT_ENOMEM, "offload_create: no memory"), -1;
    bool named;
    int fd = file_create_new(dir, path, true, &named);
    int err = fd < 0 ? errno : named && unlink(path) != 0 ? errno : 0;
    free(path);
    if (err) {
        if (fd >= 0) close(fd);
        remat_fail(REMAT_EIO, "offload: cannot create a spill file in %s: %s%s", dir, strerror(err),
                   err == ENOENT ? " (does the directory exist?)"
                   : err == ENOTDIR ? " (it is not a directory)"
                   : err == EACCES || err == EPERM || err == EROFS ? " (the directory is not writable)" : "");
        return -1;
    }
    return fd;
}

/* The directory for the spill file: opts->dir, else $TMPDIR, else /tmp. NULL with
 * REMAT_EINVAL for options offload_create cannot take. */
static const char *spill_dir(const OffloadOptions *opts)
{
    if (!opts || (unsigned)opts->policy > OFFLOAD_BOUNDARY || (unsigned)opts->io > OFFLOAD_IO_DIRECT ||
        opts->prefetch < 0 || opts->write_behind < 0 || (unsigned)opts->io_threads > OFFLOAD_MAX_IO_THREADS)
        return remat_fail_null(REMAT_EINVAL, "offload_create: need options with a known policy and io, prefetch >= 0, "
                               "write_behind >= 0 and io_threads from 0 to %d", OFFLOAD_MAX_IO_THREADS);
    /* An empty path would put the file in "/" (the path is DIR/remat-spill-XXXXXX). */
    if (opts->dir && !opts->dir[0])
        return remat_fail_null(REMAT_EINVAL, "offload: the directory for the spill file is an empty path; name a "
                               "directory, or give none for $TMPDIR (else /tmp)");
    const char *env = getenv("TMPDIR");
    return opts->dir ? opts->dir : env && env[0] ? env : "/tmp";
}

Offload *offload_create(const OffloadOptions *opts)
{
    const char *dir = spill_dir(opts);
    if (!dir) return NULL;
    Offload *off = calloc(1, sizeof *off);
    if (!off || !(off->dir = strdup(dir))) {
        free(off);
        return remat_fail_null(REMAT_ENOMEM, "offload_create: no memory");
    }
    off->opts = *opts;
    off->opts.dir = off->dir;
    off->page = (size_t)sysconf(_SC_PAGESIZE);
    off->fd = spill_file_open(dir);
    const bool direct = opts->io == OFFLOAD_IO_DIRECT;
    bool ok = off->fd >= 0;
    if (ok && direct) ok = open_direct(off->fd, dir, off->page) == REMAT_OK;
    /* With drop_cache no read-ahead (see the top of this file): a record is read in one
     * request, and what lies past it was already read and dropped. */
    if (ok && opts->drop_cache) (void)posix_fadvise(off->fd, 0, 0, POSIX_FADV_RANDOM);
    if (ok) ok = (off->prefetcher = prefetch_create(off->fd, direct, helper_threads(opts))) != NULL;
    if (!ok) {
        offload_free(off); /* nothing is live yet */
        return NULL;
    }
    off->hooks = (SavedHooks){.name = "offload", .pack = offload_pack, .unpack = offload_unpack,
                              .release = offload_release, .ctx = off};
    return off;
}

void offload_free(Offload *off)
{
    if (!off) return;
    if (off->stats.live_records > 0) {
        fprintf(stderr, "remat: offload_free: %zu spilled tensors are still saved on a tape; reset the "
                "tape (or run its backward) before freeing the offloader\n", off->stats.live_records);
        abort();
    }
    prefetch_free(off->prefetcher);
    if (off->map) munmap(off->map, off->capacity);
    if (off->fd >= 0) close(off->fd);
    free(off->order);
    free(off->dir);
    free(off);
}

RematStatus offload_push(Offload *off)
{
    if (!off) return remat_fail(REMAT_EINVAL, "offload_push: the offloader is NULL");
    return saved_hooks_push(&off->hooks);
}

RematStatus offload_pop(Offload *off)
{
    if (!off) return remat_fail(REMAT_EINVAL, "offload_pop: the offloader is NULL");
    saved_hooks_pop();
    const double start = platform_seconds();
    RematStatus status = finish_writes(off, 0, 0); /* counted, if it failed */
    off->stats.write_seconds += platform_seconds() - start;
    if (status != REMAT_OK) return status;
    if (off->write_failed) return REMAT_EIO; /* reported by a pack: the forward failed */
    /* drop_cache (see the top of this file): the last records' write-back is waited for,
     * then the whole file leaves the page cache: the mapping's read-around may have brought
     * in pages past the records, and the last backward's read faults mapped cached
     * neighbours of the pages they read into the process (fault-around), which no DONTNEED
     * of one record's pages unmapped: a mapped page cannot leave the cache. */
    if (off->opts.drop_cache && off->tail) {
        if (off->map) (void)madvise(off->map, off->capacity, MADV_DONTNEED);
        const int err = prefetch_evict(off->fd, 0, off->capacity, true);
        char cause[128];
        if (err) {
            off->stats.failures++;
            return remat_fail(REMAT_EIO, "offload: writing the spill file in %s to the disk failed: %s (the forward's "
                              "saved tensors may be lost)", off->dir, io_error_str(cause, sizeof cause, err, true));
        }
    }
    advise_mapping(off, MADV_RANDOM);
    /* What the page cache still holds of the records: with io direct, nothing to drop, so say so. */
    if (off->opts.drop_cache || off->opts.io == OFFLOAD_IO_DIRECT)
        status = cached_bytes(off, &off->stats.cached_after_forward);
    if (status == REMAT_OK) prefetch_before(off, off->count);
    return status;
}

OffloadStats offload_stats(const Offload *off)
{
    OffloadStats s = off->stats;
    s.file_bytes = off->capacity;
    return s;
}

/* "prefetch 2 records ahead on a helper thread", or with a window of bytes "prefetch up to
 * 16.0 MiB (at most 8 records) ahead on a helper thread" (without the count when it is
 * OFFLOAD_ANY_COUNT or more, which never limits). */
static void window_str(char *buf, size_t size, const char *verb, int records, size_t bytes, const char *where)
{
    char amount[32], count[48] = "";
    if (records < OFFLOAD_ANY_COUNT)
        snprintf(count, sizeof count, " (at most %d record%s)", records, records == 1 ? "" : "s");
    if (bytes)
        snprintf(buf, size, "%s up to %s%s %s on a helper thread", verb, mem_format_bytes(amount, sizeof amount, bytes),
                 count, where);
    else
        snprintf(buf, size, "%s %s%d record%s %s on a helper thread", verb, strcmp(verb, "written") ? "" : "up to ",
                 records, records == 1 ? "" : "s", where);
}

char *offload_describe(const Offload *off, char *buf, size_t size)
{
    static const char *const IO_NAMES[] = {"pwritev/preadv", "mmap", "O_DIRECT pwrite/pread"};
    const OffloadOptions *o = &off->opts;
    char min[32], large[32], prefix[64] = "", what[160] = "every saved activation";
    if (o->tag_prefix) snprintf(prefix, sizeof prefix, " or tagged %s*", o->tag_prefix);
    if (o->policy == OFFLOAD_LARGE)
        snprintf(what, sizeof what, "saved activations of %s or more%s",
                 mem_format_bytes(large, sizeof large, o->large_bytes), prefix);
    if (o->policy == OFFLOAD_BOUNDARY) snprintf(what, sizeof what, "the inputs checkpoint regions keep");
    char ahead[96] = "no prefetch", behind[96] = "written in the forward", threads[48] = "";
    if (o->prefetch > 0) window_str(ahead, sizeof ahead, "prefetch", o->prefetch, o->prefetch_bytes, "ahead");
    if (writes_behind(o))
        window_str(behind, sizeof behind, "written", o->write_behind, o->write_behind_bytes, "behind");
    if (helper_threads(o) > 1) snprintf(threads, sizeof threads, " (%d I/O threads)", o->io_threads);
    snprintf(buf, size, "%s (%s) of %s or more, to a spill file in %s by %s; %s; page cache %s; %s%s",
             name_of(&OFFLOAD_POLICY_NAMES, o->policy), what, mem_format_bytes(min, sizeof min, o->min_bytes), off->dir,
             IO_NAMES[o->io], behind,
             o->io == OFFLOAD_IO_DIRECT ? "not used (backward reads the disk)"
             : o->drop_cache            ? "dropped record by record (backward reads the disk)"
                                        : "kept",
             ahead, threads);
    return buf;
}

/* ---- for tests ----------------------------------------------------------------------- */

int offload_debug_fd(const Offload *off) { return off->fd; }

void offload_debug_refuse_direct(bool refuse) { refuse_direct = refuse; }
