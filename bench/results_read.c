/*
 * results_read.c — reading the results schema (see results_read.h).
 */
#include "bench/results_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/file.h"

enum { MAX_RESULTS_BYTES = 256 << 20, MAX_FILES = 16 };

cJSON *results_read_file(const char *path, bool *missing)
{
    struct stat st;
    *missing = stat(path, &st) != 0 && errno == ENOENT;
    char *text;
    size_t size;
    if (*missing || file_read_all("reading the results", path, MAX_RESULTS_BYTES, &text, &size) != REMAT_OK)
        return NULL;
    cJSON *doc = cJSON_Parse(text);
    free(text);
    if (!doc) remat_fail(REMAT_ECORRUPT, "%s is not valid JSON", path);
    return doc;
}

/* ---- a directory of results ------------------------------------------------------------- */

typedef struct ResultsFile {
    char bench[64];
    cJSON *doc;     /* NULL when the file is missing or broken */
    char why[1024]; /* when present but unreadable or not valid JSON, what is wrong with it; else "" */
} ResultsFile;

struct ResultsDir {
    char dir[512];
    ResultsFile files[MAX_FILES];
    int n;
};

ResultsDir *results_open(const char *dir)
{
    ResultsDir *r = calloc(1, sizeof *r);
    if (r) snprintf(r->dir, sizeof r->dir, "%s", dir);
    return r;
}

void results_close(ResultsDir *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) cJSON_Delete(r->files[i].doc);
    free(r);
}

const char *results_dir(const ResultsDir *r)
{
    return r->dir;
}

/* The results of `bench`, reading the file the first time; NULL past MAX_FILES benches. */
static const ResultsFile *results_file(ResultsDir *r, const char *bench)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->files[i].bench, bench)) return &r->files[i];
    if (r->n == MAX_FILES) return NULL;
    ResultsFile *f = &r->files[r->n++];
    snprintf(f->bench, sizeof f->bench, "%s", bench);
    char path[640];
    snprintf(path, sizeof path, "%s/%s.json", r->dir, bench);
    bool missing;
    f->doc = results_read_file(path, &missing);
    if (!f->doc && !missing) snprintf(f->why, sizeof f->why, "%s", remat_last_error());
    return f;
}

const cJSON *results_document(ResultsDir *r, const char *bench)
{
    const ResultsFile *f = results_file(r, bench);
    return f ? f->doc : NULL;
}

const char *results_broken(ResultsDir *r, const char *bench)
{
    const ResultsFile *f = results_file(r, bench);
    return f && f->why[0] ? f->why : NULL;
}

/* ---- tables and records ----------------------------------------------------------------- */

const cJSON *results_records(const cJSON *doc, const char *table)
{
    const cJSON *tables = cJSON_GetObjectItemCaseSensitive(doc, "tables");
    const cJSON *records = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tables, table), "records");
    return cJSON_IsArray(records) ? records : NULL;
}

bool results_record_matches(const cJSON *record, const cJSON *where)
{
    for (const cJSON *w = where ? where->child : NULL; w; w = w->next) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(record, w->string);
        if (!v) return false;
        if (cJSON_IsNumber(w) && (!cJSON_IsNumber(v) || v->valuedouble != w->valuedouble)) return false;
        if (cJSON_IsString(w) && (!cJSON_IsString(v) || strcmp(v->valuestring, w->valuestring))) return false;
        if (cJSON_IsBool(w) && (!cJSON_IsBool(v) || cJSON_IsTrue(v) != cJSON_IsTrue(w))) return false;
    }
    return true;
}

const cJSON *results_find(const cJSON *records, const cJSON *where, int *index)
{
    int i = 0;
    for (const cJSON *rec = records ? records->child : NULL; rec; rec = rec->next, i++) {
        if (!results_record_matches(rec, where)) continue;
        if (index) *index = i;
        return rec;
    }
    return NULL;
}
