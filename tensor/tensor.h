/*
 * tensor.h — Tensor: contiguous, row-major storage of up to 4 dimensions, refcounted.
 *
 * A Tensor is only storage and shape. It knows nothing of graphs or gradients (that is
 * autograd/'s Var); its bytes live in the memory ledger under the kind it was created with.
 *
 * Ownership: tensor_create returns a tensor with one reference, owned by the caller.
 * tensor_retain adds a reference; tensor_free drops one and releases the storage when the
 * last is gone. Who holds a reference is always written next to the pointer.
 *
 * Element types: float32 for all math; uint8 for dropout masks (1 byte per element);
 * int32 for token ids.
 */
#ifndef REMAT_TENSOR_H
#define REMAT_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "tensor/memory.h"

#define TENSOR_MAX_DIMS 4

typedef enum DType { DTYPE_F32 = 0, DTYPE_U8, DTYPE_I32, DTYPE_COUNT } DType;

typedef struct Tensor {
    union {                 /* the storage, 64-byte aligned; one name per element type */
        void *data;
        float *f32;
        uint8_t *u8;
        int32_t *i32;
    };
    DType dtype;
    MemKind kind;           /* which ledger kind holds the bytes */
    int ndim;               /* 1..TENSOR_MAX_DIMS */
    int shape[TENSOR_MAX_DIMS]; /* unused trailing entries are 1 */
    size_t numel;           /* product of shape */
    size_t bytes;           /* numel * dtype_size(dtype) */
    int refcount;
} Tensor;

/* Bytes per element of `dtype`. */
size_t dtype_size(DType dtype);

/* The name of `dtype` for messages: "float32", "uint8", "int32" ("unknown" for a value
 * that is not a DType). */
const char *dtype_name(DType dtype);

/* Creates a tensor of `dtype` and the given shape whose bytes are charged to `kind`.
 * The contents are uninitialised. Returns NULL on error (a non-positive dimension,
 * ndim outside 1..4, an unknown dtype, the budget, the host allocator) and changes nothing. */
Tensor *tensor_create(MemKind kind, DType dtype, int ndim, const int *shape);

/* As tensor_create of a float32 tensor, zero-filled. */
Tensor *tensor_zeros(MemKind kind, int ndim, const int *shape);

/* A new tensor (one reference, caller owns) with the same shape, type and contents as
 * `src`, charged to `kind`. NULL on error. */
Tensor *tensor_clone(const Tensor *src, MemKind kind);

/* Adds a reference and returns `t` (NULL passes through). */
Tensor *tensor_retain(Tensor *t);

/* Drops one reference; frees the storage and the struct when it was the last.
 * NULL is a no-op. */
void tensor_free(Tensor *t);

/* Gives back the storage of `t` to the ledger while the tensor itself, its shape and its
 * references stay: data becomes NULL. For a parameter sharded across processes (ZeRO
 * stage 3, parallel/zero.h), whose storage exists only while it is gathered; nothing may read
 * the tensor until tensor_restore_storage. A tensor without storage is a no-op. */
void tensor_release_storage(Tensor *t);

/* Allocates storage for `t` again (uninitialised, charged to its kind) after
 * tensor_release_storage; a tensor that has storage is left as it is. On error (the
 * budget, the host allocator) returns the status and the tensor stays without storage. */
RematStatus tensor_restore_storage(Tensor *t);

/* True if `a` and `b` have the same ndim and shape. */
int tensor_same_shape(const Tensor *a, const Tensor *b);

/* Writes the shape as "(8,128,256)" into `buf`; returns `buf`. */
char *tensor_shape_str(char *buf, size_t size, const Tensor *t);

/* The same for any `ndim` dimensions in `shape` ("()" for none): for shapes that are not
 * a Tensor's, such as a file entry's or a node's output. Truncated to fit `size`. */
char *shape_str(char *buf, size_t size, int ndim, const int *shape);

#endif /* REMAT_TENSOR_H */
