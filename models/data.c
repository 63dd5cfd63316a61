/*
 * data.c — the text data loader (see data.h): read a file, split it, sample windows.
 */
#include "models/data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"

/* ---- loading ---------------------------------------------------------------------- */

TextData *text_data_load(const char *path, double val_fraction)
{
    if (!path) return remat_fail_null(REMAT_EINVAL, "text_data_load: path is NULL");
    /* Written so that NaN fails too. */
    if (!(val_fraction > 0.0 && val_fraction <= 0.5))
        return remat_fail_null(REMAT_EINVAL, "text_data_load: val_fraction must be in (0, 0.5], got %g", val_fraction);

    /* Window starts are drawn with pcg32_bounded, whose bound is 32 bits. */
    char *text = NULL;
    size_t size = 0;
    if (file_read_all("text_data_load", path, UINT32_MAX, &text, &size) != REMAT_OK) return NULL;

    /* The validation split is the last floor(size * val_fraction) bytes. Since
     * val_fraction <= 0.5, the training split is never the smaller one, so checking the
     * validation split is enough: each needs one input token and its target. */
    const size_t val_size = (size_t)floor((double)size * val_fraction);
    TextData *d = val_size >= 2 ? malloc(sizeof *d + strlen(path) + 1) : NULL; /* its copy of the path after it */
    if (!d) {
        free(text);
        if (val_size < 2)
            return remat_fail_null(REMAT_EINVAL, "text_data_load: %s has %zu bytes; with val_fraction %g its "
                                   "validation split gets %zu, but each split needs at least 2 (one input token "
                                   "and its target)", path, size, val_fraction, val_size);
        return remat_fail_null(REMAT_ENOMEM, "text_data_load: no memory for the dataset of %s", path);
    }
    *d = (TextData){.path = strcpy((char *)(d + 1), path), .bytes = (uint8_t *)text, .size = size,
                    .train_size = size - val_size, .val_size = val_size};
    return d;
}

void text_data_free(TextData *d)
{
    if (!d) return;
    free(d->bytes);
    free(d);
}

/* ---- batches ---------------------------------------------------------------------- */

RematStatus text_data_batch(const TextData *d, TextSplit split, Pcg32 *rng, int B, int T,
                            int32_t *inputs, int32_t *targets)
{
    if (!d || !rng || !inputs || !targets)
        return remat_fail(REMAT_EINVAL, "text_data_batch: the dataset, generator and both arrays are required");
    if (split != TEXT_TRAIN && split != TEXT_VAL)
        return remat_fail(REMAT_EINVAL, "text_data_batch: unknown split %d", (int)split);
    if (B <= 0 || T <= 0)
        return remat_fail(REMAT_EINVAL, "text_data_batch: B and T must be positive, got B=%d T=%d", B, T);

    const char *name = split == TEXT_VAL ? "validation" : "training";
    const uint8_t *tokens = split == TEXT_VAL ? d->bytes + d->train_size : d->bytes;
    const size_t n = split == TEXT_VAL ? d->val_size : d->train_size;
    if ((size_t)T + 1 > n)
        return remat_fail(REMAT_EINVAL,
                          "text_data_batch: a window of T+1 = %d tokens does not fit in the %zu-token %s split of %s",
                          T + 1, n, name, d->path);

    /* A window of T+1 tokens may start at 0 .. n-T-1: that is n-T possible starts. */
    uint32_t starts = (uint32_t)(n - (size_t)T);
    for (int b = 0; b < B; b++) {
        const size_t start = pcg32_bounded(rng, starts), row = (size_t)b * (size_t)T; /* where row b starts */
        for (int t = 0; t < T; t++) {
            inputs[row + (size_t)t] = tokens[start + (size_t)t];
            targets[row + (size_t)t] = tokens[start + (size_t)t + 1];
        }
    }
    return REMAT_OK;
}
