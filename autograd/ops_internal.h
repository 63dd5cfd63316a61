/*
 * ops_internal.h — what every op file shares: checking inputs, and recording the result
 * (node, saved tensors, Var) in one call. Not part of the public API.
 */
#ifndef REMAT_OPS_INTERNAL_H
#define REMAT_OPS_INTERNAL_H

#include "autograd.h"

/* REMAT_OK if none of the n inputs is NULL; otherwise an error naming the op, so that a
 * failure earlier in a chain of ops surfaces as one clear message. */
RematStatus ops_check_inputs(const char *op, Var *const *inputs, int n);

/* Records the result of an op: creates its node (when a gradient is needed), saves the
 * n_save tensors of `save` through the saved-tensor path, stores `attrs`, and wraps `out`
 * in a new Var, which it returns. Takes over the caller's reference to `out`, also on
 * error; on error returns NULL and leaves no node on the tape. */
Var *ops_record(const OpInfo *op, const char *tag, Var *const *inputs, int n_inputs,
                Tensor *out, Tensor *const *save, int n_save, const NodeAttrs *attrs);

/* Rows of a tensor whose last dimension is its width: the product of the leading dims. */
int ops_rows(const Tensor *t);

/* A tensor of the same shape as `like`, MEM_ACT, uninitialised; NULL on error. */
Tensor *ops_alloc_like(const Tensor *like);

#endif /* REMAT_OPS_INTERNAL_H */
