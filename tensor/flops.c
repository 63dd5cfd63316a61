/*
 * flops.c — the FLOP ledger (see flops.h): one counter per phase and the current phase.
 */
#include "tensor/flops.h"

static uint64_t counts[PHASE_COUNT];
static Phase current = PHASE_FORWARD;

Phase flops_set_phase(Phase phase)
{
    Phase previous = current;
    current = phase;
    return previous;
}

Phase flops_phase(void) { return current; }

void flops_add(uint64_t n) { counts[current] += n; }

void flops_add_phase(Phase phase, uint64_t n)
{
    if ((unsigned)phase < PHASE_COUNT) counts[phase] += n;
}

uint64_t flops_get(Phase phase) { return (unsigned)phase < PHASE_COUNT ? counts[phase] : 0; }

uint64_t flops_total(void)
{
    uint64_t total = 0;
    for (int p = 0; p < PHASE_COUNT; p++) total += counts[p];
    return total;
}

FlopCounts flops_snapshot(void)
{
    FlopCounts c;
    for (int p = 0; p < PHASE_COUNT; p++) c.phase[p] = counts[p];
    return c;
}

void flops_restore(const FlopCounts *c)
{
    for (int p = 0; p < PHASE_COUNT; p++) counts[p] = c->phase[p];
}

void flops_reset(void)
{
    for (int p = 0; p < PHASE_COUNT; p++) counts[p] = 0;
    current = PHASE_FORWARD;
}

const char *phase_name(Phase phase)
{
    static const char *const names[PHASE_COUNT] = {"forward", "backward", "recompute", "optimizer"};
    return (unsigned)phase < PHASE_COUNT ? names[phase] : "unknown";
}
