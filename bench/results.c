/*
 * results.c — the results writer: a cJSON document built as a bench runs, written as JSON
 * and CSV at the end (see results.h; the schema is in docs/RESULTS.md).
 */
#include "bench/results.h"
#include "bench/results_read.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>

#include "base/file.h"
#include "base/platform.h"

#ifndef REMAT_SOURCE_DIR
#define REMAT_SOURCE_DIR "."
#endif

#define RESULTS_MAX_TABLES 8
#define RESULTS_NAME_LEN 48

struct ResultsTable {
    Results *owner;
    char name[RESULTS_NAME_LEN];
    cJSON *object; /* its entry in the document's tables */
    const ResultsColumn *columns; /* borrowed: as declared, printed ones included */
    int n_columns;
    cJSON *records; /* in the document when in_json, else owned here */
    bool in_json;
};

struct Results {
    char bench[RESULTS_NAME_LEN];
    cJSON *root;   /* the whole document */
    cJSON *config; /* in root */
    cJSON *tables; /* in root */
    ResultsTable table[RESULTS_MAX_TABLES];
    int n_tables;
    MachineState before; /* the machine when the bench started */
    cJSON *machine;      /* in root */
    RematStatus error; /* the first mistake while filling, reported by results_write */
    char message[256];
};

/* ---- remembering the first error -------------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static void remember(Results *r, RematStatus status, const char *fmt, ...)
{
    if (r->error != REMAT_OK) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    r->error = status;
}

/* Sets `key` of `object` to `item` (in place of what it held, on a second write), remembering
 * a failure (cJSON out of memory). */
static void add_item(Results *r, cJSON *object, const char *key, cJSON *item)
{
    cJSON_DeleteItemFromObjectCaseSensitive(object, key);
    if (item && cJSON_AddItemToObject(object, key, item)) return;
    cJSON_Delete(item);
    remember(r, REMAT_ENOMEM, "results %s: no memory to add '%s'", r->bench, key);
}

/* ---- who, when, where ------------------------------------------------------------------- */

/* The first line a shell command prints, without its newline, into `buf`; false if it
 * printed nothing or could not run. */
static bool command_line(const char *command, char *buf, size_t size)
{
    FILE *p = popen(command, "r");
    if (!p) return false;
    bool got = fgets(buf, (int)size, p) != NULL;
    pclose(p);
    if (got) buf[strcspn(buf, "\n")] = '\0';
    return got && buf[0];
}

/* git_commit ("unknown" without git or outside a checkout) and git_dirty (tracked files
 * changed since that commit; null when unknown), read from the source tree at run time so
 * they describe the code that was built, even if the build directory is older. */
static void add_git(Results *r)
{
    char cmd[512], commit[64], change[256];
    snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse HEAD 2>/dev/null", REMAT_SOURCE_DIR);
    /* a source path with a quote in it would end the shell's quoted word: not run */
    const bool known = !strchr(REMAT_SOURCE_DIR, '\'') && command_line(cmd, commit, sizeof commit);
    add_item(r, r->root, "git_commit", cJSON_CreateString(known ? commit : "unknown"));
    snprintf(cmd, sizeof cmd, "git -C '%s' status --porcelain --untracked-files=no 2>/dev/null", REMAT_SOURCE_DIR);
    add_item(r, r->root, "git_dirty",
             known ? cJSON_CreateBool(command_line(cmd, change, sizeof change)) : cJSON_CreateNull());
}

/* A load average, or null where Linux gave none. */
static cJSON *load_number(double loadavg)
{
    return loadavg >= 0 ? cJSON_CreateNumber(loadavg) : cJSON_CreateNull();
}

static void add_machine(Results *r, const PlatformInfo *info)
{
    cJSON *m = cJSON_CreateObject();
    add_item(r, r->root, "machine", m);
    if (!m) return;
    struct utsname u;
    const bool named = uname(&u) == 0;
    char os[256];
    snprintf(os, sizeof os, "%s %s %s", named ? u.sysname : "unknown", named ? u.release : "",
             named ? u.machine : "");
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    add_item(r, m, "hostname", cJSON_CreateString(named ? u.nodename : "unknown"));
    add_item(r, m, "os", cJSON_CreateString(os));
    add_item(r, m, "cores", cJSON_CreateNumber(info->cores));
    add_item(r, m, "blas_config", cJSON_CreateString(info->blas_config));
    add_item(r, m, "blas_core", cJSON_CreateString(info->blas_core));
    add_item(r, m, "blas_threading", cJSON_CreateString(info->blas_threading));
    add_item(r, m, "openblas_coretype", coretype ? cJSON_CreateString(coretype) : cJSON_CreateNull());
    add_item(r, m, "omp_wait", cJSON_CreateString(info->omp_wait));
    r->machine = m;
    r->before = machine_now();
    add_item(r, m, "loadavg_before", load_number(r->before.loadavg));
}

/* The machine's state since results_create, into the machine block (again on a second
 * write). */
static void add_machine_after(Results *r)
{
    const MachineState now = machine_now();
    add_item(r, r->machine, "loadavg_after", load_number(now.loadavg));
    add_item(r, r->machine, "cpu_steal", cJSON_CreateNumber(machine_steal(&r->before, &now)));
    add_item(r, r->machine, "others_cpu", cJSON_CreateNumber(machine_others_cpu(&r->before, &now)));
    add_item(r, r->machine, "involuntary_switches",
             cJSON_CreateNumber((double)(now.involuntary_switches - r->before.involuntary_switches)));
    add_item(r, r->machine, "cpu_seconds", cJSON_CreateNumber(now.cpu_seconds - r->before.cpu_seconds));
    add_item(r, r->machine, "wall_seconds", cJSON_CreateNumber(now.wall_seconds - r->before.wall_seconds));
}

Results *results_create(const char *bench, const char *question, bool quick)
{
    Results *r = calloc(1, sizeof *r);
    if (!r || !(r->root = cJSON_CreateObject())) {
        free(r);
        return remat_fail_null(REMAT_ENOMEM, "results: no memory for the results of %s", bench);
    }
    snprintf(r->bench, sizeof r->bench, "%s", bench);
    char date[32];
    const time_t now = time(NULL);
    struct tm utc;
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &utc));
    const PlatformInfo info = platform_info();

    add_item(r, r->root, "schema", cJSON_CreateString(RESULTS_SCHEMA));
    add_item(r, r->root, "bench", cJSON_CreateString(bench));
    add_item(r, r->root, "question", cJSON_CreateString(question));
    add_item(r, r->root, "mode", cJSON_CreateString(quick ? "quick" : "full"));
    add_item(r, r->root, "date", cJSON_CreateString(date));
    add_git(r);
    add_machine(r, &info);
    add_item(r, r->root, "threads", cJSON_CreateNumber(info.threads));
    r->config = cJSON_CreateObject();
    add_item(r, r->root, "config", r->config);
    r->tables = cJSON_CreateObject();
    add_item(r, r->root, "tables", r->tables);
    if (r->error == REMAT_OK) return r;
    remat_fail(r->error, "%s", r->message);
    results_free(r);
    return NULL;
}

void results_free(Results *r)
{
    if (!r) return;
    for (int i = 0; i < r->n_tables; i++)
        if (!r->table[i].in_json) cJSON_Delete(r->table[i].records); /* the others are in the document */
    cJSON_Delete(r->root);
    free(r);
}

/* ---- config ----------------------------------------------------------------------------- */

void results_config_num(Results *r, const char *key, double value)
{
    add_item(r, r->config, key, cJSON_CreateNumber(value));
}

void results_config_str(Results *r, const char *key, const char *value)
{
    add_item(r, r->config, key, cJSON_CreateString(value));
}

void results_config_ints(Results *r, const char *key, const int *values, int n)
{
    add_item(r, r->config, key, cJSON_CreateIntArray(values, n));
}

/* ---- tables and records ----------------------------------------------------------------- */

ResultsTable *results_row_table(Results *r, const char *name, const char *about, const ResultsColumn *columns,
                                int n_columns, bool in_json)
{
    if (r->n_tables == RESULTS_MAX_TABLES) {
        remember(r, REMAT_EINVAL, "results %s: more than %d tables", r->bench, RESULTS_MAX_TABLES);
        return NULL;
    }
    ResultsTable *t = &r->table[r->n_tables++];
    *t = (ResultsTable){.owner = r, .columns = columns, .n_columns = n_columns, .in_json = in_json};
    snprintf(t->name, sizeof t->name, "%s", name);
    char csv[2 * RESULTS_NAME_LEN + 8];
    if (t == &r->table[0]) snprintf(csv, sizeof csv, "%s.csv", r->bench);
    else snprintf(csv, sizeof csv, "%s.%s.csv", r->bench, t->name);
    t->object = cJSON_CreateObject();
    add_item(r, r->tables, t->name, t->object);
    if (!t->object) return NULL;
    add_item(r, t->object, "about", cJSON_CreateString(about));
    add_item(r, t->object, "csv", cJSON_CreateString(csv));
    cJSON *list = cJSON_CreateArray();
    add_item(r, t->object, "fields", list);
    t->records = cJSON_CreateArray();
    if (t->in_json) add_item(r, t->object, "records", t->records);
    if (!t->records) remember(r, REMAT_ENOMEM, "results %s: no memory for table %s", r->bench, name);
    for (int i = 0; r->error == REMAT_OK && i < n_columns; i++) {
        if (!columns[i].name) continue; /* printed only */
        cJSON *f = cJSON_CreateObject();
        if (!f || !cJSON_AddItemToArray(list, f)) {
            cJSON_Delete(f);
            remember(r, REMAT_ENOMEM, "results %s: no memory for table %s", r->bench, name);
            break;
        }
        add_item(r, f, "name", cJSON_CreateString(columns[i].name));
        add_item(r, f, "unit", cJSON_CreateString(columns[i].unit));
    }
    return r->error == REMAT_OK ? t : NULL;
}

/* Whether `row` has column c's field: its WHEN flag is set, and a string or an estimate
 * is there to record. */
static bool row_has(const ResultsColumn *c, const void *row)
{
    const char *at = (const char *)row + c->offset;
    if (c->when && !*(const bool *)((const char *)row + c->when - 1)) return false;
    if (c->type == COLUMN_STR) return *(const char *const *)at != NULL;
    return c->type != COLUMN_ESTIMATE || ((const Estimate *)at)->samples > 0;
}

/* Column c's number in `row`, as recorded. */
static double row_number(const ResultsColumn *c, const void *row)
{
    const char *at = (const char *)row + c->offset;
    switch (c->type) {
    case COLUMN_SIZE: return (double)*(const size_t *)at;
    case COLUMN_U64: return (double)*(const uint64_t *)at;
    case COLUMN_INT: return *(const int *)at;
    case COLUMN_DOUBLE: return *(const double *)at;
    case COLUMN_ESTIMATE: return ((const Estimate *)at)->value;
    default: return 0;
    }
}

/* ---- the printed table ------------------------------------------------------------------ */

/* What one printed unit of column c is of the recorded one (ColumnShow). */
static double show_scale(const ResultsColumn *c)
{
    const char *unit = c->show.unit;
    if (c->unit && !strcmp(c->unit, unit)) return 1.0;
    static const struct { const char *unit; double scale; } SCALES[] = {
        {"KiB", 1.0 / (1 << 10)}, {"MiB", 1.0 / (1 << 20)}, {"GiB", 1.0 / (1 << 30)}, {"GFLOP", 1e-9},
        {"GB/s", 1e-9}, {"ms", 1e3}, {"us", 1e6}, {"%", 100.0},
    };
    for (size_t i = 0; i < sizeof SCALES / sizeof SCALES[0]; i++)
        if (!strcmp(unit, SCALES[i].unit)) return SCALES[i].scale;
    return 1.0;
}

/* Column c's figure in `row` as printed, into `buf`. */
static void show_cell(char *buf, size_t size, const ResultsColumn *c, const void *row)
{
    const char *at = (const char *)row + c->offset;
    const int d = c->show.decimals;
    const double k = show_scale(c);
    if (c->type == COLUMN_SET || !row_has(c, row)) snprintf(buf, size, "-");
    else if (c->type == COLUMN_STR) snprintf(buf, size, "%s", *(const char *const *)at);
    else if (c->type == COLUMN_STR_ARRAY) snprintf(buf, size, "%s", at);
    else if (c->type == COLUMN_BOOL) snprintf(buf, size, "%s", *(const bool *)at ? "yes" : "no");
    else if (c->type == COLUMN_ESTIMATE) {
        const Estimate *e = (const Estimate *)at;
        if (!strcmp(c->show.unit, "+%")) estimate_ratio_str(buf, size, e);
        else snprintf(buf, size, "%.*f (%.*f..%.*f)", d, k * e->value, d, k * e->lo, d, k * e->hi);
    } else snprintf(buf, size, d < 0 ? "%.*e" : "%.*f", d < 0 ? -d : d, k * row_number(c, row));
}

/* One line of t's columns shown in `panel`: their headings (row NULL, units false), their
 * units (row NULL, units true) or a row's figures. Nothing when the line would be empty. */
static void print_line(const ResultsTable *t, const void *row, bool units, int panel)
{
    char line[1024] = " ";
    size_t used = 1;
    for (int i = 0; i < t->n_columns && used < sizeof line; i++) {
        const ResultsColumn *c = &t->columns[i];
        if (!(c->show.panels >> panel & 1u)) continue;
        char cell[96];
        if (row) show_cell(cell, sizeof cell, c, row);
        else snprintf(cell, sizeof cell, "%s", units ? c->show.unit : c->show.head);
        /* left-aligned: a label or a figure with its interval */
        const bool left = c->type == COLUMN_STR || c->type == COLUMN_STR_ARRAY || c->type == COLUMN_ESTIMATE;
        used += (size_t)snprintf(line + used, sizeof line - used, left ? " %-*s" : " %*s", c->show.width, cell);
    }
    for (used = strlen(line); used > 0 && line[used - 1] == ' ';) line[--used] = '\0';
    if (used) printf("%s\n", line);
}

void results_print_head(const ResultsTable *t, int panel)
{
    if (!t) return;
    print_line(t, NULL, false, panel);
    print_line(t, NULL, true, panel);
}

void results_print_row(const ResultsTable *t, const void *row, int panel)
{
    if (t) print_line(t, row, false, panel);
}

/* Adds an estimate's interval to the record `rec` beside its value (column c's), under the
 * names of the _lo and _hi columns COLUMN_TIMED declares right after it, and the record's
 * samples, which every estimate of the record shares. */
static void record_interval(Results *r, cJSON *rec, const ResultsColumn *c, const Estimate *e)
{
    add_item(r, rec, c[1].name, cJSON_CreateNumber(e->lo));
    add_item(r, rec, c[2].name, cJSON_CreateNumber(e->hi));
    const cJSON *samples = cJSON_GetObjectItemCaseSensitive(rec, "samples");
    if (!samples) add_item(r, rec, "samples", cJSON_CreateNumber(e->samples));
    else if (samples->valuedouble != e->samples)
        remember(r, REMAT_EINVAL, "results %s: %s comes from %d samples, the record's others from %.0f", r->bench,
                 c->name, e->samples, samples->valuedouble);
}

void results_add_row(ResultsTable *t, const void *row)
{
    if (!t) return;
    Results *r = t->owner;
    cJSON *rec = cJSON_CreateObject();
    if (!rec || !cJSON_AddItemToArray(t->records, rec)) {
        cJSON_Delete(rec);
        remember(r, REMAT_ENOMEM, "results %s: no memory for a record of table %s", r->bench, t->name);
        return;
    }
    for (int i = 0; i < t->n_columns; i++) {
        const ResultsColumn *c = &t->columns[i];
        const char *at = (const char *)row + c->offset;
        if (!c->name || c->type == COLUMN_SET || !row_has(c, row)) continue;
        if (c->type == COLUMN_STR) add_item(r, rec, c->name, cJSON_CreateString(*(const char *const *)at));
        else if (c->type == COLUMN_STR_ARRAY) add_item(r, rec, c->name, cJSON_CreateString(at));
        else if (c->type == COLUMN_BOOL) add_item(r, rec, c->name, cJSON_CreateBool(*(const bool *)at));
        else add_item(r, rec, c->name, cJSON_CreateNumber(row_number(c, row)));
        if (c->type == COLUMN_ESTIMATE) record_interval(r, rec, c, (const Estimate *)at);
    }
    print_line(t, row, false, 0);
}

/* ---- files ------------------------------------------------------------------------------ */

/* mkdir -p. */
static RematStatus make_dirs(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return remat_fail(REMAT_EINVAL, "results: the directory name is too long: %s", dir);
    for (char *p = path + 1;; p++) {
        const bool end = *p == '\0';
        if (*p != '/' && !end) continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return remat_fail(REMAT_EIO, "results: cannot create directory %s: %s", path, strerror(errno));
        if (end) break;
        *p = '/';
    }
    return REMAT_OK;
}

/* Starts a new file to replace <path>, renamed over it by finish_file once complete. A new
 * file, never one that was there (base/file.h, file_replace_start): a fixed name such as
 * <path>.tmp, opened with fopen, followed a symbolic link planted there and overwrote its
 * target, and blocked for ever on a FIFO. */
static RematStatus start_file(FileReplacement *f, const char *path)
{
    const int err = file_replace_start(f, path, true);
    return err ? remat_fail(REMAT_EIO, "results: cannot create a temporary file beside %s: %s", path, strerror(err))
               : REMAT_OK;
}

static RematStatus finish_file(FileReplacement *f)
{
    const char *step, *path = f->path;
    const int err = file_replace_finish(f, false, &step);
    return err ? remat_fail(REMAT_EIO, "results: cannot write %s: %s failed: %s", path, step, strerror(err)) : REMAT_OK;
}

/* A number as CSV: whole numbers exactly (bytes and FLOPs are whole), others to 9 digits. */
static void csv_number(FILE *f, double v)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0) fprintf(f, "%.0f", v);
    else fprintf(f, "%.9g", v);
}

/* A string as CSV (RFC 4180): quoted when it holds a comma, a quote or a line break. */
static void csv_string(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* One line of t's CSV: its fields' names (rec NULL), or the values of a record. */
static void csv_line(FILE *f, const ResultsTable *t, const cJSON *rec)
{
    const char *separator = "";
    for (int i = 0; i < t->n_columns; i++) {
        const char *name = t->columns[i].name;
        if (!name) continue; /* printed only */
        fputs(separator, f);
        separator = ",";
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, name);
        if (!rec) fputs(name, f);
        else if (cJSON_IsNumber(v)) csv_number(f, v->valuedouble);
        else if (cJSON_IsString(v)) csv_string(f, v->valuestring);
        else if (cJSON_IsBool(v)) fputs(cJSON_IsTrue(v) ? "true" : "false", f);
    }
    fputc('\n', f);
}

static RematStatus write_csv(const ResultsTable *t, const char *dir)
{
    const char *csv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t->object, "csv"));
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, csv);
    FileReplacement file;
    if (start_file(&file, path) != REMAT_OK) return REMAT_EIO;
    csv_line(file.out, t, NULL);
    const cJSON *rec;
    cJSON_ArrayForEach(rec, t->records) csv_line(file.out, t, rec);
    return finish_file(&file);
}

static RematStatus write_json(const cJSON *root, const char *path)
{
    char *text = cJSON_Print(root);
    if (!text) return remat_fail(REMAT_ENOMEM, "results: no memory to print %s", path);
    FileReplacement f;
    RematStatus status = start_file(&f, path);
    if (status == REMAT_OK) {
        fprintf(f.out, "%s\n", text);
        status = finish_file(&f);
    }
    cJSON_free(text);
    return status;
}

/* The CSV files, then the JSON document at <dir>/<json_stem>.json. */
static RematStatus write_all(Results *r, const char *dir, const char *json_stem)
{
    add_machine_after(r); /* a mistake remembered before is reported below, as the first */
    for (int i = 0; i < r->n_tables; i++) /* how many records, also for tables kept in CSV only */
        add_item(r, r->table[i].object, "count", cJSON_CreateNumber(cJSON_GetArraySize(r->table[i].records)));
    if (r->error != REMAT_OK) return remat_fail(r->error, "%s", r->message);
    RematStatus status = make_dirs(dir);
    for (int i = 0; i < r->n_tables && status == REMAT_OK; i++) status = write_csv(&r->table[i], dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.json", dir, json_stem);
    return status == REMAT_OK ? write_json(r->root, path) : status;
}

RematStatus results_write(Results *r, const char *dir)
{
    return write_all(r, dir, r->bench);
}

RematStatus results_check_dir(const char *dir, const char *bench)
{
    if (make_dirs(dir) != REMAT_OK) return remat_last_status();
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s.json", dir, bench) >= (int)sizeof path)
        return remat_fail(REMAT_EINVAL, "results: the directory name is too long: %s", dir);
    if (file_check_writable(path) == REMAT_OK) return REMAT_OK;
    char why[768];
    snprintf(why, sizeof why, "%s", remat_last_error());
    return remat_fail(REMAT_EIO, "results: %s", why);
}

RematStatus results_write_summary(Results *r, const char *dir, const char *const *benches, int n)
{
    cJSON *all = cJSON_CreateObject();
    if (!all || !cJSON_AddItemToObject(r->root, "benches", all)) {
        cJSON_Delete(all);
        return remat_fail(REMAT_ENOMEM, "results: no memory for the summary");
    }
    RematStatus status = REMAT_OK;
    for (int i = 0; i < n && status == REMAT_OK; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.json", dir, benches[i]);
        bool missing;
        cJSON *doc = results_read_file(path, &missing);
        if (!doc && !missing) status = remat_last_status();
        else if (doc && !cJSON_AddItemToObject(all, benches[i], doc)) {
            cJSON_Delete(doc);
            status = remat_fail(REMAT_ENOMEM, "results: no memory for the summary");
        }
    }
    if (status == REMAT_OK) status = write_all(r, dir, "summary");
    cJSON_Delete(cJSON_DetachItemViaPointer(r->root, all));
    return status;
}
