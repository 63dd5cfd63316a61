/*
 * prefetch.c — the read-ahead and write-behind thread and its queue (see prefetch.h).
 *
 * One mutex guards the queue, the stop flag and every request's `done`; one condition
 * variable wakes the thread when a request is queued and the caller when one is done.
 */
#define _GNU_SOURCE /* preadv, pwritev, sync_file_range */

#include "prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "crc32c.h"

struct Prefetcher {
    int fd;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    PrefetchIo *first, *last; /* the queue, oldest first */
    bool stop;
};

int prefetch_evict(int fd, off_t offset, size_t bytes)
{
    const unsigned flags = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
    if (sync_file_range(fd, offset, (off_t)bytes, flags) != 0) return errno;
    return posix_fadvise(fd, offset, (off_t)bytes, POSIX_FADV_DONTNEED);
}

int prefetch_start_writeback(int fd, off_t offset, size_t bytes)
{
    return sync_file_range(fd, offset, (off_t)bytes, SYNC_FILE_RANGE_WRITE) != 0 ? errno : 0;
}

/* The zeros a write pads its record with (a page is at most this large where remat runs;
 * a larger pad is left unwritten, which only costs the read of a partial page). */
static const unsigned char ZEROS[(size_t)64 << 10];

int prefetch_transfer(int fd, PrefetchIo *io)
{
    if (io->write && io->crc) *io->crc = crc32c(io->data, io->data_bytes);
    const size_t pad = io->write && io->pad_bytes <= sizeof ZEROS ? io->pad_bytes : 0;
    const size_t bytes = io->head_bytes + io->data_bytes + pad;
    int error = 0;
    if (bytes > 0) {
        const struct iovec iov[3] = {{io->head, io->head_bytes}, {io->data, io->data_bytes}, {(void *)ZEROS, pad}};
        const ssize_t n = io->write ? pwritev(fd, iov, 3, io->offset) : preadv(fd, iov, 2, io->offset);
        error = n < 0 ? errno : (size_t)n != bytes ? -1 : 0;
    }
    if (!error && io->evict)
        error = io->write ? prefetch_start_writeback(fd, io->offset, io->evict_bytes)
                          : prefetch_evict(fd, io->offset, io->evict_bytes);
    io->error = error;
    return error;
}

/* The thread: take the oldest queued request, do it without the lock, mark it done. */
static void *prefetch_thread(void *arg)
{
    Prefetcher *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && !p->first) pthread_cond_wait(&p->changed, &p->lock);
        if (!p->first) break; /* stopping, and nothing left to do */
        PrefetchIo *io = p->first;
        p->first = io->next;
        if (!p->first) p->last = NULL;
        pthread_mutex_unlock(&p->lock);

        const int error = prefetch_transfer(p->fd, io);

        pthread_mutex_lock(&p->lock);
        io->error = error;
        io->done = true;
        pthread_cond_broadcast(&p->changed);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

Prefetcher *prefetch_create(int fd)
{
    Prefetcher *p = calloc(1, sizeof *p);
    if (!p) {
        remat_fail(REMAT_ENOMEM, "prefetch: no memory for the I/O thread's state");
        return NULL;
    }
    p->fd = fd;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    int err = pthread_create(&p->thread, NULL, prefetch_thread, p);
    if (err) {
        pthread_cond_destroy(&p->changed);
        pthread_mutex_destroy(&p->lock);
        free(p);
        remat_fail(REMAT_ENOMEM, "prefetch: cannot start the I/O thread (error %d)", err);
        return NULL;
    }
    return p;
}

void prefetch_free(Prefetcher *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
    free(p);
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

void prefetch_wait(Prefetcher *p, PrefetchIo *io)
{
    pthread_mutex_lock(&p->lock);
    while (!io->done) pthread_cond_wait(&p->changed, &p->lock);
    pthread_mutex_unlock(&p->lock);
}
