/*
 * fuzz_text_data.c — libFuzzer target for the text data loader (models/data.c).
 *
 * Each input is a corpus file. text_data_load must refuse it (REMAT_EINVAL when it is too
 * short for its splits) or load it byte for byte; then batches drawn from each split must
 * be windows of that split whose targets are the inputs shifted by one.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_input.h"
#include "models/data.h"

static void broken(const char *what)
{
    fprintf(stderr, "fuzz_text_data: %s (last error: %s)\n", what, remat_last_error());
    abort();
}

/* Whether a batch row (inputs `row`, targets `next`, T of each) is the window of T + 1
 * tokens that starts at `tokens`. */
static bool is_window(const uint8_t *tokens, const int32_t *row, const int32_t *next, int T)
{
    for (int t = 0; t < T; t++)
        if (row[t] != tokens[t] || next[t] != tokens[t + 1]) return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { B = 3, MAX_T = 16 };
    static const double fractions[] = {0.1, 0.5};
    for (int k = 0; k < 2; k++) {
        remat_clear_error();
        TextData *d = text_data_load(fuzz_input_path(data, size), fractions[k]);
        if (!d) {
            if (remat_last_status() != REMAT_EINVAL) broken("text_data_load refused a file with a wrong status");
            continue;
        }
        if (d->size != size || (size > 0 && memcmp(d->bytes, data, size) != 0) || d->train_size + d->val_size != size)
            broken("the loaded text is not the file");
        Pcg32 rng;
        pcg32_seed(&rng, size, 7);
        for (int split = TEXT_TRAIN; split <= TEXT_VAL; split++) {
            const size_t n = split == TEXT_VAL ? d->val_size : d->train_size;
            const uint8_t *tokens = d->bytes + (split == TEXT_VAL ? d->train_size : 0);
            for (int T = 1; T <= MAX_T; T *= 4) {
                int32_t in[B * MAX_T], tg[B * MAX_T];
                const RematStatus s = text_data_batch(d, (TextSplit)split, &rng, B, T, in, tg);
                if ((size_t)T + 1 > n) {
                    if (s != REMAT_EINVAL) broken("a window longer than the split was not refused");
                    continue;
                }
                if (s != REMAT_OK) broken("text_data_batch failed on a window that fits");
                for (int b = 0; b < B; b++) {
                    bool found = false;
                    for (size_t start = 0; start + (size_t)T < n && !found; start++)
                        found = is_window(tokens + start, in + b * T, tg + b * T, T);
                    if (!found) broken("a batch row is not a window of its split");
                }
            }
        }
        text_data_free(d);
    }
    return 0;
}
