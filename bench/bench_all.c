/*
 * bench_all.c — runs every question bench, one after the other, and merges what they wrote
 * into results/summary.json.
 *
 * Each bench runs as its own process (found beside this binary), with the same --quick and
 * --results as bench_all got (bench_planner also --pareto), its output passing straight
 * through. bench_all then writes its own results (which bench ran, its exit status and
 * seconds) as bench_all.json, and summary.json: the same, plus every bench's JSON under
 * "benches". A bench that fails does not stop the others; bench_all then exits 1 naming it.
 *
 * What it is not: a scheduler. Benches run one at a time, since each measures time and
 * two at once would slow each other down.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/cli.h"
#include "base/platform.h"

static const BenchInfo INFO = {
    .name = "bench_all",
    .question = "every quiz question that a bench answers, in one run",
    .about = "  Runs the question benches from this binary's directory (bench_planner with --pareto),\n"
             "  then merges their JSON into DIR/summary.json.",
    .quick = "every bench with --quick (seconds to minutes, with what else the machine runs)",
    .full = "every bench in its full mode (several minutes)",
};

static const char *const BENCHES[] = {
    "bench_scaling",       "bench_selective", "bench_placement", "bench_dropout",
    "bench_memory_budget", "bench_offload",   "bench_timeline",  "bench_planner",
    "bench_attention",
};
enum { N_BENCHES = sizeof BENCHES / sizeof BENCHES[0] };

/* Runs `path` with `args` (NULL-terminated, args[0] the program), waits, and returns its
 * exit status (128 + the signal if one killed it), or -1 if it could not be started. */
static int run(const char *path, char *const args[])
{
    fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execv(path, args);
        fprintf(stderr, "bench_all: cannot run %s\n", path);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid) return -1;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

typedef struct RunRow {
    const char *bench;
    int exit_status;
    Estimate seconds; /* one run: no spread */
} RunRow;

static const ResultsColumn COLUMNS[] = {
    COLUMN(RunRow, bench, STR, ""), COLUMN(RunRow, exit_status, INT, "0 ok, 1 error, 2 bad flag"),
    COLUMN_TIMED(RunRow, seconds, "seconds"), COLUMN_SAMPLES,
};

static const char *self; /* argv[0]: the benches live beside this binary */

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    char dir[4096] = ".";
    const char *slash = strrchr(self, '/');
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - self), self);

    results_config_str(results, "results_dir", o->results_dir);
    ResultsTable *runs = RESULTS_TABLE(results, "runs", "each bench that ran", COLUMNS);
    int failed = 0;
    char failures[512] = "";
    double total = 0.0;
    for (int i = 0; i < N_BENCHES; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, BENCHES[i]);
        const bool pareto = !strcmp(BENCHES[i], "bench_planner"); /* its frontier too, which the quiz quotes */
        char *args[] = {path, "--results", (char *)o->results_dir, pareto ? "--pareto" : NULL, NULL, NULL};
        args[pareto ? 4 : 3] = o->quick ? "--quick" : NULL;
        printf("\n==== %s%s%s\n", BENCHES[i], pareto ? " --pareto" : "", o->quick ? " --quick" : "");
        const double t0 = platform_seconds();
        const int code = run(path, args);
        const double seconds = platform_seconds() - t0;
        total += seconds;
        printf("==== %s: %s in %.1f s\n", BENCHES[i], code == 0 ? "done" : "FAILED", seconds);
        results_add_row(runs, &(RunRow){BENCHES[i], code, estimate_single(seconds)});
        if (code != 0) {
            failed++;
            const size_t used = strlen(failures);
            snprintf(failures + used, sizeof failures - used, "%s%s (exit %d)", used ? ", " : "", BENCHES[i], code);
        }
    }

    RematStatus status = results_write_summary(results, o->results_dir, BENCHES, N_BENCHES);
    if (status == REMAT_OK) {
        printf("\n  %d benches in %.1f s; merged into %s/summary.json\n", N_BENCHES, total, o->results_dir);
        if (failed)
            status = remat_fail(REMAT_ESTATE, "%d bench%s failed: %s", failed, failed == 1 ? "" : "es", failures);
    }
    return status;
}

int main(int argc, char **argv)
{
    self = argv[0];
    return bench_main(&INFO, argc, argv, run_bench);
}
