/*
 * flags.h — the one command-line parser of every program (train, the benches, the quiz):
 * a program declares its flags as rows of a table, and this file parses argv by them,
 * checks when each applies, and prints their help.
 *
 * A row says everything about a flag: its name, the type of its value and the field it
 * sets (an offset into the program's options struct), its range or its names, its help,
 * and the rule for when it changes something in a run. Defaults are the options struct's
 * own, set before parsing.
 *
 * One rule for every program: an unknown flag, a bad or missing value, a flag given twice
 * and a flag that would change nothing in the run the others describe are refused with a
 * message saying why, never ignored. A bad value always reads "--flag: 'x' is not ...".
 *
 * It is not getopt: no short options besides -h, no bundling, no "--flag=value", no
 * positional arguments.
 */
#ifndef REMAT_BASE_FLAGS_H
#define REMAT_BASE_FLAGS_H

#include <stdio.h>

#include "base/parse.h"

typedef enum FlagType {
    FLAG_SWITCH,     /* no value: sets a bool true */
    FLAG_SWITCH_OFF, /* no value: sets a bool false */
    FLAG_CONST,      /* no value: sets an int (an enum) to lo */
    FLAG_INT,    /* an int in [lo, hi]; hi 0 means PlatformInfo.max_threads */
    FLAG_FLOAT,  /* a float in [lo, hi], or [lo, hi) with hi_open */
    FLAG_U64,    /* a uint64_t, any */
    FLAG_TEXT,   /* a const char *, not empty: a path, a list */
    FLAG_SIZE,   /* a size_t of bytes with a unit (parse_memory_size); lo > 0: the int at count set to lo */
    FLAG_NAME,   /* an enum, by its NameTable */
    FLAG_CUSTOM, /* set() reads it */
} FlagType;

typedef struct Flag {
    const char *name;  /* "--layers" */
    FlagType type;
    size_t offset;     /* of its field in the options struct (offsetof) */
    const char *value; /* its value in the help ("N"); NULL for a switch */
    const char *help;  /* what it does and its default; continuation lines after a '\n' */
    const char *heading; /* the heading of the help's section that starts at this row, or NULL */
    double lo, hi;     /* FLAG_INT, FLAG_FLOAT: the range; FLAG_CONST: lo, the value; FLAG_SIZE: lo, count's */
    size_t count;      /* FLAG_SIZE with lo > 0: the offset of a count of items the bytes now bound instead */
    bool hi_open;      /* FLAG_FLOAT: hi itself is refused */
    const NameTable *names; /* FLAG_NAME: the enum's names */
    /* FLAG_CUSTOM: reads `value` into `opts` (a switch: value NULL); REMAT_EINVAL saying
     * why not, without the flag's name. */
    RematStatus (*set)(void *opts, const char *value);
    /* When it applies, as data: it needs one of these traits of the run (FlagSet.traits;
     * 0: any run), and without them changes nothing because `unneeded`... */
    unsigned needs;
    const char *unneeded;
    /* ...or as a rule: NULL if the flag changes something in the run `opts` and `run` (the
     * program's description of what it will run) say; else why it does not. NULL: always. */
    const char *(*applies)(const void *opts, const void *run);
    unsigned excludes;    /* rows of its set that make it change nothing (bit k: row k)... */
    const char *excluded; /* ...and why, refused before `applies` is asked */
} Flag;

/* The rows of one table a program takes, and where they go. Bit k of a mask is row k. */
typedef struct FlagSet {
    const Flag *flags;
    int n;
    void *opts;        /* the struct the rows' offsets are into */
    unsigned accepted; /* the rows this program takes */
    unsigned *given;   /* where the rows given are recorded */
    unsigned traits;   /* what the run is, in the program's bits: what Flag.needs reads */
} FlagSet;

enum { FLAGS_RUN = 0, FLAGS_HELP = 1, FLAGS_BAD = 2 };

/* Parses argv[1 .. argc) by the n_sets sets into their options. Returns FLAGS_RUN,
 * FLAGS_HELP when --help or -h was given (nothing printed), or FLAGS_BAD with
 * REMAT_EINVAL and a message naming the flag and why: unknown, not taken by this program,
 * given twice, a missing or bad value. */
int flags_parse(const FlagSet *sets, int n_sets, int argc, char **argv);

/* REMAT_OK if every flag given in `set` applies to `run` (Flag.excludes, .needs, .applies);
 * else REMAT_EINVAL with "--flag does not apply: <why>". */
RematStatus flags_check(const FlagSet *set, const void *run);

/* The help lines of the set's accepted rows ("  --layers N          GPT blocks ..."), a
 * column of 22 for the flag; of the section under `heading` only (NULL: every row), and
 * with the headings when `headings`. */
void flags_usage(const FlagSet *set, const char *heading, bool headings, FILE *out);

/* The usage line's part for the set's accepted rows: " [--strategy S] [--quick] ...". */
void flags_synopsis(const FlagSet *set, FILE *out);

#endif /* REMAT_BASE_FLAGS_H */
