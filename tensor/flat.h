/*
 * flat.h — a list of pieces (parameters, their gradients, their optimizer state) read as one
 * flat array, the first piece's elements first: how the optimizer, ZeRO's shards and the
 * reduction over ranks all address them. A piece whose elements are [first, first + n) of
 * the flat array meets a flat range [begin, end) in at most one run; flat_overlap is the
 * one place that computes it.
 *
 * What this is not: storage. Nothing is copied into a flat array; each user walks its own
 * pieces and asks this for the part of a range that falls in each.
 */
#ifndef REMAT_TENSOR_FLAT_H
#define REMAT_TENSOR_FLAT_H

#include <stddef.h>

/* The part of the flat range [begin, end) in the piece [first, first + n): its length (0
 * when they do not meet), and in *from its first element counted from the piece's start. */
static inline size_t flat_overlap(size_t begin, size_t end, size_t first, size_t n, size_t *from)
{
    const size_t a = begin > first ? begin : first, b = end < first + n ? end : first + n;
    *from = a < b ? a - first : 0;
    return a < b ? b - a : 0;
}

#endif /* REMAT_TENSOR_FLAT_H */
