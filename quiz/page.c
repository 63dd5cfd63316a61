/*
 * page.c — the quiz as one self-contained HTML page (see page.h).
 *
 * The page is its template, quiz/page.html (the head with the inline style, the language
 * switch, the score, which the script fills in the language shown, and the script), with
 * the parts written here in its place: each language's view (its questions, each with its
 * options as buttons and its answer inside a <details>) and each language's footer.
 * Nothing here decides what the quiz says: the questions come from the bank, the
 * explanations from explain_pieces (the pieces the terminal joins into a line), the
 * verdicts and the score line from quiz_word (bank.h); every text goes through
 * html_text (below), which escapes it and isolates Arabic's left-to-right runs. The
 * template's four markers are the only places it writes into: no general HTML writer.
 */
#define _GNU_SOURCE /* realpath */
#include "quiz/page.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "base/text.h"
#include "quiz/embedded.h"

static const char *const LANG_DIRS[LANG_COUNT] = {"ltr", "rtl"};

/* ---- text in HTML ------------------------------------------------------------------- */

/* Every text from the bank or the results goes through html_text, which escapes it for
 * HTML and, in Arabic, isolates each left-to-right run — a number with its unit, a file
 * name, code, a formula — in <bdi dir="ltr">. Inside a right-to-left sentence the Unicode
 * bidirectional algorithm otherwise resolves the brackets, signs and spaces at a run's
 * edges by the Arabic around them, and "O(N²)" or "+21.0%" can come out with a bracket or
 * its sign on the wrong side. English text is only escaped: it holds no right-to-left
 * text to isolate.
 *
 * How a run is found: the text is cut into stretches that hold no Arabic character; in
 * each, the run goes from its first to its last character that carries meaning (a Latin
 * letter or digit, or a symbol such as ² or √: is_run_char), then widens to the
 * punctuation that belongs to it (widen_run): the sign before a number, the percent sign
 * after it, the brackets it opened, and a pair of brackets or quotes around it. What is
 * left at a stretch's edges — spaces, a colon, a bracket the Arabic opened — stays with
 * the sentence. "(النظرية: 0.5 و1)" isolates "0.5" and "1" and leaves both brackets Arabic.
 *
 * Not a general bidi implementation: it knows the Arabic script's blocks and the
 * punctuation the bank uses, and leaves the rest to the browser. */

/* Writes `len` bytes of `s` with &, <, >, " and ' escaped: safe as element text and
 * inside a double-quoted attribute. */
static void html_escaped(FILE *out, const char *s, size_t len)
{
    static const char *const entities[256] = {['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;",
                                              ['\''] = "&#39;"};
    for (size_t i = 0; i < len; i++) {
        const char *entity = entities[(unsigned char)s[i]];
        if (entity) fputs(entity, out);
        else fputc(s[i], out);
    }
}

/* Letters, digits and punctuation of the Arabic script (its main and presentation-form
 * blocks). */
static bool is_arabic(uint32_t c)
{
    return (c >= 0x0600 && c <= 0x06FF) || (c >= 0x0750 && c <= 0x077F) || (c >= 0x08A0 && c <= 0x08FF) ||
           (c >= 0xFB50 && c <= 0xFDFF) || (c >= 0xFE70 && c <= 0xFEFF);
}

/* A character that carries a left-to-right run's meaning: a Latin letter or digit, or a
 * symbol such as ², ᵀ, √, · or ×. Spaces, ASCII punctuation, general punctuation (dashes,
 * quotation marks) and the no-break space are not: they belong to the sentence around. */
static bool is_run_char(uint32_t c)
{
    if (c < 0x80) return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
    return !is_arabic(c) && c != 0xA0 && c != 0xAB && c != 0xBB && !(c >= 0x2000 && c <= 0x206F);
}

/* Widens the left-to-right run s[*start..*end) inside the non-Arabic stretch s[from..to)
 * to the punctuation that belongs to it: a sign before a number, a percent sign after
 * one, the closing brackets of brackets it opened, and a pair of brackets or quotation
 * marks around it. */
static void widen_run(const char *s, size_t from, size_t to, size_t *start, size_t *end)
{
    if (*start > from && (s[*start - 1] == '+' || s[*start - 1] == '-') && s[*start] >= '0' && s[*start] <= '9')
        (*start)--;
    if (*end < to && s[*end] == '%') (*end)++;
    int open = 0;
    for (size_t i = *start; i < *end; i++) open += (s[i] == '(') - (s[i] == ')');
    while (open > 0 && *end < to && s[*end] == ')') {
        (*end)++;
        open--;
    }
    while (*start > from && *end < to &&
           ((s[*start - 1] == '(' && s[*end] == ')') || (s[*start - 1] == '"' && s[*end] == '"'))) {
        (*start)--;
        (*end)++;
    }
}

/* Writes `len` bytes of UTF-8 text `s` as HTML text in `lang`: escaped, and in Arabic each
 * left-to-right run isolated in <bdi dir="ltr">. */
static void html_text(FILE *out, const char *s, size_t len, QuizLang lang)
{
    if (lang != LANG_AR) {
        html_escaped(out, s, len);
        return;
    }
    size_t i = 0;
    while (i < len) {
        size_t n, j = i, start = 0, end = 0; /* end 0: no run found yet */
        while (j < len) { /* the stretch s[i..j) holds no Arabic character */
            uint32_t c = text_next_char(s + j, len - j, &n);
            if (is_arabic(c)) break;
            if (is_run_char(c)) {
                if (!end) start = j;
                end = j + n;
            }
            j += n;
        }
        if (end) {
            widen_run(s, i, j, &start, &end);
            html_escaped(out, s + i, start - i);
            fputs("<bdi dir=\"ltr\">", out);
            html_escaped(out, s + start, end - start);
            fputs("</bdi>", out);
            i = end;
        }
        html_escaped(out, s + i, j - i); /* what is left of the stretch */
        i = j; /* then the Arabic that follows, as it is */
        while (i < len && is_arabic(text_next_char(s + i, len - i, &n))) i += n;
        html_escaped(out, s + j, i - j);
    }
}

static void html_string(FILE *out, const char *s, QuizLang lang) { html_text(out, s, strlen(s), lang); }

/* Writes a quiz_word format in `lang` whose conversions (%s, %c, %d; no %%) are all given as
 * strings in `args`, in order, each wrapped in <tag> when `tag` is not NULL. */
static void html_words(FILE *out, QuizLang lang, const char *format, const char *const *args, const char *tag)
{
    const char *p = format;
    for (const char *conv; (conv = strchr(p, '%')) != NULL; p = conv + 2) {
        html_text(out, p, (size_t)(conv - p), lang);
        if (tag) fprintf(out, "<%s>", tag);
        html_string(out, *args++, lang);
        if (tag) fprintf(out, "</%s>", tag);
    }
    html_string(out, p, lang);
}

/* Writes the JSON text `json` for a <script type="application/json">: <, > and & (found
 * only inside its strings) as \u escapes, so that it cannot end its <script>. */
static void html_json(FILE *out, const char *json)
{
    for (const char *c = json; *c; c++) {
        if (*c == '<' || *c == '>' || *c == '&') fprintf(out, "\\u%04x", *c);
        else fputc(*c, out);
    }
}

/* Writes `open`, then `text` in `lang` through html_string, then `close`. */
static void put_in(FILE *out, const char *open, const char *text, const char *close, QuizLang lang)
{
    fputs(open, out);
    html_string(out, text, lang);
    fputs(close, out);
}

/* ---- the plots ---------------------------------------------------------------------- */

/* Base64 (RFC 4648, with padding) of `n` bytes. */
static void put_base64(FILE *out, const unsigned char *data, size_t n)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        const uint32_t b = (uint32_t)data[i] << 16 | (i + 1 < n ? (uint32_t)data[i + 1] << 8 : 0) |
                           (i + 2 < n ? data[i + 2] : 0);
        fputc(digits[b >> 18 & 63], out);
        fputc(digits[b >> 12 & 63], out);
        fputc(i + 1 < n ? digits[b >> 6 & 63] : '=', out);
        fputc(i + 2 < n ? digits[b & 63] : '=', out);
    }
}

/* A PNG's width and height from its IHDR chunk; false if `data` is not a PNG. */
static bool png_size(const unsigned char *data, size_t n, uint32_t *width, uint32_t *height)
{
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (n < 24 || memcmp(data, signature, 8) != 0 || memcmp(data + 12, "IHDR", 4) != 0) return false;
    *width = (uint32_t)data[16] << 24 | (uint32_t)data[17] << 16 | (uint32_t)data[18] << 8 | data[19];
    *height = (uint32_t)data[20] << 24 | (uint32_t)data[21] << 16 | (uint32_t)data[22] << 8 | data[23];
    return true;
}

/* Writes the address of the file at `path` as a link from the page at `page` sees it,
 * percent-encoded: relative when the file is under the page's directory (results/plots/
 * beside results/quiz.html), else a file: URL of its absolute path. */
static void put_file_link(FILE *out, const char *page, const char *path)
{
    char dir[4096], real_dir[4096], real_path[4096];
    snprintf(dir, sizeof dir, "%s", page);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    if (!realpath(slash ? dir : ".", real_dir) || !realpath(path, real_path)) {
        fputs(path, out);
        return;
    }
    const size_t n = strlen(real_dir);
    const bool under = !strncmp(real_path, real_dir, n) && real_path[n] == '/';
    if (!under) fputs("file://", out);
    for (const unsigned char *c = (const unsigned char *)real_path + (under ? n + 1 : 0); *c; c++) {
        if (strchr("/._-~", *c) || (*c < 128 && isalnum(*c))) fputc(*c, out);
        else fprintf(out, "%%%02X", *c);
    }
}

/* Writes question `q`'s plot as a <figure> holding the PNG as a data: URI, linked to the
 * file itself for its full size, or says why it cannot. Returns REMAT_ECORRUPT (after
 * writing the page's note) when the file is there but cannot be read or is not a PNG. */
static RematStatus put_plot(FILE *out, const Question *q, QuizLang lang, const PageSources *src, const char *page)
{
    char path[1024], line[2048] = "";
    snprintf(path, sizeof path, "%s/%s", src->plots_dir, q->plot);
    size_t n = 0;
    const bool present = access(path, F_OK) == 0;
    char *file = NULL;
    if (present && file_read_all("quiz --html", path, QUIZ_MAX_FILE, &file, &n) != REMAT_OK) file = NULL;
    const unsigned char *png = (const unsigned char *)file;
    uint32_t width, height;
    RematStatus status = REMAT_OK;
    fputs("<figure class=\"plot\">", out);
    if (png && png_size(png, n, &width, &height)) {
        fputs("<a class=\"full-size\" href=\"", out);
        put_file_link(out, page, path);
        fprintf(out, "\"><img width=\"%u\" height=\"%u\" alt=\"", width, height);
        html_escaped(out, q->plot_alt.lang[lang], strlen(q->plot_alt.lang[lang]));
        fputs("\" src=\"data:image/png;base64,", out);
        put_base64(out, png, n);
        fputs("\"></a>\n<figcaption>", out);
        html_words(out, lang, quiz_word(lang, "plot_caption"), (const char *[]){q->plot}, "code");
        fputs("</figcaption>", out);
    } else if (present) {
        status = remat_fail(REMAT_ECORRUPT, "%s is not a readable PNG file", path);
        snprintf(line, sizeof line, quiz_word(lang, "plot_broken"), path);
    } else {
        snprintf(line, sizeof line, quiz_word(lang, "plot_missing"), q->plot, results_dir(src->results),
                 src->plots_dir);
    }
    if (line[0]) put_in(out, "<p class=\"missing\">", line, "</p>", lang);
    fputs("</figure>\n", out);
    free(file);
    return status;
}

/* ---- one question ------------------------------------------------------------------- */

/* The page's sink for explain_pieces: the bank's words as text, each figure marked, the
 * explanation one paragraph and each note one after it. */
typedef struct HtmlSink {
    FILE *out;
    QuizLang lang;
    bool open; /* the explanation's paragraph is open */
} HtmlSink;

static void put_piece(void *ctx, PieceKind kind, const char *text, size_t len)
{
    HtmlSink *sink = ctx;
    if (kind == PIECE_NOTE) {
        if (sink->open) fputs("</p>\n", sink->out);
        sink->open = false;
        fputs("<p class=\"note\">", sink->out);
        html_text(sink->out, text, len, sink->lang);
        fputs("</p>\n", sink->out);
        return;
    }
    if (!sink->open) fputs("<p class=\"explanation\">", sink->out);
    sink->open = true;
    if (kind == PIECE_FIGURE) fputs("<span class=\"fig\">", sink->out);
    html_text(sink->out, text, len, sink->lang);
    if (kind == PIECE_FIGURE) fputs("</span>", sink->out);
}

static RematStatus put_question(FILE *out, int q, QuizLang lang, const PageSources *src, const char *page)
{
    const Question *question = &src->bank->questions[q];
    const char *l = QUIZ_LANG_NAMES.names[lang];
    char count[64];
    snprintf(count, sizeof count, quiz_word(lang, "question_of"), q + 1, QUIZ_QUESTIONS);

    fprintf(out, "<article class=\"question\" id=\"%s-q%d\" data-correct=\"%d\" aria-labelledby=\"%s-q%d-stem\">\n",
            l, q + 1, question->correct + 1, l, q + 1);
    put_in(out, "<p class=\"count\">", count, "</p>\n", lang);
    fprintf(out, "<h2 class=\"stem\" id=\"%s-q%d-stem\">", l, q + 1);
    html_string(out, question->question.lang[lang], lang);
    fprintf(out, "</h2>\n<ol class=\"options\" aria-labelledby=\"%s-q%d-stem\">\n", l, q + 1);
    int shown_correct = 0;
    for (int i = 0; i < QUIZ_OPTIONS; i++) {
        const int option = src->orders[q][i];
        if (option == question->correct) shown_correct = i;
        fprintf(out, "<li><button type=\"button\" class=\"option\" data-option=\"%d\" disabled>"
                     "<span class=\"key\" aria-hidden=\"true\">%d</span> <span class=\"text\">", option + 1, i + 1);
        html_string(out, question->options[option].lang[lang], lang);
        fputs("</span><span class=\"mark\"></span></button></li>\n", out);
    }
    fputs("</ol>\n<p class=\"verdict\" role=\"status\"></p>\n", out);

    put_in(out, "<details class=\"answer\">\n<summary>", quiz_word(lang, "answer_summary"),
           "</summary>\n<p class=\"correct\">", lang);
    const char shown[2] = {(char)('1' + shown_correct), '\0'};
    html_words(out, lang, quiz_word(lang, "correct_was"),
               (const char *[]){shown, question->options[question->correct].lang[lang]}, NULL);
    fputs("</p>\n", out);
    HtmlSink sink = {out, lang, false};
    RematStatus status = explain_pieces(question, lang, src->results, put_piece, &sink);
    if (sink.open) fputs("</p>\n", out);
    fputs("<p class=\"proof\">", out);
    html_words(out, lang, quiz_word(lang, "proof"), (const char *[]){question->test_file, question->test_name}, "code");
    fputs("</p>\n<p class=\"bench\">", out);
    char program[256];
    snprintf(program, sizeof program, "build/%s", question->bench);
    html_words(out, lang, quiz_word(lang, "measure"), (const char *[]){program}, "code");
    fputs("</p>\n", out);
    char sources[2048];
    explain_sources(sources, sizeof sources, question, lang, src->results);
    if (sources[0]) put_in(out, "<p class=\"sources\">", sources, "</p>\n", lang);
    RematStatus plot = put_plot(out, question, lang, src, page);
    fputs("</details>\n</article>\n", out);
    return status != REMAT_OK ? status : plot;
}

/* ---- the footer: when and where the figures were measured --------------------------- */

/* The benches the bank quotes, each once, in the bank's order. */
static int quoted_benches(const Bank *bank, const char **benches, int max)
{
    int n = 0;
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        for (int m = 0; m < bank->questions[q].n_measurements; m++) {
            const char *bench = bank->questions[q].measurements[m].bench;
            bool seen = false;
            for (int i = 0; i < n; i++) seen |= !strcmp(benches[i], bench);
            if (!seen && n < max) benches[n++] = bench;
        }
    }
    return n;
}

/* The string `key` of `obj`, or NULL. */
static const char *string_at(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* What results document `doc` records of the footer's `field` (its label's key in
 * words.json: "mode", "commit", "cpu", "threads", "load" or "system"), as text in `lang`
 * into buf; "not recorded" when it does not record it (results of an older bench). */
static void field_text(const cJSON *doc, const char *field, QuizLang lang, char *buf, size_t size)
{
    const cJSON *machine = cJSON_GetObjectItemCaseSensitive(doc, "machine");
    const cJSON *dirty = cJSON_GetObjectItemCaseSensitive(doc, "git_dirty");
    const cJSON *cores = cJSON_GetObjectItemCaseSensitive(machine, "cores");
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(doc, "threads");
    const char *mode = string_at(doc, "mode"), *commit = string_at(doc, "git_commit");
    const char *core = string_at(machine, "blas_core"), *os = string_at(machine, "os");
    const char *host = string_at(machine, "hostname"), *comma = quiz_word(lang, "comma");
    char n[4][32];
    RecordedMachine m;
    snprintf(buf, size, "%s", quiz_word(lang, "unrecorded"));
    if (!strcmp(field, "mode") && mode) {
        snprintf(buf, size, "%s", !strcmp(mode, "quick") || !strcmp(mode, "full") ? quiz_word(lang, mode) : mode);
    } else if (!strcmp(field, "commit") && commit) {
        snprintf(buf, size, "%.12s%s%s", commit, cJSON_IsBool(dirty) ? comma : "",
                 !cJSON_IsBool(dirty) ? "" : quiz_word(lang, cJSON_IsTrue(dirty) ? "dirty" : "clean"));
    } else if (!strcmp(field, "cpu") && cJSON_IsNumber(cores) && core) {
        snprintf(n[0], sizeof n[0], "%d", cores->valueint);
        snprintf(buf, size, quiz_word(lang, "cpu_line"), n[0], core);
    } else if (!strcmp(field, "threads") && cJSON_IsNumber(threads)) {
        snprintf(buf, size, "%d", threads->valueint);
    } else if (!strcmp(field, "load") && results_machine(doc, &m)) { /* older benches do not record it */
        snprintf(n[0], sizeof n[0], "%.1f%%", 100.0 * m.others);
        snprintf(n[1], sizeof n[1], "%.1f", m.load_before);
        snprintf(n[2], sizeof n[2], "%.1f", m.load_after);
        snprintf(n[3], sizeof n[3], "%.1f%%", 100.0 * m.steal);
        snprintf(buf, size, quiz_word(lang, "load_line"), n[0], n[1], n[2], n[3]);
    } else if (!strcmp(field, "system") && os && host) {
        snprintf(buf, size, "%s%s%s", os, comma, host);
    }
}

/* One <dt>/<dd> pair: the field's value if every bench that has results agrees on it,
 * otherwise each value followed by the benches that recorded it, and "not recorded" for
 * those that did not. */
static void put_field(FILE *out, QuizLang lang, const char *field, ResultsDir *results, const char **benches,
                      int n_benches)
{
    enum { MAX_VALUES = 16 };
    char values[MAX_VALUES][512];
    const char *owners[MAX_VALUES][16];
    int n_values = 0, n_owners[MAX_VALUES] = {0};
    for (int b = 0; b < n_benches; b++) {
        const cJSON *doc = explain_results(results, benches[b], NULL, 0);
        if (!doc) continue;
        char value[512];
        field_text(doc, field, lang, value, sizeof value);
        int v = 0;
        while (v < n_values && strcmp(values[v], value)) v++;
        if (v == MAX_VALUES) continue;
        if (v == n_values) snprintf(values[n_values++], sizeof values[0], "%s", value);
        if (n_owners[v] < 16) owners[v][n_owners[v]++] = benches[b];
    }
    put_in(out, "<dt>", quiz_word(lang, field), "</dt><dd>", lang);
    for (int v = 0; v < n_values; v++) {
        if (v) fputs(quiz_word(lang, "semicolon"), out);
        html_string(out, values[v], lang);
        for (int o = 0; n_values > 1 && o < n_owners[v]; o++) {
            fputs(o ? quiz_word(lang, "comma") : " (", out);
            put_in(out, "<code>", owners[v][o], o + 1 == n_owners[v] ? "</code>)" : "</code>", lang);
        }
    }
    fputs("</dd>\n", out);
}

static void put_footer(FILE *out, QuizLang lang, const PageSources *src)
{
    const char *benches[16];
    const int n_benches = quoted_benches(src->bank, benches, 16);
    const char *code = QUIZ_LANG_NAMES.names[lang];
    fprintf(out, "<footer class=\"measured\" data-view=\"%s\" lang=\"%s\" dir=\"%s\">\n", code, code, LANG_DIRS[lang]);
    put_in(out, "<h2>", quiz_word(lang, "footer_title"), "</h2>\n", lang);
    /* The dates of the first and the last bench run, ISO 8601 in UTC: they sort as text. */
    char first[64] = "", last[64] = "";
    int with_results = 0;
    for (int b = 0; b < n_benches; b++) {
        const cJSON *doc = explain_results(src->results, benches[b], NULL, 0);
        const char *date = string_at(doc, "date");
        with_results += doc != NULL;
        if (!date) continue;
        if (!first[0] || strcmp(date, first) < 0) snprintf(first, sizeof first, "%s", date);
        if (!last[0] || strcmp(date, last) > 0) snprintf(last, sizeof last, "%s", date);
    }
    if (!with_results) {
        char line[1024];
        snprintf(line, sizeof line, quiz_word(lang, "no_results"), results_dir(src->results));
        put_in(out, "<p>", line, "</p>\n</footer>\n", lang);
        return;
    }
    put_in(out, "<dl>\n<dt>", quiz_word(lang, "when"), "</dt><dd>", lang);
    if (!first[0]) html_string(out, quiz_word(lang, "unrecorded"), lang);
    else html_words(out, lang, strcmp(first, last) ? quiz_word(lang, "range") : "%s", (const char *[]){first, last},
                    "time");
    fputs("</dd>\n", out);
    static const char *const fields[] = {"mode", "commit", "cpu", "threads", "load", "system"};
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
        put_field(out, lang, fields[f], src->results, benches, n_benches);
    put_in(out, "<dt>", quiz_word(lang, "benches"), "</dt><dd>", lang);
    for (int b = 0; b < n_benches; b++) {
        if (b) fputs(quiz_word(lang, "comma"), out);
        put_in(out, "<code>", benches[b], "</code>", lang);
    }
    fputs("</dd>\n</dl>\n</footer>\n", out);
}

/* ---- the page ------------------------------------------------------------------------ */

static RematStatus put_view(FILE *out, QuizLang lang, const PageSources *src, const char *page)
{
    const Bank *bank = src->bank;
    const char *code = QUIZ_LANG_NAMES.names[lang];
    fprintf(out, "<div class=\"view\" id=\"view-%s\" data-view=\"%s\" lang=\"%s\" dir=\"%s\">\n<header>\n", code,
            code, code, LANG_DIRS[lang]);
    put_in(out, "<p class=\"subtitle\">", bank->subtitle.lang[lang], "</p>\n", lang);
    put_in(out, "<h1>", bank->title.lang[lang], "</h1>\n", lang);
    put_in(out, "<p class=\"description\">", bank->description.lang[lang], "</p>\n", lang);
    put_in(out, "<noscript><p class=\"note\">", quiz_word(lang, "noscript"), "</p></noscript>\n</header>\n", lang);
    RematStatus status = REMAT_OK;
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        RematStatus s = put_question(out, q, lang, src, page);
        if (status == REMAT_OK) status = s;
    }
    fputs("</div>\n", out);
    return status;
}

/* The whole page, to be renamed to `page`, into `out`: the template with each <!--@name-->
 * in it replaced by that part: the title, both views, both footers, and the words the
 * script says (quiz/words.json). Returns REMAT_OK, or REMAT_ECORRUPT (its message kept)
 * when a results file or a plot is malformed, which does not stop the page. */
static RematStatus put_page(FILE *out, const PageSources *src, const char *page)
{
    RematStatus status = REMAT_OK;
    const char *t = QUIZ_PAGE_HTML;
    for (const char *at; (at = strstr(t, "<!--@")) != NULL; t = strstr(at, "-->") + 3) {
        fwrite(t, 1, (size_t)(at - t), out);
        if (!strncmp(at, "<!--@title-->", 13)) { /* both languages, escaped only: a <title> holds no markup */
            html_words(out, LANG_EN, "%s · %s", src->bank->title.lang, NULL);
        } else if (!strncmp(at, "<!--@views-->", 13)) {
            for (int l = 0; l < LANG_COUNT; l++) {
                const RematStatus s = put_view(out, (QuizLang)l, src, page);
                if (status == REMAT_OK) status = s;
            }
        } else if (!strncmp(at, "<!--@footers-->", 15)) {
            for (int l = 0; l < LANG_COUNT; l++) put_footer(out, (QuizLang)l, src);
        } else { /* <!--@words--> */
            html_json(out, QUIZ_WORDS_JSON);
        }
    }
    fputs(t, out);
    return status;
}

/* The input of the page that `path` names, written into buf: the bank, a results file a
 * figure is read from, or a plot it embeds; NULL when it names none of them. */
static const char *input_at(const char *path, const PageSources *src, char *buf, size_t size)
{
    snprintf(buf, size, "%s", src->bank_file);
    if (file_same_path(path, buf)) return buf;
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        const Question *question = &src->bank->questions[q];
        snprintf(buf, size, "%s/%s", src->plots_dir, question->plot);
        if (file_same_path(path, buf)) return buf;
        for (int m = 0; m < question->n_measurements; m++) {
            snprintf(buf, size, "%s/%s.json", results_dir(src->results), question->measurements[m].bench);
            if (file_same_path(path, buf)) return buf;
        }
    }
    return NULL;
}

RematStatus page_write(const char *path, const PageSources *src)
{
    /* The page is renamed over `path`, which would replace a device such as /dev/full (as
     * root) or a FIFO, or one of the files it is made from: refuse those, and a missing
     * directory, before building anything. */
    if (file_check_writable(path) != REMAT_OK) return remat_last_status();
    char input[4096];
    if (input_at(path, src, input, sizeof input))
        return remat_fail(REMAT_EINVAL, "cannot write %s: it is %s, a file the page is made from", path, input);
    FileReplacement page;
    int err = file_replace_start(&page, path, true);
    if (err)
        return remat_fail(REMAT_EIO, "cannot write %s: cannot create a temporary file beside it: %s", path,
                          strerror(err));
    const RematStatus content = put_page(page.out, src, path);
    const char *step;
    if ((err = file_replace_finish(&page, false, &step)) != 0)
        return remat_fail(REMAT_EIO, "cannot write %s: %s failed: %s", path, step, strerror(err));
    return content; /* REMAT_ECORRUPT: the malformed file it met */
}
