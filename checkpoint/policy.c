/*
 * policy.c — the preset selective-recomputation policies (see policy.h).
 */
#include "checkpoint/policy.h"

#include <string.h>

static PolicyDecision nothing_saveable(const char *op, const char *tag, void *user)
{
    (void)op, (void)tag, (void)user;
    return POLICY_RECOMPUTE;
}

/* Matrix products are where the FLOPs are; everything else is cheap to redo. Fused
 * attention is two products per tile: its outputs (out and one log-sum-exp per row, O(T)
 * per head) are kept like a matmul's, and its backward still recomputes its tiles. */
static PolicyDecision dots_saveable(const char *op, const char *tag, void *user)
{
    (void)tag, (void)user;
    return !strcmp(op, "linear") || !strcmp(op, "matmul") || !strcmp(op, "attention_fused") ? POLICY_SAVE
                                                                                              : POLICY_RECOMPUTE;
}

/* The attention core: its tensors are (B,H,T,T), a memory cost that grows with T² while
 * their FLOPs (two batched matmuls, a softmax and a dropout) are a small part of a
 * layer's when T is small against the width. Korthikanti et al. 2022, section 4.2. Fused
 * attention (attn.fused) is the same core in one op: recomputed too. */
static PolicyDecision attention_core(const char *op, const char *tag, void *user)
{
    (void)op, (void)user;
    static const char *const core[] = {"attn.scores", "attn.softmax", "attn.dropout", "attn.out", "attn.fused"};
    for (size_t i = 0; tag && i < sizeof core / sizeof core[0]; i++)
        if (!strcmp(tag, core[i])) return POLICY_RECOMPUTE;
    return POLICY_SAVE;
}

const Policy POLICY_NOTHING_SAVEABLE = {"nothing_saveable", nothing_saveable, NULL};
const Policy POLICY_DOTS_SAVEABLE = {"dots_saveable", dots_saveable, NULL};
const Policy POLICY_ATTENTION_CORE = {"attention_core", attention_core, NULL};

const Policy *policy_by_name(const char *name)
{
    if (!name) return NULL;
    if (!strcmp(name, "nothing_saveable") || !strcmp(name, "full")) return &POLICY_NOTHING_SAVEABLE;
    if (!strcmp(name, "dots") || !strcmp(name, "dots_saveable")) return &POLICY_DOTS_SAVEABLE;
    if (!strcmp(name, "attention_core")) return &POLICY_ATTENTION_CORE;
    return NULL;
}
