/*
 * safetensors.c — the safetensors format (see safetensors.h): an atomic writer, and a
 * reader that validates the whole header before handing out a single tensor.
 *
 * The JSON header is built and parsed with cJSON (Debian: libcjson-dev). Tensor bytes
 * never pass through cJSON: the writer writes them straight from each Tensor's storage,
 * the reader preads them straight into the new tensor's storage.
 */
#include "app/safetensors.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"

/* The format stores every number little-endian, and this file writes and reads tensor
 * bytes exactly as they lie in memory. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host"
#endif

#define METADATA_KEY "__metadata__"

/* One tensor's entry in an opened file's header. */
typedef struct StTensorInfo {
    const char *name;               /* its key in the header */
    DType dtype;
    int ndim;                       /* 0..TENSOR_MAX_DIMS, as in the file (0: a scalar) */
    int shape[TENSOR_MAX_DIMS];     /* each >= 0 */
    unsigned long long begin, end;  /* its bytes are [begin, end) of the data buffer */
} StTensorInfo;

struct StFile {
    char *path;                     /* as given to st_load, for messages (in the StFile's block) */
    int fd;                         /* open until st_close; tensors are read from it */
    unsigned long long data_start;  /* 8 + header length: where the data buffer begins */
    unsigned long long data_size;   /* bytes in the data buffer */
    cJSON *header;                  /* the parsed header, which the names below point into */
    int count;
    StTensorInfo *tensors;          /* `count` entries, in the header's order */
    const cJSON *meta;              /* "__metadata__", checked to hold only strings; or NULL */
};

/* ---- small helpers ---------------------------------------------------------------- */

/* The names the format gives remat's dtypes, indexed by DType. */
static const char *const ST_DTYPES[] = {[DTYPE_F32] = "F32", [DTYPE_U8] = "U8", [DTYPE_I32] = "I32"};
static const NameTable ST_DTYPE_NAMES = {ST_DTYPES, 3};

/* ==== writing ======================================================================= */

/* Adds `item` (NULL: creating it failed) to `obj` under `key`; false, `item` freed, if not. */
static bool add_item(cJSON *obj, const char *key, cJSON *item)
{
    if (item && cJSON_AddItemToObject(obj, key, item)) return true;
    cJSON_Delete(item);
    return false;
}

/* Builds the JSON header, checking st_save's entries as it goes: "__metadata__" first
 * (when there is any), then the tensors in the order given, their data_offsets contiguous
 * from 0; a name or key already in its object (looked up: a model has a few hundred tensors
 * at most) is used twice. Returns a string the caller frees with cJSON_free; NULL after
 * failing with REMAT_EINVAL (a bad entry) or REMAT_ENOMEM. */
static char *build_header(const char *path, const StEntry *entries, int n, const StMeta *meta, int n_meta)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *m = root && n_meta > 0 ? cJSON_AddObjectToObject(root, METADATA_KEY) : NULL;
    if (!root || (n_meta > 0 && !m)) goto nomem;
    for (int i = 0; i < n_meta; i++) {
        if (!meta[i].key || !meta[i].value || cJSON_GetObjectItemCaseSensitive(m, meta[i].key)) {
            remat_fail(REMAT_EINVAL, "st_save: %s: metadata entry %d %s", path, i,
                       !meta[i].key ? "has no key" : !meta[i].value ? "has no value" : "uses a key used before");
            goto fail;
        }
        if (!cJSON_AddStringToObject(m, meta[i].key, meta[i].value)) goto nomem;
    }

    uint64_t offset = 0;
    for (int i = 0; i < n; i++) {
        const char *name = entries[i].name;
        const Tensor *t = entries[i].tensor;
        if (!name || !t) {
            remat_fail(REMAT_EINVAL, "st_save: %s: entry %d has no %s", path, i, name ? "tensor" : "name");
            goto fail;
        }
        if (!strcmp(name, METADATA_KEY) || cJSON_GetObjectItemCaseSensitive(root, name)) {
            remat_fail(REMAT_EINVAL, "st_save: %s: tensor name %s is %s", path, name,
                       strcmp(name, METADATA_KEY) ? "used twice" : "reserved for metadata");
            goto fail;
        }
        /* Offsets are JSON numbers, i.e. doubles: exact up to 2^53 bytes, far beyond any
         * tensor here. */
        double offsets[2] = {(double)offset, (double)(offset + t->bytes)};
        cJSON *e = cJSON_AddObjectToObject(root, name);
        if (!e || !cJSON_AddStringToObject(e, "dtype", name_of(&ST_DTYPE_NAMES, (int)t->dtype)) ||
            !add_item(e, "shape", cJSON_CreateIntArray(t->shape, t->ndim)) ||
            !add_item(e, "data_offsets", cJSON_CreateDoubleArray(offsets, 2)))
            goto nomem;
        offset += t->bytes;
    }

    char *json = cJSON_PrintUnformatted(root);
    if (!json) goto nomem;
    cJSON_Delete(root);
    return json;

nomem:
    remat_fail(REMAT_ENOMEM, "st_save: no memory for the JSON header");
fail:
    cJSON_Delete(root);
    return NULL;
}

/* Writes the whole file to `out`, the JSON `header` padded with spaces (valid JSON
 * whitespace) so that the data buffer starts 8-byte aligned, as the reference
 * implementation does. A failed write stays in `out` for file_replace_finish to report. */
static void write_contents(FILE *out, const char *header, const StEntry *entries, int n)
{
    const size_t json_len = strlen(header), padded = (json_len + 7) / 8 * 8;
    const uint64_t len = padded; /* the padded header's length, little-endian as the host */
    fwrite(&len, sizeof len, 1, out);
    fprintf(out, "%s%*s", header, (int)(padded - json_len), "");
    for (int i = 0; i < n && !ferror(out); i++)
        fwrite(entries[i].tensor->data, 1, entries[i].tensor->bytes, out);
}

RematStatus st_save(const char *path, const StEntry *entries, int n, const StMeta *meta, int n_meta)
{
    if (!path || n < 0 || n_meta < 0 || (n > 0 && !entries) || (n_meta > 0 && !meta))
        return remat_fail(REMAT_EINVAL, "st_save: %s: bad path, entry or metadata list (n=%d, n_meta=%d)",
                          path ? path : "(no path)", n, n_meta);
    char *header = build_header(path, entries, n, meta, n_meta);
    if (!header) return remat_last_status();
    FileReplacement tmp;
    RematStatus status = file_check_writable(path);
    int err = status == REMAT_OK ? file_replace_start(&tmp, path, true) : 0;
    if (err)
        status = remat_fail(err == ENOMEM ? REMAT_ENOMEM : REMAT_EIO,
                            "st_save: cannot save %s: cannot create a temporary file beside it: %s", path,
                            strerror(err));
    /* Write, fsync, name, close, rename: until the rename succeeds the old file at `path`
     * is untouched, and on any failure the temporary file is removed. */
    if (status == REMAT_OK) {
        const char *step;
        write_contents(tmp.out, header, entries, n);
        err = file_replace_finish(&tmp, true, &step);
        if (err && !strcmp(step, FILE_STEP_DIRECTORY))
            status = remat_fail(REMAT_EIO, "st_save: %s was written, but flushing its directory failed: %s", path,
                                strerror(err));
        else if (err)
            status = remat_fail(REMAT_EIO, "st_save: cannot save %s: %s failed: %s (any old file there is "
                                "untouched)", path, step, strerror(err));
    }
    cJSON_free(header);
    return status;
}

/* ==== reading ======================================================================= */

/* Reads field `key` of `item`: an array of whole numbers in [0, max], at most `most` of
 * them (exactly `most` when `exact`), into out. Returns how many, or -1 if it is not one. */
static int json_whole_numbers(const cJSON *item, const char *key, int most, bool exact, double max,
                              unsigned long long *out)
{
    const cJSON *array = cJSON_GetObjectItemCaseSensitive(item, key), *v;
    const int n = cJSON_GetArraySize(array);
    if (!cJSON_IsArray(array) || n > most || (exact && n != most)) return -1;
    int i = 0;
    cJSON_ArrayForEach(v, array) {
        const double x = cJSON_IsNumber(v) ? v->valuedouble : -1.0;
        if (!(x >= 0.0 && x <= max) || x != floor(x)) return -1;
        out[i++] = (unsigned long long)x;
    }
    return n;
}

/* Parses and checks one tensor entry: its dtype, its shape, and data_offsets that hold
 * exactly the bytes the two need, within the data buffer (how they sit among the other
 * tensors' bytes is check_layout's). On error fails with REMAT_ECORRUPT naming the file
 * and the tensor. */
static RematStatus parse_tensor(const StFile *f, const cJSON *item, StTensorInfo *info)
{
    const char *path = f->path, *name = item->string;
    if (!cJSON_IsObject(item))
        return remat_fail(REMAT_ECORRUPT, "%s: tensor %s: entry is not a JSON object", path, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    int dtype_value;
    if (!cJSON_IsString(dtype))
        return remat_fail(REMAT_ECORRUPT, "%s: tensor %s: dtype is missing or not a string", path, name);
    if (name_parse(&ST_DTYPE_NAMES, dtype->valuestring, &dtype_value) != REMAT_OK)
        return remat_fail(REMAT_ECORRUPT, "%s: tensor %s: dtype \"%s\" is not one remat reads (F32, I32, U8)",
                          path, name, dtype->valuestring);
    info->dtype = (DType)dtype_value;
    unsigned long long dims[TENSOR_MAX_DIMS], offsets[2];
    if ((info->ndim = json_whole_numbers(item, "shape", TENSOR_MAX_DIMS, false, INT_MAX, dims)) < 0)
        return remat_fail(REMAT_ECORRUPT, "%s: tensor %s: shape is not an array of at most %d whole numbers in 0..%d",
                          path, name, TENSOR_MAX_DIMS, INT_MAX);
    if (json_whole_numbers(item, "data_offsets", 2, true, 1e18, offsets) < 0)
        return remat_fail(REMAT_ECORRUPT, "%s: tensor %s: data_offsets is not a pair [begin, end] of whole numbers",
                          path, name);
    /* The bytes the shape needs: numel times the element size. Four dimensions of up to
     * 2^31 can overflow 64 bits; such a shape needs more than any file holds, so the
     * product stops at ULLONG_MAX (and a zero dimension still makes it 0). */
    unsigned long long needed = dtype_size(info->dtype);
    for (int d = 0; d < info->ndim; d++) {
        info->shape[d] = (int)dims[d];
        needed = dims[d] != 0 && needed > ULLONG_MAX / dims[d] ? ULLONG_MAX : needed * dims[d];
    }
    info->begin = offsets[0];
    info->end = offsets[1];
    if (info->begin > info->end)
        return remat_fail(REMAT_ECORRUPT, "%s: tensor %s: data_offsets [%llu, %llu] end before they begin",
                          path, name, info->begin, info->end);
    if (info->end > f->data_size)
        return remat_fail(REMAT_ECORRUPT, "%s: tensor %s: data_offsets [%llu, %llu] run past the end of the "
                          "%llu-byte data buffer (is the file truncated?)", path, name, info->begin, info->end,
                          f->data_size);
    if (info->end - info->begin != needed) {
        char shape_buf[64], needed_buf[32] = "more than 2^64";
        if (needed != ULLONG_MAX) snprintf(needed_buf, sizeof needed_buf, "%llu", needed);
        return remat_fail(REMAT_ECORRUPT, "%s: tensor %s: data_offsets [%llu, %llu] hold %llu bytes, but shape %s of "
                          "%s needs %s", path, name, info->begin, info->end, info->end - info->begin,
                          shape_str(shape_buf, sizeof shape_buf, info->ndim, info->shape),
                          name_of(&ST_DTYPE_NAMES, (int)info->dtype), needed_buf);
    }
    info->name = name;
    return REMAT_OK;
}

/* Checks "__metadata__": an object whose values are all strings. */
static RematStatus parse_metadata(StFile *f, const cJSON *item)
{
    const char *path = f->path;
    if (f->meta) return remat_fail(REMAT_ECORRUPT, "%s: the header has \"%s\" twice", path, METADATA_KEY);
    if (!cJSON_IsObject(item)) return remat_fail(REMAT_ECORRUPT, "%s: \"%s\" is not a JSON object", path, METADATA_KEY);
    const cJSON *m;
    cJSON_ArrayForEach(m, item) {
        if (!cJSON_IsString(m))
            return remat_fail(REMAT_ECORRUPT, "%s: %s: the value of %s is not a string", path, METADATA_KEY,
                              m->string);
    }
    f->meta = item;
    return REMAT_OK;
}

static int by_offsets(const void *a, const void *b)
{
    const StTensorInfo *x = *(const StTensorInfo *const *)a, *y = *(const StTensorInfo *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const StTensorInfo *const *)a)->name, (*(const StTensorInfo *const *)b)->name);
}

/* Checks that no name appears twice and that the tensors' byte ranges, sorted by offset,
 * cover the data buffer exactly: each begins where the previous ended, the first at 0,
 * the last ends at the buffer's end. */
static RematStatus check_layout(const StFile *f)
{
    const StTensorInfo **sorted = malloc((size_t)(f->count + 1) * sizeof *sorted); /* + 1: never malloc(0) */
    if (!sorted) return remat_fail(REMAT_ENOMEM, "%s: no memory to check the layout", f->path);
    for (int i = 0; i < f->count; i++) sorted[i] = &f->tensors[i];

    RematStatus status = REMAT_OK;
    qsort(sorted, (size_t)f->count, sizeof *sorted, by_name);
    for (int i = 1; i < f->count && status == REMAT_OK; i++)
        if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
            status = remat_fail(REMAT_ECORRUPT, "%s: tensor %s appears twice in the header", f->path, sorted[i]->name);

    qsort(sorted, (size_t)f->count, sizeof *sorted, by_offsets);
    unsigned long long expected = 0; /* where the next tensor's bytes must begin */
    for (int i = 0; i < f->count && status == REMAT_OK; i++) {
        const StTensorInfo *t = sorted[i];
        if (t->begin < expected)
            status = remat_fail(REMAT_ECORRUPT, "%s: tensor %s: data_offsets [%llu, %llu] overlap tensor %s's [%llu, "
                                "%llu]", f->path, t->name, t->begin, t->end, sorted[i - 1]->name,
                                sorted[i - 1]->begin, sorted[i - 1]->end);
        else if (t->begin > expected)
            status = remat_fail(REMAT_ECORRUPT, "%s: tensor %s: data_offsets begin at %llu, leaving bytes [%llu, %llu) "
                                "of the data buffer to no tensor", f->path, t->name, t->begin, expected, t->begin);
        expected = t->end;
    }
    if (status == REMAT_OK && expected != f->data_size)
        status = remat_fail(REMAT_ECORRUPT, "%s: the tensors end at byte %llu of the data buffer, but %llu bytes "
                            "follow the header (trailing bytes)", f->path, expected, f->data_size);
    free(sorted);
    return status;
}

/* Reads the 8-byte length and the header it announces into *header, a new NUL-terminated
 * string the caller frees (also on error). */
static RematStatus read_header(StFile *f, unsigned long long file_size, char **header)
{
    if (file_size < 8)
        return remat_fail(REMAT_ECORRUPT, "%s: the file has %llu bytes, fewer than the 8 of the header length",
                          f->path, file_size);
    unsigned long long len; /* 8 bytes, little-endian as the host */
    int err = file_pread_all(f->fd, &len, sizeof len, 0);
    if (err) return remat_fail(REMAT_EIO, "%s: cannot read: %s", f->path, err > 0 ? strerror(err) : "file shrank");

    if (len > file_size - 8)
        return remat_fail(REMAT_ECORRUPT, "%s: header length %llu is larger than the %llu bytes after it", f->path,
                          len, file_size - 8);
    if (len > ST_MAX_HEADER_BYTES)
        return remat_fail(REMAT_ECORRUPT, "%s: header length %llu is over the limit of %u bytes", f->path, len,
                          ST_MAX_HEADER_BYTES);

    char *text = *header = malloc((size_t)len + 1); /* the caller's to free, whatever follows */
    if (!text) return remat_fail(REMAT_ENOMEM, "%s: no memory for a %llu-byte header", f->path, len);
    err = file_pread_all(f->fd, text, (size_t)len, 8);
    text[len] = '\0';
    if (err)
        return remat_fail(REMAT_EIO, "%s: cannot read the header: %s", f->path,
                          err > 0 ? strerror(err) : "file shrank");
    if (strlen(text) != len) return remat_fail(REMAT_ECORRUPT, "%s: the header contains a NUL byte", f->path);
    f->data_start = 8 + len;
    f->data_size = file_size - 8 - len;
    return REMAT_OK;
}

/* Parses the header `text` of `f` and checks it whole: a JSON object of tensor entries and
 * metadata, and the tensors' layout in the data buffer. */
static RematStatus parse_header(StFile *f, const char *text)
{
    /* require_null_terminated: only whitespace may follow the JSON value. */
    const char *parse_end = NULL;
    if (!(f->header = cJSON_ParseWithOpts(text, &parse_end, 1)))
        return remat_fail(REMAT_ECORRUPT, "%s: the header is not valid JSON (error at byte %td of the header)",
                          f->path, parse_end ? parse_end - text : (ptrdiff_t)0);
    if (!cJSON_IsObject(f->header)) return remat_fail(REMAT_ECORRUPT, "%s: the header is not a JSON object", f->path);
    if (!(f->tensors = calloc((size_t)cJSON_GetArraySize(f->header) + 1, sizeof *f->tensors)))
        return remat_fail(REMAT_ENOMEM, "%s: no memory for the tensor table", f->path);
    const cJSON *item;
    cJSON_ArrayForEach(item, f->header) {
        const bool meta = strcmp(item->string, METADATA_KEY) == 0;
        const RematStatus status = meta ? parse_metadata(f, item) : parse_tensor(f, item, &f->tensors[f->count++]);
        if (status != REMAT_OK) return status;
    }
    return check_layout(f);
}

StFile *st_load(const char *path)
{
    if (!path) return remat_fail_null(REMAT_EINVAL, "st_load: path is NULL");
    StFile *f = calloc(1, sizeof *f + strlen(path) + 1); /* its copy of the path after it */
    if (!f) return remat_fail_null(REMAT_ENOMEM, "st_load: no memory");
    *f = (StFile){.path = strcpy((char *)(f + 1), path), .fd = -1}; /* not open yet: st_close must not close 0 */
    char *text = NULL;
    uint64_t file_size;
    if (file_open_regular("st_load", path, &f->fd, &file_size) != REMAT_OK ||
        read_header(f, file_size, &text) != REMAT_OK || parse_header(f, text) != REMAT_OK) {
        st_close(f);
        f = NULL;
    }
    free(text);
    return f;
}

void st_close(StFile *f)
{
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    cJSON_Delete(f->header);
    free(f->tensors);
    free(f);
}

int st_count(const StFile *f) { return f ? f->count : 0; }

const char *st_name(const StFile *f, int i)
{
    return f && i >= 0 && i < f->count ? f->tensors[i].name : NULL;
}

const char *st_meta(const StFile *f, const char *key)
{
    const cJSON *value = f && key && f->meta ? cJSON_GetObjectItemCaseSensitive(f->meta, key) : NULL;
    return value ? value->valuestring : NULL;
}

/* ---- reading tensors -------------------------------------------------------------- */

Tensor *st_get(const StFile *f, const char *name, MemKind kind)
{
    if (!f || !name) return remat_fail_null(REMAT_EINVAL, "st_get: the file and a name are required");
    const StTensorInfo *info = NULL; /* a linear search: files here hold a few hundred tensors */
    for (int i = 0; i < f->count && !info; i++)
        if (strcmp(f->tensors[i].name, name) == 0) info = &f->tensors[i];
    if (!info) return remat_fail_null(REMAT_EINVAL, "st_get: no tensor named %s in %s", name, f->path);
    /* A Tensor has at least one dimension: a scalar entry becomes shape (1). */
    const int ndim = info->ndim ? info->ndim : 1;
    const int *shape = info->ndim ? info->shape : (const int[]){1};
    char buf[64];
    if (info->begin == info->end) /* no bytes: its shape has a dimension of 0 */
        return remat_fail_null(REMAT_EINVAL, "st_get: %s: tensor %s has shape %s; a remat Tensor needs every "
                               "dimension > 0", f->path, name, shape_str(buf, sizeof buf, ndim, shape));
    Tensor *t = tensor_create(kind, info->dtype, ndim, shape);
    if (!t) return NULL; /* tensor_create said why */
    const int err = file_pread_all(f->fd, t->data, t->bytes, f->data_start + info->begin);
    if (!err) return t;
    if (err > 0)
        remat_fail(REMAT_EIO, "st_get: %s: tensor %s: cannot read: %s", f->path, name, strerror(err));
    else
        remat_fail(REMAT_ECORRUPT, "st_get: %s: tensor %s: the file ended before its bytes (did it shrink since "
                   "st_load?)", f->path, name);
    tensor_free(t);
    return NULL;
}
