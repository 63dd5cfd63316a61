/*
 * disk.h — this machine's disk, measured: the sequential write and read bandwidth of the
 * file system a directory is on, which bounds what offload can hide (bench_offload).
 *
 * How: a file of `file_bytes` is made in the directory without a name (O_TMPFILE, or
 * unlinked at once) and set to O_DIRECT on the descriptor that made it, so every byte goes
 * to the device and none stays in the page cache; it is written and read whole, in blocks
 * of `block_bytes` from one page-aligned buffer (not zeros: a virtual disk may store zeros
 * for free), the writes and the reads interleaved
 * as bench/timing.h interleaves any two variants, after a warm-up round that writes the
 * file once, so that the timed writes overwrite blocks the file already has. Each run is
 * timed whole; the bandwidth is the file's bytes over its median time, with the interval
 * of that median.
 *
 * What this is not: a disk benchmark for other uses (one pattern, one queue depth, no
 * fsync: the bytes are on the device as far as the kernel knows, as offload's are), nor
 * a measure of the page cache: a file system that refuses O_DIRECT is an error, not a
 * figure.
 */
#ifndef REMAT_BENCH_DISK_H
#define REMAT_BENCH_DISK_H

#include <stddef.h>

#include "bench/timing.h"

typedef struct DiskBandwidth {
    size_t file_bytes;  /* bytes written and read per run */
    size_t block_bytes; /* per system call */
    Estimate write;     /* bytes per second, median and interval */
    Estimate read;
} DiskBandwidth;

/* Measures the sequential bandwidth of the file system `dir` is on (NULL: $TMPDIR, else
 * /tmp), as `plan` says (warm-up rounds, then rounds of one write and one read). On
 * error returns REMAT_EINVAL for sizes that are not whole, non-zero multiples of 4096
 * with block_bytes dividing file_bytes, REMAT_EIO naming the cause otherwise (a file
 * system that refuses O_DIRECT: "... refuses O_DIRECT (Invalid argument)"), with nothing
 * left behind. */
RematStatus disk_measure(const char *dir, size_t file_bytes, size_t block_bytes, const TimingPlan *plan,
                         DiskBandwidth *out);

#endif /* REMAT_BENCH_DISK_H */
