/*
 * bank.c — reading and checking quiz/questions.json (see bank.h). Every check names the
 * file and the path of the field it found wrong. And the program's own words, read from
 * the embedded words.json.
 */
#include "quiz/bank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "quiz/embedded.h"
#include "tensor/rng.h"

static const char *const LANG_KEYS[LANG_COUNT] = {"en", "ar"};
const NameTable QUIZ_LANG_NAMES = {LANG_KEYS, LANG_COUNT};
/* The formats a measurement may name, indexed by FigureFormat. */
static const char *const FORMAT_NAMES[] = {"bytes", "resident", "percent", "excess", "change", "number", "int", "text"};
static const NameTable FIGURE_FORMAT_NAMES = {FORMAT_NAMES, FORMAT_TEXT + 1};

/* A string field, or an error naming `where`.`key`. */
static const char *need_string(const cJSON *obj, const char *key, const char *path, const char *where)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsString(item) && item->valuestring[0]) return item->valuestring;
    remat_fail(REMAT_ECORRUPT, "%s: %s.%s: %s", path, where, key, item ? "must be a non-empty string" : "missing");
    return NULL;
}

static RematStatus load_measurements(const cJSON *q, const char *path, const char *where, Question *out)
{
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(q, "measurements");
    if (!cJSON_IsObject(all))
        return remat_fail(REMAT_ECORRUPT, "%s: %s.measurements: %s", path, where,
                          all ? "must be an object" : "missing");
    out->n_measurements = cJSON_GetArraySize(all);
    if (out->n_measurements > QUIZ_MAX_MEASUREMENTS)
        return remat_fail(REMAT_ECORRUPT, "%s: %s.measurements: more than %d", path, where, QUIZ_MAX_MEASUREMENTS);
    int i = 0;
    for (const cJSON *m = all->child; m; m = m->next, i++) {
        char inner[200];
        snprintf(inner, sizeof inner, "%s.measurements.%s", where, m->string);
        Measurement *mm = &out->measurements[i];
        mm->name = m->string;
        const char *format_name;
        if (!(mm->bench = need_string(m, "bench", path, inner)) ||
            !(mm->table = need_string(m, "table", path, inner)) ||
            !(mm->field = need_string(m, "field", path, inner)) ||
            !(format_name = need_string(m, "format", path, inner)))
            return REMAT_ECORRUPT;
        int format;
        if (name_parse(&FIGURE_FORMAT_NAMES, format_name, &format) != REMAT_OK) {
            char why[256];
            snprintf(why, sizeof why, "%s", remat_last_error()); /* remat_fail writes where it reads */
            return remat_fail(REMAT_ECORRUPT, "%s: %s.format: %s", path, inner, why);
        }
        mm->format = (FigureFormat)format;
        mm->where = cJSON_GetObjectItemCaseSensitive(m, "where");
        if (mm->where && !cJSON_IsObject(mm->where))
            return remat_fail(REMAT_ECORRUPT, "%s: %s.where: must be an object", path, inner);
        const cJSON *time = cJSON_GetObjectItemCaseSensitive(m, "time");
        if (time && !cJSON_IsBool(time))
            return remat_fail(REMAT_ECORRUPT, "%s: %s.time: must be true or false", path, inner);
        mm->time = cJSON_IsTrue(time);
        const cJSON *pick = cJSON_GetObjectItemCaseSensitive(m, "pick");
        if (pick && !(cJSON_IsString(pick) && !strcmp(pick->valuestring, "largest")))
            return remat_fail(REMAT_ECORRUPT, "%s: %s.pick: must be \"largest\"", path, inner);
        mm->largest = pick != NULL;
    }
    return REMAT_OK;
}

static const Measurement *find_measurement(const Question *q, const char *name, size_t len)
{
    for (int i = 0; i < q->n_measurements; i++)
        if (strlen(q->measurements[i].name) == len && !strncmp(q->measurements[i].name, name, len))
            return &q->measurements[i];
    return NULL;
}

const Measurement *question_placeholder(const Question *q, const char *open, const char **close)
{
    *close = strchr(open, '}');
    return *close ? find_measurement(q, open + 1, (size_t)(*close - open - 1)) : NULL;
}

/* Checks that every {placeholder} of `text` names a measurement of `q`, and stores in
 * `names` (a buffer of `size` bytes) the placeholders in order, each followed by ' ', so
 * that the two languages of a part can be compared. */
static RematStatus check_placeholders(const Question *q, const char *text, const char *path, const char *where,
                                      char *names, size_t size)
{
    size_t used = 0;
    names[0] = '\0';
    for (const char *open = strchr(text, '{'), *close; open; open = strchr(open + 1, '{')) {
        const bool found = question_placeholder(q, open, &close) != NULL;
        const int len = close ? (int)(close - open - 1) : 10;
        if (!found)
            return remat_fail(REMAT_ECORRUPT, "%s: %s: the placeholder {%.*s} names no measurement of the question",
                              path, where, len, open + 1);
        used += (size_t)snprintf(names + used, used < size ? size - used : 0, "%.*s ", len, open + 1);
    }
    return used < size ? REMAT_OK : remat_fail(REMAT_ECORRUPT, "%s: %s: too many placeholders", path, where);
}

/* A {"en": ..., "ar": ...} text: `key` of `obj`, or `obj` itself when `key` is NULL. With
 * `q` (a part of q's explanation), its placeholders are checked. */
static RematStatus need_text(const cJSON *obj, const char *key, const Question *q, const char *path,
                             const char *where, QuizText *out)
{
    const cJSON *text = key ? cJSON_GetObjectItemCaseSensitive(obj, key) : obj;
    char inner[160], names[LANG_COUNT][512] = {"", ""};
    snprintf(inner, sizeof inner, key ? "%s.%s" : "%s", where, key);
    if (!cJSON_IsObject(text))
        return remat_fail(REMAT_ECORRUPT, "%s: %s: %s", path, inner,
                          text ? "must be an object of en and ar" : "missing");
    for (int l = 0; l < LANG_COUNT; l++) {
        char at[176];
        snprintf(at, sizeof at, "%s.%s", inner, LANG_KEYS[l]);
        if (!(out->lang[l] = need_string(text, LANG_KEYS[l], path, inner)) ||
            (q && check_placeholders(q, out->lang[l], path, at, names[l], sizeof names[l]) != REMAT_OK))
            return REMAT_ECORRUPT;
    }
    if (strcmp(names[LANG_EN], names[LANG_AR]))
        return remat_fail(REMAT_ECORRUPT,
                          "%s: %s: en quotes {%s} but ar quotes {%s}: the two languages must say the same",
                          path, inner, names[LANG_EN], names[LANG_AR]);
    return REMAT_OK;
}

bool question_quotes_time(const Question *q, const char *text)
{
    for (const char *open = strchr(text, '{'), *close; open; open = strchr(close, '{'))
        if (question_placeholder(q, open, &close)->time) return true;
    return false;
}

/* The explanation's parts: an array of texts, each with an optional `otherwise`. */
static RematStatus load_explanation(const cJSON *q, const char *path, const char *where, Question *out)
{
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(q, "explanation");
    if (!cJSON_IsArray(all) || cJSON_GetArraySize(all) == 0)
        return remat_fail(REMAT_ECORRUPT, "%s: %s.explanation: %s", path, where,
                          all ? "must be a non-empty array of parts" : "missing");
    out->n_parts = cJSON_GetArraySize(all);
    if (!(out->parts = calloc((size_t)out->n_parts, sizeof *out->parts)))
        return remat_fail(REMAT_ENOMEM, "%s: no memory for its explanations", path);
    int i = 0;
    for (const cJSON *part = all->child; part; part = part->next, i++) {
        char inner[64];
        snprintf(inner, sizeof inner, "%s.explanation[%d]", where, i);
        ExplanationPart *p = &out->parts[i];
        if (need_text(part, NULL, out, path, inner, &p->text) != REMAT_OK ||
            (cJSON_GetObjectItemCaseSensitive(part, "otherwise") &&
             need_text(part, "otherwise", out, path, inner, &p->otherwise) != REMAT_OK))
            return REMAT_ECORRUPT;
        /* A time may be too noisy to quote: what the part says must then be said without. */
        if (question_quotes_time(out, p->text.lang[LANG_EN]) &&
            (!p->otherwise.lang[LANG_EN] || question_quotes_time(out, p->otherwise.lang[LANG_EN])))
            return remat_fail(REMAT_ECORRUPT,
                              "%s: %s: quotes a time, so it needs an `otherwise` that quotes none", path, inner);
    }
    return REMAT_OK;
}

/* The optional `order` of the question's figures, two times or two exact figures each:
 * [{"lower": name, "higher": name, "why": text}]. */
static RematStatus load_orders(const cJSON *q, const char *path, const char *where, Question *out)
{
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(q, "order");
    if (!all) return REMAT_OK;
    if (!cJSON_IsArray(all)) return remat_fail(REMAT_ECORRUPT, "%s: %s.order: must be an array", path, where);
    out->n_orders = cJSON_GetArraySize(all);
    if (!(out->orders = calloc((size_t)out->n_orders + 1, sizeof *out->orders)))
        return remat_fail(REMAT_ENOMEM, "%s: no memory for its orders", path);
    int i = 0;
    for (const cJSON *o = all->child; o; o = o->next, i++) {
        char inner[64];
        snprintf(inner, sizeof inner, "%s.order[%d]", where, i);
        const char *ends[2] = {need_string(o, "lower", path, inner), NULL};
        if (!ends[0] || !(ends[1] = need_string(o, "higher", path, inner))) return REMAT_ECORRUPT;
        const Measurement *m[2];
        for (int e = 0; e < 2; e++)
            if (!(m[e] = find_measurement(out, ends[e], strlen(ends[e]))) || m[e]->format == FORMAT_TEXT)
                return remat_fail(REMAT_ECORRUPT, "%s: %s: %s is not a numeric measurement of the question", path,
                                  inner, ends[e]);
        if (m[0]->time != m[1]->time)
            return remat_fail(REMAT_ECORRUPT, "%s: %s: %s and %s are not both times or both exact", path, inner,
                              ends[0], ends[1]);
        out->orders[i].lower = m[0];
        out->orders[i].higher = m[1];
        if (need_text(o, "why", out, path, inner, &out->orders[i].why) != REMAT_OK) return REMAT_ECORRUPT;
    }
    return REMAT_OK;
}

static RematStatus load_question(const cJSON *q, int index, const char *path, Question *out)
{
    char where[32];
    snprintf(where, sizeof where, "questions[%d]", index);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(q, "id");
    if (!cJSON_IsNumber(id) || id->valuedouble != index + 1)
        return remat_fail(REMAT_ECORRUPT, "%s: %s.id: must be %d", path, where, index + 1);
    if (need_text(q, "question", NULL, path, where, &out->question) != REMAT_OK) return REMAT_ECORRUPT;
    const cJSON *options = cJSON_GetObjectItemCaseSensitive(q, "options");
    if (!cJSON_IsArray(options) || cJSON_GetArraySize(options) != QUIZ_OPTIONS)
        return remat_fail(REMAT_ECORRUPT, "%s: %s.options: need %d options, found %d", path, where, QUIZ_OPTIONS,
                          cJSON_IsArray(options) ? cJSON_GetArraySize(options) : 0);
    char inner[48]; /* the path of a field inside the question, for its errors */
    for (int o = 0; o < QUIZ_OPTIONS; o++) {
        snprintf(inner, sizeof inner, "%s.options[%d]", where, o);
        if (need_text(cJSON_GetArrayItem(options, o), NULL, NULL, path, inner, &out->options[o]) != REMAT_OK)
            return REMAT_ECORRUPT;
    }
    const cJSON *correct = cJSON_GetObjectItemCaseSensitive(q, "correct");
    if (!cJSON_IsNumber(correct) || correct->valuedouble != correct->valueint || correct->valueint < 0 ||
        correct->valueint >= QUIZ_OPTIONS)
        return remat_fail(REMAT_ECORRUPT, "%s: %s.correct: must be an option index, a whole number 0..3", path, where);
    out->correct = correct->valueint;
    const cJSON *test = cJSON_GetObjectItemCaseSensitive(q, "test");
    snprintf(inner, sizeof inner, "%s.test", where);
    if (!(out->test_file = need_string(test, "file", path, inner)) ||
        !(out->test_name = need_string(test, "name", path, inner)) ||
        !(out->bench = need_string(q, "bench", path, where)))
        return REMAT_ECORRUPT;
    const cJSON *plot = cJSON_GetObjectItemCaseSensitive(q, "plot");
    snprintf(inner, sizeof inner, "%s.plot", where);
    if (!(out->plot = need_string(plot, "file", path, inner)) ||
        need_text(plot, "alt", NULL, path, inner, &out->plot_alt) != REMAT_OK ||
        (cJSON_GetObjectItemCaseSensitive(q, "quick_times") &&
         need_text(q, "quick_times", NULL, path, where, &out->quick_times) != REMAT_OK))
        return REMAT_ECORRUPT;
    RematStatus status = load_measurements(q, path, where, out);
    if (status == REMAT_OK) status = load_explanation(q, path, where, out);
    return status == REMAT_OK ? load_orders(q, path, where, out) : status;
}

void bank_option_orders(uint64_t seed, bool shuffle, int orders[][QUIZ_OPTIONS])
{
    Pcg32 rng;
    pcg32_seed(&rng, seed, 0x9a1);
    for (int q = 0; q < QUIZ_QUESTIONS; q++) {
        for (int i = 0; i < QUIZ_OPTIONS; i++) orders[q][i] = i;
        for (int i = QUIZ_OPTIONS - 1; shuffle && i > 0; i--) {
            int j = (int)pcg32_bounded(&rng, (uint32_t)i + 1), t = orders[q][i];
            orders[q][i] = orders[q][j];
            orders[q][j] = t;
        }
    }
}

Bank *bank_load(const char *path)
{
    char *text;
    size_t size;
    if (file_read_all("cannot load the question bank", path, QUIZ_MAX_FILE, &text, &size) != REMAT_OK) return NULL;
    Bank *bank = calloc(1, sizeof *bank);
    RematStatus status = bank ? REMAT_OK : remat_fail(REMAT_ENOMEM, "no memory for the question bank");
    if (bank && !(bank->doc = cJSON_Parse(text))) {
        const char *at = cJSON_GetErrorPtr(); /* points into `text`: report before freeing it */
        status = remat_fail(REMAT_ECORRUPT, "%s: not valid JSON near \"%.24s\"", path, at ? at : "");
    }
    free(text);
    if (status == REMAT_OK && (need_text(bank->doc, "title", NULL, path, "bank", &bank->title) != REMAT_OK ||
                               need_text(bank->doc, "subtitle", NULL, path, "bank", &bank->subtitle) != REMAT_OK ||
                               need_text(bank->doc, "description", NULL, path, "bank", &bank->description) != REMAT_OK))
        status = REMAT_ECORRUPT;
    const cJSON *questions = status == REMAT_OK ? cJSON_GetObjectItemCaseSensitive(bank->doc, "questions") : NULL;
    if (status == REMAT_OK && (!cJSON_IsArray(questions) || cJSON_GetArraySize(questions) != QUIZ_QUESTIONS))
        status = remat_fail(REMAT_ECORRUPT, "%s: questions: need %d questions, found %d", path, QUIZ_QUESTIONS,
                            cJSON_IsArray(questions) ? cJSON_GetArraySize(questions) : 0);
    for (int i = 0; status == REMAT_OK && i < QUIZ_QUESTIONS; i++)
        status = load_question(cJSON_GetArrayItem(questions, i), i, path, &bank->questions[i]);
    if (status != REMAT_OK) {
        bank_free(bank);
        return NULL;
    }
    return bank;
}

void bank_free(Bank *bank)
{
    if (!bank) return;
    for (int i = 0; i < QUIZ_QUESTIONS; i++) {
        free(bank->questions[i].parts);
        free(bank->questions[i].orders);
    }
    cJSON_Delete(bank->doc);
    free(bank);
}

const char *quiz_word(QuizLang lang, const char *key)
{
    static cJSON *words; /* parsed once, kept for the life of the program */
    if (!words) words = cJSON_Parse(QUIZ_WORDS_JSON);
    const cJSON *texts = cJSON_GetObjectItemCaseSensitive(words, key);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(texts, LANG_KEYS[lang]);
    if (cJSON_IsString(text)) return text->valuestring;
    fprintf(stderr, "quiz: quiz/words.json has no %s text \"%s\"\n", LANG_KEYS[lang], key);
    abort();
}
