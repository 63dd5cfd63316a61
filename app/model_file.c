/*
 * model_file.c — saving and loading a model and its training state (see model_file.h).
 */
#include "app/model_file.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define META_STEP "remat.step"
#define META_DATA_RNG "remat.data_rng"
#define META_DROPOUT_RNG "remat.dropout_rng"

typedef char StateName[NODE_NAME_LEN + 16];
#define SECOND_MOMENT "optim.v." /* AdamW's v: a mean of squares, never negative */

/* The tensors a file of `model` holds, in its order: every parameter, then with `opt` each
 * one's optimizer state, named as model_file.h says. A new block the caller frees (the
 * names after the entries), *count their number; NULL, no error set, without memory. */
static StEntry *file_entries(const Model *model, const Optimizer *opt, int *count)
{
    const int n = model->n_params;
    StEntry *entries = calloc(1, (size_t)(3 * n) * sizeof *entries + (size_t)n * 2 * sizeof(StateName));
    if (!entries) return NULL;
    StateName (*names)[2] = (StateName(*)[2])(entries + 3 * n); /* after the entries, in their block */
    int k = 0;
    for (int i = 0; i < n; i++) entries[k++] = (StEntry){model->params[i].var->name, model->params[i].var->value};
    for (int i = 0; opt && i < n; i++) {
        const char *param = model->params[i].var->name;
        Tensor *s[2];
        optim_state(opt, i, &s[0], &s[1]);
        snprintf(names[i][0], sizeof names[i][0], s[1] ? "optim.m.%s" : "optim.velocity.%s", param);
        snprintf(names[i][1], sizeof names[i][1], SECOND_MOMENT "%s", param);
        for (int j = 0; j < 2; j++)
            if (s[j]) entries[k++] = (StEntry){names[i][j], s[j]};
    }
    *count = k;
    return entries;
}

/* The index of the first NaN, infinity or (when `nonnegative`) value below zero in float
 * tensor `t`, or t->numel when there is none (or `t` holds integers). */
static size_t first_bad(const Tensor *t, bool nonnegative)
{
    size_t i = 0;
    while (t->dtype == DTYPE_F32 && i < t->numel && isfinite(t->f32[i]) && !(nonnegative && t->f32[i] < 0.0f)) i++;
    return t->dtype == DTYPE_F32 ? i : t->numel;
}

static const char *format_rng(char *buf, size_t size, const Pcg32 *rng)
{
    snprintf(buf, size, "%016" PRIx64 ":%016" PRIx64, rng->state, rng->inc);
    return buf;
}

/* A generator's state as format_rng writes it, "STATE:INC" in hex, 1 to 16 digits each,
 * and nothing else: no sign, space, "0x" or trailing characters (sscanf's %x took
 * "1:3garbage" as 1 and 3, and strtoull alone would take a sign, spaces or "0x"). */
static RematStatus parse_rng(const StFile *f, const char *key, const char *path, Pcg32 *rng)
{
    const char *text = st_meta(f, key);
    char state[17], inc[17];
    int end = 0;
    if (!text || sscanf(text, "%16[0-9a-fA-F]:%16[0-9a-fA-F]%n", state, inc, &end) != 2 || text[end] != '\0' ||
        (strtoull(inc, NULL, 16) & 1) == 0)
        return remat_fail(REMAT_ECORRUPT, "%s: metadata %s is %s; a training file stores a generator "
                          "state as two hex numbers, STATE:INC with INC odd (was it saved without --save "
                          "during training?)", path, key, text ? "malformed" : "missing");
    rng->state = strtoull(state, NULL, 16);
    rng->inc = strtoull(inc, NULL, 16);
    return REMAT_OK;
}

RematStatus model_save(const Model *model, const Optimizer *opt, const TrainState *state,
                       const StMeta *meta, int n_meta, const char *path)
{
    if (!model || !path || (!opt) != (!state))
        return remat_fail(REMAT_EINVAL, "model_save: need a model and a path, and an optimizer "
                          "together with a training state or neither");
    int k = 0;
    StEntry *entries = file_entries(model, opt, &k);
    StMeta *all_meta = calloc((size_t)n_meta + 3, sizeof *all_meta);
    RematStatus status = entries && all_meta ? REMAT_OK
                       : remat_fail(REMAT_ENOMEM, "model_save: no memory for the file's index");
    /* A model that went non-finite is not written over a file that would still train. */
    for (int i = 0; i < k && status == REMAT_OK; i++) {
        const Tensor *t = entries[i].tensor;
        const size_t at = first_bad(t, false);
        if (at < t->numel)
            status = remat_fail(REMAT_EINVAL, "model_save: tensor %s holds %s at element %zu, so %s was not "
                                "written and is unchanged (the run diverged: lower --lr, or resume from that file)",
                                entries[i].name, isnan(t->f32[at]) ? "NaN" : "an infinity", at, path);
    }
    int m = 0;
    for (int i = 0; i < n_meta && status == REMAT_OK; i++) all_meta[m++] = meta[i];
    char step[24], data_rng[40], dropout_rng[40];
    if (state && status == REMAT_OK) {
        snprintf(step, sizeof step, "%d", state->step);
        all_meta[m++] = (StMeta){META_STEP, step};
        all_meta[m++] = (StMeta){META_DATA_RNG, format_rng(data_rng, sizeof data_rng, &state->data_rng)};
        all_meta[m++] = (StMeta){META_DROPOUT_RNG, format_rng(dropout_rng, sizeof dropout_rng, &state->dropout_rng)};
    }
    if (status == REMAT_OK) status = st_save(path, entries, k, all_meta, m);
    free(entries);
    free(all_meta);
    return status;
}

/* Reads tensor `name` into a new MEM_WORK tensor and checks it: `like`'s dtype and shape,
 * and for floats, every value finite (a NaN or an infinity would only train into NaN) and,
 * in AdamW's second moment (a mean of squares), none below zero (its square root would be
 * NaN at the first update). */
static Tensor *read_checked(const StFile *f, const char *path, const char *name, const Tensor *like)
{
    const bool nonnegative = !strncmp(name, SECOND_MOMENT, strlen(SECOND_MOMENT));
    Tensor *t = st_get(f, name, MEM_WORK);
    if (!t) {
        if (remat_last_status() == REMAT_EINVAL)
            remat_fail(REMAT_ECORRUPT, "%s has no tensor %s: is it a file of this model (and, to "
                       "resume, a training file saved with its optimizer)?", path, name);
        return NULL;
    }
    char want[48], got[48];
    const size_t at = first_bad(t, nonnegative);
    if (t->dtype != like->dtype || !tensor_same_shape(t, like))
        remat_fail(REMAT_ECORRUPT, "%s: tensor %s is %s %s, but this model's is %s %s (a file of another "
                   "configuration?)", path, name, dtype_name(t->dtype), tensor_shape_str(got, sizeof got, t),
                   dtype_name(like->dtype), tensor_shape_str(want, sizeof want, like));
    else if (at < t->numel && !isfinite(t->f32[at]))
        remat_fail(REMAT_ECORRUPT, "%s: tensor %s holds %s at element %zu; a model with non-finite "
                   "values cannot be trained or used", path, name, isnan(t->f32[at]) ? "NaN" : "an infinity", at);
    else if (at < t->numel)
        remat_fail(REMAT_ECORRUPT, "%s: tensor %s holds %g at element %zu, but a second moment is a mean "
                   "of squares and never negative (a file edited or written by another program?)",
                   path, name, (double)t->f32[at], at);
    else
        return t;
    tensor_free(t);
    return NULL;
}

RematStatus model_load(Model *model, Optimizer *opt, TrainState *state, const char *path, const StFile *file)
{
    if (!model || !path || (!opt) != (!state))
        return remat_fail(REMAT_EINVAL, "model_load: need a model and a path, and an optimizer "
                          "together with a training state or neither");
    StFile *opened = file ? NULL : st_load(path); /* a file given stays the caller's */
    const StFile *f = file ? file : opened;
    if (!f) return remat_last_status();

    /* Phase 1: read and check everything into staging tensors; nothing is changed yet. */
    int k = 0;
    StEntry *entries = file_entries(model, opt, &k);
    Tensor **staged = calloc((size_t)k + 1, sizeof *staged); /* + 1: never calloc(0) */
    RematStatus status = entries && staged ? REMAT_OK : remat_fail(REMAT_ENOMEM, "model_load: no memory");
    TrainState loaded = {0};
    for (int i = 0; i < k && status == REMAT_OK; i++)
        if (!(staged[i] = read_checked(f, path, entries[i].name, entries[i].tensor)))
            status = remat_last_status();
    if (status == REMAT_OK && state) {
        if (!parse_int(st_meta(f, META_STEP), 0, INT32_MAX, &loaded.step))
            status = remat_fail(REMAT_ECORRUPT, "%s: metadata %s is missing or not a step count", path, META_STEP);
        if (status == REMAT_OK) status = parse_rng(f, META_DATA_RNG, path, &loaded.data_rng);
        if (status == REMAT_OK) status = parse_rng(f, META_DROPOUT_RNG, path, &loaded.dropout_rng);
    }

    /* Phase 2: everything checked out; apply it. */
    if (status == REMAT_OK) {
        for (int i = 0; i < k; i++) memcpy(entries[i].tensor->data, staged[i]->data, staged[i]->bytes);
        if (state) {
            *state = loaded;
            optim_set_steps(opt, loaded.step);
        }
    }
    for (int i = 0; staged && i < k; i++) tensor_free(staged[i]);
    free(entries);
    free(staged);
    st_close(opened);
    return status;
}
