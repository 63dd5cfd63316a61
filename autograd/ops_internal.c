/*
 * ops_internal.c — the small pieces every op shares (see ops_internal.h).
 */
#include "autograd/ops_internal.h"

#include <stdio.h>
#include <string.h>

RematStatus ops_check_inputs(const char *op, Var *const *inputs, int n)
{
    for (int i = 0; i < n; i++) {
        if (inputs[i]) continue;
        if (remat_last_status() != REMAT_OK) return remat_last_status(); /* keep its message */
        return remat_fail(REMAT_EINVAL, "%s: input %d is NULL (did an earlier op fail?)", op, i);
    }
    return REMAT_OK;
}

RematStatus ops_check_dtype(const char *label, const Var *v, const char *what, DType want)
{
    if (v->value->dtype == want) return REMAT_OK;
    return remat_fail(REMAT_EINVAL, "%s: %s must be %s, got %s", label, what, dtype_name(want),
                      dtype_name(v->value->dtype));
}

const char *ops_label(char *buf, size_t size, const char *op, const char *tag)
{
    snprintf(buf, size, "%s%s%s", op, tag ? " " : "", tag ? tag : "");
    return buf;
}

Var *ops_record(const OpInfo *op, const char *tag, Var *const *inputs, int n_inputs, Tensor *out,
                Tensor *const *save, int n_save, const void *attrs, size_t attrs_size)
{
    op_hooks_recorded(op, tag, inputs, n_inputs, save, n_save, out);
    RematStatus err;
    Node *node = node_create(op, tag, inputs, n_inputs, out, &err);
    if (err != REMAT_OK) {
        tensor_free(out);
        return NULL;
    }
    if (node) {
        if (attrs) memcpy(node->attrs.bytes, attrs, attrs_size);
        for (int i = 0; i < n_save; i++) {
            if (save_for_backward(node, save[i]) != REMAT_OK) {
                node_discard(node);
                tensor_free(out);
                return NULL;
            }
        }
    }
    return var_from_op(out, node);
}

int ops_rows(const Tensor *t)
{
    return (int)(t->numel / (size_t)t->shape[t->ndim - 1]);
}

Tensor *ops_output(const OpInfo *op, const char *tag, int index, DType dtype, int ndim,
                   const int *shape, bool *cached)
{
    Tensor *out = op_hooks_lookup(op, tag, index);
    *cached = out != NULL;
    if (out) {
        bool same = out->dtype == dtype && out->ndim == ndim;
        for (int d = 0; same && d < ndim; d++) same = out->shape[d] == shape[d];
        if (!same) {
            char got[48];
            remat_fail(REMAT_ESTATE, "%s %s: the cached output %d has shape %s, not the one this "
                       "replay asks for: the replay did not follow the first forward", op->name,
                       tag ? tag : "", index, tensor_shape_str(got, sizeof got, out));
            tensor_free(out);
            return NULL;
        }
    } else if (!(out = tensor_create_typed(MEM_ACT, dtype, ndim, shape))) {
        return NULL;
    }
    if (op_hooks_observe(op, tag, index, out) != REMAT_OK) {
        tensor_free(out);
        return NULL;
    }
    return out;
}
