/*
 * test_tour.c — every gdb session of docs/TOUR.md, run as typed.
 *
 * A session in the TOUR is a fenced block whose first line is the shell line that opens
 * it (`OMP_NUM_THREADS=1 gdb -q --args build-debug/...`, or for a pipeline's two ranks
 * `OMP_NUM_THREADS=1 mpirun -np 1 gdb -q --args build-debug/... : -np 1 build-debug/...`,
 * rank 0 under gdb) and whose other lines are `(gdb) ` commands exactly as a student types
 * them; the fenced block right after it is what gdb printed. For each session this test
 * runs that line with the same commands in `gdb -batch` on this debug build, from the
 * source root, and fails when
 *   - a command line carries anything gdb would not take (a trailing `# comment`),
 *   - gdb stops on an error (the script is cut short: the marker echoed last is missing),
 *   - a line of the pasted output is not printed, in order (addresses masked: they vary
 *     from machine to machine; sizes, names, line numbers and FLOP counts do not; paths
 *     are shown relative to the checkout).
 * gdb's own notices (threads, "Run till exit") may come between the pasted lines.
 *
 * It is built only in a Debug build (every function steppable, as the TOUR asks) and
 * needs gdb; a pipeline's session also needs mpirun, and is skipped, saying so, without it.
 * CI runs it (`./remat.sh tour`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define MAX_LINES 64
#define LINE_LEN 512
#define END_MARKER "tour-session-end"
#define SESSION_LINE "OMP_NUM_THREADS=1 gdb -q --args build-debug/"
#define PIPELINE_LINE "OMP_NUM_THREADS=1 mpirun -np 1 gdb -q --args build-debug/"

/* One fenced block of the TOUR: where it starts, and its lines without newlines. */
typedef struct Block {
    int line; /* of its opening fence, 1-based */
    int n;
    char text[MAX_LINES][LINE_LEN];
} Block;

static Block *blocks;
static int n_blocks;

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ')) s[--n] = '\0';
}

/* Every fenced block of docs/TOUR.md; false if it cannot be read. */
static bool read_blocks(void)
{
    FILE *f = fopen(REMAT_SOURCE_DIR "/docs/TOUR.md", "r");
    if (!f) return false;
    char line[LINE_LEN];
    Block *open = NULL;
    for (int at = 1; fgets(line, sizeof line, f); at++) {
        chomp(line);
        if (!strncmp(line, "```", 3)) {
            if (open) {
                open = NULL;
                continue;
            }
            blocks = realloc(blocks, (size_t)(n_blocks + 1) * sizeof *blocks);
            open = &blocks[n_blocks++];
            open->line = at;
            open->n = 0;
        } else if (open && open->n < MAX_LINES) {
            snprintf(open->text[open->n++], LINE_LEN, "%s", line);
        }
    }
    fclose(f);
    return true;
}

/* `s` into `out` as the TOUR shows it: every hexadecimal address made "0x?", and paths
 * relative to the checkout. */
static void mask_addresses(char *out, size_t size, const char *s)
{
    const char *root = REMAT_SOURCE_DIR "/";
    size_t o = 0;
    while (*s && o + 4 < size) {
        if (s[0] == '0' && s[1] == 'x') {
            memcpy(out + o, "0x?", 3);
            o += 3;
            s += 2;
            while ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')) s++;
        } else if (!strncmp(s, root, strlen(root))) {
            s += strlen(root);
        } else {
            out[o++] = *s++;
        }
    }
    out[o] = '\0';
}

/* The session's shell line as this test runs it, into `out`: every `build-debug/` this build's
 * directory, gdb told to run `script` in batch mode, the whole under a timeout. Open MPI
 * refuses to start as root (CI) unless the two variables say so; they change nothing else. */
static void batch_line(char *out, size_t size, const char *typed, const char *script)
{
    char gdb[LINE_LEN];
    snprintf(gdb, sizeof gdb, "gdb -q -batch -nx -x %s --args ", script);
    const char *from[] = {"build-debug/", "gdb -q --args "};
    const char *to[] = {"'" REMAT_BINARY_DIR "'/", gdb};
    size_t o = (size_t)snprintf(out, size, "cd '" REMAT_SOURCE_DIR "' && OMPI_ALLOW_RUN_AS_ROOT=1 "
                                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 timeout 300 ");
    for (const char *s = typed + strlen("OMP_NUM_THREADS=1 "); *s;) {
        int k = 0;
        while (k < 2 && strncmp(s, from[k], strlen(from[k]))) k++;
        o += (size_t)(k < 2 ? snprintf(out + o, size - o, "%s", to[k]) : snprintf(out + o, size - o, "%c", *s));
        s += k < 2 ? strlen(from[k]) : 1;
        assert_true(o < size); /* else the line was cut */
    }
    o += (size_t)snprintf(out + o, size - o, " 2>&1");
    assert_true(o < size);
}

/* Runs one session's commands; its output, masked, into `out` (lines). */
static int run_session(const Block *session, char (*out)[LINE_LEN], int max)
{
    char script[] = "/tmp/remat-tour-XXXXXX";
    const int fd = mkstemp(script);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    for (int i = 1; i < session->n; i++) fprintf(f, "%s\n", session->text[i] + strlen("(gdb) "));
    fprintf(f, "echo " END_MARKER "\\n\n");
    fclose(f);
    char command[4 * LINE_LEN];
    batch_line(command, sizeof command, session->text[0], script);
    FILE *p = popen(command, "r");
    assert_non_null(p);
    int n = 0;
    char line[4 * LINE_LEN];
    while (fgets(line, sizeof line, p)) {
        chomp(line);
        if (n < max) mask_addresses(out[n++], LINE_LEN, line);
    }
    pclose(p);
    unlink(script);
    return n;
}

/* Whether block `b` opens with the shell line `line`. */
static bool opens_with(const Block *b, const char *line)
{
    return b->n > 0 && !strncmp(b->text[0], line, strlen(line));
}

/* The session opening at block `b`, against the output block after it. */
static void check_session(int b)
{
    const Block *session = &blocks[b];
    for (int i = 1; i < session->n; i++) {
        if (strncmp(session->text[i], "(gdb) ", 6) || strchr(session->text[i], '#'))
            fail_msg("docs/TOUR.md:%d: '%s' is not a command as typed at (gdb) (no comment after it)",
                     session->line + 1 + i, session->text[i]);
    }
    if (b + 1 >= n_blocks) fail_msg("docs/TOUR.md:%d: the session has no output block after it", session->line);
    if (opens_with(session, PIPELINE_LINE) && system("command -v mpirun > /dev/null") != 0) {
        print_message("docs/TOUR.md:%d: no mpirun on PATH: this session of two ranks is skipped\n", session->line);
        skip();
    }
    static char got[1024][LINE_LEN];
    const int n = run_session(session, got, 1024);
    int at = 0;
    for (int i = 0; i < blocks[b + 1].n; i++) {
        char want[LINE_LEN];
        mask_addresses(want, sizeof want, blocks[b + 1].text[i]);
        if (!want[0]) continue;
        while (at < n && strcmp(got[at], want)) at++;
        if (at == n) {
            for (int k = 0; k < n; k++) fprintf(stderr, "  gdb| %s\n", got[k]);
            fail_msg("docs/TOUR.md:%d: gdb did not print '%s' (its output is above)",
                     blocks[b + 1].line + 1 + i, blocks[b + 1].text[i]);
        }
        at++;
    }
    for (int k = 0; k < n; k++)
        if (!strcmp(got[k], END_MARKER)) return;
    for (int k = 0; k < n; k++) fprintf(stderr, "  gdb| %s\n", got[k]);
    fail_msg("docs/TOUR.md:%d: gdb stopped on an error before the session's end", session->line);
}

static void test_session(void **state)
{
    check_session(*(int *)*state);
}

/* One test per session, named for where it stands in the TOUR. */
int main(void)
{
    if (!read_blocks()) {
        fprintf(stderr, "test_tour: cannot read docs/TOUR.md\n");
        return 1;
    }
    static struct CMUnitTest tests[64];
    static int index[64];
    static char names[64][64];
    int n = 0;
    for (int b = 0; b < n_blocks && n < 64; b++) {
        if (!opens_with(&blocks[b], SESSION_LINE) && !opens_with(&blocks[b], PIPELINE_LINE)) continue;
        index[n] = b;
        snprintf(names[n], sizeof names[n], "tour_session_at_line_%d", blocks[b].line);
        tests[n] = (struct CMUnitTest){.name = names[n], .test_func = test_session, .initial_state = &index[n]};
        n++;
    }
    if (n < 9) { /* one or more per quiz question, and question 5's two */
        fprintf(stderr, "test_tour: docs/TOUR.md has %d sessions that open with '%s' or '%s', expected 9 or more\n",
                n, SESSION_LINE, PIPELINE_LINE);
        return 1;
    }
    const int failed = _cmocka_run_group_tests("test_tour", tests, (size_t)n, NULL, NULL);
    free(blocks);
    return failed;
}
