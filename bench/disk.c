/*
 * disk.c — the disk's sequential bandwidth, by O_DIRECT (see disk.h).
 */
#define _GNU_SOURCE /* O_DIRECT */

#include "bench/disk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "base/platform.h"

enum { DISK_WRITE, DISK_READ };

/* What one timed run needs: the file, its size, the buffer. */
typedef struct DiskRun {
    int fd;
    size_t file_bytes, block_bytes;
    unsigned char *block; /* page-aligned, block_bytes */
    const char *dir;
} DiskRun;

/* Writes (variant DISK_WRITE) or reads the whole file, block by block; values[0] gets the
 * seconds it took. */
static RematStatus disk_run(void *ctx, int variant, double *values)
{
    DiskRun *d = ctx;
    const double t0 = platform_seconds();
    for (size_t at = 0; at < d->file_bytes; at += d->block_bytes) {
        const ssize_t n = variant == DISK_WRITE ? pwrite(d->fd, d->block, d->block_bytes, (off_t)at)
                                                : pread(d->fd, d->block, d->block_bytes, (off_t)at);
        if (n != (ssize_t)d->block_bytes)
            return remat_fail(REMAT_EIO, "disk: cannot %s %zu bytes at byte %zu of a file in %s: %s",
                              variant == DISK_WRITE ? "write" : "read", d->block_bytes, at, d->dir,
                              n < 0 ? strerror(errno) : "short transfer");
    }
    values[0] = platform_seconds() - t0;
    return REMAT_OK;
}

/* Opens a new, nameless file in `dir` for O_DIRECT: base/file.h's new file (O_TMPFILE where
 * the file system has it, else mkstemp's, unlinked at once), then O_DIRECT set on that same
 * descriptor, so that no name is ever opened again (something else could be there by
 * then). -1 with the error set. */
static int open_direct(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/remat-disk-XXXXXX", dir);
    bool named;
    const int fd = file_create_new(dir, path, true, &named);
    if (named) unlink(path);
    if (fd < 0) {
        remat_fail(REMAT_EIO, "disk: cannot create a file in %s: %s", dir, strerror(errno));
        return -1;
    }
    const int flags = fcntl(fd, F_GETFL);
    if (flags == -1 || fcntl(fd, F_SETFL, flags | O_DIRECT) != 0) {
        remat_fail(REMAT_EIO, "disk: the file system of %s refuses O_DIRECT (%s): its bandwidth cannot be "
                   "measured past the page cache", dir, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

RematStatus disk_measure(const char *dir, size_t file_bytes, size_t block_bytes, const TimingPlan *plan,
                         DiskBandwidth *out)
{
    const size_t align = 4096; /* a page: at least the logical block size of the devices here */
    if (file_bytes == 0 || block_bytes == 0 || file_bytes % block_bytes || block_bytes % align)
        return remat_fail(REMAT_EINVAL, "disk_measure: need a block of a whole number of %zu-byte pages that "
                          "divides the file (file %zu, block %zu bytes)", align, file_bytes, block_bytes);
    const char *env = getenv("TMPDIR");
    DiskRun d = {.fd = -1, .file_bytes = file_bytes, .block_bytes = block_bytes,
                 .dir = dir ? dir : env && env[0] ? env : "/tmp"};
    if (posix_memalign((void **)&d.block, align, block_bytes) != 0)
        return remat_fail(REMAT_ENOMEM, "disk: no memory for a %zu-byte block", block_bytes);
    uint32_t x = 0x9e3779b9u; /* xorshift: bytes a disk cannot store for free */
    for (size_t i = 0; i < block_bytes; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        d.block[i] = (unsigned char)x;
    }
    d.fd = open_direct(d.dir);
    RematStatus status = d.fd < 0 ? remat_last_status() : REMAT_OK;
    const int err = status == REMAT_OK ? posix_fallocate(d.fd, 0, (off_t)file_bytes) : 0;
    if (err)
        status = remat_fail(REMAT_EIO, "disk: cannot make a %zu-byte file in %s: %s", file_bytes, d.dir,
                            strerror(err));
    Timing timing = {0};
    if (status == REMAT_OK) status = timing_run(plan, 2, 1, disk_run, &d, NULL, NULL, &timing);
    const Estimate writing = timing_median(&timing, DISK_WRITE, 0), reading = timing_median(&timing, DISK_READ, 0);
    if (status == REMAT_OK)
        *out = (DiskBandwidth){.file_bytes = file_bytes, .block_bytes = block_bytes,
                               .write = estimate_rate((double)file_bytes, &writing),
                               .read = estimate_rate((double)file_bytes, &reading)};
    timing_free(&timing);
    if (d.fd >= 0) close(d.fd);
    free(d.block);
    return status;
}
