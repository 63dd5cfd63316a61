/*
 * prefetch.c — the read-ahead thread and its queue (see prefetch.h).
 *
 * One mutex guards the queue, the stop flag and every read's `done`; one condition
 * variable wakes the thread when a read is queued and the caller when a read is done.
 */
#define _DEFAULT_SOURCE /* preadv */

#include "prefetch.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/uio.h>

struct Prefetcher {
    int fd;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    PrefetchRead *first, *last; /* the queue, oldest first */
    bool stop;
};

/* The thread: take the oldest queued read, do it without the lock, mark it done. */
static void *prefetch_thread(void *arg)
{
    Prefetcher *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && !p->first) pthread_cond_wait(&p->changed, &p->lock);
        if (!p->first) break; /* stopping, and nothing left to read */
        PrefetchRead *read = p->first;
        p->first = read->next;
        if (!p->first) p->last = NULL;
        pthread_mutex_unlock(&p->lock);

        const struct iovec iov[2] = {{read->head, read->head_bytes}, {read->data, read->data_bytes}};
        const ssize_t n = preadv(p->fd, iov, 2, read->offset);
        const int error = n < 0 ? errno : (size_t)n != read->head_bytes + read->data_bytes ? -1 : 0;

        pthread_mutex_lock(&p->lock);
        read->error = error;
        read->done = true;
        pthread_cond_broadcast(&p->changed);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

Prefetcher *prefetch_create(int fd)
{
    Prefetcher *p = calloc(1, sizeof *p);
    if (!p) {
        remat_fail(REMAT_ENOMEM, "prefetch: no memory for the read-ahead thread's state");
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
        remat_fail(REMAT_ENOMEM, "prefetch: cannot start the read-ahead thread (error %d)", err);
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

void prefetch_submit(Prefetcher *p, PrefetchRead *read)
{
    pthread_mutex_lock(&p->lock);
    read->done = false;
    read->error = 0;
    read->next = NULL;
    if (p->last) p->last->next = read;
    else p->first = read;
    p->last = read;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
}

void prefetch_wait(Prefetcher *p, PrefetchRead *read)
{
    pthread_mutex_lock(&p->lock);
    while (!read->done) pthread_cond_wait(&p->changed, &p->lock);
    pthread_mutex_unlock(&p->lock);
}
