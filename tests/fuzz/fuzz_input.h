/*
 * fuzz_input.h — handing a fuzzer's input to a loader that takes a path.
 *
 * The loaders under test (st_load, model_load, text_data_load) open a file by name, as
 * train does. fuzz_input_path puts the input in an anonymous in-memory file (memfd) and
 * returns a path to it, /proc/self/fd/N, so each run costs no disk I/O and leaves nothing
 * behind. The same memfd is reused for every input of the process.
 */
#ifndef REMAT_FUZZ_INPUT_H
#define REMAT_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* Replaces the contents of the process's memfd with `size` bytes of `data` and returns
 * its path (a static buffer). Aborts if the memfd cannot be made or written: that is a
 * broken harness, not a finding. */
const char *fuzz_input_path(const uint8_t *data, size_t size);

#endif /* REMAT_FUZZ_INPUT_H */
