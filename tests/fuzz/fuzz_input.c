/*
 * fuzz_input.c — the fuzzer's input as a file (see fuzz_input.h).
 */
#define _GNU_SOURCE /* memfd_create */

#include "tests/fuzz/fuzz_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

const char *fuzz_input_path(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("remat-fuzz-input", MFD_CLOEXEC);
        if (fd < 0) {
            perror("fuzz_input_path: memfd_create");
            abort();
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size > 0 && pwrite(fd, data, size, 0) != (ssize_t)size)) {
        perror("fuzz_input_path: writing the memfd");
        abort();
    }
    return path;
}
