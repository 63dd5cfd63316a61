/*
 * ops_internal.h — what every op file shares: checking inputs, and recording the result
 * (node, saved tensors, Var) in one call. Not part of the public API. All of it lives in
 * autograd.c, where ops_output and ops_record go through the op hooks and the tape.
 */
#ifndef REMAT_OPS_INTERNAL_H
#define REMAT_OPS_INTERNAL_H

#include "base/error.h"
#include "tensor/tensor.h"

/* Two of the engine's types, as autograd.h defines them: this header declares what
 * autograd.c defines, so it includes nothing of the engine, which includes it. */
typedef struct Var Var;
typedef struct OpInfo OpInfo;

/* Writes the op's label into `label` (`size` bytes): "op tag", or just "op" when tag is
 * NULL — how error messages name an op. Then REMAT_OK if none of the n inputs is NULL and
 * input i holds elements of type dtypes[i] (dtypes NULL: float32, every one). A NULL
 * input is taken to be the result of an earlier op that failed, in a chain of ops checked
 * once at the end: then the earlier failure's status and message are kept as they are
 * (they say what went wrong, e.g. the budget's OOM message) and that status is returned.
 * With no failure on record, the error names this op and the input. */
RematStatus ops_check_inputs(char *label, size_t size, const char *op, const char *tag,
                             Var *const *inputs, int n, const DType *dtypes);

/* Records the result of an op: creates its node (when a gradient is needed), saves the
 * n_save tensors of `save` through the saved-tensor path, copies the op's attribute
 * struct `attrs` (attrs_size bytes; NULL and 0 for none) into the node, and wraps `out`
 * in a new Var, which it returns. Takes over the caller's reference to `out`, also on
 * error; on error returns NULL and leaves no node on the tape. */
Var *ops_record(const OpInfo *op, const char *tag, Var *const *inputs, int n_inputs, Tensor *out,
                Tensor *const *save, int n_save, const void *attrs, size_t attrs_size);

/* The attribute struct ops_record stored in `node`, for its op's backward to read as its
 * own type: const MatmulAttrs *attrs = ops_attrs(node). */
#define ops_attrs(node) ((const void *)(node)->attrs.bytes)

/* Stops the build when an op's attribute struct does not fit the room a node has. */
#define OPS_ATTRS_FIT(Type) \
    _Static_assert(sizeof(Type) <= sizeof(OpAttrs) && _Alignof(Type) <= _Alignof(OpAttrs), \
                   #Type " does not fit OpAttrs")

/* Output number `index` (0, 1, ... in the order the op makes them) of `op`, through the
 * op hooks (autograd.h): a tensor a hook offers, with *cached set — its contents are
 * already there and the op must not compute it — or a new, uninitialised MEM_ACT tensor
 * of the given type and shape, with *cached cleared. Every hook has observed it.
 * NULL on error: the budget, or an offered tensor of another type or shape (the replay
 * of a checkpoint region did not follow its first forward). */
Tensor *ops_output(const OpInfo *op, const char *tag, int index, DType dtype, int ndim,
                   const int *shape, bool *cached);

#endif /* REMAT_OPS_INTERNAL_H */
