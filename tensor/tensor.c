/*
 * tensor.c — creation, refcounting and release of Tensors (see tensor.h).
 * The storage comes from the memory ledger; the small struct itself is host memory.
 */
#include "tensor/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/kernels.h"

/* Each DType's element size and name, indexed by the enum. */
static const struct {
    size_t size;
    const char *name;
} DTYPES[] = {
    [DTYPE_F32] = {sizeof(float), "float32"},
    [DTYPE_U8] = {sizeof(uint8_t), "uint8"},
    [DTYPE_I32] = {sizeof(int32_t), "int32"},
};
_Static_assert(sizeof DTYPES / sizeof DTYPES[0] == DTYPE_COUNT, "every DType has a size and a name");

size_t dtype_size(DType dtype) { return (unsigned)dtype < DTYPE_COUNT ? DTYPES[dtype].size : 0; }

const char *dtype_name(DType dtype) { return (unsigned)dtype < DTYPE_COUNT ? DTYPES[dtype].name : "unknown"; }

Tensor *tensor_create(MemKind kind, DType dtype, int ndim, const int *shape)
{
    if (!shape || ndim < 1 || ndim > TENSOR_MAX_DIMS)
        return remat_fail_null(REMAT_EINVAL, "tensor_create: ndim must be 1..%d with a shape, got %d%s",
                               TENSOR_MAX_DIMS, ndim, shape ? "" : " and no shape");
    if ((unsigned)dtype >= DTYPE_COUNT)
        return remat_fail_null(REMAT_EINVAL, "tensor_create: unknown dtype %d", (int)dtype);
    size_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] <= 0)
            return remat_fail_null(REMAT_EINVAL, "tensor_create: dimension %d is %d; every dimension must be > 0", d,
                                   shape[d]);
        if (numel > SIZE_MAX / 16 / (size_t)shape[d])
            return remat_fail_null(REMAT_EINVAL, "tensor_create: shape overflows a size_t");
        numel *= (size_t)shape[d];
    }
    Tensor *t = malloc(sizeof *t);
    if (!t)
        return remat_fail_null(REMAT_ENOMEM, "tensor_create: no memory for the tensor struct");
    *t = (Tensor){.dtype = dtype, .kind = kind, .ndim = ndim, .numel = numel, .bytes = numel * DTYPES[dtype].size,
                  .refcount = 1};
    for (int d = 0; d < TENSOR_MAX_DIMS; d++) t->shape[d] = d < ndim ? shape[d] : 1;
    if ((t->data = mem_alloc(kind, t->bytes))) return t;
    free(t);
    return NULL; /* mem_alloc said why */
}

/* Zeros by k_fill, whose threads share a large fill: gradient buffers are made this way
 * during the backward, and a memset there ran on one thread while the others waited. */
Tensor *tensor_zeros(MemKind kind, int ndim, const int *shape)
{
    Tensor *t = tensor_create(kind, DTYPE_F32, ndim, shape);
    if (t) k_fill(t->f32, 0.0f, t->numel);
    return t;
}

Tensor *tensor_clone(const Tensor *src, MemKind kind)
{
    if (!src)
        return remat_fail_null(REMAT_EINVAL, "tensor_clone: source is NULL");
    Tensor *t = tensor_create(kind, src->dtype, src->ndim, src->shape);
    if (t) memcpy(t->data, src->data, src->bytes);
    return t;
}

Tensor *tensor_retain(Tensor *t)
{
    if (t) t->refcount++;
    return t;
}

void tensor_free(Tensor *t)
{
    if (!t) return;
    if (t->refcount <= 0) {
        fprintf(stderr, "remat: tensor_free on a tensor with refcount %d (freed twice?)\n", t->refcount);
        abort();
    }
    if (--t->refcount > 0) return;
    mem_free(t->data);
    free(t);
}

void tensor_release_storage(Tensor *t)
{
    if (!t || !t->data) return;
    mem_free(t->data);
    t->data = NULL;
}

RematStatus tensor_restore_storage(Tensor *t)
{
    if (!t) return remat_fail(REMAT_EINVAL, "tensor_restore_storage: tensor is NULL");
    if (t->data) return REMAT_OK;
    t->data = mem_alloc(t->kind, t->bytes);
    return t->data ? REMAT_OK : remat_last_status();
}

int tensor_same_shape(const Tensor *a, const Tensor *b)
{
    return a && b && a->ndim == b->ndim && memcmp(a->shape, b->shape, sizeof a->shape) == 0;
}

char *shape_str(char *buf, size_t size, int ndim, const int *shape)
{
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ",%d" : "%d", shape[d]);
    if (used < size) snprintf(buf + used, size - used, ")");
    return buf;
}

char *tensor_shape_str(char *buf, size_t size, const Tensor *t) { return shape_str(buf, size, t->ndim, t->shape); }
