/*
 * timing.h — the one way the benches measure time, and the machine's state around it.
 *
 * A timed comparison runs its variants (strategies, placements, configurations, ways of
 * moving bytes) interleaved in one process: round after round, one run of every variant
 * per round, each round starting one variant later, so that a slow moment of the machine
 * falls on all of them alike. A run reports one or more quantities (a step's seconds, the
 * seconds inside pack and unpack). From the rounds come:
 *
 *   - a variant's time: the median of its runs, with a 95% interval for that median;
 *   - a variant's time against the baseline (variant 0): the median of the paired ratios,
 *     variant time / baseline time of the same round, with a 95% interval.
 *
 * The interval is distribution-free, by order statistics: of n sorted values x(1) ≤ … ≤
 * x(n), [x(k), x(n+1−k)] covers the true median with probability 1 − 2·P(Bin(n, ½) ≤ k−1),
 * and k is the largest that keeps that at least 95%. Below 6 samples no such k exists:
 * the interval is then the whole range [x(1), x(n)], which covers the median with
 * probability 1 − 2^(1−n) only (75% for 3). Nothing is resampled, so the interval is the
 * same every time it is computed from the same values.
 *
 * How many rounds: a TimingPlan. The machine's state (MachineState) is recorded before and
 * after every bench (results.c's "machine" block), so that a time measured while the
 * machine was busy says so.
 *
 * What this is not: a statistics library. It does medians and their intervals, no means,
 * no tests of significance.
 */
#ifndef REMAT_BENCH_TIMING_H
#define REMAT_BENCH_TIMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/progress.h"

/* ---- a median and its interval ----------------------------------------------------------- */

typedef struct Estimate {
    double value;  /* the median (the upper median for even n) */
    double lo, hi; /* its 95% interval by order statistics (the range below 6 samples) */
    int samples;   /* n */
} Estimate;

/* The median of `n` ≥ 1 values and its interval; the values are left as they were. */
Estimate estimate_median(const double *values, int n);

/* An estimate with one sample: value, lo and hi all `value` (a single reading). */
Estimate estimate_single(double value);

/* `amount` per the seconds `t` took (a rate from a median time): the interval's ends
 * swap, the slowest run giving the lowest rate. No rate (only the samples) when a time is
 * not positive. */
Estimate estimate_rate(double amount, const Estimate *t);

/* Whether e's interval lies within ±`half_width` of its median (0.05: ±5 points of a
 * ratio). */
bool estimate_within(const Estimate *e, double half_width);

/* A ratio as an overhead in percent, with its interval and samples, for tables:
 * "+28.5% (+24.1..+31.0, 9)". Returns `buf`. */
char *estimate_ratio_str(char *buf, size_t size, const Estimate *e);

/* ---- interleaved rounds ----------------------------------------------------------------- */

/* How many rounds a comparison runs. */
typedef struct TimingPlan {
    int warmup;         /* untimed rounds first */
    int min_rounds;     /* timed rounds at least */
    int max_rounds;     /* timed rounds at most */
    double half_width;  /* stop once every ratio to variant 0 is within ± this (0: never early) */
    double cap_seconds; /* stop once min_rounds are done and this much time has passed (0: no cap) */
} TimingPlan;

/* The quick mode's plan: `warmup` rounds, then at least 6 (the fewest with a 95% interval)
 * and at most 60 rounds, until every ratio is within ±5 points or `cap_seconds` passed. */
TimingPlan timing_plan_quick(int warmup, double cap_seconds);

/* Exactly `rounds` timed rounds after `warmup` (full mode, and --steps). */
TimingPlan timing_plan_fixed(int warmup, int rounds);

/* Runs variant `variant` once and puts its `quantities` values in values[0..] (values[0]
 * is the one the ratios and the stopping rule use: a step's seconds). */
typedef RematStatus (*TimedRun)(void *ctx, int variant, double *values);

/* What the rounds measured: values[(round · variants + variant) · quantities + q]. */
typedef struct Timing {
    int variants, quantities;
    int rounds; /* timed rounds done */
    double *values;
    double seconds; /* wall time of the timed rounds */
} Timing;

/* Runs `variants` variants interleaved as `plan` says, `run` doing one run. `progress`
 * (may be NULL) advances by one after every run, warm-up included, labelled `label`, and
 * by the runs the plan did not need at the end. On error returns the status (the run's)
 * and *out holds the rounds completed before it. The caller frees *out with timing_free. */
RematStatus timing_run(const TimingPlan *plan, int variants, int quantities, TimedRun run, void *ctx,
                       Progress *progress, const char *label, Timing *out);

/* Runs a plan would make at most: (warmup + max_rounds) · variants. */
int timing_max_runs(const TimingPlan *plan, int variants);

/* Quantity q of `variant`: the median over the rounds, with its interval. */
Estimate timing_median(const Timing *t, int variant, int q);

/* Quantity q of `variant` against `base` in the same round: the median of the paired
 * ratios, with its interval (base −1: of the values themselves, as timing_median). */
Estimate timing_ratio(const Timing *t, int variant, int base, int q);

void timing_free(Timing *t);

/* ---- the machine ------------------------------------------------------------------------ */

/* The machine and this process at one moment. A figure Linux does not give is negative
 * (loadavg) or zero (the /proc/stat ticks). */
typedef struct MachineState {
    double loadavg;          /* 1-minute load average (/proc/loadavg) */
    uint64_t steal_ticks;    /* all CPUs' steal time, clock ticks (/proc/stat) */
    uint64_t busy_ticks;     /* all CPUs' time running anything: user, nice, system, irq, softirq */
    uint64_t total_ticks;    /* all CPUs' time, every state, clock ticks */
    long involuntary_switches; /* this process's and its waited children's (getrusage) */
    double cpu_seconds;      /* user + system time of this process and its waited children */
    double wall_seconds;     /* platform_seconds() */
} MachineState;

MachineState machine_now(void);

/* The fraction of all CPU time stolen by the hypervisor between two states (0..1; 0 when
 * /proc/stat gave nothing). */
double machine_steal(const MachineState *before, const MachineState *after);

/* The fraction of all CPU time that other processes (and the kernel's own threads) ran
 * between two states: the CPUs' busy time less this process's CPU time, over all the
 * CPUs' time (0..1; 0 when /proc/stat gave nothing). Unlike the load average, which
 * counts this process's own threads (a bench running 2 threads on 2 cores makes a load of
 * 2 by itself), it says whether anything else shared the machine. */
double machine_others_cpu(const MachineState *before, const MachineState *after);

#endif /* REMAT_BENCH_TIMING_H */
