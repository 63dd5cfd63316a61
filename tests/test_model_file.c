/*
 * test_model_file.c — model files as a model reads them back: a training file round-trips
 * parameters, optimizer state and generators; a file that is wrong in any way this model
 * can tell — another dtype, a NaN or an infinity, a negative AdamW second moment, training
 * metadata that is not exactly what model_save writes, a FIFO instead of a file — is
 * refused with a message that says what is wrong, and changes nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autograd/optim.h"
#include "models/mlp.h"
#include "app/model_file.h"
#include "app/safetensors.h"

static char dir[256];

static int group_setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/remat_test_model_file.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return rmdir(dir); /* each test removes the files it made */
}

static void path_in_dir(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

/* A small MLP chain with AdamW state and a training state, as train saves it. */
typedef struct Run {
    Model *model;
    Optimizer *opt;
    TrainState state;
} Run;

static Run run_create(uint64_t seed)
{
    Run r = {.model = mlp_create(&(MlpConfig){.n_layers = 2, .width = 4, .seed = seed})};
    assert_non_null(r.model);
    OptimConfig config = optim_adamw_defaults(1e-3f);
    r.opt = optim_create(&config, r.model->params, r.model->n_params);
    assert_non_null(r.opt);
    /* Give the optimizer state values of its own, so that a load visibly changes it. */
    for (int i = 0; i < r.model->n_params; i++) {
        Tensor *m, *v;
        optim_state(r.opt, i, &m, &v);
        for (size_t k = 0; k < m->numel; k++) {
            m->f32[k] = 0.01f * (float)(seed + k);
            v->f32[k] = 0.02f * (float)(seed + k);
        }
    }
    pcg32_seed(&r.state.data_rng, seed, 1);
    pcg32_seed(&r.state.dropout_rng, seed, 2);
    r.state.step = (int)seed;
    return r;
}

static void run_free(Run *r)
{
    optim_free(r->opt);
    model_free(r->model);
}

/* A copy of every parameter and optimizer state of `r`, to check that nothing changed. */
typedef struct Snapshot {
    int n;
    Tensor *t[64];
} Snapshot;

static Snapshot snapshot(const Run *r)
{
    Snapshot s = {0};
    for (int i = 0; i < r->model->n_params; i++) {
        Tensor *m, *v;
        optim_state(r->opt, i, &m, &v);
        s.t[s.n++] = tensor_clone(r->model->params[i].var->value, MEM_WORK);
        s.t[s.n++] = tensor_clone(m, MEM_WORK);
        s.t[s.n++] = tensor_clone(v, MEM_WORK);
    }
    return s;
}

static void assert_unchanged(const Snapshot *s, const Run *r)
{
    int k = 0;
    for (int i = 0; i < r->model->n_params; i++) {
        Tensor *m, *v;
        optim_state(r->opt, i, &m, &v);
        const Tensor *now[3] = {r->model->params[i].var->value, m, v};
        for (int j = 0; j < 3; j++, k++) assert_memory_equal(s->t[k]->data, now[j]->data, now[j]->bytes);
    }
}

static void snapshot_free(Snapshot *s)
{
    for (int i = 0; i < s->n; i++) tensor_free(s->t[i]);
}

/* Rewrites the training file `src` as `dst` with metadata `key` set to `value` (NULL:
 * left out) and, if `tensor` is not NULL, that tensor replaced by `replacement`. */
static void rewrite(const char *src, const char *dst, const char *key, const char *value, const char *tensor,
                    const Tensor *replacement)
{
    StFile *f = st_load(src);
    assert_non_null(f);
    const int n = st_count(f);
    StEntry entries[64];
    Tensor *owned[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++) {
        owned[i] = st_get(f, st_name(f, i), MEM_WORK);
        assert_non_null(owned[i]);
        const bool replace = tensor && strcmp(st_name(f, i), tensor) == 0;
        entries[i] = (StEntry){st_name(f, i), replace ? replacement : owned[i]};
    }
    static const char *const keys[] = {"remat.step", "remat.data_rng", "remat.dropout_rng"};
    StMeta meta[3];
    int m = 0;
    for (int i = 0; i < 3; i++) {
        const bool this_key = key && strcmp(keys[i], key) == 0;
        if (this_key && !value) continue;
        meta[m++] = (StMeta){keys[i], this_key ? value : st_meta(f, keys[i])};
    }
    assert_int_equal(st_save(dst, entries, n, meta, m), REMAT_OK);
    for (int i = 0; i < n; i++) tensor_free(owned[i]);
    st_close(f);
}

/* Loading `path` into a fresh run must fail with REMAT_ECORRUPT saying each fragment,
 * and change nothing. */
static void assert_load_refused(const char *path, const char *a, const char *b, const char *c)
{
    Run r = run_create(7);
    Snapshot before = snapshot(&r);
    const TrainState state_before = r.state;
    remat_clear_error();
    assert_int_equal(model_load(r.model, r.opt, &r.state, path, NULL), REMAT_ECORRUPT);
    const char *fragments[] = {path, a, b, c};
    for (int i = 0; i < 4; i++)
        if (fragments[i] && !strstr(remat_last_error(), fragments[i]))
            fail_msg("message \"%s\" should say \"%s\"", remat_last_error(), fragments[i]);
    assert_unchanged(&before, &r);
    assert_memory_equal(&r.state, &state_before, sizeof state_before);
    snapshot_free(&before);
    run_free(&r);
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_model_file_round_trips_a_training_run(void **state)
{
    (void)state;
    char path[512];
    path_in_dir(path, sizeof path, "run.safetensors");
    Run a = run_create(3), b = run_create(5);
    assert_int_equal(model_save(a.model, a.opt, &a.state, NULL, 0, path), REMAT_OK);
    assert_int_equal(model_load(b.model, b.opt, &b.state, path, NULL), REMAT_OK);
    Snapshot sa = snapshot(&a);
    assert_unchanged(&sa, &b);
    assert_memory_equal(&a.state, &b.state, sizeof a.state);
    snapshot_free(&sa);
    run_free(&a);
    run_free(&b);
    assert_int_equal(unlink(path), 0);
}

/* Issue 16: a tensor stored as I32 said "has shape (256,32), but this model's is
 * (256,32)". The message must name both dtypes. */
static void test_model_file_wrong_dtype_is_named(void **state)
{
    (void)state;
    char good[512], bad[512];
    path_in_dir(good, sizeof good, "good.safetensors");
    path_in_dir(bad, sizeof bad, "int32.safetensors");
    Run a = run_create(3);
    assert_int_equal(model_save(a.model, a.opt, &a.state, NULL, 0, good), REMAT_OK);
    const Tensor *w = a.model->params[0].var->value;
    Tensor *ints = tensor_create(MEM_WORK, DTYPE_I32, w->ndim, w->shape);
    assert_non_null(ints);
    memset(ints->data, 0, ints->bytes);
    rewrite(good, bad, NULL, NULL, a.model->params[0].var->name, ints);
    assert_load_refused(bad, a.model->params[0].var->name, "is int32 (4,4), but this model's is float32 (4,4)", NULL);
    tensor_free(ints);
    run_free(&a);
    assert_int_equal(unlink(good), 0);
    assert_int_equal(unlink(bad), 0);
}

/* Issue 16: a checkpoint with NaN parameters trained on, printing "loss nan". */
static void test_model_file_nan_or_infinity_is_refused_naming_the_tensor(void **state)
{
    (void)state;
    char good[512], bad[512];
    path_in_dir(good, sizeof good, "good.safetensors");
    path_in_dir(bad, sizeof bad, "nan.safetensors");
    Run a = run_create(3);
    assert_int_equal(model_save(a.model, a.opt, &a.state, NULL, 0, good), REMAT_OK);
    const struct { const char *tensor; float value; const char *says; } cases[] = {
        {"h.1.weight", NAN, "holds NaN at element 3"},
        {"h.0.bias", INFINITY, "holds an infinity at element 3"},
        {"optim.v.h.1.bias", -INFINITY, "holds an infinity at element 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        StFile *f = st_load(good);
        assert_non_null(f);
        Tensor *t = st_get(f, cases[i].tensor, MEM_WORK);
        st_close(f);
        assert_non_null(t);
        assert_true(t->numel > 3);
        t->f32[3] = cases[i].value;
        rewrite(good, bad, NULL, NULL, cases[i].tensor, t);
        assert_load_refused(bad, cases[i].tensor, cases[i].says, NULL);
        tensor_free(t);
    }
    run_free(&a);
    assert_int_equal(unlink(good), 0);
    assert_int_equal(unlink(bad), 0);
}

/* AdamW's second moment is a running mean of squared gradients, never below zero; a
 * negative one makes sqrt(v) NaN at the first update. A -0.0, which compares equal to
 * zero, is still a second moment. */
static void test_model_file_negative_second_moment_is_refused_naming_the_tensor(void **state)
{
    (void)state;
    char good[512], bad[512];
    path_in_dir(good, sizeof good, "good.safetensors");
    path_in_dir(bad, sizeof bad, "negative_v.safetensors");
    Run a = run_create(3);
    assert_int_equal(model_save(a.model, a.opt, &a.state, NULL, 0, good), REMAT_OK);
    const struct { const char *tensor; float value; bool refused; } cases[] = {
        {"optim.v.h.1.weight", -1e-8f, true},
        {"optim.v.h.0.bias", -0.0f, false},
        {"optim.m.h.0.bias", -1.0f, false}, /* a first moment has either sign */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        StFile *f = st_load(good);
        assert_non_null(f);
        Tensor *t = st_get(f, cases[i].tensor, MEM_WORK);
        st_close(f);
        assert_non_null(t);
        assert_true(t->numel > 3);
        t->f32[3] = cases[i].value;
        rewrite(good, bad, NULL, NULL, cases[i].tensor, t);
        if (cases[i].refused) {
            assert_load_refused(bad, cases[i].tensor, "holds -1e-08 at element 3",
                                "a second moment is a mean of squares");
        } else {
            Run b = run_create(5);
            assert_int_equal(model_load(b.model, b.opt, &b.state, bad, NULL), REMAT_OK);
            run_free(&b);
        }
        tensor_free(t);
    }
    run_free(&a);
    assert_int_equal(unlink(good), 0);
    assert_int_equal(unlink(bad), 0);
}

/* The whole file at `path`, in a buffer the caller frees; its length in *size. */
static char *read_whole(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    const long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* The writer's guard: a model whose parameters or optimizer state went non-finite is not
 * saved over a good file, which would then refuse to load. The save fails naming the
 * tensor and the element, and the old file stays, byte for byte, with nothing beside it. */
static void test_model_file_non_finite_values_are_not_saved(void **state)
{
    (void)state;
    char path[512];
    path_in_dir(path, sizeof path, "run.safetensors");
    const struct { int param; int which; float value; const char *tensor, *says; } cases[] = {
        {2, -1, NAN, "h.1.weight", "holds NaN at element 3"},
        {0, 0, INFINITY, "optim.m.h.0.weight", "holds an infinity at element 3"},
        {1, 1, -INFINITY, "optim.v.h.0.bias", "holds an infinity at element 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Run a = run_create(3);
        assert_int_equal(model_save(a.model, a.opt, &a.state, NULL, 0, path), REMAT_OK);
        size_t old_size;
        char *old = read_whole(path, &old_size);
        Tensor *s[2];
        optim_state(a.opt, cases[i].param, &s[0], &s[1]);
        Tensor *t = cases[i].which < 0 ? a.model->params[cases[i].param].var->value : s[cases[i].which];
        assert_true(t->numel > 3);
        t->f32[3] = cases[i].value;
        remat_clear_error();
        assert_int_equal(model_save(a.model, a.opt, &a.state, NULL, 0, path), REMAT_EINVAL);
        const char *fragments[] = {path, cases[i].tensor, cases[i].says, "is unchanged"};
        for (int j = 0; j < 4; j++)
            if (!strstr(remat_last_error(), fragments[j]))
                fail_msg("message \"%s\" should say \"%s\"", remat_last_error(), fragments[j]);
        size_t new_size;
        char *now = read_whole(path, &new_size);
        assert_int_equal(new_size, old_size);
        assert_memory_equal(now, old, old_size);
        free(now);
        free(old);
        run_free(&a);
        assert_int_equal(unlink(path), 0);
    }
}

/* Issue 16: remat.data_rng "1:3garbage" was accepted, as sscanf reads what it can. The
 * generator states and the step count must be exactly what model_save writes. */
static void test_model_file_malformed_training_metadata_is_refused(void **state)
{
    (void)state;
    char good[512], bad[512];
    path_in_dir(good, sizeof good, "good.safetensors");
    path_in_dir(bad, sizeof bad, "meta.safetensors");
    Run a = run_create(3);
    assert_int_equal(model_save(a.model, a.opt, &a.state, NULL, 0, good), REMAT_OK);
    const struct { const char *key, *value, *says; } cases[] = {
        {"remat.data_rng", "1:3garbage", "metadata remat.data_rng is malformed"},
        {"remat.data_rng", " 1:3", "malformed"},
        {"remat.data_rng", "1:3 ", "malformed"},
        {"remat.data_rng", "1: 3", "malformed"},
        {"remat.data_rng", "+1:3", "malformed"},
        {"remat.data_rng", "-1:3", "malformed"},
        {"remat.data_rng", "0x1:3", "malformed"},
        {"remat.data_rng", "1:2", "malformed"},  /* the increment of PCG32 is odd */
        {"remat.data_rng", "1:", "malformed"},
        {"remat.data_rng", ":3", "malformed"},
        {"remat.data_rng", "1:3:5", "malformed"},
        {"remat.data_rng", "", "malformed"},
        {"remat.dropout_rng", "10000000000000000:3", "metadata remat.dropout_rng is malformed"}, /* 17 digits */
        {"remat.dropout_rng", NULL, "metadata remat.dropout_rng is missing"},
        {"remat.step", " 3", "metadata remat.step is missing or not a step count"},
        {"remat.step", "3x", "not a step count"},
        {"remat.step", "+3", "not a step count"},
        {"remat.step", "-1", "not a step count"},
        {"remat.step", "2147483648", "not a step count"},
        {"remat.step", "", "not a step count"},
        {"remat.step", NULL, "not a step count"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rewrite(good, bad, cases[i].key, cases[i].value, NULL, NULL);
        assert_load_refused(bad, cases[i].says, NULL, NULL);
    }
    /* Upper-case hex and fewer than 16 digits are still a generator state. */
    rewrite(good, bad, "remat.data_rng", "ABCdef:1", NULL, NULL);
    Run b = run_create(5);
    assert_int_equal(model_load(b.model, b.opt, &b.state, bad, NULL), REMAT_OK);
    assert_true(b.state.data_rng.state == 0xabcdef && b.state.data_rng.inc == 1);
    run_free(&b);
    run_free(&a);
    assert_int_equal(unlink(good), 0);
    assert_int_equal(unlink(bad), 0);
}

/* Issue 16: `train --resume FIFO` hung in open(). The alarm turns a hang into a failure. */
static void test_model_file_fifo_is_refused_without_waiting(void **state)
{
    (void)state;
    char path[512];
    path_in_dir(path, sizeof path, "resume.fifo");
    assert_int_equal(mkfifo(path, 0600), 0);
    Run r = run_create(3);
    alarm(10);
    const RematStatus status = model_load(r.model, r.opt, &r.state, path, NULL);
    StFile *opened = st_load(path); /* how train reads a resumed file's configuration */
    const RematStatus meta_status = opened ? REMAT_OK : remat_last_status();
    st_close(opened);
    alarm(0);
    assert_int_equal(status, REMAT_EIO);
    assert_int_equal(meta_status, REMAT_EIO);
    assert_non_null(strstr(remat_last_error(), "is a FIFO, not a regular file"));
    run_free(&r);
    assert_int_equal(unlink(path), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_file_round_trips_a_training_run),
        cmocka_unit_test(test_model_file_wrong_dtype_is_named),
        cmocka_unit_test(test_model_file_nan_or_infinity_is_refused_naming_the_tensor),
        cmocka_unit_test(test_model_file_negative_second_moment_is_refused_naming_the_tensor),
        cmocka_unit_test(test_model_file_non_finite_values_are_not_saved),
        cmocka_unit_test(test_model_file_malformed_training_metadata_is_refused),
        cmocka_unit_test(test_model_file_fifo_is_refused_without_waiting),
    };
    return cmocka_run_group_tests_name("model_file", tests, group_setup, group_teardown);
}
