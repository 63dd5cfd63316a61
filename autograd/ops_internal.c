/*
 * ops_internal.c — the small pieces every op shares (see ops_internal.h).
 */
#include "autograd/ops_internal.h"

#include <stdio.h>
#include <string.h>

RematStatus ops_check_inputs(char *label, size_t size, const char *op, const char *tag,
                             Var *const *inputs, int n)
{
    snprintf(label, size, "%s%s%s", op, tag ? " " : "", tag ? tag : "");
    for (int i = 0; i < n; i++) {
        if (inputs[i]) continue;
        if (remat_last_status() != REMAT_OK) return remat_last_status(); /* keep its message */
        return remat_fail(REMAT_EINVAL, "%s: input %d is NULL (did an earlier op fail?)", label, i);
    }
    return REMAT_OK;
}

RematStatus ops_check_dtype(const char *label, const Var *v, const char *what, DType want)
{
    if (v->value->dtype == want) return REMAT_OK;
    return remat_fail(REMAT_EINVAL, "%s: %s must be %s, got %s", label, what, dtype_name(want),
                      dtype_name(v->value->dtype));
}
