/*
 * timing.c — interleaved rounds, medians with their order-statistics interval, and the
 * machine's state (see timing.h).
 */
#define _DEFAULT_SOURCE /* getloadavg */
#include "bench/timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/platform.h"

/* ---- a median and its interval ----------------------------------------------------------- */

static int compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* P(Bin(n, 1/2) ≤ j), summed in log space so that large n does not underflow. */
static double binomial_half_cdf(int n, int j)
{
    double sum = 0.0;
    const double log_half_n = n * log(0.5);
    for (int i = 0; i <= j; i++)
        sum += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) + log_half_n);
    return sum;
}

/* The largest k ≥ 1 with 1 − 2·P(B ≤ k−1) ≥ 0.95, or 1 when even k = 1 falls short. */
static int order_statistic(int n)
{
    int k = 1;
    while (k + 1 <= (n + 1) / 2 && 1.0 - 2.0 * binomial_half_cdf(n, k) >= 0.95) k++;
    return k;
}

Estimate estimate_median(const double *values, int n)
{
    double *sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) return estimate_single(values[0]); /* honest about what it knows */
    memcpy(sorted, values, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_doubles);
    const int k = order_statistic(n);
    const Estimate e = {sorted[n / 2], sorted[k - 1], sorted[n - k], n};
    free(sorted);
    return e;
}

Estimate estimate_single(double value)
{
    return (Estimate){value, value, value, 1};
}

Estimate estimate_rate(double amount, const Estimate *t)
{
    if (t->value <= 0 || t->lo <= 0) return (Estimate){.samples = t->samples};
    return (Estimate){amount / t->value, amount / t->hi, amount / t->lo, t->samples};
}

bool estimate_within(const Estimate *e, double half_width)
{
    return e->hi - e->value <= half_width && e->value - e->lo <= half_width;
}

char *estimate_ratio_str(char *buf, size_t size, const Estimate *e)
{
    snprintf(buf, size, "%+.1f%% (%+.1f..%+.1f, %d)", 100.0 * (e->value - 1.0), 100.0 * (e->lo - 1.0),
             100.0 * (e->hi - 1.0), e->samples);
    return buf;
}

/* ---- interleaved rounds ----------------------------------------------------------------- */

enum { QUICK_MIN_ROUNDS = 6, QUICK_MAX_ROUNDS = 60, MAX_QUANTITIES = 32 };

TimingPlan timing_plan_quick(int warmup, double cap_seconds)
{
    return (TimingPlan){.warmup = warmup, .min_rounds = QUICK_MIN_ROUNDS, .max_rounds = QUICK_MAX_ROUNDS,
                        .half_width = 0.05, .cap_seconds = cap_seconds};
}

TimingPlan timing_plan_fixed(int warmup, int rounds)
{
    return (TimingPlan){.warmup = warmup, .min_rounds = rounds, .max_rounds = rounds};
}

int timing_max_runs(const TimingPlan *plan, int variants)
{
    return (plan->warmup + plan->max_rounds) * variants;
}

static double *value_at(const Timing *t, int round, int variant, int q)
{
    return &t->values[((size_t)round * (size_t)t->variants + (size_t)variant) * (size_t)t->quantities + (size_t)q];
}

/* Whether the rounds so far are enough: the cap passed, or every ratio narrow enough. */
static bool enough(const TimingPlan *plan, const Timing *t)
{
    if (t->rounds < plan->min_rounds) return false;
    if (t->rounds >= plan->max_rounds) return true;
    if (plan->cap_seconds > 0 && t->seconds >= plan->cap_seconds) return true;
    if (plan->half_width <= 0) return false;
    for (int i = 1; i < t->variants; i++) {
        const Estimate e = timing_ratio(t, i, 0, 0);
        if (!estimate_within(&e, plan->half_width)) return false;
    }
    return true;
}

RematStatus timing_run(const TimingPlan *plan, int variants, int quantities, TimedRun run, void *ctx,
                       Progress *progress, const char *label, Timing *out)
{
    *out = (Timing){.variants = variants, .quantities = quantities};
    double scratch[MAX_QUANTITIES];
    if (quantities > MAX_QUANTITIES)
        return remat_fail(REMAT_EINVAL, "timing_run: %d quantities per run, at most %d", quantities, MAX_QUANTITIES);
    out->values = malloc((size_t)plan->max_rounds * (size_t)variants * (size_t)quantities * sizeof *out->values);
    if (!out->values) return remat_fail(REMAT_ENOMEM, "no memory for %d rounds of %d variants",
                                        plan->max_rounds, variants);
    const int total = timing_max_runs(plan, variants), base = progress ? progress->done : 0;
    int done = 0;
    RematStatus status = REMAT_OK;
    double t0 = 0.0;
    /* Round r runs every variant once from variant r mod n; the warm-up rounds go to scratch. */
    for (int round = 0; status == REMAT_OK && (round < plan->warmup || !enough(plan, out)); round++) {
        const bool timed = round >= plan->warmup;
        if (round == plan->warmup) t0 = platform_seconds();
        for (int j = 0; j < variants && status == REMAT_OK; j++) {
            const int i = (round + j) % variants;
            status = run(ctx, i, timed ? value_at(out, out->rounds, i, 0) : scratch);
            if (progress) progress_set(progress, base + ++done, label);
        }
        if (timed && status == REMAT_OK) out->rounds++;
        if (timed) out->seconds = platform_seconds() - t0;
    }
    if (progress) progress_set(progress, base + total, label); /* the rounds it did not need */
    return status;
}

Estimate timing_ratio(const Timing *t, int variant, int base, int q)
{
    double *v = t->rounds > 0 ? malloc((size_t)t->rounds * sizeof *v) : NULL;
    if (!v) return estimate_single(NAN);
    for (int r = 0; r < t->rounds; r++)
        v[r] = *value_at(t, r, variant, q) / (base >= 0 ? *value_at(t, r, base, q) : 1.0);
    const Estimate e = estimate_median(v, t->rounds);
    free(v);
    return e;
}

Estimate timing_median(const Timing *t, int variant, int q)
{
    return timing_ratio(t, variant, -1, q);
}

void timing_free(Timing *t)
{
    free(t->values);
    *t = (Timing){0};
}

/* ---- the machine ------------------------------------------------------------------------ */

/* The first line of /proc/stat: "cpu  user nice system idle iowait irq softirq steal ...". */
static void read_cpu_ticks(MachineState *m)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return;
    unsigned long long v[8] = {0};
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]) == 8) {
        for (int i = 0; i < 8; i++) m->total_ticks += v[i];
        m->busy_ticks = v[0] + v[1] + v[2] + v[5] + v[6];
        m->steal_ticks = v[7];
    }
    fclose(f);
}

static double timeval_seconds(struct timeval tv)
{
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

MachineState machine_now(void)
{
    MachineState m = {.wall_seconds = platform_seconds()};
    if (getloadavg(&m.loadavg, 1) != 1) m.loadavg = -1.0;
    read_cpu_ticks(&m);
    struct rusage self, children;
    if (getrusage(RUSAGE_SELF, &self) == 0 && getrusage(RUSAGE_CHILDREN, &children) == 0) {
        m.involuntary_switches = self.ru_nivcsw + children.ru_nivcsw;
        m.cpu_seconds = timeval_seconds(self.ru_utime) + timeval_seconds(self.ru_stime) +
                        timeval_seconds(children.ru_utime) + timeval_seconds(children.ru_stime);
    }
    return m;
}

double machine_steal(const MachineState *before, const MachineState *after)
{
    if (after->total_ticks <= before->total_ticks || after->steal_ticks < before->steal_ticks) return 0.0;
    return (double)(after->steal_ticks - before->steal_ticks) / (double)(after->total_ticks - before->total_ticks);
}

double machine_others_cpu(const MachineState *before, const MachineState *after)
{
    const long ticks_per_second = sysconf(_SC_CLK_TCK);
    if (after->total_ticks <= before->total_ticks || after->busy_ticks < before->busy_ticks || ticks_per_second <= 0)
        return 0.0;
    const double busy = (double)(after->busy_ticks - before->busy_ticks);
    const double own = (after->cpu_seconds - before->cpu_seconds) * (double)ticks_per_second;
    const double others = (busy - own) / (double)(after->total_ticks - before->total_ticks);
    return others < 0.0 ? 0.0 : others > 1.0 ? 1.0 : others; /* the two clocks tick apart by a tick or so */
}
