/*
 * test_data.c — the text data loader: the real corpus loads and splits, batches are
 * windows of the right split with targets one token ahead, the same generator state
 * gives the same batch, and bad files and arguments fail with the right status.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/data.h"

/* The folder holding corpus.txt; CMake sets it to the source tree's data/. */
#ifndef REMAT_DATA_DIR
#define REMAT_DATA_DIR "data"
#endif
#define CORPUS_PATH REMAT_DATA_DIR "/corpus.txt"

/* Built once for the whole group: the corpus, and a scratch folder for small files. */
typedef struct Fixture {
    TextData *corpus;   /* loaded with val_fraction 0.1 */
    char dir[256];      /* a fresh temporary folder */
} Fixture;

static int group_setup(void **state)
{
    static Fixture fx;
    const char *tmp = getenv("TMPDIR");
    snprintf(fx.dir, sizeof fx.dir, "%s/remat_test_data.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fx.dir)) return -1;
    fx.corpus = text_data_load(CORPUS_PATH, 0.1);
    if (!fx.corpus) {
        fprintf(stderr, "cannot load the corpus: %s\n", remat_last_error());
        return -1;
    }
    *state = &fx;
    return 0;
}

static int group_teardown(void **state)
{
    Fixture *fx = *state;
    text_data_free(fx->corpus);
    return rmdir(fx->dir); /* each test removes the files it made */
}

/* Writes `n` bytes to `name` in the scratch folder; the full path goes into `path`. */
static void write_scratch(const Fixture *fx, const char *name, const void *bytes, size_t n,
                          char *path, size_t path_size)
{
    snprintf(path, path_size, "%s/%s", fx->dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* True if the m tokens of `window` occur consecutively somewhere in hay[0..n). */
static int window_occurs(const uint8_t *hay, size_t n, const int32_t *window, size_t m)
{
    for (size_t i = 0; i + m <= n; i++) {
        size_t k = 0;
        while (k < m && hay[i + k] == window[k]) k++;
        if (k == m) return 1;
    }
    return 0;
}

/* ---- loading ---------------------------------------------------------------------- */

static void test_load_splits_corpus_at_val_fraction(void **state)
{
    const TextData *d = ((Fixture *)*state)->corpus;
    struct stat st;
    assert_int_equal(stat(CORPUS_PATH, &st), 0);
    assert_int_equal(d->size, (size_t)st.st_size);
    /* The corpus is meant to be 300 KB .. 1 MB (data/README.md). */
    assert_in_range(d->size, 300000, 1000000);
    assert_int_equal(d->val_size, (size_t)floor((double)d->size * 0.1));
    assert_int_equal(d->train_size + d->val_size, d->size);
}

static void test_load_missing_file_is_eio_naming_path(void **state)
{
    char path[512];
    snprintf(path, sizeof path, "%s/no_such_corpus.txt", ((Fixture *)*state)->dir);
    assert_null(text_data_load(path, 0.1));
    assert_int_equal(remat_last_status(), REMAT_EIO);
    assert_non_null(strstr(remat_last_error(), path));
    assert_non_null(strstr(remat_last_error(), strerror(ENOENT)));
}

static void test_load_directory_is_eio(void **state)
{
    const char *dir = ((Fixture *)*state)->dir;
    assert_null(text_data_load(dir, 0.1));
    assert_int_equal(remat_last_status(), REMAT_EIO);
    assert_non_null(strstr(remat_last_error(), dir));
}

/* Issue 16: opening a FIFO blocks until a writer comes, and the "not a regular file"
 * check came after the open, so `train --data FIFO` hung for ever. The alarm turns a
 * hang into a failed test. */
static void test_load_fifo_is_refused_without_waiting(void **state)
{
    char path[512];
    snprintf(path, sizeof path, "%s/corpus.fifo", ((Fixture *)*state)->dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(10);
    TextData *d = text_data_load(path, 0.1);
    alarm(0);
    assert_null(d);
    assert_int_equal(remat_last_status(), REMAT_EIO);
    assert_non_null(strstr(remat_last_error(), path));
    assert_non_null(strstr(remat_last_error(), "is a FIFO, not a regular file"));
    assert_int_equal(unlink(path), 0);
}

static void test_load_too_short_file_is_einval(void **state)
{
    Fixture *fx = *state;
    char path[512];
    /* 3 bytes at val_fraction 0.5: the validation split gets 1 byte, one short of a
     * single (input, target) pair. */
    write_scratch(fx, "short.txt", "abc", 3, path, sizeof path);
    assert_null(text_data_load(path, 0.5));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), path));
    /* 4 bytes is the least that works: 2 for each split. */
    write_scratch(fx, "short.txt", "abcd", 4, path, sizeof path);
    TextData *d = text_data_load(path, 0.5);
    assert_non_null(d);
    assert_int_equal(d->train_size, 2);
    assert_int_equal(d->val_size, 2);
    text_data_free(d);
    /* An empty file. */
    write_scratch(fx, "short.txt", "", 0, path, sizeof path);
    assert_null(text_data_load(path, 0.1));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_int_equal(unlink(path), 0);
}

static void test_load_rejects_val_fraction_outside_0_to_half(void **state)
{
    (void)state;
    const double bad[] = {0.0, -0.1, 0.5000001, 1.0, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        remat_clear_error();
        assert_null(text_data_load(CORPUS_PATH, bad[i]));
        assert_int_equal(remat_last_status(), REMAT_EINVAL);
        assert_non_null(strstr(remat_last_error(), "val_fraction"));
    }
    assert_null(text_data_load(NULL, 0.1));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
}

static void test_free_accepts_null(void **state)
{
    (void)state;
    text_data_free(NULL);
}

/* ---- batches ---------------------------------------------------------------------- */

static void test_batch_targets_are_inputs_shifted_by_one(void **state)
{
    const TextData *d = ((Fixture *)*state)->corpus;
    enum { B = 8, T = 64 };
    int32_t inputs[B * T], targets[B * T];
    Pcg32 rng;
    pcg32_seed(&rng, 42, 7);
    const TextSplit splits[] = {TEXT_TRAIN, TEXT_VAL};
    for (int s = 0; s < 2; s++) {
        assert_int_equal(text_data_batch(d, splits[s], &rng, B, T, inputs, targets), REMAT_OK);
        const uint8_t *region = splits[s] == TEXT_VAL ? d->bytes + d->train_size : d->bytes;
        size_t n = splits[s] == TEXT_VAL ? d->val_size : d->train_size;
        for (int b = 0; b < B; b++) {
            const int32_t *in = inputs + b * T, *tg = targets + b * T;
            for (int t = 0; t + 1 < T; t++) assert_int_equal(tg[t], in[t + 1]);
            /* The whole window, inputs plus the last target, is T+1 consecutive tokens of
             * this split. */
            int32_t window[T + 1];
            memcpy(window, in, sizeof(int32_t) * T);
            window[T] = tg[T - 1];
            for (int t = 0; t <= T; t++) assert_in_range(window[t], 0, TEXT_VOCAB_SIZE - 1);
            assert_true(window_occurs(region, n, window, T + 1));
        }
    }
}

static void test_batch_same_seed_gives_same_batch(void **state)
{
    const TextData *d = ((Fixture *)*state)->corpus;
    enum { B = 4, T = 32 };
    int32_t in1[B * T], tg1[B * T], in2[B * T], tg2[B * T];
    Pcg32 a, b;
    pcg32_seed(&a, 1234, 1);
    pcg32_seed(&b, 1234, 1);
    assert_int_equal(text_data_batch(d, TEXT_TRAIN, &a, B, T, in1, tg1), REMAT_OK);
    assert_int_equal(text_data_batch(d, TEXT_TRAIN, &b, B, T, in2, tg2), REMAT_OK);
    assert_memory_equal(in1, in2, sizeof in1);
    assert_memory_equal(tg1, tg2, sizeof tg1);
    assert_memory_equal(&a, &b, sizeof a); /* both generators moved on alike */
    /* Another seed picks other windows (four identical 33-token windows by chance is
     * out of the question in half a megabyte of prose). */
    pcg32_seed(&b, 4321, 1);
    assert_int_equal(text_data_batch(d, TEXT_TRAIN, &b, B, T, in2, tg2), REMAT_OK);
    assert_memory_not_equal(in1, in2, sizeof in1);
}

/* A synthetic text whose bytes tell where they sit: training bytes are below 128, and
 * validation byte i is 128 + i, so a validation window's first token gives its start. */
static void test_batch_draws_only_from_requested_split(void **state)
{
    Fixture *fx = *state;
    enum { N = 1000, N_VAL = 100, B = 64, T = 8 };
    uint8_t text[N];
    for (int i = 0; i < N - N_VAL; i++) text[i] = (uint8_t)(i % 120);
    for (int i = 0; i < N_VAL; i++) text[N - N_VAL + i] = (uint8_t)(128 + i);
    char path[512];
    write_scratch(fx, "regions.bin", text, N, path, sizeof path);
    TextData *d = text_data_load(path, 0.1);
    assert_non_null(d);
    assert_int_equal(d->val_size, N_VAL);

    int32_t inputs[B * T], targets[B * T];
    Pcg32 rng;
    pcg32_seed(&rng, 7, 0);
    int lowest = N_VAL, highest = -1;
    for (int round = 0; round < 50; round++) {
        assert_int_equal(text_data_batch(d, TEXT_TRAIN, &rng, B, T, inputs, targets), REMAT_OK);
        for (int i = 0; i < B * T; i++) {
            assert_true(inputs[i] < 128);
            assert_true(targets[i] < 128);
        }
        assert_int_equal(text_data_batch(d, TEXT_VAL, &rng, B, T, inputs, targets), REMAT_OK);
        for (int b = 0; b < B; b++) {
            int start = inputs[b * T] - 128;
            for (int t = 0; t < T; t++) {
                assert_int_equal(inputs[b * T + t], 128 + start + t);
                assert_int_equal(targets[b * T + t], 128 + start + t + 1);
            }
            if (start < lowest) lowest = start;
            if (start > highest) highest = start;
        }
    }
    /* 3200 draws over the 92 possible starts reach both ends, and never past them: the
     * last window, starting at 100 - (T+1) = 91, ends on the split's last byte. */
    assert_int_equal(lowest, 0);
    assert_int_equal(highest, N_VAL - (T + 1));
    text_data_free(d);
    assert_int_equal(unlink(path), 0);
}

static void test_batch_window_may_fill_the_whole_split(void **state)
{
    const TextData *d = ((Fixture *)*state)->corpus;
    int T = (int)d->val_size - 1; /* one window: inputs and targets cover the split */
    int32_t *inputs = malloc(sizeof(int32_t) * (size_t)T);
    int32_t *targets = malloc(sizeof(int32_t) * (size_t)T);
    assert_non_null(inputs);
    assert_non_null(targets);
    Pcg32 rng;
    pcg32_seed(&rng, 3, 3);
    assert_int_equal(text_data_batch(d, TEXT_VAL, &rng, 1, T, inputs, targets), REMAT_OK);
    assert_int_equal(inputs[0], d->bytes[d->train_size]);
    assert_int_equal(targets[T - 1], d->bytes[d->size - 1]);
    /* One token longer does not fit. */
    assert_int_equal(text_data_batch(d, TEXT_VAL, &rng, 1, T + 1, inputs, targets), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "validation"));
    free(inputs);
    free(targets);
}

static void test_batch_bad_arguments_change_nothing(void **state)
{
    const TextData *d = ((Fixture *)*state)->corpus;
    int32_t inputs[16] = {0}, targets[16] = {0};
    Pcg32 rng, before;
    pcg32_seed(&rng, 9, 9);
    before = rng;
    assert_int_equal(text_data_batch(d, TEXT_TRAIN, &rng, 0, 4, inputs, targets), REMAT_EINVAL);
    assert_int_equal(text_data_batch(d, TEXT_TRAIN, &rng, 4, 0, inputs, targets), REMAT_EINVAL);
    assert_int_equal(text_data_batch(d, TEXT_TRAIN, &rng, -1, 4, inputs, targets), REMAT_EINVAL);
    assert_int_equal(text_data_batch(d, TEXT_TRAIN, &rng, 4, 4, NULL, targets), REMAT_EINVAL);
    assert_int_equal(text_data_batch(d, TEXT_TRAIN, NULL, 4, 4, inputs, targets), REMAT_EINVAL);
    assert_int_equal(text_data_batch(NULL, TEXT_TRAIN, &rng, 4, 4, inputs, targets), REMAT_EINVAL);
    assert_int_equal(text_data_batch(d, (TextSplit)5, &rng, 4, 4, inputs, targets), REMAT_EINVAL);
    assert_memory_equal(&rng, &before, sizeof rng);
    for (int i = 0; i < 16; i++) assert_int_equal(inputs[i] | targets[i], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_splits_corpus_at_val_fraction),
        cmocka_unit_test(test_load_missing_file_is_eio_naming_path),
        cmocka_unit_test(test_load_directory_is_eio),
        cmocka_unit_test(test_load_fifo_is_refused_without_waiting),
        cmocka_unit_test(test_load_too_short_file_is_einval),
        cmocka_unit_test(test_load_rejects_val_fraction_outside_0_to_half),
        cmocka_unit_test(test_free_accepts_null),
        cmocka_unit_test(test_batch_targets_are_inputs_shifted_by_one),
        cmocka_unit_test(test_batch_same_seed_gives_same_batch),
        cmocka_unit_test(test_batch_draws_only_from_requested_split),
        cmocka_unit_test(test_batch_window_may_fill_the_whole_split),
        cmocka_unit_test(test_batch_bad_arguments_change_nothing),
    };
    return cmocka_run_group_tests_name("data", tests, group_setup, group_teardown);
}
