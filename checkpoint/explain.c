/*
 * explain.c — recording and printing what a step keeps for backward (see explain.h).
 *
 * Two listeners: a SavedObserver sees every tensor actually saved (and every release);
 * an OpHooks `recorded` callback sees, for every op, what its backward would keep — which
 * is how the tensors a checkpoint region's first forward did not save become visible.
 * Time is counted in events (ops run, tensors saved or released), so a row says when in
 * the step its tensor came and went.
 */
#include "checkpoint/explain.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef enum Fate { FATE_KEPT, FATE_DROPPED, FATE_CACHED, FATE_RECOMPUTED, FATE_HOOKED, FATE_REGENERATED,
                  FATE_COUNT } Fate;

static const char *const FATE_NAMES[FATE_COUNT] = {"kept", "dropped", "cached", "recomputed", "hooked", "regenerated"};

typedef struct Row {
    char name[NODE_NAME_LEN];
    const char *op;
    char shape[40];
    size_t bytes;
    Fate fate;
    const char *hooks;    /* FATE_HOOKED: who packed it */
    Phase saved_phase;
    long saved_at;
    Phase released_phase; /* valid when released_at >= 0 */
    long released_at;
    const Node *node;     /* saved rows: where it lives, to match its release */
    int slot;
    const Tensor *tensor; /* to count a tensor saved twice once (compared, never read) */
    bool shared;          /* an earlier live row holds the same tensor */
} Row;

struct Explain {
    Row *rows;
    int count, capacity;
    long clock;
    size_t peak_seen;            /* the ledger's resident peak at the last event */
    long peak_at;                /* the event before which it was last set; -1 before any */
    char peak_name[NODE_NAME_LEN]; /* what that event reports */
    OpHooks hooks;
    SavedObserver observer;
};

static Explain *active; /* the recording running, if any */

/* A row for `t`, or, with t NULL, for a tensor that does not exist (regenerated): then the
 * caller fills in its bytes and shape. NULL when there is no memory for it. */
static Row *add_row(Explain *ex, const char *name, const char *op, const Tensor *t, Fate fate)
{
    if (ex->count == ex->capacity) {
        int capacity = ex->capacity ? 2 * ex->capacity : 256;
        Row *rows = realloc(ex->rows, (size_t)capacity * sizeof *rows);
        if (!rows) return NULL; /* the table loses a row; the step itself is unaffected */
        ex->rows = rows;
        ex->capacity = capacity;
    }
    Row *r = &ex->rows[ex->count++];
    *r = (Row){.op = op, .bytes = t ? t->bytes : 0, .fate = fate, .saved_phase = flops_phase(),
               .saved_at = ex->clock++, .released_at = -1, .slot = -1, .tensor = t};
    snprintf(r->name, sizeof r->name, "%.*s", (int)sizeof r->name - 1, name); /* a longer label is cut */
    if (t) tensor_shape_str(r->shape, sizeof r->shape, t);
    for (int i = 0; t && i < ex->count - 1; i++) {
        const Row *o = &ex->rows[i];
        if (o->tensor == t && o->released_at < 0 && o->fate != FATE_DROPPED) r->shared = true;
    }
    return r;
}

/* "{scope}.{tag or op}", the name of the node an op makes (or would make). */
static void op_row_name(char *name, size_t size, const OpInfo *op, const char *tag)
{
    const char *scope = tape_scope(), *label = tag ? tag : op->name;
    snprintf(name, size, "%.31s%s%s", scope, scope[0] ? "." : "", label);
}

/* `name`, with " (what)" after it when the op names its saved slot `slot`. */
static void slot_row_name(char *out, size_t size, const char *name, const OpInfo *op, int slot)
{
    const char *what = op->saved_names ? op->saved_names[slot] : NULL;
    snprintf(out, size, "%.*s%s%s%s", NODE_NAME_LEN - 1, name, what ? " (" : "", what ? what : "", what ? ")" : "");
}

/* Whether the resident peak rose since the last event: then it was set by the op or the
 * backward this event reports, before the event's own rows, whose name the caller notes. */
static bool peak_rose(Explain *ex)
{
    if (mem_peak_moment().resident <= ex->peak_seen) return false;
    ex->peak_seen = mem_peak_moment().resident;
    ex->peak_at = ex->clock;
    return true;
}

/* Every op, grad mode on or off: with it off, what its backward would keep is dropped. */
static void on_recorded(void *ctx, const OpInfo *op, const char *tag, Var *const *inputs, int n_inputs,
                        Tensor *const *saved, int n_saved, const Tensor *out)
{
    (void)inputs, (void)n_inputs;
    Explain *ex = ctx;
    if (peak_rose(ex)) op_row_name(ex->peak_name, sizeof ex->peak_name, op, tag);
    for (int i = 0; i < ex->count; i++) { /* a replay's op took a policy's cached `out` back: its row ends */
        Row *r = &ex->rows[i];
        if (r->fate == FATE_CACHED && r->tensor == out && r->released_at < 0) {
            r->released_at = ex->clock;
            r->released_phase = flops_phase();
        }
    }
    ex->clock++;
    if (grad_enabled()) return; /* the saved observer sees these as they are saved */
    for (int i = 0; i < n_saved; i++) {
        if (saved[i]->kind == MEM_PARAM) continue;
        char name[NODE_NAME_LEN], label[NODE_NAME_LEN + 24];
        op_row_name(name, sizeof name, op, tag);
        slot_row_name(label, sizeof label, name, op, i);
        add_row(ex, label, op->name, saved[i], FATE_DROPPED);
    }
}

/* An op's backward will make a tensor again instead of keeping it: one row per op of the
 * step's first forward (a replay regenerates the same one again). */
static void on_regenerated(void *ctx, const OpInfo *op, const char *tag, const char *what, DType dtype, int ndim,
                           const int *shape)
{
    Explain *ex = ctx;
    if (flops_phase() != PHASE_FORWARD) return;
    char name[NODE_NAME_LEN], label[NODE_NAME_LEN + 16];
    op_row_name(name, sizeof name, op, tag);
    snprintf(label, sizeof label, "%s (%s)", name, what);
    Row *r = add_row(ex, label, op->name, NULL, FATE_REGENERATED);
    if (!r) return;
    r->bytes = dtype_size(dtype);
    for (int d = 0; d < ndim; d++) r->bytes *= (size_t)shape[d];
    shape_str(r->shape, sizeof r->shape, ndim, shape);
}

static void on_saved(void *ctx, const Node *node, int slot, const Tensor *t)
{
    Explain *ex = ctx;
    if (peak_rose(ex)) snprintf(ex->peak_name, sizeof ex->peak_name, "%s", node->name);
    if (t->kind == MEM_PARAM) return;
    Fate fate = node->saved[slot].hooks ? FATE_HOOKED
              : flops_phase() == PHASE_RECOMPUTE ? FATE_RECOMPUTED : FATE_KEPT;
    char label[NODE_NAME_LEN + 24];
    slot_row_name(label, sizeof label, node->name, node->op, slot);
    Row *r = add_row(ex, label, node->op->name, t, fate);
    if (!r) return;
    r->node = node;
    r->slot = slot;
    if (fate == FATE_HOOKED) r->hooks = node->saved[slot].hooks->name;
}

static void on_released(void *ctx, const Node *node, int slot)
{
    Explain *ex = ctx;
    if (peak_rose(ex)) snprintf(ex->peak_name, sizeof ex->peak_name, "%s", node->name);
    for (int i = ex->count - 1; i >= 0; i--) {
        Row *r = &ex->rows[i];
        if (r->node == node && r->slot == slot && r->released_at < 0) {
            r->released_at = ex->clock++;
            r->released_phase = flops_phase();
            return;
        }
    }
}

void explain_note_cached(const char *region, const char *op, const char *tag, const Tensor *t)
{
    if (!active) return;
    char name[NODE_NAME_LEN];
    snprintf(name, sizeof name, "%.31s.%s", region, tag ? tag : op);
    add_row(active, name, op, t, FATE_CACHED);
}

Explain *explain_start(void)
{
    if (active) return remat_fail_null(REMAT_ESTATE, "explain_start: a recording is already running");
    Explain *ex = calloc(1, sizeof *ex);
    if (!ex) return remat_fail_null(REMAT_ENOMEM, "explain_start: no memory");
    *ex = (Explain){.hooks = {.name = "explain", .recorded = on_recorded, .regenerated = on_regenerated, .ctx = ex},
                    .observer = {.saved = on_saved, .released = on_released, .ctx = ex},
                    .peak_seen = mem_peak_moment().resident, .peak_at = -1};
    if (op_hooks_push(&ex->hooks) != REMAT_OK) {
        free(ex);
        return NULL;
    }
    saved_observer_set(&ex->observer);
    active = ex;
    return ex;
}

void explain_stop(Explain *ex)
{
    if (!ex || ex != active) return;
    saved_observer_set(NULL);
    op_hooks_pop(); /* explain_start pushed it first, before the step: it is the only one left */
    active = NULL;
}

void explain_free(Explain *ex)
{
    if (!ex) return;
    explain_stop(ex);
    free(ex->rows);
    free(ex);
}

size_t explain_bytes(const Explain *ex, const char *fate)
{
    size_t bytes = 0;
    for (int i = 0; ex && i < ex->count; i++) {
        const Row *r = &ex->rows[i];
        if (!r->shared && !strcmp(FATE_NAMES[r->fate], fate)) bytes += r->bytes;
    }
    return bytes;
}

static void when(char *buf, size_t size, Phase phase, long at)
{
    if (at < 0) snprintf(buf, size, "-");
    else snprintf(buf, size, "%s %ld", name_of(&FLOP_PHASE_NAMES, phase), at);
}

void explain_print(const Explain *ex, FILE *out, size_t stored, size_t peak, size_t predicted, const char *why_not)
{
    char bytes[32], saved[32], released[32];
    fprintf(out, "  every activation the step kept (or would have kept) for backward; time in events\n");
    fprintf(out, "  %4s  %-26s %-15s %-18s %10s  %-15s %-15s %s\n", "#", "saved by", "op", "shape", "bytes",
            "saved", "released", "fate");
    int n[FATE_COUNT] = {0}; /* distinct tensors per fate */
    for (int i = 0; i < ex->count; i++) {
        const Row *r = &ex->rows[i];
        when(saved, sizeof saved, r->saved_phase, r->saved_at);
        if (r->fate == FATE_DROPPED || r->fate == FATE_REGENERATED) snprintf(released, sizeof released, "(not saved)");
        else when(released, sizeof released, r->released_phase, r->released_at);
        fprintf(out, "  %4d  %-26s %-15s %-18s %10s  %-15s %-15s %s%s%s%s\n", i, r->name, r->op, r->shape,
                mem_format_bytes(bytes, sizeof bytes, r->bytes), saved, released, FATE_NAMES[r->fate],
                r->hooks ? " via " : "", r->hooks ? r->hooks : "", r->shared ? " (same tensor as above)" : "");
        n[r->fate] += !r->shared;
    }
    fprintf(out, "\n  totals (a tensor saved twice counted once)\n");
    for (int f = 0; f < FATE_COUNT; f++)
        if (n[f]) fprintf(out, "    %-11s %5d tensors %12s%s\n", FATE_NAMES[f], n[f],
                          mem_format_bytes(bytes, sizeof bytes, explain_bytes(ex, FATE_NAMES[f])),
                          f == FATE_REGENERATED ? "  never stored: backward makes them again" : "");

    char p[32], m[32], s[32], d[32];
    fprintf(out, "\n  measured by the ledger: %s held between forward and backward, peak %s\n",
            mem_format_bytes(s, sizeof s, stored), mem_format_bytes(m, sizeof m, peak));
    if (!predicted) {
        fprintf(out, "  predicted peak: not predicted (%s)\n", why_not);
        return;
    }
    fprintf(out, "  predicted by the chain cost model (checkpoint/cost.h, as the planner predicts it): peak %s,\n"
                 "  %s %s the measured peak\n", mem_format_bytes(p, sizeof p, predicted),
            mem_format_bytes(d, sizeof d, predicted > peak ? predicted - peak : peak - predicted),
            predicted >= peak ? "above" : "below");
    fprintf(out, "  (the peak comes in backward: the inputs kept so far, the segment being recomputed and what\n"
                 "  its backward holds at once; the model also counts what the table does not: the batch, the\n"
                 "  loss, the region outputs and the gradient buffers alive at the peak)\n");
}

/* The layer a row's tensor belongs to, as the length of its name's prefix: up to the dot
 * after the layer's number ("h.3" of "h.3.attn.softmax"), a region's name whole ("h.3",
 * "h.0-h.1"), else up to the first dot or space ("ln_f", "loss"). */
static int layer_len(const char *name)
{
    const size_t n = strcspn(name, " ");
    for (size_t i = 1; i < n; i++)
        if (name[i] == '.' && isdigit((unsigned char)name[i - 1])) return (int)i;
    return (int)(strcspn(name, "0123456789") < n ? n : strcspn(name, ". "));
}

/* Prints one layer's line of explain_print_peak, with its policy's cache apart. */
static void print_layer(FILE *out, const char *name, int len, size_t bytes, size_t cached)
{
    char b[32], c[32];
    fprintf(out, cached ? "    %-16.*s %12s  (%s of it in its policy's cache)\n" : "    %-16.*s %12s\n", len, name,
            mem_format_bytes(b, sizeof b, bytes), mem_format_bytes(c, sizeof c, cached));
}

ExplainPeak explain_print_peak(const Explain *ex, FILE *out)
{
    ExplainPeak p = {0};
    if (ex->peak_at < 0 || ex->peak_seen != mem_peak_moment().resident) return p; /* set after the recording */
    fprintf(out, "  the peak was set just before event %ld (%s); saved tensors kept, recomputed or cached\n"
                 "  by a selective policy for its replay, and live then, by layer:\n", ex->peak_at, ex->peak_name);
    const Row *largest = NULL, *layer = NULL; /* the first row of the layer being summed */
    size_t bytes = 0, cached = 0;
    for (int i = 0; i < ex->count; i++) {
        const Row *r = &ex->rows[i];
        const bool live = r->saved_at < ex->peak_at && (r->released_at < 0 || r->released_at >= ex->peak_at);
        if (!live || r->shared || (r->fate != FATE_KEPT && r->fate != FATE_RECOMPUTED && r->fate != FATE_CACHED))
            continue;
        const int n = layer_len(r->name);
        if (!layer || layer_len(layer->name) != n || strncmp(layer->name, r->name, (size_t)n)) {
            if (layer) print_layer(out, layer->name, layer_len(layer->name), bytes, cached);
            layer = r;
            bytes = cached = 0;
        }
        bytes += r->bytes;
        if (r->fate == FATE_KEPT) p.kept += r->bytes;
        if (r->fate == FATE_RECOMPUTED) p.recomputed += r->bytes;
        if (r->fate == FATE_CACHED) cached += r->bytes;
        if (!largest || r->bytes > largest->bytes) largest = r;
    }
    if (layer) print_layer(out, layer->name, layer_len(layer->name), bytes, cached);
    p.largest_op = largest ? largest->op : NULL;
    return p;
}
