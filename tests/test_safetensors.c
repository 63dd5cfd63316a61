/*
 * test_safetensors.c — the safetensors reader and writer: round trips of every dtype with
 * metadata, the bytes on disk against the format, atomic replacement (a missing folder or
 * a full disk leaves the old file and no temporary behind; a process killed at any point
 * of a save leaves a whole file, and the next save nothing else), targets that are not
 * regular files refused before anything is written, a FIFO refused without waiting, and a
 * corrupt file of each kind refused with REMAT_ECORRUPT and a message naming the file and
 * the culprit.
 */
#define _DEFAULT_SOURCE /* mknod, makedev and the S_IF* file types, for the device-node case */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app/safetensors.h"
#include "base/file.h"
#include "base/platform.h"

/* ---- a named temporary file on any machine ------------------------------------------ */

/* st_save's file_replace_start, wrapped at link time (tests/CMakeLists.txt): with
 * named_temp set, the temporary file is named from the start, as on a file system without
 * O_TMPFILE, so that a test can reach that path on any machine. */
static bool named_temp;

int __real_file_replace_start(FileReplacement *f, const char *path, bool unnamed);
int __wrap_file_replace_start(FileReplacement *f, const char *path, bool unnamed);

int __wrap_file_replace_start(FileReplacement *f, const char *path, bool unnamed)
{
    return __real_file_replace_start(f, path, unnamed && !named_temp);
}

/* ---- fixtures and helpers --------------------------------------------------------- */

/* A scratch folder made once for the group; every test leaves it empty. */
static char scratch[256];

static int group_setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/remat_test_st.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(scratch) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return rmdir(scratch);
}

/* Every test starts and must end with an empty ledger. */
static int ledger_empty(void **state)
{
    (void)state;
    remat_clear_error();
    return mem_live_blocks() == 0 && mem_resident() == 0 ? 0 : -1;
}

/* The path of `name` in the scratch folder, in a buffer of its own per call site. */
static void scratch_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", scratch, name);
}

/* How many entries besides . and .. the scratch folder holds. */
static int scratch_entries(void)
{
    DIR *dir = opendir(scratch);
    assert_non_null(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(dir);
    return n;
}

/* Reads a whole file into a new buffer (caller frees); its length goes into *len. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void write_bytes(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Writes a hand-made safetensors file: the header length (little-endian), `header` as
 * given, then `data_len` bytes of data (0, 1, 2, ...). */
static void write_raw(const char *path, const char *header, size_t data_len)
{
    size_t n = strlen(header);
    unsigned char *buf = malloc(8 + n + data_len);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(buf + 8, header, n);
    for (size_t i = 0; i < data_len; i++) buf[8 + n + i] = (unsigned char)i;
    write_bytes(path, buf, 8 + n + data_len);
    free(buf);
}

/* Asserts that st_load refuses `path` with `status` and a message naming the file and
 * containing `fragment`, then removes the file. */
static void assert_refused(const char *path, RematStatus status, const char *fragment)
{
    remat_clear_error();
    assert_null(st_load(path));
    assert_int_equal(remat_last_status(), status);
    if (!strstr(remat_last_error(), path) || !strstr(remat_last_error(), fragment))
        fail_msg("message \"%s\" should name %s and say \"%s\"", remat_last_error(), path, fragment);
    assert_int_equal(unlink(path), 0);
}

/* A hand-made file with `header` and `data_len` data bytes must be refused as corrupt. */
static void assert_corrupt_header(const char *header, size_t data_len, const char *fragment)
{
    char path[512];
    scratch_path(path, sizeof path, "corrupt.safetensors");
    write_raw(path, header, data_len);
    assert_refused(path, REMAT_ECORRUPT, fragment);
}

/* Three tensors, one of each dtype and of 1, 2 and 4 dimensions, with known contents. */
typedef struct Sample {
    Tensor *weight;   /* F32 (2,3) */
    Tensor *ids;      /* I32 (5) */
    Tensor *mask;     /* U8 (2,1,3,2) */
} Sample;

static Sample sample_make(void)
{
    Sample s = {
        tensor_create(MEM_PARAM, DTYPE_F32, 2, (int[]){2, 3}),
        tensor_create(MEM_ACT, DTYPE_I32, 1, (int[]){5}),
        tensor_create(MEM_ACT, DTYPE_U8, 4, (int[]){2, 1, 3, 2}),
    };
    assert_non_null(s.weight);
    assert_non_null(s.ids);
    assert_non_null(s.mask);
    for (size_t i = 0; i < s.weight->numel; i++) s.weight->f32[i] = 0.25f * (float)i - 1.0f;
    const int32_t ids[] = {0, -1, 255, 2147483647, -2147483647 - 1};
    memcpy(s.ids->i32, ids, sizeof ids);
    for (size_t i = 0; i < s.mask->numel; i++) s.mask->u8[i] = (uint8_t)(i * 37);
    return s;
}

static void sample_free(Sample s)
{
    tensor_free(s.weight);
    tensor_free(s.ids);
    tensor_free(s.mask);
}

static RematStatus sample_save(const char *path, Sample s)
{
    const StEntry entries[] = {
        {"h.0.attn.c_attn.weight", s.weight},
        {"token_ids", s.ids},
        {"dropout.mask", s.mask},
    };
    const StMeta meta[] = {{"format", "pt"}, {"step", "1000"}};
    return st_save(path, entries, 3, meta, 2);
}

/* ---- round trips ------------------------------------------------------------------ */

static void test_save_load_round_trip_of_every_dtype(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "model.safetensors");
    Sample s = sample_make();
    assert_int_equal(sample_save(path, s), REMAT_OK);

    StFile *f = st_load(path);
    assert_non_null(f);
    assert_int_equal(st_count(f), 3);
    assert_string_equal(st_name(f, 0), "h.0.attn.c_attn.weight");
    assert_string_equal(st_name(f, 1), "token_ids");
    assert_string_equal(st_name(f, 2), "dropout.mask");
    assert_null(st_name(f, 3));
    assert_null(st_name(f, -1));
    assert_string_equal(st_meta(f, "format"), "pt");
    assert_string_equal(st_meta(f, "step"), "1000");
    assert_null(st_meta(f, "no_such_key"));

    const Tensor *originals[] = {s.weight, s.ids, s.mask};
    size_t param_before = mem_current(MEM_PARAM);
    for (int i = 0; i < 3; i++) {
        Tensor *t = st_get(f, st_name(f, i), MEM_PARAM);
        assert_non_null(t);
        assert_int_equal(t->dtype, originals[i]->dtype);
        assert_true(tensor_same_shape(t, originals[i]));
        assert_int_equal(t->kind, MEM_PARAM);
        assert_int_equal(mem_current(MEM_PARAM), param_before + t->bytes); /* charged to the kind asked */
        /* Bit-exact: the file holds the bytes themselves, not a decimal rendering. */
        assert_memory_equal(t->data, originals[i]->data, t->bytes);
        tensor_free(t);
    }

    st_close(f);
    sample_free(s);
    assert_int_equal(unlink(path), 0);
}

static void test_saved_file_is_byte_compatible_with_format(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "format.safetensors");
    Sample s = sample_make();
    assert_int_equal(sample_save(path, s), REMAT_OK);

    size_t len;
    unsigned char *file = slurp(path, &len);
    uint64_t n = 0; /* the header length: 8 bytes, little-endian */
    for (int i = 0; i < 8; i++) n |= (uint64_t)file[i] << (8 * i);
    assert_true(8 + n <= len);
    assert_int_equal((8 + n) % 8, 0); /* padded so the data starts 8-byte aligned */
    assert_int_equal(len, 8 + n + s.weight->bytes + s.ids->bytes + s.mask->bytes);

    char *header = malloc(n + 1);
    assert_non_null(header);
    memcpy(header, file + 8, n);
    header[n] = '\0';
    assert_int_equal(header[0], '{');
    cJSON *root = cJSON_Parse(header);
    assert_non_null(root);
    assert_true(cJSON_IsObject(root));

    /* Metadata first, as the reference writer puts it; strings to strings. */
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    assert_true(cJSON_IsObject(meta));
    assert_ptr_equal(root->child, meta);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(meta, "step")->valuestring, "1000");

    /* Tensors in the order given, their data contiguous from offset 0. */
    const char *names[] = {"h.0.attn.c_attn.weight", "token_ids", "dropout.mask"};
    const char *dtypes[] = {"F32", "I32", "U8"};
    const Tensor *tensors[] = {s.weight, s.ids, s.mask};
    const cJSON *entry = meta->next;
    size_t offset = 0;
    for (int i = 0; i < 3; i++, entry = entry->next) {
        assert_non_null(entry);
        assert_string_equal(entry->string, names[i]);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(entry, "dtype")->valuestring, dtypes[i]);
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
        assert_int_equal(cJSON_GetArraySize(shape), tensors[i]->ndim);
        for (int d = 0; d < tensors[i]->ndim; d++)
            assert_int_equal(cJSON_GetArrayItem(shape, d)->valueint, tensors[i]->shape[d]);
        const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
        assert_int_equal(cJSON_GetArraySize(offsets), 2);
        assert_int_equal(cJSON_GetArrayItem(offsets, 0)->valueint, offset);
        assert_int_equal(cJSON_GetArrayItem(offsets, 1)->valueint, offset + tensors[i]->bytes);
        assert_memory_equal(file + 8 + n + offset, tensors[i]->data, tensors[i]->bytes);
        offset += tensors[i]->bytes;
    }
    assert_null(entry);

    cJSON_Delete(root);
    free(header);
    free(file);
    sample_free(s);
    assert_int_equal(unlink(path), 0);
}

static void test_save_without_metadata_or_tensors(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "empty.safetensors");
    assert_int_equal(st_save(path, NULL, 0, NULL, 0), REMAT_OK);
    size_t len;
    unsigned char *file = slurp(path, &len);
    /* "{}" padded to 8 bytes: the whole file is the length and the header. */
    assert_int_equal(len, 16);
    assert_int_equal(file[0], 8);
    assert_memory_equal(file + 8, "{}      ", 8);
    free(file);
    StFile *f = st_load(path);
    assert_non_null(f);
    assert_int_equal(st_count(f), 0);
    assert_null(st_meta(f, "step"));
    st_close(f);
    assert_int_equal(unlink(path), 0);
}

/* Files as other writers make them: tensors listed in another order than their bytes, a
 * scalar, an empty tensor, metadata last and an unknown field in an entry. */
static void test_load_accepts_any_header_order_scalar_and_empty(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "other.safetensors");
    write_raw(path,
              "{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]},"
              "\"empty\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[6,6]},"
              "\"s\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4],\"note\":\"ignored\"},"
              "\"__metadata__\":{\"k\":\"v\"}}  ",
              6);
    StFile *f = st_load(path);
    if (!f) fail_msg("%s", remat_last_error());
    assert_int_equal(st_count(f), 3);
    assert_string_equal(st_name(f, 0), "b");
    assert_string_equal(st_meta(f, "k"), "v");

    Tensor *b = st_get(f, "b", MEM_ACT);
    assert_non_null(b);
    assert_int_equal(b->u8[0], 4); /* write_raw's data bytes are 0, 1, 2, ... */
    assert_int_equal(b->u8[1], 5);
    tensor_free(b);

    /* A scalar comes back with shape (1). */
    Tensor *scalar = st_get(f, "s", MEM_ACT);
    assert_non_null(scalar);
    assert_int_equal(scalar->ndim, 1);
    assert_int_equal(scalar->shape[0], 1);
    assert_int_equal(scalar->i32[0], 0x03020100);
    tensor_free(scalar);

    /* An empty tensor is a valid entry, but no Tensor can hold it. */
    remat_clear_error();
    assert_null(st_get(f, "empty", MEM_ACT));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "(0,3)"));

    st_close(f);
    assert_int_equal(unlink(path), 0);
}

/* ---- reading errors --------------------------------------------------------------- */

static void test_get_unknown_name_is_einval(void **state)
{
    (void)state;
    char path[512], expected[600];
    scratch_path(path, sizeof path, "names.safetensors");
    Sample s = sample_make();
    assert_int_equal(sample_save(path, s), REMAT_OK);
    StFile *f = st_load(path);
    assert_non_null(f);
    assert_null(st_get(f, "wte.weight", MEM_PARAM));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    snprintf(expected, sizeof expected, "no tensor named wte.weight in %s", path);
    assert_non_null(strstr(remat_last_error(), expected));
    st_close(f);
    sample_free(s);
    assert_int_equal(unlink(path), 0);
}

static void test_load_missing_file_is_eio(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "absent.safetensors");
    assert_null(st_load(path));
    assert_int_equal(remat_last_status(), REMAT_EIO);
    assert_non_null(strstr(remat_last_error(), path));
    assert_non_null(strstr(remat_last_error(), strerror(ENOENT)));
}

static void test_close_accepts_null(void **state)
{
    (void)state;
    st_close(NULL);
    assert_int_equal(st_count(NULL), 0);
}

/* ---- corrupt files ---------------------------------------------------------------- */

static void test_load_rejects_truncated_file(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "truncated.safetensors");
    Sample s = sample_make();
    assert_int_equal(sample_save(path, s), REMAT_OK);
    size_t len;
    unsigned char *file = slurp(path, &len);

    /* Cut inside the 8-byte length. */
    write_bytes(path, file, 5);
    assert_refused(path, REMAT_ECORRUPT, "fewer than the 8");
    /* Cut inside the header. */
    write_bytes(path, file, 20);
    assert_refused(path, REMAT_ECORRUPT, "header length");
    /* Cut inside the last tensor's data. */
    write_bytes(path, file, len - 3);
    assert_refused(path, REMAT_ECORRUPT, "tensor dropout.mask: data_offsets");

    free(file);
    sample_free(s);
}

static void test_load_rejects_header_length_past_end_of_file(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "long_header.safetensors");
    unsigned char bytes[18] = {0xe8, 0x03}; /* N = 1000, then 10 bytes */
    write_bytes(path, bytes, sizeof bytes);
    assert_refused(path, REMAT_ECORRUPT, "header length 1000 is larger than the 10 bytes after it");
}

static void test_load_rejects_header_over_100_MB(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "huge_header.safetensors");
    /* A sparse file, so the test writes 8 bytes, not 100 MB. */
    uint64_t n = ST_MAX_HEADER_BYTES + 8;
    unsigned char len_le[8];
    for (int i = 0; i < 8; i++) len_le[i] = (unsigned char)(n >> (8 * i));
    write_bytes(path, len_le, 8);
    assert_int_equal(truncate(path, (off_t)(8 + n)), 0);
    assert_refused(path, REMAT_ECORRUPT, "over the limit");
}

static void test_load_rejects_invalid_json(void **state)
{
    (void)state;
    assert_corrupt_header("{\"a\": {\"dtype\": \"F32\", ", 0, "not valid JSON");
    /* Garbage after a complete JSON value, inside the header. */
    assert_corrupt_header("{}  xyz ", 0, "not valid JSON (error at byte 4");
    assert_corrupt_header("[1, 2]", 0, "not a JSON object");
    assert_corrupt_header("{\"a\": 1}", 0, "tensor a: entry is not a JSON object");
}

static void test_load_rejects_unknown_dtype(void **state)
{
    (void)state;
    assert_corrupt_header("{\"wte.weight\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
                          "tensor wte.weight: dtype \"BF16\" is not one remat reads");
    assert_corrupt_header("{\"wte.weight\":{\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
                          "tensor wte.weight: dtype is missing");
}

static void test_load_rejects_bad_shape(void **state)
{
    (void)state;
    assert_corrupt_header("{\"x\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0,
                          "tensor x: shape is not an array of at most 4 whole numbers in 0..2147483647");
    assert_corrupt_header("{\"x\":{\"dtype\":\"U8\",\"shape\":[2.5],\"data_offsets\":[0,0]}}", 0,
                          "tensor x: shape is not an array of at most 4 whole numbers in 0..2147483647");
    assert_corrupt_header("{\"x\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
                          "tensor x: shape is not an array of at most 4 whole numbers in 0..2147483647");
    assert_corrupt_header("{\"x\":{\"dtype\":\"U8\",\"shape\":\"2\",\"data_offsets\":[0,2]}}", 2,
                          "tensor x: shape is not an array of at most 4 whole numbers in 0..2147483647");
}

static void test_load_rejects_offsets_out_of_range(void **state)
{
    (void)state;
    assert_corrupt_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,32]}}", 16,
                          "tensor x: data_offsets [0, 32] run past the end of the 16-byte data buffer");
    assert_corrupt_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 16,
                          "tensor x: data_offsets [8, 0] end before they begin");
    assert_corrupt_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
                          "tensor x: data_offsets is not a pair");
}

static void test_load_rejects_shape_that_offsets_do_not_fit(void **state)
{
    (void)state;
    char path[512], expected[700];
    scratch_path(path, sizeof path, "model.safetensors");
    write_raw(path, "{\"h.0.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[256,768],\"data_offsets\":[0,100]}}",
              100);
    snprintf(expected, sizeof expected,
             "%s: tensor h.0.attn.c_attn.weight: data_offsets [0, 100] hold 100 bytes, but shape (256,768) of "
             "F32 needs 786432",
             path);
    assert_refused(path, REMAT_ECORRUPT, expected);
    /* A shape whose size overflows 64 bits. */
    assert_corrupt_header(
        "{\"x\":{\"dtype\":\"F32\",\"shape\":[2147483647,2147483647,2147483647,2147483647],\"data_offsets\":[0,4]}}",
        4, "needs more than 2^64");
}

static void test_load_rejects_overlapping_offsets(void **state)
{
    (void)state;
    assert_corrupt_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                          "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
                          24, "tensor b: data_offsets [8, 24] overlap tensor a's [0, 16]");
}

static void test_load_rejects_gap_between_tensors(void **state)
{
    (void)state;
    assert_corrupt_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                          "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
                          20, "tensor b: data_offsets begin at 12, leaving bytes [8, 12)");
}

static void test_load_rejects_trailing_garbage(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "trailing.safetensors");
    Sample s = sample_make();
    assert_int_equal(sample_save(path, s), REMAT_OK);
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fputs("junk!", f);
    fclose(f);
    assert_refused(path, REMAT_ECORRUPT, "trailing bytes");
    sample_free(s);
}

static void test_load_rejects_duplicates_and_bad_metadata(void **state)
{
    (void)state;
    assert_corrupt_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                          "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                          2, "tensor a appears twice");
    assert_corrupt_header("{\"__metadata__\":{\"step\":1000}}", 0, "the value of step is not a string");
    assert_corrupt_header("{\"__metadata__\":[]}", 0, "\"__metadata__\" is not a JSON object");
}

/* ---- writing errors and atomicity ------------------------------------------------- */

static void test_save_replaces_existing_file(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "replace.safetensors");
    Sample s = sample_make();
    assert_int_equal(sample_save(path, s), REMAT_OK);

    Tensor *other = tensor_create(MEM_PARAM, DTYPE_F32, 1, (int[]){3});
    assert_non_null(other);
    for (int i = 0; i < 3; i++) other->f32[i] = (float)(i + 1);
    assert_int_equal(st_save(path, (StEntry[]){{"other", other}}, 1, (StMeta[]){{"step", "2"}}, 1), REMAT_OK);
    assert_int_equal(scratch_entries(), 1); /* the new file only: no temporary left */

    StFile *f = st_load(path);
    assert_non_null(f);
    assert_int_equal(st_count(f), 1);
    assert_string_equal(st_name(f, 0), "other");
    assert_string_equal(st_meta(f, "step"), "2");
    Tensor *t = st_get(f, "other", MEM_PARAM);
    assert_non_null(t);
    assert_memory_equal(t->data, other->data, other->bytes);
    tensor_free(t);
    st_close(f);
    tensor_free(other);
    sample_free(s);
    assert_int_equal(unlink(path), 0);
}

static void test_save_into_missing_directory_is_eio(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "no_such_dir/model.safetensors");
    Sample s = sample_make();
    assert_int_equal(sample_save(path, s), REMAT_EIO);
    assert_non_null(strstr(remat_last_error(), path));
    assert_non_null(strstr(remat_last_error(), strerror(ENOENT)));
    assert_int_equal(scratch_entries(), 0);
    sample_free(s);
}

static void test_save_rejects_bad_entries(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "bad.safetensors");
    Sample s = sample_make();
    assert_int_equal(st_save(path, (StEntry[]){{"a", s.ids}, {"a", s.mask}}, 2, NULL, 0), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "tensor name a is used twice"));
    assert_int_equal(st_save(path, (StEntry[]){{"__metadata__", s.ids}}, 1, NULL, 0), REMAT_EINVAL);
    assert_int_equal(st_save(path, (StEntry[]){{"a", NULL}}, 1, NULL, 0), REMAT_EINVAL);
    assert_int_equal(st_save(path, NULL, 1, NULL, 0), REMAT_EINVAL);
    assert_int_equal(st_save(path, NULL, 0, (StMeta[]){{"k", "1"}, {"k", "2"}}, 2), REMAT_EINVAL);
    assert_int_equal(st_save(NULL, NULL, 0, NULL, 0), REMAT_EINVAL);
    assert_int_equal(scratch_entries(), 0); /* nothing was written */
    sample_free(s);
}

/* A full disk, simulated with the file size limit: past it write() fails with EFBIG
 * ("File too large") once SIGXFSZ, which would otherwise kill the process, is ignored. */
static void test_save_on_full_disk_is_eio_and_keeps_old_file(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "full.safetensors");
    Sample s = sample_make();
    assert_int_equal(sample_save(path, s), REMAT_OK);
    size_t old_len;
    unsigned char *old = slurp(path, &old_len);

    Tensor *big = tensor_zeros(MEM_PARAM, 2, (int[]){256, 256}); /* 256 KiB */
    assert_non_null(big);

    struct rlimit saved_limit, limit;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved_limit), 0);
    limit = saved_limit;
    limit.rlim_cur = 64 * 1024; /* only the soft limit: lowering the hard one is for good */
    void (*saved_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &limit), 0);

    RematStatus status = st_save(path, (StEntry[]){{"big", big}}, 1, NULL, 0);

    assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved_limit), 0);
    signal(SIGXFSZ, saved_handler);

    assert_int_equal(status, REMAT_EIO);
    assert_non_null(strstr(remat_last_error(), path));
    assert_non_null(strstr(remat_last_error(), strerror(EFBIG)));
    assert_int_equal(scratch_entries(), 1); /* the old file, and no temporary */
    size_t now_len;
    unsigned char *now = slurp(path, &now_len);
    assert_int_equal(now_len, old_len);
    assert_memory_equal(now, old, old_len);

    StFile *f = st_load(path); /* still a valid file with the old tensors */
    assert_non_null(f);
    assert_int_equal(st_count(f), 3);
    st_close(f);

    free(now);
    free(old);
    tensor_free(big);
    sample_free(s);
    assert_int_equal(unlink(path), 0);
}

/* Issue 16: a save renamed its file over whatever was at the path; as root,
 * `train --save /dev/null` left /dev/null a regular file. Each target below must be
 * refused before anything is written, and stay what it was. */
static void test_save_refuses_a_target_that_is_not_a_regular_file(void **state)
{
    (void)state;
    char fifo[512], dir[512], link[512], target[512], device[512];
    scratch_path(fifo, sizeof fifo, "fifo.safetensors");
    scratch_path(dir, sizeof dir, "dir.safetensors");
    scratch_path(link, sizeof link, "link.safetensors");
    scratch_path(target, sizeof target, "target.safetensors");
    scratch_path(device, sizeof device, "null.safetensors");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_bytes(target, "old", 3);
    assert_int_equal(symlink(target, link), 0);
    /* A device node of our own (the kernel's /dev/null, major 1 minor 3) needs root and a
     * system that lets the test make one; without them that case is left out. */
    const bool have_device = mknod(device, S_IFCHR | 0600, makedev(1, 3)) == 0;
    const int entries = scratch_entries();

    const struct { const char *path, *kind; mode_t type; } cases[] = {
        {fifo, "a FIFO", S_IFIFO}, {dir, "a directory", S_IFDIR}, {link, "a symbolic link", S_IFLNK},
        {device, "a character device", S_IFCHR},
    };
    Sample s = sample_make();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].type == S_IFCHR && !have_device) continue;
        remat_clear_error();
        assert_int_equal(sample_save(cases[i].path, s), REMAT_EIO);
        printf("  %s\n", remat_last_error());
        assert_non_null(strstr(remat_last_error(), cases[i].path));
        assert_non_null(strstr(remat_last_error(), cases[i].kind));
        assert_non_null(strstr(remat_last_error(), "not a regular file"));
        struct stat st;
        assert_int_equal(lstat(cases[i].path, &st), 0);
        assert_int_equal(st.st_mode & S_IFMT, cases[i].type);
        assert_int_equal(scratch_entries(), entries); /* and no temporary file */
    }
    size_t len;
    unsigned char *old = slurp(target, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(old, "old", 3);
    free(old);
    sample_free(s);
    if (have_device) assert_int_equal(unlink(device), 0);
    assert_int_equal(unlink(fifo), 0);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(unlink(link), 0);
    assert_int_equal(unlink(target), 0);
}

/* Issue 16: opening a FIFO blocks until a writer comes, so `train --resume FIFO` hung.
 * The alarm turns a hang into a failed test. */
static void test_load_refuses_a_fifo_without_waiting(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "resume.fifo");
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(10);
    StFile *f = st_load(path);
    alarm(0);
    assert_null(f);
    assert_int_equal(remat_last_status(), REMAT_EIO);
    assert_non_null(strstr(remat_last_error(), path));
    assert_non_null(strstr(remat_last_error(), "is a FIFO, not a regular file"));
    assert_int_equal(unlink(path), 0);
}

/* A save leaves no temporary file, whichever kind it makes, and removes those that
 * killed saves to the same path left behind, and only those. */
static void test_save_removes_leftovers_of_killed_saves_and_nothing_else(void **state)
{
    (void)state;
    char path[512], ours[512], other_target[512], not_a_temp[512];
    scratch_path(path, sizeof path, "m.safetensors");
    scratch_path(ours, sizeof ours, "m.safetensors.tmp.Ab12Cd");
    scratch_path(other_target, sizeof other_target, "n.safetensors.tmp.Ab12Cd");
    scratch_path(not_a_temp, sizeof not_a_temp, "m.safetensors.tmp.backup1");
    Sample s = sample_make();
    for (int named = 0; named < 2; named++) {
        named_temp = named;
        write_bytes(ours, "leftover", 8);
        write_bytes(other_target, "leftover", 8);
        write_bytes(not_a_temp, "mine", 4);
        assert_int_equal(sample_save(path, s), REMAT_OK);
        assert_int_equal(access(ours, F_OK), -1);
        assert_int_equal(access(other_target, F_OK), 0);
        assert_int_equal(access(not_a_temp, F_OK), 0);
        assert_int_equal(scratch_entries(), 3);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0644);
        StFile *f = st_load(path);
        assert_non_null(f);
        assert_int_equal(st_count(f), 3);
        st_close(f);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(unlink(other_target), 0);
        assert_int_equal(unlink(not_a_temp), 0);
    }
    named_temp = false;
    sample_free(s);
}

/* The crash-consistency test of issue 16: a child process saves a large file over and
 * over, alternating two versions, and is killed with SIGKILL at many points spread over
 * about three saves; after each kill the file must load and be one version or the other,
 * bit for bit, and after the next save nothing else may be in the directory. Both kinds
 * of temporary file (unnamed with O_TMPFILE, and named) are tried. */
enum { CRASH_FLOATS = 4 << 20, CRASH_KILLS = 24 };

static void crash_fill(Tensor *t, int version)
{
    for (size_t i = 0; i < t->numel; i++) t->f32[i] = (float)version + (float)(i % 1000) * 1e-3f;
}

static RematStatus crash_save(const char *path, Tensor *const version[2], int v)
{
    const StMeta meta[] = {{"version", v ? "1" : "0"}};
    return st_save(path, (StEntry[]){{"weights", version[v]}}, 1, meta, 1);
}

/* Which version the file at `path` holds, bit for bit; fails the test if neither. */
static int crash_version_on_disk(const char *path, Tensor *const version[2])
{
    StFile *f = st_load(path);
    if (!f) fail_msg("after a kill the file does not load: %s", remat_last_error());
    Tensor *t = st_get(f, "weights", MEM_WORK);
    assert_non_null(t);
    const char *v = st_meta(f, "version");
    assert_non_null(v);
    const int which = v[0] == '1';
    assert_int_equal(t->bytes, version[which]->bytes);
    assert_memory_equal(t->data, version[which]->data, t->bytes);
    tensor_free(t);
    st_close(f);
    return which;
}

static void test_save_killed_at_any_point_keeps_a_whole_file_and_leaves_nothing(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "crash.safetensors");
    Tensor *version[2];
    for (int v = 0; v < 2; v++) {
        version[v] = tensor_create(MEM_PARAM, DTYPE_F32, 1, (int[]){CRASH_FLOATS});
        assert_non_null(version[v]);
        crash_fill(version[v], v);
    }
    for (int named = 0; named < 2; named++) {
        named_temp = named;
        /* How long a save takes here: the longer of two, the page cache being warm. */
        double save_seconds = 0.0;
        for (int i = 0; i < 2; i++) {
            const double start = platform_seconds();
            assert_int_equal(crash_save(path, version, 0), REMAT_OK);
            const double seconds = platform_seconds() - start;
            if (seconds > save_seconds) save_seconds = seconds;
        }
        int seen[2] = {0, 0};
        for (int k = 0; k < CRASH_KILLS; k++) {
            fflush(stdout);
            const pid_t child = fork();
            assert_true(child >= 0);
            if (child == 0) {
                for (int i = 1;; i++)
                    if (crash_save(path, version, i % 2) != REMAT_OK) _exit(1);
            }
            /* Kill points spread evenly over about the first three saves of the child. */
            const double delay = 3.0 * save_seconds * (k + 0.5) / CRASH_KILLS;
            const struct timespec pause = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
            nanosleep(&pause, NULL);
            assert_int_equal(kill(child, SIGKILL), 0);
            int status;
            assert_int_equal(waitpid(child, &status, 0), child);
            assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL); /* not an error exit */
            seen[crash_version_on_disk(path, version)]++;
        }
        printf("  %s temporary file, one save %.0f ms: after %d kills the file held version 0 %d times, "
               "version 1 %d times, whole each time\n", named ? "named" : "unnamed (O_TMPFILE)",
               save_seconds * 1e3, CRASH_KILLS, seen[0], seen[1]);
        /* The next save leaves the file and nothing else. */
        assert_int_equal(crash_save(path, version, 0), REMAT_OK);
        assert_int_equal(scratch_entries(), 1);
        assert_int_equal(crash_version_on_disk(path, version), 0);
    }
    named_temp = false;
    tensor_free(version[0]);
    tensor_free(version[1]);
    assert_int_equal(unlink(path), 0);
}

int main(void)
{
#define TEST(fn) cmocka_unit_test_setup_teardown(fn, ledger_empty, ledger_empty)
    const struct CMUnitTest tests[] = {
        TEST(test_save_load_round_trip_of_every_dtype),
        TEST(test_saved_file_is_byte_compatible_with_format),
        TEST(test_save_without_metadata_or_tensors),
        TEST(test_load_accepts_any_header_order_scalar_and_empty),
        TEST(test_get_unknown_name_is_einval),
        TEST(test_load_missing_file_is_eio),
        TEST(test_close_accepts_null),
        TEST(test_load_rejects_truncated_file),
        TEST(test_load_rejects_header_length_past_end_of_file),
        TEST(test_load_rejects_header_over_100_MB),
        TEST(test_load_rejects_invalid_json),
        TEST(test_load_rejects_unknown_dtype),
        TEST(test_load_rejects_bad_shape),
        TEST(test_load_rejects_offsets_out_of_range),
        TEST(test_load_rejects_shape_that_offsets_do_not_fit),
        TEST(test_load_rejects_overlapping_offsets),
        TEST(test_load_rejects_gap_between_tensors),
        TEST(test_load_rejects_trailing_garbage),
        TEST(test_load_rejects_duplicates_and_bad_metadata),
        TEST(test_save_replaces_existing_file),
        TEST(test_save_into_missing_directory_is_eio),
        TEST(test_save_rejects_bad_entries),
        TEST(test_save_on_full_disk_is_eio_and_keeps_old_file),
        TEST(test_save_refuses_a_target_that_is_not_a_regular_file),
        TEST(test_load_refuses_a_fifo_without_waiting),
        TEST(test_save_removes_leftovers_of_killed_saves_and_nothing_else),
        TEST(test_save_killed_at_any_point_keeps_a_whole_file_and_leaves_nothing),
    };
#undef TEST
    return cmocka_run_group_tests_name("safetensors", tests, group_setup, group_teardown);
}
