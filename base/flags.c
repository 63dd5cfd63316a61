/*
 * flags.c — parsing a command line by tables of flags, checking when each applies, and
 * printing their help (see flags.h).
 */
#include "base/flags.h"

#include <string.h>

#include "base/platform.h"

/* Reads `v` into row f's field of `opts`; REMAT_EINVAL saying why not (without the flag). */
static RematStatus set_value(const Flag *f, const char *v, void *opts)
{
    void *field = (char *)opts + f->offset;
    switch (f->type) {
    case FLAG_SWITCH: *(bool *)field = true; return REMAT_OK;
    case FLAG_SWITCH_OFF: *(bool *)field = false; return REMAT_OK;
    case FLAG_CONST: *(int *)field = (int)f->lo; return REMAT_OK;
    case FLAG_INT: {
        const long hi = f->hi > 0 ? (long)f->hi : platform_info().max_threads; /* hi 0: a count of threads */
        if (parse_int(v, (long)f->lo, hi, field)) return REMAT_OK;
        return remat_fail(REMAT_EINVAL, "'%s' is not a whole number in %ld..%ld", v, (long)f->lo, hi);
    }
    case FLAG_FLOAT:
        if (parse_float(v, f->lo, f->hi, !f->hi_open, field)) return REMAT_OK;
        return remat_fail(REMAT_EINVAL, "'%s' is not a number in [%g, %g%c", v, f->lo, f->hi, f->hi_open ? ')' : ']');
    case FLAG_U64:
        if (parse_u64(v, 0, UINT64_MAX, field)) return REMAT_OK;
        return remat_fail(REMAT_EINVAL, "'%s' is not a whole number in 0..%llu", v, (unsigned long long)UINT64_MAX);
    case FLAG_TEXT: *(const char **)field = v; return REMAT_OK;
    case FLAG_SIZE:
        if (f->lo > 0) *(int *)((char *)opts + f->count) = (int)f->lo;
        return parse_memory_size(v, field);
    case FLAG_NAME: return name_parse(f->names, v, field);
    case FLAG_CUSTOM: return f->set(opts, v);
    }
    return remat_fail(REMAT_EINVAL, "a flag of no known type");
}

int flags_parse(const FlagSet *sets, int n_sets, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        if (!strcmp(name, "--help") || !strcmp(name, "-h")) return FLAGS_HELP;
        const FlagSet *set = NULL;
        const Flag *f = NULL; /* the row called `name`, in `set` */
        for (int s = 0; s < n_sets && !f; s++)
            for (int k = 0; k < sets[s].n && !f; k++)
                if (!strcmp(name, sets[s].flags[k].name)) {
                    set = &sets[s];
                    f = &set->flags[k];
                }
        const unsigned bit = f ? 1u << (f - set->flags) : 0;
        const char *v = f && f->value && i + 1 < argc ? argv[++i] : NULL; /* its value, if it takes one */
        RematStatus status = REMAT_OK;
        if (!f) status = remat_fail(REMAT_EINVAL, "unknown flag %s", name);
        else if (!(set->accepted & bit))
            status = remat_fail(REMAT_EINVAL, "%s does not apply here (the flags that do are below)", name);
        else if (*set->given & bit) /* the first value would be lost */
            status = remat_fail(REMAT_EINVAL, "%s is given twice", name);
        else if (f->value && (!v || !v[0]))
            status = remat_fail(REMAT_EINVAL, "%s needs a value (%s)", name, f->value);
        else if (set_value(f, v, set->opts) != REMAT_OK) {
            char why[400];
            snprintf(why, sizeof why, "%s", remat_last_error()); /* remat_fail writes where it reads */
            status = remat_fail(REMAT_EINVAL, "%s: %s", name, why);
        }
        if (status != REMAT_OK) return FLAGS_BAD;
        *set->given |= bit;
    }
    return FLAGS_RUN;
}

RematStatus flags_check(const FlagSet *set, const void *run)
{
    for (int k = 0; k < set->n; k++) {
        const Flag *f = &set->flags[k];
        const bool given = *set->given & 1u << k;
        const char *why = !given ? NULL
                        : *set->given & f->excludes ? f->excluded
                        : f->needs && !(set->traits & f->needs) ? f->unneeded
                        : f->applies ? f->applies(set->opts, run) : NULL;
        if (why) return remat_fail(REMAT_EINVAL, "%s does not apply: %s", f->name, why);
    }
    return REMAT_OK;
}

/* One flag's help: the flag and its value in a column of 20, its lines beside it. */
static void usage_line(const Flag *f, FILE *out)
{
    char head[40];
    snprintf(head, sizeof head, "%s%s%s", f->name, f->value ? " " : "", f->value ? f->value : "");
    if (strlen(head) > 19) fprintf(out, "  %s\n%22s", head, ""); /* too long for its column: a line of its own */
    else fprintf(out, "  %-19s ", head);
    for (const char *c = f->help; *c; c++) {
        fputc(*c, out);
        if (*c == '\n') fprintf(out, "%22s", "");
    }
    fputc('\n', out);
}

void flags_usage(const FlagSet *set, const char *heading, bool headings, FILE *out)
{
    const char *section = NULL; /* the heading of the rows being read */
    bool shown = false;         /* that heading printed */
    for (int k = 0; k < set->n; k++) {
        const Flag *f = &set->flags[k];
        if (f->heading) {
            if (heading && section && !strcmp(section, heading)) break; /* the end of the section asked for */
            section = f->heading;
            shown = false;
        }
        if ((heading && (!section || strcmp(section, heading))) || !(set->accepted & 1u << k)) continue;
        if (headings && section && !shown) fprintf(out, "%s\n", section);
        shown = true;
        usage_line(f, out);
    }
}

void flags_synopsis(const FlagSet *set, FILE *out)
{
    for (int k = 0; k < set->n; k++)
        if (set->accepted & 1u << k)
            fprintf(out, " [%s%s%s]", set->flags[k].name, set->flags[k].value ? " " : "",
                    set->flags[k].value ? set->flags[k].value : "");
}
