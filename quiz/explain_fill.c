/*
 * explain_fill.c — reading the benches' results and filling explanations (see
 * explain_fill.h).
 */
#include "quiz/explain_fill.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tensor/file.h"
#include "tensor/memory.h"

#define MAX_FILES 16

typedef struct ResultsFile {
    char bench[64];
    cJSON *doc;  /* NULL when the file is missing */
    bool broken; /* present but unreadable or not valid JSON */
    char why[320]; /* if broken: why */
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

/* The parsed results of `bench`, reading the file the first time; NULL if missing. */
static const ResultsFile *results_file(ResultsDir *r, const char *bench)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->files[i].bench, bench)) return &r->files[i];
    if (r->n == MAX_FILES) return NULL;
    ResultsFile *f = &r->files[r->n++];
    snprintf(f->bench, sizeof f->bench, "%s", bench);
    char path[640];
    snprintf(path, sizeof path, "%s/%s.json", r->dir, bench);
    struct stat st;
    if (stat(path, &st) != 0) return f; /* missing: the explanation says it was not measured */
    enum { MAX_RESULTS_BYTES = 256 << 20 };
    char *text;
    size_t size;
    if (file_read_all("results", path, MAX_RESULTS_BYTES, &text, &size) == REMAT_OK) {
        f->doc = cJSON_Parse(text);
        free(text);
        snprintf(f->why, sizeof f->why, "%.300s is not valid JSON", path);
    } else {
        snprintf(f->why, sizeof f->why, "%s", remat_last_error()); /* "results: X is a directory, ..." */
    }
    f->broken = !f->doc;
    return f;
}

const cJSON *results_document(ResultsDir *r, const char *bench)
{
    const ResultsFile *f = results_file(r, bench);
    return f ? f->doc : NULL;
}

/* True if every entry of `where` equals the record's field of the same name. */
static bool record_matches(const cJSON *record, const cJSON *where)
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

typedef enum Lookup { FOUND, MISSING, MALFORMED } Lookup;

/* Finds the value `m` quotes. */
static Lookup lookup(ResultsDir *r, const Measurement *m, const cJSON **value, char *why, size_t why_size)
{
    const ResultsFile *f = results_file(r, m->bench);
    if (!f || (!f->doc && !f->broken)) return MISSING;
    if (f->broken) {
        snprintf(why, why_size, "%s", f->why);
        return MALFORMED;
    }
    const cJSON *tables = cJSON_GetObjectItemCaseSensitive(f->doc, "tables");
    const cJSON *table = cJSON_GetObjectItemCaseSensitive(tables, m->table);
    const cJSON *records = cJSON_GetObjectItemCaseSensitive(table, "records");
    if (!cJSON_IsArray(records)) {
        snprintf(why, why_size, "%.300s/%s.json: tables.%s.records is missing", r->dir, m->bench, m->table);
        return MALFORMED;
    }
    for (const cJSON *rec = records->child; rec; rec = rec->next) {
        if (!record_matches(rec, m->where)) continue;
        *value = cJSON_GetObjectItemCaseSensitive(rec, m->field);
        if (*value) return FOUND;
        snprintf(why, why_size, "%.300s/%s.json: a record of tables.%s has no field %s", r->dir, m->bench, m->table, m->field);
        return MALFORMED;
    }
    return MISSING; /* e.g. a quick run that measured fewer configurations */
}

static void format_value(char *buf, size_t size, const cJSON *v, const char *format)
{
    if (cJSON_IsString(v)) {
        snprintf(buf, size, "%s", v->valuestring);
    } else if (cJSON_IsBool(v)) {
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "yes" : "no");
    } else if (!strcmp(format, "bytes")) {
        mem_format_bytes(buf, size, v->valuedouble > 0 ? (size_t)v->valuedouble : 0);
    } else if (!strcmp(format, "percent")) {
        snprintf(buf, size, "%.1f%%", 100.0 * v->valuedouble);
    } else if (!strcmp(format, "excess")) {
        snprintf(buf, size, "%+.1f%%", 100.0 * (v->valuedouble - 1.0));
    } else if (!strcmp(format, "int")) {
        snprintf(buf, size, "%.0f", v->valuedouble);
    } else {
        snprintf(buf, size, "%.3g", v->valuedouble);
    }
}

int measured_count(const Question *q, ResultsDir *results)
{
    int found = 0;
    for (int i = 0; i < q->n_measurements; i++) {
        const cJSON *v;
        char why[8];
        found += lookup(results, &q->measurements[i], &v, why, sizeof why) == FOUND;
    }
    return found;
}

RematStatus explain_pieces(const Question *q, QuizLang lang, ResultsDir *results, ExplainSink *sink, void *ctx)
{
    const char *text = q->explanation.lang[lang];
    RematStatus status = REMAT_OK;
    for (;;) {
        const char *open = strchr(text, '{'), *close = open ? strchr(open, '}') : NULL;
        if (!open || !close) break;
        if (open > text) sink(ctx, PIECE_TEXT, text, (size_t)(open - text));
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(close - open - 1), open + 1);
        text = close + 1;

        const Measurement *m = NULL;
        for (int i = 0; i < q->n_measurements; i++)
            if (!strcmp(q->measurements[i].name, name)) m = &q->measurements[i];
        char why[1024] = "", value[sizeof why + 8];
        const cJSON *v = NULL;
        Lookup found = m ? lookup(results, m, &v, why, sizeof why) : MALFORMED;
        if (!m) snprintf(why, sizeof why, "the question bank has no measurement %s", name);
        PieceKind kind = PIECE_FIGURE;
        if (found == FOUND) {
            format_value(value, sizeof value, v, m->format);
        } else if (found == MISSING) {
            kind = PIECE_MISSING;
            snprintf(value, sizeof value, lang == LANG_AR ? "(لم يُقَس بعد: شغّل build/bench/%s --quick)"
                                                          : "(not measured yet: run build/bench/%s --quick)", m->bench);
        } else {
            kind = PIECE_BROKEN;
            status = remat_fail(REMAT_ECORRUPT, "%s", why);
            snprintf(value, sizeof value, "(%s)", why);
        }
        sink(ctx, kind, value, strlen(value));
    }
    if (*text) sink(ctx, PIECE_TEXT, text, strlen(text));
    return status;
}

/* fill_explanation's sink: appends each piece to a buffer, truncating at its end. */
typedef struct LineBuffer {
    char *buf;
    size_t size, used;
} LineBuffer;

static void append_piece(void *ctx, PieceKind kind, const char *text, size_t len)
{
    (void)kind; /* on a terminal a figure reads like the words around it */
    LineBuffer *line = ctx;
    const size_t room = line->size - 1 - line->used;
    if (len > room) len = room;
    memcpy(line->buf + line->used, text, len);
    line->used += len;
    line->buf[line->used] = '\0';
}

RematStatus fill_explanation(char *buf, size_t size, const Question *q, QuizLang lang, ResultsDir *results)
{
    LineBuffer line = {buf, size, 0};
    buf[0] = '\0';
    return explain_pieces(q, lang, results, append_piece, &line);
}
