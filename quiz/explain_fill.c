/*
 * explain_fill.c — reading the benches' results and filling explanations (see
 * explain_fill.h).
 *
 * A question is filled in three steps: every measurement it quotes is looked up and
 * checked (a Figure: found, or why not); its times are judged, together and each on its
 * own (can they carry the lesson, and if not, the first reason why); then its parts are
 * written, each as its text, its `otherwise`, or not at all, followed by the notes.
 */
#include "quiz/explain_fill.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tensor/memory.h"

/* ---- one figure: looked up and checked ------------------------------------------------ */

typedef enum FigureState {
    FIG_OK,
    FIG_NO_FILE,   /* the bench has not written its results */
    FIG_UNREADABLE, /* its results file cannot be read or is not valid JSON */
    FIG_NO_RECORD, /* no record matches, or the record lacks the field (e.g. other flags) */
    FIG_INVALID,   /* the value is there but is not a plausible measurement */
} FigureState;

typedef struct Figure {
    const Measurement *m;
    FigureState state;
    const cJSON *value;   /* FIG_OK */
    const char *problem;  /* FIG_INVALID: why, a key of words.json: "why_negative", "out_of_order" */
    char field[256];      /* where the value is: "tables.steps.records[3].peak_act" */
    const FigureOrder *order; /* out_of_order: the order broken, */
    const struct Figure *other; /* with this figure */
    bool spread;          /* a time whose interval and samples were read */
    double lo, hi;
    int samples;
} Figure;

/* Each numeric format: what a plausible measurement of it is, and how it is written,
 * printf(print, (value − shift) × scale), or as bytes (mem_format_bytes) when print is
 * NULL. The limits are what the quantity is (a share of FLOPs is at most all of them, a
 * resident peak at most this machine's RAM: max 0), or else far beyond anything a bench
 * on one machine measures, but not beyond what a corrupted or hand-edited file holds:
 * "kept 16777216.0 TiB" or "kept 0 B" from a null is worse than no figure. */
typedef struct Format {
    double max;
    bool whole, positive;
    const char *print;
    double shift, scale;
} Format;

static const Format FORMATS[] = {
    [FORMAT_BYTES] = {1125899906842624.0, true, false, NULL, 0, 1}, /* 1 PiB */
    [FORMAT_RESIDENT] = {0, true, false, NULL, 0, 1},               /* a resident peak: at most the RAM */
    [FORMAT_INT] = {1e9, true, false, "%.0f", 0, 1},
    [FORMAT_COUNT] = {1e9, true, true, "%.3g", 0, 1},               /* samples, cores */
    [FORMAT_PERCENT] = {1.0, false, false, "%.1f%%", 0, 100},       /* FLOPs recomputed per FLOP done */
    [FORMAT_EXCESS] = {100.0, false, true, "%+.1f%%", 1, 100},      /* a ratio of times: above 0 */
    [FORMAT_CHANGE] = {100.0, false, true, "%.1f%%", 1, 100},       /* the same, worded slower or faster */
    [FORMAT_FRACTION] = {1.0, false, false, "%.3g", 0, 1},          /* CPU steal */
    [FORMAT_NUMBER] = {1e6, false, false, "%.3g", 0, 1},            /* slopes, gradient differences, load averages */
};

/* Checks `v`, a value of format `format`; false with *problem set (a key of words.json) if
 * it is not a plausible measurement. */
static bool valid_value(const cJSON *v, FigureFormat format, const char **problem)
{
    *problem = "why_not_number";
    if (format == FORMAT_TEXT) return cJSON_IsString(v);
    if (!cJSON_IsNumber(v) || isnan(v->valuedouble)) return false;
    const Format *p = &FORMATS[format];
    const double x = v->valuedouble, ram = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    const double max = p->max ? p->max : ram;
    *problem = x < 0 ? "why_negative" : p->positive && x == 0 ? "why_not_positive" : !(x <= max) ? "why_too_large"
             : p->whole && x != floor(x) ? "why_not_whole" : NULL;
    return *problem == NULL;
}

/* Marks `fig` invalid: `field` of the record at `path` has `problem`. */
static void invalid(Figure *fig, const char *path, const char *field, const char *problem)
{
    fig->state = FIG_INVALID;
    fig->problem = problem;
    snprintf(fig->field, sizeof fig->field, "%s.%s", path, field);
}

/* Reads a time's interval and samples beside its value: `field`_lo, `field`_hi and
 * `samples` of the record at `path`. None of them: the older schema, fig->spread stays
 * false. Some, or a value outside [lo, hi]: the figure is invalid. */
static void read_spread(const cJSON *record, const char *path, Figure *fig)
{
    char lo[128], hi[128];
    snprintf(lo, sizeof lo, "%s_lo", fig->m->field);
    snprintf(hi, sizeof hi, "%s_hi", fig->m->field);
    const char *names[3] = {lo, hi, "samples"};
    const cJSON *v[3];
    int present = 0;
    for (int i = 0; i < 3; i++) present += (v[i] = cJSON_GetObjectItemCaseSensitive(record, names[i])) != NULL;
    if (present == 0) return;
    const char *problem;
    for (int i = 0; i < 3; i++) {
        if (!v[i]) return invalid(fig, path, names[i], "why_part_of_interval");
        if (!valid_value(v[i], i < 2 ? fig->m->format : FORMAT_COUNT, &problem))
            return invalid(fig, path, names[i], problem);
    }
    fig->lo = v[0]->valuedouble;
    fig->hi = v[1]->valuedouble;
    fig->samples = (int)v[2]->valuedouble;
    const double value = fig->value->valuedouble;
    if (!(fig->lo <= value && value <= fig->hi)) return invalid(fig, path, names[0], "why_outside_interval");
    fig->spread = true;
}

/* The record `m` quotes and its index: the first that matches its `where`, or with
 * `largest`, the matching record whose field is largest; an invalid value of the field
 * wins, so that it is reported, not passed over. NULL when none matches. */
static const cJSON *pick_record(const cJSON *records, const Measurement *m, int *index)
{
    if (!m->largest) return results_find(records, m->where, index);
    const cJSON *best = NULL;
    bool best_valid = true;
    int i = 0;
    for (const cJSON *rec = records ? records->child : NULL; rec; rec = rec->next, i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, m->field);
        const char *problem;
        if (!v || !results_record_matches(rec, m->where) || !best_valid) continue;
        const bool valid = valid_value(v, m->format, &problem);
        if (best && valid && v->valuedouble <= cJSON_GetObjectItemCaseSensitive(best, m->field)->valuedouble) continue;
        best = rec;
        best_valid = valid;
        *index = i;
    }
    return best;
}

const cJSON *explain_results(ResultsDir *r, const char *bench, char *why, size_t size)
{
    const char *broken = results_broken(r, bench);
    const cJSON *doc = results_document(r, bench);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(doc, "schema");
    const char *name = cJSON_IsString(schema) ? schema->valuestring : NULL;
    if (why) snprintf(why, size, "%s", broken ? broken : "");
    if (broken || !doc) return NULL;
    /* The schemas the quiz reads (docs/RESULTS.md): 1 has no intervals, so no time is quoted. */
    if (name && (!strcmp(name, "remat-bench/1") || !strcmp(name, "remat-bench/2"))) return doc;
    if (why)
        snprintf(why, size, "%s/%s.json: its schema is %s%.40s%s, not remat-bench/1 or remat-bench/2", results_dir(r),
                 bench, name ? "'" : "", name ? name : schema ? "not a string" : "not recorded", name ? "'" : "");
    return NULL;
}

/* Finds and checks the value `m` quotes. */
static Figure find_figure(ResultsDir *r, const Measurement *m)
{
    Figure fig = {.m = m, .state = FIG_NO_FILE};
    const cJSON *doc = explain_results(r, m->bench, fig.field, sizeof fig.field);
    if (fig.field[0]) fig.state = FIG_UNREADABLE;
    if (!doc) return fig;
    fig.state = FIG_NO_RECORD;
    int index = 0;
    const cJSON *rec = pick_record(results_records(doc, m->table), m, &index);
    if (!rec) return fig; /* e.g. a run narrowed by a flag that measured fewer configurations */
    char path[96];
    snprintf(path, sizeof path, "tables.%s.records[%d]", m->table, index);
    snprintf(fig.field, sizeof fig.field, "%s.%s", path, m->field);
    fig.value = cJSON_GetObjectItemCaseSensitive(rec, m->field);
    if (!fig.value) return fig;
    fig.state = valid_value(fig.value, m->format, &fig.problem) ? FIG_OK : FIG_INVALID;
    if (fig.state == FIG_OK && m->time) read_spread(rec, path, &fig);
    return fig;
}

/* ---- the machine while a bench ran ------------------------------------------------------ */

/* Reads doc's machine block into *m: false when it does not record every field, or one is
 * invalid, which is then described in *bad (its field and problem). */
static bool read_machine(const cJSON *doc, RecordedMachine *m, Figure *bad)
{
    static const struct {
        const char *name;
        FigureFormat format;
        size_t offset;
    } fields[] = {{"loadavg_before", FORMAT_NUMBER, offsetof(RecordedMachine, load_before)},
                  {"loadavg_after", FORMAT_NUMBER, offsetof(RecordedMachine, load_after)},
                  {"cpu_steal", FORMAT_FRACTION, offsetof(RecordedMachine, steal)},
                  {"others_cpu", FORMAT_FRACTION, offsetof(RecordedMachine, others)},
                  {"cores", FORMAT_COUNT, offsetof(RecordedMachine, cores)}};
    const cJSON *machine = cJSON_GetObjectItemCaseSensitive(doc, "machine");
    bool recorded = true;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(machine, fields[i].name);
        const char *problem;
        if (v && !valid_value(v, fields[i].format, &problem)) {
            invalid(bad, "machine", fields[i].name, problem);
            return false;
        }
        if (v) *(double *)((char *)m + fields[i].offset) = v->valuedouble;
        else recorded = false;
    }
    return recorded;
}

bool results_machine(const cJSON *doc, RecordedMachine *m)
{
    return read_machine(doc, m, &(Figure){0}); /* the invalid field, if any, is judge_times' to note */
}

/* ---- writing a figure ------------------------------------------------------------------ */

/* `v` written as `format` says; a "change" in words of `lang`, by its sign. */
static void format_number(char *buf, size_t size, double v, FigureFormat format, QuizLang lang)
{
    const Format *f = &FORMATS[format];
    if (!f->print) {
        mem_format_bytes(buf, size, (size_t)v);
        return;
    }
    const bool change = format == FORMAT_CHANGE;
    char number[64];
    snprintf(number, sizeof number, f->print, (change ? fabs(v - f->shift) : v - f->shift) * f->scale);
    if (strspn(number, "+-0.%") == strlen(number)) snprintf(number, sizeof number, f->print, 0.0); /* not -0.0% */
    snprintf(buf, size, !change ? "%s" : quiz_word(lang, v < 1 ? "faster" : "slower"), number);
}

/* A found figure as the explanation quotes it: a time with its spread. The interval of a
 * change names its side once when both bounds are on the value's ("4.0% slower (2.1% to
 * 6.3%, ...)"), and each bound's when it straddles no change. */
static void format_figure(char *buf, size_t size, const Figure *fig, QuizLang lang)
{
    const cJSON *v = fig->value;
    if (cJSON_IsString(v)) {
        snprintf(buf, size, "%s", v->valuestring);
        return;
    }
    const FigureFormat format = fig->m->format;
    if (!fig->spread) return format_number(buf, size, v->valuedouble, format, lang);
    char value[64], lo[64], hi[64];
    format_number(value, sizeof value, v->valuedouble, format, lang);
    const bool change = format == FORMAT_CHANGE;
    if (change && (fig->lo < 1) == (fig->hi < 1)) { /* the sizes alone, the smaller first */
        const double a = fabs(fig->lo - 1) * 100, b = fabs(fig->hi - 1) * 100;
        snprintf(lo, sizeof lo, "%.1f%%", fmin(a, b));
        snprintf(hi, sizeof hi, "%.1f%%", fmax(a, b));
    } else {
        format_number(lo, sizeof lo, fig->lo, format, lang);
        format_number(hi, sizeof hi, fig->hi, format, lang);
    }
    const bool ratio = change || format == FORMAT_EXCESS || format == FORMAT_PERCENT;
    snprintf(buf, size, quiz_word(lang, ratio ? "paired_spread" : "timed_spread"), value, lo, hi, fig->samples);
}

/* ---- a question's times: can they carry the lesson? ------------------------------------ */

/* The reasons, in the order a note prefers them: the first found is the one said. The
 * first four are the question's (the older schema, a quick run of a question whose times
 * teach nothing at that size, the machine, an order contradicted): they silence all its
 * times. The next two are one figure's: they silence the parts that quote it. */
typedef enum TimeTrust {
    TIMES_UNKNOWN, TIMES_QUICK, TIMES_BUSY, TIMES_CONTRADICTED, /* the question's */
    TIMES_FEW, TIMES_WIDE,                                       /* one figure's */
    TIMES_CARRY
} TimeTrust;

typedef struct Judgement {
    TimeTrust trust;         /* the question's: TIMES_CARRY unless all its times are silenced */
    TimeTrust figure[QUIZ_MAX_MEASUREMENTS]; /* each time figure's own: FEW, WIDE or CARRY */
    const char *bench;       /* the bench whose times are judged */
    const FigureOrder *order;  /* TIMES_CONTRADICTED */
    RecordedMachine machine; /* TIMES_BUSY */
    Figure bad_machine;      /* the machine block's invalid field (state FIG_INVALID), if any */
} Judgement;

static void blame(Judgement *j, TimeTrust trust, const FigureOrder *order)
{
    if (trust >= j->trust) return;
    j->trust = trust;
    j->order = order;
}

static Judgement judge_times(const Question *q, const Figure *figs, ResultsDir *r)
{
    Judgement j = {.trust = TIMES_CARRY};
    for (int i = 0; i < q->n_measurements; i++) {
        const Figure *fig = &figs[i];
        j.figure[i] = TIMES_CARRY;
        if (!fig->m->time || fig->state != FIG_OK) continue;
        if (!j.bench) {
            j.bench = fig->m->bench;
            j.bad_machine.m = fig->m;
            const cJSON *doc = explain_results(r, j.bench, NULL, 0);
            const cJSON *mode = cJSON_GetObjectItemCaseSensitive(doc, "mode");
            if (q->quick_times.lang[LANG_EN] && cJSON_IsString(mode) && !strcmp(mode->valuestring, "quick"))
                blame(&j, TIMES_QUICK, NULL);
            if (!read_machine(doc, &j.machine, &j.bad_machine))
                blame(&j, TIMES_UNKNOWN, NULL);
            else if (j.machine.others > TIME_MAX_OTHERS || j.machine.steal > TIME_MAX_STEAL)
                blame(&j, TIMES_BUSY, NULL);
        }
        /* One time on its own: from enough samples, and narrow enough to carry a lesson? */
        if (!fig->spread) blame(&j, TIMES_UNKNOWN, NULL);
        else if (fig->samples < TIME_MIN_SAMPLES) j.figure[i] = TIMES_FEW;
        else if (fig->hi - fig->lo > TIME_MAX_WIDTH * fabs(fig->value->valuedouble)) j.figure[i] = TIMES_WIDE;
    }
    return j;
}

/* The question's orders: exact figures that break one are both left out, since either may be
 * the wrong one; times whose intervals break one are noise, not wrong, and silence all its times. */
static void check_orders(const Question *q, Figure *figs, Judgement *j)
{
    for (int o = 0; o < q->n_orders; o++) {
        const FigureOrder *order = &q->orders[o];
        Figure *lower = &figs[order->lower - q->measurements], *higher = &figs[order->higher - q->measurements];
        if (lower->spread && higher->spread && lower->lo > higher->hi) blame(j, TIMES_CONTRADICTED, order);
        if (order->lower->time || lower->state != FIG_OK || higher->state != FIG_OK ||
            lower->value->valuedouble <= higher->value->valuedouble)
            continue;
        lower->state = higher->state = FIG_INVALID;
        lower->problem = higher->problem = "out_of_order";
        lower->order = higher->order = order;
        lower->other = higher;
        higher->other = lower;
    }
}

/* ---- writing the explanation ----------------------------------------------------------- */

typedef struct Fill {
    const Question *q;
    QuizLang lang;
    Figure figs[QUIZ_MAX_MEASUREMENTS];
    Judgement judged;
    bool said_time; /* a part said quotes a time */
    ExplainSink *sink;
    void *ctx;
} Fill;

/* The figure {name...} at `open` names (the bank checked that it names one). */
static const Figure *placeholder(const Fill *fill, const char *open, const char **close)
{
    return &fill->figs[question_placeholder(fill->q, open, close) - fill->q->measurements];
}

/* Whether every figure `text` quotes can be quoted: found, and for a time, trusted on the
 * question's and its own account. */
static bool can_say(const Fill *fill, const char *text)
{
    const Judgement *j = &fill->judged;
    for (const char *open = strchr(text, '{'), *close; open; open = strchr(close, '{')) {
        const Figure *fig = placeholder(fill, open, &close);
        if (fig->state != FIG_OK) return false;
        if (fig->m->time && (j->trust != TIMES_CARRY || j->figure[fig - fill->figs] != TIMES_CARRY)) return false;
    }
    return true;
}

/* Hands `text` to `sink`, each placeholder as its figure. */
static void say(const Fill *fill, const char *text, ExplainSink *sink, void *ctx)
{
    for (const char *open, *close; (open = strchr(text, '{')) != NULL; text = close + 1) {
        const Figure *fig = placeholder(fill, open, &close);
        if (open > text) sink(ctx, PIECE_TEXT, text, (size_t)(open - text));
        char value[256];
        format_figure(value, sizeof value, fig, fill->lang);
        sink(ctx, PIECE_FIGURE, value, strlen(value));
    }
    if (*text) sink(ctx, PIECE_TEXT, text, strlen(text));
}

/* A sink that appends every piece to a buffer, truncating at its end. */
typedef struct LineBuffer {
    char *buf;
    size_t size, used;
} LineBuffer;

static void append_piece(void *ctx, PieceKind kind, const char *text, size_t len)
{
    LineBuffer *line = ctx;
    const char *newline = kind == PIECE_NOTE ? "\n" : ""; /* on a terminal, a note is a line of its own */
    const int n = snprintf(line->buf + line->used, line->size - line->used, "%s%.*s", newline, (int)len, text);
    line->used = n < 0 || (size_t)n >= line->size - line->used ? line->size - 1 : line->used + (size_t)n;
}

static void note(const Fill *fill, const char *text) { fill->sink(fill->ctx, PIECE_NOTE, text, strlen(text)); }

/* The program that measures what `bench` records, as a note names it before "--quick":
 * "build/bench/<bench>", or for a bench run as K ranks, whose results are "<name>_np<K>"
 * (bench_zero_np2), "mpirun -np K build/bench/<name>". */
static void bench_program(char *buf, size_t size, const char *bench)
{
    const char *np = strstr(bench, "_np");
    int ranks = 0, used = 0;
    if (np && sscanf(np, "_np%d%n", &ranks, &used) == 1 && np[used] == '\0' && ranks > 0)
        snprintf(buf, size, "mpirun -np %d build/bench/%.*s", ranks, (int)(np - bench), bench);
    else
        snprintf(buf, size, "build/bench/%s", bench);
}

/* The note about one figure that is not there or not valid. Returns REMAT_ECORRUPT
 * (naming the file and field) if its results file or the figure is malformed. */
static RematStatus note_figure(const Fill *fill, ResultsDir *r, const Figure *fig)
{
    char program[128], file[700], text[2048];
    bench_program(program, sizeof program, fig->m->bench);
    snprintf(file, sizeof file, "%s/%s.json", results_dir(r), fig->m->bench);
    RematStatus status = REMAT_OK;
    if (fig->state == FIG_NO_FILE) {
        snprintf(text, sizeof text, quiz_word(fill->lang, "not_run"), program);
    } else if (fig->state == FIG_NO_RECORD) {
        snprintf(text, sizeof text, quiz_word(fill->lang, "not_recorded"), file, program);
    } else if (fig->state == FIG_UNREADABLE) {
        snprintf(text, sizeof text, quiz_word(fill->lang, "unreadable"), fig->field, program);
        status = remat_fail(REMAT_ECORRUPT, "%s", fig->field);
    } else {
        char why[2][1024]; /* in the language of the note, and in English for the error */
        for (int l = 0; l < LANG_COUNT; l++)
            snprintf(why[l], sizeof why[l], quiz_word((QuizLang)l, fig->problem), fig->order ? fig->other->field : "",
                     fig->order ? fig->order->why.lang[l] : "");
        snprintf(text, sizeof text, quiz_word(fill->lang, "invalid_figure"), fig->field, file, why[fill->lang],
                 program);
        status = remat_fail(REMAT_ECORRUPT, "%s: %s: %s, so it is treated as not measured", file, fig->field,
                            why[LANG_EN]);
    }
    note(fill, text);
    return status;
}

/* The notes about figures that are not there or not valid: one per bench and state, one
 * per invalid figure (the machine block's included). Returns REMAT_ECORRUPT if any
 * results file or figure is malformed. */
static RematStatus note_missing(const Fill *fill, ResultsDir *r)
{
    RematStatus status = REMAT_OK;
    for (int i = 0; i < fill->q->n_measurements; i++) {
        const Figure *fig = &fill->figs[i];
        bool said = fig->state == FIG_OK;
        for (int k = 0; k < i && !said && fig->state != FIG_INVALID; k++)
            said = fill->figs[k].state == fig->state && !strcmp(fill->figs[k].m->bench, fig->m->bench);
        if (!said && note_figure(fill, r, fig) != REMAT_OK) status = REMAT_ECORRUPT;
    }
    if (fill->judged.bad_machine.state == FIG_INVALID && note_figure(fill, r, &fill->judged.bad_machine) != REMAT_OK)
        status = REMAT_ECORRUPT;
    return status;
}

/* Why the question's times are all silenced, into text: the machine, the older schema, an
 * order contradicted, or (when no part could quote a time) the spread of `figure`, a time
 * as format_figure writes it. Returns the length written, as snprintf. */
static int why_silenced(const Fill *fill, TimeTrust trust, const char *figure, const char *program, char *text,
                        size_t size)
{
    const Judgement *j = &fill->judged;
    char load[32], steal[32], others[32];
    switch (trust) {
    case TIMES_UNKNOWN: return snprintf(text, size, quiz_word(fill->lang, "time_unknown"), program);
    case TIMES_QUICK:
        return snprintf(text, size, quiz_word(fill->lang, "time_quick"), program,
                        fill->q->quick_times.lang[fill->lang]);
    case TIMES_BUSY:
        snprintf(load, sizeof load, "%.1f", fmax(j->machine.load_before, j->machine.load_after));
        snprintf(steal, sizeof steal, "%.1f%%", 100.0 * j->machine.steal);
        snprintf(others, sizeof others, "%.1f%%", 100.0 * j->machine.others);
        return snprintf(text, size, quiz_word(fill->lang, "time_busy"), program, others, steal, load,
                        (int)j->machine.cores);
    case TIMES_CONTRADICTED: {
        char why[2048] = "";
        say(fill, j->order->why.lang[fill->lang], append_piece, &(LineBuffer){why, sizeof why, 0});
        return snprintf(text, size, quiz_word(fill->lang, "time_contradicted"), program, why);
    }
    case TIMES_FEW: return snprintf(text, size, quiz_word(fill->lang, "time_few"), program, figure);
    case TIMES_WIDE: return snprintf(text, size, quiz_word(fill->lang, "time_wide"), program, figure);
    case TIMES_CARRY: break;
    }
    return 0;
}

/* The notes on the question's times that are not quoted. When none is (the question's
 * reason, or no part could quote one), one note says why and what is taught instead;
 * when some are, one note per time left out on its own account. */
static void note_times(const Fill *fill)
{
    const Judgement *j = &fill->judged;
    if (!j->bench) return;
    char program[128], figure[512], text[4096];
    bench_program(program, sizeof program, j->bench);
    TimeTrust trust = j->trust;
    for (int i = 0; i < fill->q->n_measurements && j->trust == TIMES_CARRY; i++) {
        if (j->figure[i] == TIMES_CARRY) continue;
        if (fill->said_time) {
            format_figure(figure, sizeof figure, &fill->figs[i], fill->lang);
            snprintf(text, sizeof text, quiz_word(fill->lang, j->figure[i] == TIMES_FEW ? "time_few_left_out"
                                                                                       : "time_wide_left_out"),
                     program, figure, program);
            note(fill, text);
        } else if (j->figure[i] < trust) { /* the first of the least trusted is the one said */
            trust = j->figure[i];
            format_figure(figure, sizeof figure, &fill->figs[i], fill->lang);
        }
    }
    if (trust == TIMES_CARRY) return;
    int n = why_silenced(fill, trust, figure, program, text, sizeof text);
    if (n >= 0 && (size_t)n < sizeof text - 1) {
        text[n++] = ' ';
        snprintf(text + n, sizeof text - (size_t)n,
                 quiz_word(fill->lang, trust == TIMES_QUICK ? "time_instead_full" : "time_instead"),
                 program);
    }
    note(fill, text);
}

RematStatus explain_pieces(const Question *q, QuizLang lang, ResultsDir *results, ExplainSink *sink, void *ctx)
{
    Fill fill = {.q = q, .lang = lang, .sink = sink, .ctx = ctx};
    for (int i = 0; i < q->n_measurements; i++) fill.figs[i] = find_figure(results, &q->measurements[i]);
    fill.judged = judge_times(q, fill.figs, results);
    check_orders(q, fill.figs, &fill.judged);
    bool first = true;
    for (int p = 0; p < q->n_parts; p++) {
        const ExplanationPart *part = &q->parts[p];
        const char *text = part->text.lang[lang];
        const char *otherwise = part->otherwise.lang[lang];
        if (!can_say(&fill, text)) text = otherwise && can_say(&fill, otherwise) ? otherwise : NULL;
        if (!text) continue;
        fill.said_time |= question_quotes_time(q, text);
        if (!first) sink(ctx, PIECE_TEXT, " ", 1);
        say(&fill, text, sink, ctx);
        first = false;
    }
    const RematStatus status = note_missing(&fill, results);
    note_times(&fill);
    return status;
}

RematStatus fill_explanation(char *buf, size_t size, const Question *q, QuizLang lang, ResultsDir *results)
{
    buf[0] = '\0';
    return explain_pieces(q, lang, results, append_piece, &(LineBuffer){buf, size, 0});
}

void explain_sources(char *buf, size_t size, const Question *q, QuizLang lang, ResultsDir *results)
{
    char runs[1536] = "";
    size_t used = 0;
    for (int i = 0; i < q->n_measurements; i++) {
        const char *bench = q->measurements[i].bench;
        const cJSON *doc = explain_results(results, bench, NULL, 0);
        bool seen = false;
        for (int k = 0; k < i; k++) seen |= !strcmp(q->measurements[k].bench, bench);
        if (!doc || seen || used >= sizeof runs) continue;
        const cJSON *mode = cJSON_GetObjectItemCaseSensitive(doc, "mode");
        const cJSON *date = cJSON_GetObjectItemCaseSensitive(doc, "date");
        const char *how = !cJSON_IsString(mode) ? "unrecorded_run" : !strcmp(mode->valuestring, "quick") ? "quick_run"
                        : !strcmp(mode->valuestring, "full") ? "full_run" : "unrecorded_run";
        const char *comma = quiz_word(lang, "comma");
        used += (size_t)snprintf(runs + used, sizeof runs - used, "%s%s (%s%s%s)", used ? comma : "", bench,
                                 quiz_word(lang, how), comma,
                                 cJSON_IsString(date) ? date->valuestring : quiz_word(lang, "undated"));
    }
    if (used) snprintf(buf, size, quiz_word(lang, "sources"), runs);
    else if (size) buf[0] = '\0';
}
