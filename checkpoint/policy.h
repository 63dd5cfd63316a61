/*
 * policy.h — selective recomputation: which ops of a checkpoint region keep their output.
 *
 * A policy looks at each op of a region (its name, e.g. "matmul", and its tag, e.g.
 * "attn.scores") and says SAVE or RECOMPUTE. During the region's first forward the outputs
 * of SAVE ops are kept in a cache (counted as ACT); during the replay in backward those
 * ops return the cached tensor instead of computing, so their FLOPs are not spent twice.
 * This is PyTorch's selective activation checkpointing, JAX's remat policies, and
 * Megatron-LM's "selective" recomputation (Korthikanti et al. 2022) — quiz question 5:
 * recompute what is cheap to recompute but big to keep; keep what is expensive.
 *
 * Presets:
 *   nothing_saveable  keep nothing: full recomputation.
 *   dots_saveable     keep every matmul's output (linear, matmul and attention_fused ops).
 *   attention_core    recompute only attn.scores, attn.softmax, attn.dropout and attn.out
 *                     — the (B,H,T,T) tensors that grow with T² — or attn.fused, the same
 *                     core fused, and keep the rest.
 */
#ifndef REMAT_POLICY_H
#define REMAT_POLICY_H

typedef enum PolicyDecision { POLICY_RECOMPUTE = 0, POLICY_SAVE } PolicyDecision;

/* decide() decides for one op; `tag` may be NULL. */
typedef struct Policy {
    const char *name;
    PolicyDecision (*decide)(const char *op, const char *tag, void *user);
    void *user; /* the policy's own pointer, passed to decide() */
} Policy;

extern const Policy POLICY_NOTHING_SAVEABLE;
extern const Policy POLICY_DOTS_SAVEABLE;
extern const Policy POLICY_ATTENTION_CORE;

/* The preset called `name` ("nothing_saveable", "dots", "dots_saveable",
 * "attention_core"), or NULL. */
const Policy *policy_by_name(const char *name);

#endif /* REMAT_POLICY_H */
