/*
 * fixtures.h — small models and one-step helpers shared by the quiz tests
 * (tests/quiz/test_q*.c), so that each test reads as its argument and nothing else.
 */
#ifndef REMAT_QUIZ_FIXTURES_H
#define REMAT_QUIZ_FIXTURES_H

#include "models/gpt.h"
#include "models/mlp.h"
#include "models/step.h"
#include "offload/offload.h"
#include "checkpoint/schedule.h"

/* A 3-block GPT (C=32, H=4, T=16, vocabulary 256), dropout `dropout`, fixed seed. */
Model *quiz_gpt(float dropout);

/* A batch of 2 random token sequences of 16 and their targets (constant Vars). */
Var *quiz_tokens(uint64_t seed, Var **targets);

/* What one forward + backward measured. */
typedef struct QuizStep {
    float loss;
    size_t stored_act;  /* ACT held between forward and backward */
    size_t peak_act;    /* peak ACT of the step */
    size_t peak_disk;   /* peak DISK of the step (bytes in an offload spill file) */
    uint64_t flops[PHASE_COUNT];
    Tensor *grads[64];  /* copies (MEM_WORK) of every parameter's gradient */
    int n_grads;
    RematStatus status; /* REMAT_OK, or what the step returned */
} QuizStep;

/* One training step (models/step.h) of `model` on (x, targets) under `strategy`, without
 * an optimizer: forward and backward, gradients zeroed first (dropout on, the generator
 * seeded the same way every time). */
QuizStep quiz_step(Model *model, const Strategy *strategy, Var *x, Var *targets);

/* As quiz_step, with the hooks of `off` pushed for the forward only, as train does: what
 * the forward saves goes to the spill file, and backward reads it back. */
QuizStep quiz_step_offloaded(Model *model, const Strategy *strategy, Offload *off, Var *x, Var *targets);

/* As quiz_step_offloaded (`off` may be NULL), with dropout masks from `dropout_rng`: the
 * stream seeded as quiz_step's, or counter-based with seed 7 at step 0. */
QuizStep quiz_step_with(Model *model, const Strategy *strategy, Offload *off, DropoutRng dropout_rng, Var *x,
                        Var *targets);

/* Frees the gradient copies. */
void quiz_step_free(QuizStep *s);

/* The largest |a − b| over every gradient of two steps. */
double quiz_max_grad_diff(const QuizStep *a, const QuizStep *b);

/* True if the two steps' gradients are identical, bit for bit. */
bool quiz_same_grads(const QuizStep *a, const QuizStep *b);

#endif /* REMAT_QUIZ_FIXTURES_H */
