/*
 * autograd.c — the engine: Vars, nodes on a tape, the op hooks and where an op meets
 * them (ops_check_inputs, ops_output, ops_record), the saved-tensor path, and backward
 * (see autograd.h).
 * The ops themselves live in ops_*.c.
 */
#include "autograd/autograd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/kernels.h"
#include "autograd/ops_internal.h"

/* ---- Var ---------------------------------------------------------------------------- */

Var *var_create(Tensor *value, bool requires_grad, const char *name)
{
    if (!value)
        return remat_fail_null(REMAT_EINVAL, "var_create: value is NULL");
    Var *v = malloc(sizeof *v);
    if (!v) {
        tensor_free(value);
        return remat_fail_null(REMAT_ENOMEM, "var_create: no memory for a Var");
    }
    *v = (Var){.value = value, .requires_grad = requires_grad, .refcount = 1};
    if (name) snprintf(v->name, sizeof v->name, "%s", name);
    return v;
}

Var *var_retain(Var *v)
{
    if (v) v->refcount++;
    return v;
}

void var_free(Var *v)
{
    if (!v || --v->refcount > 0) return;
    if (v->creator) v->creator->output = NULL;
    tensor_free(v->value);
    tensor_free(v->grad);
    free(v);
}

void var_zero_grad(Var *v)
{
    if (v && v->grad) k_fill(v->grad->f32, 0.0f, v->grad->numel); /* threaded when large */
}

/* ---- grad mode ---------------------------------------------------------------------- */

static bool grad_mode = true;

bool grad_set_enabled(bool enabled)
{
    bool previous = grad_mode;
    grad_mode = enabled;
    return previous;
}

bool grad_enabled(void) { return grad_mode; }

/* ---- the tape ----------------------------------------------------------------------- */

static Tape default_tape;
static Tape *current_tape = &default_tape;
static char scope[NODE_NAME_LEN / 2];

Tape *tape_create(void)
{
    Tape *tape = calloc(1, sizeof *tape);
    if (!tape) remat_fail(REMAT_ENOMEM, "tape_create: no memory for a tape");
    return tape;
}

static void node_free(Node *node)
{
    if (node->state_free) node->state_free(node->state);
    node_release_saved(node);
    for (int i = 0; i < node->n_inputs; i++) var_free(node->inputs[i].leaf);
    tensor_free(node->grad);
    if (node->output) node->output->creator = NULL;
    free(node);
}

void tape_reset(void)
{
    Tape *tape = current_tape;
    for (int i = tape->count - 1; i >= 0; i--) node_free(tape->nodes[i]);
    tape->count = 0;
}

void tape_free(Tape *tape)
{
    if (!tape) return;
    for (int i = tape->count - 1; i >= 0; i--) node_free(tape->nodes[i]);
    free(tape->nodes);
    if (tape == current_tape) current_tape = &default_tape;
    if (tape != &default_tape) free(tape);
}

Tape *tape_current(void) { return current_tape; }

Tape *tape_set_current(Tape *tape)
{
    Tape *previous = current_tape;
    current_tape = tape ? tape : &default_tape;
    return previous;
}

const char *tape_scope(void) { return scope; }

/* ---- nodes -------------------------------------------------------------------------- */

/* A new node for `op` at the end of the current tape: its edges to where its inputs came
 * from, `out`'s shape for its output, and its name (`name`, or the scope and tag, or
 * "node_17"). NULL on error. */
static Node *node_append(const OpInfo *op, const char *tag, const char *name, Var *const *inputs, int n_inputs,
                         const Tensor *out)
{
    if (n_inputs > NODE_MAX_INPUTS)
        return remat_fail_null(REMAT_EINVAL, "%s: %d inputs, at most %d", op->name, n_inputs, NODE_MAX_INPUTS);
    Tape *tape = current_tape;
    if (tape->count == tape->capacity) {
        int capacity = tape->capacity ? 2 * tape->capacity : 64;
        Node **nodes = realloc(tape->nodes, (size_t)capacity * sizeof *nodes);
        if (!nodes) return remat_fail_null(REMAT_ENOMEM, "tape: no memory for %d nodes", capacity);
        tape->nodes = nodes;
        tape->capacity = capacity;
    }
    Node *node = malloc(sizeof *node);
    if (!node) return remat_fail_null(REMAT_ENOMEM, "%s: no memory for a tape node", op->name);
    *node = (Node){.op = op, .tag = tag, .n_inputs = n_inputs, .index = tape->count, .out_ndim = out->ndim};
    for (int i = 0; i < n_inputs; i++) {
        Var *in = inputs[i];
        if (in && in->creator) node->inputs[i].node = in->creator;
        else if (in && in->requires_grad) node->inputs[i].leaf = var_retain(in);
    }
    memcpy(node->out_shape, out->shape, sizeof node->out_shape);
    tape->nodes[tape->count++] = node;
    if (name) snprintf(node->name, sizeof node->name, "%s", name);
    else if (tag && scope[0]) snprintf(node->name, sizeof node->name, "%s.%s", scope, tag);
    else if (tag) snprintf(node->name, sizeof node->name, "%s", tag);
    else snprintf(node->name, sizeof node->name, "node_%d", node->index);
    return node;
}

/* ---- parameter use ------------------------------------------------------------------ */

static const ParamUseHooks *use_hooks;

const ParamUseHooks *param_use_hooks_set(const ParamUseHooks *hooks)
{
    const ParamUseHooks *previous = use_hooks;
    use_hooks = hooks;
    return previous;
}

RematStatus tape_set_stage(const void *stage, const char *name)
{
    const bool told = stage && use_hooks && use_hooks->enter;
    const RematStatus status = told ? use_hooks->enter(use_hooks->ctx, stage) : REMAT_OK;
    if (status == REMAT_OK) snprintf(scope, sizeof scope, "%s", name ? name : "");
    return status;
}

/* ---- op hooks ------------------------------------------------------------------------ */

/* A stack of hooks, as op_hooks_push and saved_hooks_push keep them: the top is used
 * first, and at most 8 are pushed at once. */
#define HOOKS_MAX_DEPTH 8
typedef struct HookStack {
    const void *hooks[HOOKS_MAX_DEPTH];
    int depth;
} HookStack;

static RematStatus hook_push(HookStack *stack, const void *hooks, const char *fn)
{
    if (!hooks || stack->depth == HOOKS_MAX_DEPTH)
        return remat_fail(REMAT_EINVAL, "%s: %s", fn, hooks ? "hook stack is full (8 levels)" : "hooks are NULL");
    stack->hooks[stack->depth++] = hooks;
    return REMAT_OK;
}

static void hook_pop(HookStack *stack)
{
    if (stack->depth > 0) stack->depth--;
}

static HookStack op_hooks, saved_hooks;

RematStatus op_hooks_push(const OpHooks *hooks) { return hook_push(&op_hooks, hooks, "op_hooks_push"); }

void op_hooks_pop(void) { hook_pop(&op_hooks); }

/* The three functions every op calls, described in ops_internal.h. */
RematStatus ops_check_inputs(char *label, size_t size, const char *op, const char *tag,
                             Var *const *inputs, int n, const DType *dtypes)
{
    snprintf(label, size, "%s%s%s", op, tag ? " " : "", tag ? tag : "");
    for (int i = 0; i < n; i++) {
        if (!inputs[i] && remat_last_status() != REMAT_OK) return remat_last_status(); /* keep its message */
        if (!inputs[i]) return remat_fail(REMAT_EINVAL, "%s: input %d is NULL (did an earlier op fail?)", label, i);
        const DType want = dtypes ? dtypes[i] : DTYPE_F32, got = inputs[i]->value->dtype;
        if (got != want)
            return remat_fail(REMAT_EINVAL, "%s: input %d must be %s, got %s", label, i, dtype_name(want),
                              dtype_name(got));
    }
    return REMAT_OK;
}

Tensor *ops_output(const OpInfo *op, const char *tag, int index, DType dtype, int ndim,
                   const int *shape, bool *cached)
{
    Tensor *out = NULL;
    for (int i = op_hooks.depth - 1; i >= 0 && !out; i--) {
        const OpHooks *h = op_hooks.hooks[i];
        out = h->lookup ? h->lookup(h->ctx, op, tag, index) : NULL;
    }
    *cached = out != NULL;
    char got[48];
    RematStatus status = REMAT_OK;
    if (out && (out->dtype != dtype || out->ndim != ndim || memcmp(out->shape, shape, (size_t)ndim * sizeof *shape)))
        status = remat_fail(REMAT_ESTATE, "%s %s: the cached output %d has shape %s, not the one this replay asks "
                            "for: the replay did not follow the first forward", op->name, tag ? tag : "", index,
                            tensor_shape_str(got, sizeof got, out));
    if (!out && !(out = tensor_create(MEM_ACT, dtype, ndim, shape))) return NULL;
    for (int i = op_hooks.depth - 1; i >= 0 && status == REMAT_OK; i--) {
        const OpHooks *h = op_hooks.hooks[i];
        if (h->observe) status = h->observe(h->ctx, op, tag, index, out);
    }
    if (status == REMAT_OK) return out;
    tensor_free(out);
    return NULL;
}

Var *ops_record(const OpInfo *op, const char *tag, Var *const *inputs, int n_inputs, Tensor *out,
                Tensor *const *save, int n_save, const void *attrs, size_t attrs_size)
{
    for (int i = op_hooks.depth - 1; i >= 0; i--) {
        const OpHooks *h = op_hooks.hooks[i];
        if (h->recorded) h->recorded(h->ctx, op, tag, inputs, n_inputs, save, n_save, out);
    }
    bool needed = false; /* does an input come from a node, or need its own gradient? */
    for (int i = 0; i < n_inputs; i++) needed |= inputs[i] && (inputs[i]->creator || inputs[i]->requires_grad);
    if (!needed) return var_create(out, false, NULL); /* no gradient flows through this op */
    Var *y = node_record(op, tag, NULL, inputs, n_inputs, out, save, n_save);
    if (y && y->creator && attrs) memcpy(y->creator->attrs.bytes, attrs, attrs_size);
    return y;
}

void op_hooks_regenerated(const OpInfo *op, const char *tag, const char *what, DType dtype, int ndim,
                          const int *shape)
{
    for (int i = op_hooks.depth - 1; i >= 0; i--) {
        const OpHooks *h = op_hooks.hooks[i];
        if (h->regenerated) h->regenerated(h->ctx, op, tag, what, dtype, ndim, shape);
    }
}

/* ---- the saved-tensor path ---------------------------------------------------------- */

RematStatus saved_hooks_push(const SavedHooks *hooks) { return hook_push(&saved_hooks, hooks, "saved_hooks_push"); }

void saved_hooks_pop(void) { hook_pop(&saved_hooks); }

static const SavedObserver *observer;

const SavedObserver *saved_observer_set(const SavedObserver *o)
{
    const SavedObserver *previous = observer;
    observer = o;
    return previous;
}

/* Saves `t` for backward in the next slot of `node`, through the top hooks: the one place
 * a tensor enters the saved-tensor path (autograd.h). On error (too many slots, a hook
 * failure) returns its status and saves nothing. */
static RematStatus save_for_backward(Node *node, Tensor *t)
{
    if (!node || !t) return remat_fail(REMAT_EINVAL, "save_for_backward: node or tensor is NULL");
    if (node->n_saved == NODE_MAX_SAVED)
        return remat_fail(REMAT_EINVAL, "%s #%d (%s): more than %d saved tensors", node->op->name,
                          node->index, node->name, NODE_MAX_SAVED);
    const SavedHooks *hooks = saved_hooks.depth ? saved_hooks.hooks[saved_hooks.depth - 1] : NULL;
    int slot = node->n_saved;
    void *packed = hooks ? hooks->pack(hooks->ctx, t, node, slot) : tensor_retain(t);
    if (!packed) return remat_last_status() != REMAT_OK ? remat_last_status() : REMAT_ESTATE;
    node->saved[slot] = (SavedSlot){.packed = packed, .hooks = hooks, .bytes = t->bytes};
    node->n_saved++;
    if (observer && observer->saved) observer->saved(observer->ctx, node, slot, t);
    return REMAT_OK;
}

Tensor *saved_tensor(Node *node, int i)
{
    if (!node || i < 0 || i >= node->n_saved)
        return remat_fail_null(REMAT_EINVAL, "saved_tensor: %s has no saved tensor %d",
                               node ? node->name : "(null node)", i);
    SavedSlot *s = &node->saved[i];
    if (!s->packed)
        return remat_fail_null(REMAT_ESTATE,
                               "saved tensor %d of %s #%d (%s) was freed: backward already ran through this "
                               "node, or its saved tensors were released; run the forward again",
                               i, node->op->name, node->index, node->name);
    if (!s->hooks) return tensor_retain((Tensor *)s->packed);
    return s->hooks->unpack(s->hooks->ctx, s->packed, node, i);
}

void node_release_saved(Node *node)
{
    for (int i = 0; i < node->n_saved; i++) {
        SavedSlot *s = &node->saved[i];
        if (!s->packed) continue;
        if (s->hooks) s->hooks->release(s->hooks->ctx, s->packed);
        else tensor_free((Tensor *)s->packed);
        s->packed = NULL;
        if (observer && observer->released) observer->released(observer->ctx, node, i);
    }
}

/* ---- recording a node --------------------------------------------------------------- */

Var *node_record(const OpInfo *op, const char *tag, const char *name, Var *const *inputs, int n_inputs,
                 Tensor *out, Tensor *const *save, int n_save)
{
    if (!grad_mode) return var_create(out, false, NULL); /* nothing is recorded */
    Node *node = node_append(op, tag, name, inputs, n_inputs, out);
    RematStatus status = node ? REMAT_OK : remat_last_status();
    for (int i = 0; i < n_save && status == REMAT_OK; i++) status = save_for_backward(node, save[i]);
    Var *v = status == REMAT_OK ? var_create(out, true, node->name) : NULL; /* takes out, also on error */
    if (v) {
        v->creator = node;
        node->output = v;
        return v;
    }
    if (node) { /* its recording failed: off the tape (it is the last node), freed with what it saved */
        current_tape->count--;
        node_free(node);
    }
    if (status != REMAT_OK) tensor_free(out);
    return NULL;
}

/* ---- backward ----------------------------------------------------------------------- */

/* The buffer input `i` of `node` accumulates its gradient into, NULL in *out when that
 * input needs no gradient. The one place the engine makes a gradient buffer: on first use,
 * zero-filled, so that every backward adds its share onto it with +=. On error (the
 * budget) returns the status and makes nothing. */
static RematStatus grad_buffer(Node *node, int i, Tensor **out)
{
    Edge *e = &node->inputs[i];
    *out = NULL;
    if (!e->node && !e->leaf) return REMAT_OK;
    /* A parameter's gradient is GRAD; any other leaf's (a checkpoint region's input in its
     * replay, a test's input) and every node's is an activation gradient. */
    const Tensor *v = e->leaf ? e->leaf->value : NULL;
    Tensor **slot = e->node ? &e->node->grad : &e->leaf->grad;
    if (!*slot) {
        *slot = e->node ? tensor_zeros(MEM_ACT, e->node->out_ndim, e->node->out_shape)
                        : tensor_zeros(v->kind == MEM_PARAM ? MEM_GRAD : MEM_ACT, v->ndim, v->shape);
        if (!*slot) return remat_last_status();
    }
    *out = *slot;
    return REMAT_OK;
}

RematStatus backward(Var *loss)
{
    if (!loss) return remat_fail(REMAT_EINVAL, "backward: loss is NULL");
    if (loss->value->numel != 1)
        return remat_fail(REMAT_EINVAL, "backward: the loss must have one element, it has %zu "
                          "(use backward_from for a gradient of another shape)", loss->value->numel);
    Tensor *seed = tensor_zeros(MEM_ACT, loss->value->ndim, loss->value->shape);
    if (!seed) return remat_last_status();
    seed->f32[0] = 1.0f; /* d(loss)/d(loss) */
    RematStatus status = backward_node(loss->creator, seed);
    tensor_free(seed);
    return status;
}

RematStatus backward_from(Var *out, Tensor *dout)
{
    if (!out) return remat_fail(REMAT_EINVAL, "backward: the output is NULL");
    return backward_node(out->creator, dout);
}

RematStatus backward_node(Node *root, Tensor *dout)
{
    if (!dout) return remat_fail(REMAT_EINVAL, "backward: the output's gradient is NULL");
    if (!root)
        return remat_fail(REMAT_ESTATE, "backward: the output has no graph (no parameter requires "
                          "grad, or it was computed with grad mode off — did you forget "
                          "requires_grad on the parameters?)");
    if (dout->ndim != root->out_ndim || memcmp(dout->shape, root->out_shape, (size_t)dout->ndim * sizeof *dout->shape)) {
        char ds[48];
        return remat_fail(REMAT_EINVAL, "backward: gradient %s does not match the shape of %s's output",
                          tensor_shape_str(ds, sizeof ds, dout), root->name);
    }
    Tape *tape = current_tape;
    if (root->index >= tape->count || tape->nodes[root->index] != root)
        return remat_fail(REMAT_ESTATE, "backward: %s was not recorded on the current tape", root->name);

    Phase previous = flops_set_phase(PHASE_BACKWARD);
    /* A root without a gradient yet takes dout uncopied: its backward only reads it, and no
     * node after the root on the tape is visited, so nothing else can add to it. */
    if (root->grad) k_axpy(root->grad->f32, dout->f32, 1.0f, dout->numel);
    else root->grad = tensor_retain(dout);
    RematStatus status = REMAT_OK;
    for (int k = root->index; k >= 0 && status == REMAT_OK; k--) {
        Node *node = tape->nodes[k];
        if (!node->grad) continue; /* not on a path from the output */
        if (!node->op->backward) {
            status = remat_fail(REMAT_ESTATE, "backward: op %s (%s) has no backward rule",
                                node->op->name, node->name);
            break;
        }
        Tensor *dinputs[NODE_MAX_INPUTS] = {0};
        if (use_hooks && use_hooks->before_backward) /* its parameters, if they come and go */
            status = use_hooks->before_backward(use_hooks->ctx, node);
        for (int i = 0; i < node->n_inputs && status == REMAT_OK; i++)
            status = grad_buffer(node, i, &dinputs[i]);
        if (status == REMAT_OK) status = node->op->backward(node, node->grad, dinputs);
        /* This node is done: its output gradient and saved tensors are no longer needed. */
        tensor_free(node->grad);
        node->grad = NULL;
        node_release_saved(node);
    }
    flops_set_phase(previous);
    return status;
}

/* ---- seeing the tape ---------------------------------------------------------------- */

void tape_print(const Tape *tape, FILE *out)
{
    fprintf(out, "%4s  %-28s %-14s %-16s %s\n", "#", "name", "op", "output", "saved");
    for (int k = 0; k < tape->count; k++) {
        const Node *node = tape->nodes[k];
        char shape[48], bytes[32];
        shape_str(shape, sizeof shape, node->out_ndim, node->out_shape);
        fprintf(out, "%4d  %-28s %-14s %-16s", k, node->name, node->op->name, shape);
        if (node->n_saved == 0) fprintf(out, " -");
        for (int i = 0; i < node->n_saved; i++) {
            const SavedSlot *s = &node->saved[i];
            fprintf(out, " [%d] %s%s%s%s", i, mem_format_bytes(bytes, sizeof bytes, s->bytes),
                    !s->packed ? " (freed)" : "", s->hooks ? " via " : "", s->hooks ? s->hooks->name : "");
        }
        fputc('\n', out);
    }
}

RematStatus tape_dump_dot(const Tape *tape, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return remat_fail(REMAT_EIO, "cannot write graph to %s: %s", path, strerror(errno));
    fprintf(f, "digraph tape {\n  rankdir=BT;\n  node [shape=box, fontname=monospace];\n");
    for (int k = 0; k < tape->count; k++) {
        const Node *node = tape->nodes[k];
        size_t saved = 0;
        for (int i = 0; i < node->n_saved; i++) saved += node->saved[i].bytes;
        char bytes[32], shape[48];
        shape_str(shape, sizeof shape, node->out_ndim, node->out_shape);
        fprintf(f, "  n%d [label=\"#%d %s\\n%s %s\\nsaved %s\"%s];\n", k, k, node->name,
                node->op->name, shape, mem_format_bytes(bytes, sizeof bytes, saved),
                saved ? ", style=filled, fillcolor=lightyellow" : "");
        for (int i = 0; i < node->n_inputs; i++) {
            const Edge *e = &node->inputs[i];
            if (e->node) fprintf(f, "  n%d -> n%d;\n", e->node->index, k);
            else if (e->leaf)
                fprintf(f, "  \"%s\" [shape=ellipse];\n  \"%s\" -> n%d;\n",
                        e->leaf->name[0] ? e->leaf->name : "param", e->leaf->name[0] ? e->leaf->name : "param", k);
        }
    }
    fprintf(f, "}\n");
    const bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed)
        return remat_fail(REMAT_EIO, "cannot finish writing graph to %s: %s", path,
                          failed ? "a write failed" : strerror(errno));
    return REMAT_OK;
}
