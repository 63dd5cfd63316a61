/*
 * replay.c — entering and leaving a replay of forward work (see replay.h).
 */
#include "checkpoint/replay.h"

RematStatus replay_enter(ReplayScope *scope, const ReplayOptions *opts)
{
    *scope = (ReplayScope){0};
    Tape *tape = NULL;
    if (opts->record && !(tape = tape_create())) return remat_last_status();
    if (opts->hooks && op_hooks_push(opts->hooks) != REMAT_OK) {
        tape_free(tape);
        return remat_last_status();
    }
    *scope = (ReplayScope){.entered = true, .tape = tape, .outer_tape = tape ? tape_set_current(tape) : tape_current(),
                           .outer_grad = grad_set_enabled(opts->record),
                           .outer_phase = flops_set_phase(PHASE_RECOMPUTE), .hooks_pushed = opts->hooks != NULL};
    if (opts->ctx && opts->rng) {
        scope->ctx = opts->ctx;
        scope->outer_rng = opts->ctx->rng;
        opts->ctx->rng = *opts->rng;
    }
    return REMAT_OK;
}

Var *replay_input(const Tensor *x, Tensor *dx_into, bool want_grad, const char *name)
{
    Var *leaf = var_create(tensor_retain((Tensor *)x), want_grad, name);
    if (leaf && want_grad && dx_into) leaf->grad = tensor_retain(dx_into);
    return leaf;
}

/* Backward of a replay. Forward was y = f(x) on the replay's tape; so walk that tape from
 * y's node with dy: every leaf inside (x, the parameters) gets its share of J_f^T·dy. */
RematStatus replay_backward(ReplayScope *scope, Var *y, const Tensor *dy)
{
    if (scope->hooks_pushed) { /* they serve the forward; a region nested inside has its own */
        op_hooks_pop();
        scope->hooks_pushed = false;
    }
    Node *root = y ? y->creator : NULL;
    var_free(y);
    if (!scope->tape) return remat_fail(REMAT_ESTATE, "replay_backward: this replay records no tape (an advance)");
    if (!root) return REMAT_OK;
    flops_set_phase(PHASE_BACKWARD);
    /* dy is only read: backward_node takes a reference for the root's gradient. */
    const RematStatus status = backward_node(root, (Tensor *)dy);
    flops_set_phase(PHASE_RECOMPUTE);
    return status;
}

void replay_leave(ReplayScope *scope)
{
    if (!scope->entered) return;
    if (scope->hooks_pushed) op_hooks_pop();
    flops_set_phase(scope->outer_phase);
    grad_set_enabled(scope->outer_grad);
    if (scope->tape) tape_set_current(scope->outer_tape);
    tape_free(scope->tape);
    if (scope->ctx) scope->ctx->rng = scope->outer_rng;
    *scope = (ReplayScope){0};
}

Var *replay_record(const OpInfo *op, Var *x, Var *y, const char *name, void *state, void (*state_free)(void *),
                   Tensor *saved)
{
    Var *out = node_record(op, TAG_CHECKPOINT_INPUT, name, &x, 1, tensor_retain(y->value), &saved, 1);
    Node *node = out ? out->creator : NULL;
    if (node) {
        node->state = state; /* the node frees it from here on */
        node->state_free = state_free;
    } else {
        state_free(state);
    }
    var_free(y);
    return out;
}

/* FNV-1a over 32-bit words, then the bytes left. */
uint64_t replay_hash(const Tensor *t)
{
    uint64_t h = 1469598103934665603ull;
    for (int d = 0; d < t->ndim; d++) h = (h ^ (uint64_t)t->shape[d]) * 1099511628211ull;
    const uint32_t *words = t->data;
    const size_t n = t->bytes / 4;
    for (size_t i = 0; i < n; i++) h = (h ^ words[i]) * 1099511628211ull;
    const unsigned char *bytes = t->data;
    for (size_t i = 4 * n; i < t->bytes; i++) h = (h ^ bytes[i]) * 1099511628211ull;
    return h;
}
