/*
 * ops_internal.c — the small pieces every op shares (see ops_internal.h).
 */
#include "autograd/ops_internal.h"

#include <stdio.h>
#include <string.h>

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
