/*
 * autograd.h — reverse-mode automatic differentiation: Var, Node, the tape, grad mode,
 * and the saved-tensor path.
 *
 * How a training step uses it:
 *
 *     Var *loss = model_forward(...);   every differentiable op appends a Node to the tape
 *     backward(loss);                   walk the tape in reverse from d(loss) = 1
 *     optimizer_step(...);              parameters' .grad are ready
 *     var_free(loss); tape_reset();
 *
 * A Var is a value the user holds (a Tensor) plus, for a leaf such as a parameter, its
 * accumulated gradient; a result Var points at the Node that made it. A Node is one op on
 * the tape: its inputs (edges to earlier nodes, or leaf Vars), the tensors it saved for
 * backward, a name, a tag, and the gradient of its output while backward runs.
 *
 * Memory is honest by construction. A Node never holds its inputs' values: an op keeps
 * exactly the tensors it declares to be saved (ops_record), so an intermediate is freed as
 * soon as the user drops its Var and no node saved it. In backward, a node's output
 * gradient is freed right after the node has used it, and its saved tensors right after.
 * Activation gradients are charged to MEM_ACT (they are activation-sized and transient);
 * parameter gradients to MEM_GRAD.
 *
 * The saved-tensor path is the one place where "keep it, drop it and recompute it, or move
 * it to disk?" is asked of every tensor an op wants for backward: node_record saves each
 * (save_for_backward, in autograd.c) through the top of a stack of pack/unpack hooks
 * (default: keep a reference), and saved_tensor asks the same hooks for it back.
 * Checkpointing and offload plug in here without touching any op.
 *
 * What this is not: a general graph library. One output per node; the engine is
 * single-threaded (kernels use the threads).
 */
#ifndef REMAT_AUTOGRAD_H
#define REMAT_AUTOGRAD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "tensor/tensor.h"

#define NODE_MAX_INPUTS 4
#define NODE_MAX_SAVED 6
#define NODE_NAME_LEN 64

typedef struct Node Node;

/* ---- Var ---------------------------------------------------------------------------- */

typedef struct Var {
    Tensor *value;      /* one reference, owned by this Var */
    Tensor *grad;       /* leaves only: accumulated gradient (MEM_GRAD); NULL until backward */
    Node *creator;      /* the node that made `value`; NULL for a leaf (owned by the tape) */
    bool requires_grad; /* leaf: set by its creator; result: some input needs a gradient */
    int refcount;
    char name[NODE_NAME_LEN];
} Var;

/* A leaf Var holding `value` (the Var takes over the caller's reference, also on error).
 * `name` may be NULL. NULL on error. */
Var *var_create(Tensor *value, bool requires_grad, const char *name);

/* Adds a reference; returns `v` (NULL passes through). */
Var *var_retain(Var *v);

/* Drops a reference; at the last one releases the value (and grad) and detaches the Var
 * from its node. NULL is a no-op. */
void var_free(Var *v);

/* ---- grad mode ---------------------------------------------------------------------- */

/* Whether ops record nodes. Off, ops compute values only and save nothing (inference, and
 * a checkpoint region's first forward). Returns the previous setting. */
bool grad_set_enabled(bool enabled);
bool grad_enabled(void);

/* ---- ops as the engine sees them ---------------------------------------------------- */

/* An op's backward: given the gradient of the node's output, ACCUMULATE (+=) into the
 * gradient buffer of each input. dinputs[i] is NULL when input i needs no gradient;
 * otherwise it is allocated (zero-filled the first time) by the engine. The op reads
 * what it saved through saved_tensor(). */
typedef RematStatus (*BackwardFn)(Node *node, const Tensor *dout, Tensor *const dinputs[NODE_MAX_INPUTS]);

typedef struct OpInfo {
    const char *name;     /* "matmul", "relu", ...: what selective policies match */
    BackwardFn backward;  /* NULL: the op cannot be differentiated (backward fails loudly) */
    /* What each saved tensor is, by slot ("q", ..., "log-sum-exp"), for tables that list
     * them (--explain-memory); NULL when the op's name says enough. */
    const char *const *saved_names;
} OpInfo;

/* Room in a node for its op's attributes: the sizes and options its backward needs.
 * Each op family declares its own struct of named fields (ops_linear.c's MatmulAttrs:
 * batch, m, n, k, trans_b, ...) and stores and reads it through ops_internal.h; the
 * node's op says which struct the bytes hold. The engine never reads them. In gdb, from
 * any frame: p *(MatmulAttrs *)&node->attrs. */
typedef union OpAttrs {
    unsigned char bytes[48]; /* the largest struct's size: fused attention's, with its dropout key */
    uint64_t align; /* aligned for the widest field a struct holds (a dropout key's seed) */
} OpAttrs;

/* One saved tensor as the saved-tensor path holds it. */
typedef struct SavedSlot {
    void *packed;                 /* what the hooks' pack returned; NULL once backward used it, or it was released */
    const struct SavedHooks *hooks; /* who packed it (NULL: a plain reference) */
    size_t bytes;                 /* for tape_print and the ledger's explanations */
} SavedSlot;

/* An edge from a node back to where its input came from. */
typedef struct Edge {
    Node *node; /* the input was made by this node, or */
    Var *leaf;  /* the input is a leaf that requires grad (one reference held) */
} Edge;

struct Node {
    const OpInfo *op;
    char name[NODE_NAME_LEN];     /* "h.3.attn.softmax", or "node_17" */
    const char *tag;              /* "attn.softmax" (static string), or NULL */
    int index;                    /* position on its tape */
    int n_inputs;
    Edge inputs[NODE_MAX_INPUTS];
    int n_saved;
    SavedSlot saved[NODE_MAX_SAVED];
    OpAttrs attrs;                /* its op's attribute struct, for its backward */
    int out_ndim;
    int out_shape[TENSOR_MAX_DIMS];
    Tensor *grad;                 /* d(loss)/d(output), alive only while backward needs it */
    Var *output;                  /* the Var this node made (weak: cleared by var_free) */
    void *state;                  /* what an op keeps beyond attrs (a checkpoint region's
                                     replay record); freed with the node by state_free */
    void (*state_free)(void *state);
};

/* The tag of every node whose saved tensor is what a checkpoint keeps to run its forward
 * again from: a region's input, a state Revolve stores. checkpoint/ tags its nodes so, and
 * offload's boundary policy takes what they save: rooms above autograd recognise each
 * other's tensors by tag, never by op name. */
#define TAG_CHECKPOINT_INPUT "checkpoint.input"

/* Records `op` on the current tape: a node over `inputs` (entries may be NULL; at most
 * NODE_MAX_INPUTS) named `name` (NULL: the scope and `tag`, "h.3.attn.softmax", or
 * "node_17"), whose output has `out`'s shape, saving the n_save tensors of `save` through
 * the saved-tensor path; and `out` wrapped in a new Var made by the node, which it returns.
 * The node is recorded whenever grad mode is on, even if no input needs a gradient: ops
 * come here through ops_record when one does; rooms above autograd always (a checkpoint
 * region, whose parameters inside get their gradients through its own backward; a node
 * that only holds a state, as Revolve's slots and DTR's runtime). With grad mode off
 * nothing is recorded and the Var is made by no node. Takes the caller's reference to `out`, also
 * on error; on error returns NULL and leaves no node on the tape. */
Var *node_record(const OpInfo *op, const char *tag, const char *name, Var *const *inputs, int n_inputs,
                 Tensor *out, Tensor *const *save, int n_save);

/* ---- the saved-tensor path ---------------------------------------------------------- */

/* Hooks that decide what happens to a tensor saved for backward. pack receives a borrowed
 * tensor and returns an opaque handle (NULL on error, with remat_fail); unpack turns a
 * handle back into a tensor the caller owns one reference of (NULL on error); release
 * drops a handle that will not be unpacked again. */
typedef struct SavedHooks {
    const char *name;
    void *(*pack)(void *ctx, Tensor *t, const Node *node, int slot);
    Tensor *(*unpack)(void *ctx, void *packed, const Node *node, int slot);
    void (*release)(void *ctx, void *packed);
    void *ctx;
} SavedHooks;

/* Pushes hooks on the stack (they must outlive their use); pop removes the top.
 * push fails with REMAT_EINVAL past 8 levels. */
RematStatus saved_hooks_push(const SavedHooks *hooks);
void saved_hooks_pop(void);

/* Someone who wants to watch the saved-tensor path without changing it (train's
 * --explain-memory): told of every tensor saved (after the hooks packed it) and of every
 * slot released. One observer at a time; it must outlive its use. */
typedef struct SavedObserver {
    void (*saved)(void *ctx, const Node *node, int slot, const Tensor *t);
    void (*released)(void *ctx, const Node *node, int slot);
    void *ctx;
} SavedObserver;

/* Sets the observer (NULL: none); returns the previous one. */
const SavedObserver *saved_observer_set(const SavedObserver *observer);

/* The i-th tensor `node` saved, as a reference the caller frees with tensor_free.
 * NULL with REMAT_ESTATE if it was released ("saved tensor 0 of relu #3 (h.0.mlp.act) was
 * freed ..."), or with the hooks' error. */
Tensor *saved_tensor(Node *node, int i);

/* Releases every saved tensor of `node` (backward does this after the node has run). */
void node_release_saved(Node *node);

/* ---- op hooks: what selective checkpointing plugs into -------------------------------- */

/* Every op makes its outputs through ops_output (ops_internal.h): the tensor it returns,
 * and any other tensor it creates and saves (a dropout's mask, a LayerNorm's mean and
 * rstd), numbered 0, 1, ... in the order the op makes them. Hooks on a stack see each:
 *
 *   lookup   offers a tensor to use instead of computing (one new reference), or NULL.
 *            Asked from the top of the stack down; the first offer wins, and then the op
 *            skips its arithmetic (and its FLOPs).
 *   observe  is told of every output, offered or freshly allocated (borrowed; it may keep
 *            a reference). Called on every hook, top down. NULL when a hook only offers.
 *   recorded (below) is told what the op read and what its backward would keep.
 *
 * A checkpoint region with a selective policy observes its first forward to keep the
 * outputs the policy saves, and offers them back during the replay. */
typedef struct OpHooks {
    const char *name;
    Tensor *(*lookup)(void *ctx, const OpInfo *op, const char *tag, int index);
    RematStatus (*observe)(void *ctx, const OpInfo *op, const char *tag, int index, Tensor *out);
    /* Told, once an op has computed `out`, what it read and what its backward keeps — even
     * with grad mode off, when nothing is actually saved: `inputs` (n_inputs, entries may
     * be NULL) and `saved` (n_saved tensors). NULL when a hook does not care. */
    void (*recorded)(void *ctx, const OpInfo *op, const char *tag, Var *const *inputs, int n_inputs,
                     Tensor *const *saved, int n_saved, const Tensor *out);
    /* Told, after `recorded`, of a tensor the op's backward makes again instead of keeping
     * (a counter-based dropout's mask, fused attention's probabilities): what it is and
     * its type and shape. Nothing of it exists. NULL when a hook does not care. */
    void (*regenerated)(void *ctx, const OpInfo *op, const char *tag, const char *what, DType dtype, int ndim,
                        const int *shape);
    void *ctx;
} OpHooks;

/* As saved_hooks_push and saved_hooks_pop, for op hooks. */
RematStatus op_hooks_push(const OpHooks *hooks);
void op_hooks_pop(void);

/* For an op whose backward regenerates a tensor instead of keeping it: tells every hook
 * what it is (`what`, e.g. "mask") and its type and shape. */
void op_hooks_regenerated(const OpInfo *op, const char *tag, const char *what, DType dtype, int ndim,
                          const int *shape);
/* ---- parameter use: what sharded parameters plug into -------------------------------- */

/* Parameters sharded across processes (ZeRO stage 3, parallel/zero.h) exist in full only
 * while someone uses them. Two moments tell a hook so: a stage about to run its forward
 * (tape_set_stage, below), and a node about to run its backward (its parameters are the
 * leaves among its inputs). So a hook can gather a group of parameters for a forward, a
 * checkpoint replay and a backward alike. Without hooks neither moment does anything. */
typedef struct ParamUseHooks {
    /* `stage` (an opaque pointer naming a group of parameters) is about to run its forward;
     * on error (e.g. the memory budget) the stage fails with that status. */
    RematStatus (*enter)(void *ctx, const void *stage);
    /* `node`'s backward is about to run; on error backward stops with that status. */
    RematStatus (*before_backward)(void *ctx, const Node *node);
    void *ctx;
} ParamUseHooks;

/* Sets the hooks (NULL: none, the default); returns the previous ones. */
const ParamUseHooks *param_use_hooks_set(const ParamUseHooks *hooks);

/* Makes `stage` the one whose forward runs from now on: the nodes recorded are named under
 * `name` ("h.3" gives "h.3.attn.softmax"; copied, up to 31 characters; NULL: no prefix),
 * and the hooks, if any, are told that `stage` is about to run its forward (their enter;
 * a NULL stage tells them nothing). A layers_forward sets each Layer under its name and
 * clears it afterwards (NULL, NULL); a model's embedding and head set the Model, unnamed.
 * On the hooks' error returns their status and changes nothing. */
RematStatus tape_set_stage(const void *stage, const char *name);

/* ---- the tape ----------------------------------------------------------------------- */

typedef struct Tape {
    Node **nodes;
    int count, capacity;
} Tape;

/* A new, empty tape; NULL on error. tape_free frees it and its nodes (NULL is a no-op). */
Tape *tape_create(void);
void tape_free(Tape *tape);

/* The tape ops record onto. There is always one (a process-wide default). */
Tape *tape_current(void);

/* Makes `tape` current (NULL: the default one); returns the previous current tape. */
Tape *tape_set_current(Tape *tape);

/* Frees every node on the current tape and empties it; Vars they made become constants.
 * (To empty another tape, make it current first; tape_free frees one with its nodes.) */
void tape_reset(void);

/* The prefix of the names of nodes created now (tape_set_stage's name; "" when none). */
const char *tape_scope(void);

/* One line per node: index, name, op, output shape, saved tensors and their bytes. */
void tape_print(const Tape *tape, FILE *out);

/* The tape as a Graphviz digraph. REMAT_EIO if the file cannot be written. */
RematStatus tape_dump_dot(const Tape *tape, const char *path);

/* ---- backward ----------------------------------------------------------------------- */

/* Backpropagates from `loss` (a single-element Var) through the current tape, in reverse:
 * every leaf that requires grad gets d(loss)/d(leaf) added to its .grad (allocated as
 * zeros if missing: MEM_GRAD for a parameter, MEM_ACT for any other leaf). Nodes not on a
 * path from a parameter are skipped; each node's gradient and saved tensors are freed as
 * soon as it has run.
 * On error (no graph, a freed saved tensor, the budget) returns the status; the gradients
 * of leaves may then be partial, so the caller must not apply them. */
RematStatus backward(Var *loss);

/* As backward, from an output of any shape whose gradient is `dout` (borrowed: backward
 * holds a reference while it runs, and only reads it). */
RematStatus backward_from(Var *out, Tensor *dout);

/* As backward_from, from the node that made an output — for a caller that has already
 * let the output's value go (a checkpoint region's replay: nothing reads it). A NULL
 * node is an output without a graph (REMAT_ESTATE). */
RematStatus backward_node(Node *root, Tensor *dout);

/* Zeroes the gradient of a leaf (keeps the buffer). */
void var_zero_grad(Var *v);

#endif /* REMAT_AUTOGRAD_H */
