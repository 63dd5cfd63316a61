/*
 * safetensors.h — reading and writing tensors in the safetensors file format.
 *
 * The format (as Hugging Face's reference implementation writes it):
 *
 *     bytes 0..7      N, the header's length, an unsigned 64-bit little-endian integer
 *     bytes 8..8+N    the header: UTF-8 JSON, padded with spaces so 8+N is a multiple of 8
 *     the rest        the data buffer: every tensor's bytes, little-endian, row-major
 *
 * The header is one JSON object. Each key but one names a tensor:
 *
 *     {"__metadata__": {"step": "1000"},
 *      "wte.weight": {"dtype": "F32", "shape": [256, 768], "data_offsets": [0, 786432]}, ...}
 *
 * data_offsets are [begin, end) byte offsets into the data buffer. "__metadata__" is an
 * optional object of string keys to string values.
 *
 * What remat reads and writes: dtypes F32, I32 and U8 (the element types of Tensor), with
 * 0 to 4 dimensions. A 0-dimensional (scalar) entry is read as a tensor of shape (1),
 * since Tensor has at least one dimension; remat never writes one. A dimension of 0 is a
 * valid file entry (an empty tensor) that st_load accepts but st_get cannot return,
 * since a Tensor's dimensions are all positive.
 *
 * What this is not: a memory-mapped or lazy loader of huge files, or a converter of
 * other dtypes (BF16, F16, F64, ...): a file holding one is refused when opened.
 *
 * st_load holds only the parsed header in memory. Tensor bytes are read from the open file
 * straight into the new tensor's ledger storage when asked for, so loading costs no
 * untracked copy of the data. Replacing the file by st_save while it is open does not
 * disturb a reader: the reader keeps the old file open until st_close.
 */
#ifndef REMAT_SAFETENSORS_H
#define REMAT_SAFETENSORS_H

#include "tensor/tensor.h"

/* The header may be at most this long, as in the reference implementation. */
#define ST_MAX_HEADER_BYTES 100000000u

/* One tensor to save under a name. */
typedef struct StEntry {
    const char *name;      /* e.g. "h.0.attn.c_attn.weight"; unique, not "__metadata__" */
    const Tensor *tensor;
} StEntry;

/* One metadata pair, saved in the header's "__metadata__" object. */
typedef struct StMeta {
    const char *key;       /* unique */
    const char *value;
} StMeta;

/* An opened, validated safetensors file (opaque; read it with the functions below). */
typedef struct StFile StFile;

/* ---- writing ---------------------------------------------------------------------- */

/* Saves `n` tensors (in the order given, their data contiguous) and `n_meta` metadata
 * pairs to `path`, atomically: everything goes to a temporary file in the same directory,
 * which is flushed to disk (fsync), renamed over `path`, and then the directory entry is
 * flushed too. A reader therefore sees either the old file or the whole new one, even
 * after a crash. The file gets mode 0644; its temporary file is file_replace_start's
 * (base/file.h), which says when it has a name and what removes one a killed save left.
 *
 * `entries` may be NULL when n is 0, `meta` when n_meta is 0. Returns REMAT_OK.
 * On error: REMAT_EINVAL for bad arguments (a NULL or empty path, a NULL name or tensor, a
 * name used twice or named "__metadata__", a key used twice), with nothing written;
 * REMAT_EIO, with nothing written, when file_check_writable (base/file.h) refuses the
 * path; REMAT_EIO naming the path and the system's reason when writing fails, with the
 * temporary file removed and any old file at `path` untouched. One exception: if only the
 * final flush of the directory fails, the new file is already in place. */
RematStatus st_save(const char *path, const StEntry *entries, int n, const StMeta *meta, int n_meta);

/* ---- reading ---------------------------------------------------------------------- */

/* Opens and validates the file at `path`: its size; the header length (at most the file
 * size minus 8, and ST_MAX_HEADER_BYTES); that the header is one JSON object with nothing
 * after it; every tensor's dtype (F32, I32 or U8), shape (0..4 dimensions, each
 * 0..INT_MAX) and data_offsets (begin <= end, end - begin = numel x element size); that
 * the tensors' byte ranges, sorted by begin, tile the data buffer exactly from 0 to its
 * end, as the reference implementation requires: no overlap, no gap, no trailing bytes;
 * and that __metadata__, if present, maps strings to strings. Unknown fields in a tensor
 * entry are ignored.
 *
 * The caller owns the result and releases it with st_close. On error returns NULL:
 * REMAT_EIO if the file cannot be opened or read, or is not a regular file (a FIFO is
 * refused at once, not waited on); REMAT_ECORRUPT for any violation, with a message
 * naming the file and the offending tensor or field; REMAT_ENOMEM. */
StFile *st_load(const char *path);

/* Closes the file and releases everything. NULL is a no-op. */
void st_close(StFile *f);

/* How many tensors the file holds. */
int st_count(const StFile *f);

/* The name of tensor `i` (0 <= i < st_count), in the header's order; NULL when out of
 * range. The string belongs to `f` and lives until st_close. */
const char *st_name(const StFile *f, int i);

/* The value of metadata `key`, or NULL if the file has no such key. The string belongs to
 * `f` and lives until st_close. */
const char *st_meta(const StFile *f, const char *key);

/* A new tensor (one reference, caller owns) holding a copy of tensor `name`, its bytes
 * charged to `kind`. A scalar entry comes back with shape (1).
 * On error returns NULL: REMAT_EINVAL "no tensor named X in FILE", or for an entry with a
 * zero dimension; REMAT_EOOM / REMAT_ENOMEM from the ledger; REMAT_EIO or REMAT_ECORRUPT
 * if the file cannot be read (it shrank since st_load). */
Tensor *st_get(const StFile *f, const char *name, MemKind kind);

#endif /* REMAT_SAFETENSORS_H */
