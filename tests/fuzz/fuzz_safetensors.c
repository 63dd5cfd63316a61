/*
 * fuzz_safetensors.c — libFuzzer target for the safetensors reader (app/safetensors.c).
 *
 * Each input is a whole file. st_load must either refuse it, with REMAT_EIO, REMAT_ECORRUPT
 * or REMAT_ENOMEM and a message, or accept it; then every tensor it lists must come back
 * through st_get (or be refused with REMAT_EINVAL, for a dimension of 0), and everything
 * must be freed: the ledger ends empty. Anything else — a crash, a sanitizer report, a
 * leak, a broken promise (abort) — is a finding.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_input.h"
#include "app/safetensors.h"

/* A promise of safetensors.h that the input broke. */
static void broken(const char *what)
{
    fprintf(stderr, "fuzz_safetensors: %s (last error: %s)\n", what, remat_last_error());
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    remat_clear_error();
    StFile *f = st_load(fuzz_input_path(data, size));
    if (!f) {
        const RematStatus s = remat_last_status();
        if ((s != REMAT_EIO && s != REMAT_ECORRUPT && s != REMAT_ENOMEM) || !remat_last_error()[0])
            broken("st_load failed without a status of its contract and a message");
        return 0;
    }
    for (int i = 0; i < st_count(f); i++) {
        const char *name = st_name(f, i);
        if (!name) broken("st_name returned NULL for a listed tensor");
        Tensor *t = st_get(f, name, MEM_WORK);
        if (!t) {
            if (remat_last_status() != REMAT_EINVAL) broken("st_get failed on a tensor st_load accepted");
            continue;
        }
        if (t->bytes != t->numel * dtype_size(t->dtype)) broken("st_get returned a tensor of the wrong size");
        tensor_free(t);
    }
    (void)st_meta(f, "format");
    st_close(f);
    if (mem_live_blocks() != 0) broken("tensors left in the ledger");
    return 0;
}
