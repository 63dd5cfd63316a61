/*
 * flops.c — the FLOP ledger (see flops.h): one counter per phase, the matmuls' share of
 * it in FLOPs and seconds, the seconds each phase was current, and the current phase.
 */
#include "tensor/flops.h"

#include "base/platform.h"

static FlopCounts ledger;
static Phase current = PHASE_FORWARD;
static double current_since; /* platform_seconds() when `current` became current */

Phase flops_set_phase(Phase phase)
{
    const double now = platform_seconds();
    ledger.phase_seconds[current] += now - current_since;
    current_since = now;
    Phase previous = current;
    current = phase;
    return previous;
}

Phase flops_phase(void) { return current; }

void flops_add(uint64_t n) { ledger.phase[current] += n; }

void flops_add_phase(Phase phase, uint64_t n)
{
    if ((unsigned)phase < PHASE_COUNT) ledger.phase[phase] += n;
}

void flops_add_matmul(uint64_t n, double seconds)
{
    ledger.phase[current] += n;
    ledger.matmul[current] += n;
    ledger.matmul_seconds[current] += seconds;
}

uint64_t flops_get(Phase phase) { return (unsigned)phase < PHASE_COUNT ? ledger.phase[phase] : 0; }

uint64_t flops_total(void)
{
    uint64_t total = 0;
    for (int p = 0; p < PHASE_COUNT; p++) total += ledger.phase[p];
    return total;
}

FlopCounts flops_snapshot(void)
{
    FlopCounts now = ledger;
    now.phase_seconds[current] += platform_seconds() - current_since; /* the running phase's, so far */
    return now;
}

void flops_restore(const FlopCounts *c)
{
    ledger = *c;
    current_since = platform_seconds();
}

void flops_reset(void)
{
    ledger = (FlopCounts){0};
    current = PHASE_FORWARD;
    current_since = platform_seconds();
}

static const char *const PHASES[PHASE_COUNT] = {"forward", "backward", "recompute", "optimizer"};
const NameTable FLOP_PHASE_NAMES = {PHASES, PHASE_COUNT};
