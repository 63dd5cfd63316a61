/*
 * prefetch.c — the read-ahead and write-behind threads and their queue, and the three ways
 * a request's bytes move: pwritev/preadv, O_DIRECT through a bounce buffer, or memcpy
 * through a mapping under a SIGBUS guard (see prefetch.h).
 *
 * One mutex guards the queue, the stop flag and every request's `done`; one condition
 * variable wakes the threads when a request is queued and the caller when one is done.
 * Each thread takes the oldest request queued, so requests start in order; with several
 * threads they run side by side and may finish in any order.
 */
#define _GNU_SOURCE /* madvise, preadv, pwritev, sync_file_range */

#include "offload/prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "offload/crc32c.h"
#include "base/platform.h"

/* The size of a bounce buffer for direct transfers. */
#define BOUNCE_BYTES ((size_t)1 << 20)

/* One of the threads, or the caller's place (workers[0], which runs no thread). */
typedef struct Worker {
    Prefetcher *owner;
    pthread_t thread;
    unsigned char *bounce;    /* its own, page-aligned; only with O_DIRECT, and then every transfer uses it */
} Worker;

struct Prefetcher {
    int fd;
    int threads;              /* started, in workers[1, threads] */
    Worker workers[PREFETCH_MAX_THREADS + 1];
    pthread_mutex_t lock;
    pthread_cond_t changed;
    PrefetchIo *first, *last; /* the queue, oldest first */
    bool stop;
};

int prefetch_evict(int fd, off_t offset, size_t bytes, bool drop)
{
    const unsigned wait = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WAIT_AFTER;
    if (sync_file_range(fd, offset, (off_t)bytes, SYNC_FILE_RANGE_WRITE | (drop ? wait : 0)) != 0) return errno;
    return drop ? posix_fadvise(fd, offset, (off_t)bytes, POSIX_FADV_DONTNEED) : 0;
}

/* Copies `n` bytes between `buf` and the request's header, data and padding taken as one
 * run, from byte `pos` of it: into buf for a write (the padding as zeros), out of buf
 * for a read (the padding dropped). buf is a bounce buffer, or the record in a mapping. */
static void copy_run(const PrefetchIo *io, size_t pos, unsigned char *buf, size_t n)
{
    const struct {
        unsigned char *at;
        size_t bytes;
    } parts[3] = {{io->head, io->head_bytes}, {io->data, io->data_bytes}, {NULL, io->pad_bytes}};
    for (int k = 0; k < 3 && n > 0; k++) {
        if (pos >= parts[k].bytes) {
            pos -= parts[k].bytes;
            continue;
        }
        const size_t m = parts[k].bytes - pos < n ? parts[k].bytes - pos : n;
        if (io->write && parts[k].at) memcpy(buf, parts[k].at + pos, m);
        else if (io->write) memset(buf, 0, m);
        else if (parts[k].at) memcpy(parts[k].at + pos, buf, m);
        buf += m;
        n -= m;
        pos = 0;
    }
}

/* A direct request of `total` bytes: through `bounce`, a bounce buffer's worth at a time. */
static int transfer_direct(int fd, const PrefetchIo *io, size_t total, unsigned char *bounce)
{
    for (size_t done = 0; done < total;) {
        const size_t n = total - done < BOUNCE_BYTES ? total - done : BOUNCE_BYTES;
        const off_t at = io->offset + (off_t)done;
        if (io->write) copy_run(io, done, bounce, n);
        const ssize_t moved = io->write ? pwrite(fd, bounce, n, at) : pread(fd, bounce, n, at);
        if (moved < 0) return errno;
        if ((size_t)moved != n) return -1;
        if (!io->write) copy_run(io, done, bounce, n);
        done += n;
    }
    return 0;
}

/* ---- through a mapping ----------------------------------------------------------------- */

/* A MAP_SHARED mapping outlives the file's length: once the spill file is truncated, an
 * access to a mapped page past the new end raises SIGBUS. For the length of the copies, a
 * SIGBUS handler of ours replaces the process's (and is put back right after, so a program
 * that installs its own still gets every SIGBUS outside the copies); if the copying thread
 * faults, it jumps back (siglongjmp) and the copy reports the truncation. SIGBUS goes to
 * the thread that faulted and the guard is thread-local, so a fault on another thread is
 * not ours: the handler puts back the old handler and returns, the access runs again, and
 * the old handler deals with it. Jumping out of memcpy abandons it half way, which is safe:
 * memcpy holds no lock nor state beyond its registers, and nothing it wrote is used after. */
/* Set while this thread copies under the guard. volatile: the handler reads it, so the
 * compiler must store it before the copies, though memcpy never reads it. */
static _Thread_local sigjmp_buf *volatile bus_guard;
static struct sigaction saved_bus_action;   /* the handler the guard replaced */

static void on_sigbus(int signal_number)
{
    (void)signal_number;
    if (bus_guard) siglongjmp(*bus_guard, 1);
    sigaction(SIGBUS, &saved_bus_action, NULL);
}

/* Copies io's header and data to (a write) or from (a read) io->map, under the guard, then
 * hands the record's pages back (MADV_DONTNEED: a write's dirty contents stay in the page
 * cache, to be written back). PREFETCH_TRUNCATED if a copy faulted because the file no
 * longer holds the pages it touched (then it may be partly done). */
static int transfer_mapped(const PrefetchIo *io, size_t record)
{
    struct sigaction action = {.sa_handler = on_sigbus};
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &saved_bus_action);
    sigjmp_buf env;
    volatile bool faulted = false; /* written after sigsetjmp, read after the jump */
    if (sigsetjmp(env, 1) == 0) { /* 1: the jump also restores the signal mask */
        bus_guard = &env;
        copy_run(io, 0, io->map, io->head_bytes + io->data_bytes); /* the padding's pages are left alone */
    } else {
        faulted = true;
    }
    bus_guard = NULL;
    sigaction(SIGBUS, &saved_bus_action, NULL);
    if (faulted) return PREFETCH_TRUNCATED;
    return madvise(io->map, record, MADV_DONTNEED) != 0 ? errno : 0;
}

/* The zeros a write pads its record with (a page is at most this large where remat runs;
 * a larger pad is left unwritten, which only costs the read of a partial page). */
static const unsigned char ZEROS[(size_t)64 << 10];

/* A request by one pwritev or preadv. */
static int transfer_vectored(int fd, const PrefetchIo *io)
{
    const size_t pad = io->write && io->pad_bytes <= sizeof ZEROS ? io->pad_bytes : 0;
    const size_t bytes = io->head_bytes + io->data_bytes + pad;
    if (bytes == 0) return 0;
    const struct iovec iov[3] = {{io->head, io->head_bytes}, {io->data, io->data_bytes}, {(void *)ZEROS, pad}};
    const ssize_t n = io->write ? pwritev(fd, iov, 3, io->offset) : preadv(fd, iov, 2, io->offset);
    return n < 0 ? errno : (size_t)n != bytes ? -1 : 0;
}

/* The CPU time the calling thread has used, in seconds. */
static double thread_cpu_seconds(void)
{
    struct timespec ts;
    return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0 ? (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec : 0.0;
}

/* Does `io` on the calling thread, `w`, as prefetch_transfer describes it: a write's
 * checksum is taken before its bytes move, a read's after. */
static int run(const Worker *w, PrefetchIo *io)
{
    const double start = platform_seconds(), cpu_start = thread_cpu_seconds();
    const int fd = w->owner->fd;
    const size_t record = io->head_bytes + io->data_bytes + io->pad_bytes;
    if (io->write && io->crc) *io->crc = crc32c(io->data, io->data_bytes);
    int error = w->bounce ? transfer_direct(fd, io, record, w->bounce)
              : io->map   ? transfer_mapped(io, record)
                          : transfer_vectored(fd, io);
    if (!error && io->evict) error = prefetch_evict(fd, io->offset, record, !io->write);
    if (!error && !io->write && io->crc) *io->crc = crc32c(io->data, io->data_bytes);
    io->seconds = platform_seconds() - start;
    io->cpu_seconds = thread_cpu_seconds() - cpu_start;
    io->error = error;
    return error;
}

/* A thread: take the oldest queued request, do it without the lock, mark it done. */
static void *prefetch_thread(void *arg)
{
    const Worker *w = arg;
    Prefetcher *p = w->owner;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && !p->first) pthread_cond_wait(&p->changed, &p->lock);
        if (!p->first) break; /* stopping, and nothing left to do */
        PrefetchIo *io = p->first;
        p->first = io->next;
        if (!p->first) p->last = NULL;
        pthread_mutex_unlock(&p->lock);

        run(w, io); /* io->error says how it went */

        pthread_mutex_lock(&p->lock);
        io->done = true;
        pthread_cond_broadcast(&p->changed);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Also what a failed prefetch_create calls: only the `p->threads` it started are joined. */
void prefetch_free(Prefetcher *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    for (int k = 1; k <= p->threads; k++) pthread_join(p->workers[k].thread, NULL);
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
    for (int k = 0; k <= PREFETCH_MAX_THREADS; k++) free(p->workers[k].bounce);
    free(p);
}

Prefetcher *prefetch_create(int fd, bool direct, int threads)
{
    Prefetcher *p = calloc(1, sizeof *p);
    if (!p)
        return remat_fail_null(REMAT_ENOMEM, "prefetch: no memory for the I/O threads' state");
    p->fd = fd;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    for (int k = 0; k <= threads; k++) {
        Worker *w = &p->workers[k];
        w->owner = p;
        if (direct && posix_memalign((void **)&w->bounce, (size_t)sysconf(_SC_PAGESIZE), BOUNCE_BYTES)) {
            prefetch_free(p); /* joins those that started */
            return remat_fail_null(REMAT_ENOMEM, "prefetch: no memory for a %zu-byte bounce buffer", BOUNCE_BYTES);
        }
        const int err = k ? pthread_create(&w->thread, NULL, prefetch_thread, w) : 0;
        if (err) {
            prefetch_free(p);
            return remat_fail_null(REMAT_ENOMEM, "prefetch: cannot start an I/O thread (error %d)", err);
        }
        p->threads = k;
    }
    return p;
}

void prefetch_submit(Prefetcher *p, PrefetchIo *io)
{
    pthread_mutex_lock(&p->lock);
    io->done = false;
    io->error = 0;
    io->next = NULL;
    if (p->last) p->last->next = io;
    else p->first = io;
    p->last = io;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
}

int prefetch_transfer(Prefetcher *p, PrefetchIo *io) { return run(&p->workers[0], io); }

bool prefetch_wait(Prefetcher *p, PrefetchIo *io)
{
    pthread_mutex_lock(&p->lock);
    const bool blocked = !io->done;
    while (!io->done) pthread_cond_wait(&p->changed, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return blocked;
}
