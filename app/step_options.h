/*
 * step_options.h — the command-line flags that say how a training step keeps its
 * activations (--strategy, --policy, --planner, --memory-budget, the replay's two), where
 * offload spills them (--offload and its --offload-... flags) and how data parallelism
 * splits the step (--accumulate, --zero): one table of rows (step_options.c), parsed by
 * base/flags.h into typed options. train and every bench take them from here.
 *
 * One rule for all of them (base/flags.h): a flag that would change nothing is refused
 * with a message saying why, never silently ignored. A program says which of them it
 * takes (a set of StepFlag), and a flag outside that set is refused as it is parsed; a
 * flag it takes but that does not apply to the run the flags describe (--policy without selective,
 * --planner without budget, --offload-dir without --offload, --offload boundary with no
 * regions...) is refused by step_options_check, from the table's own column that says
 * when each flag applies. A new strategy, planner or offload policy is a new name in its
 * own room's name table and needs nothing here.
 */
#ifndef REMAT_APP_STEP_OPTIONS_H
#define REMAT_APP_STEP_OPTIONS_H

#include "base/flags.h"
#include "checkpoint/planner.h"
#include "offload/offload.h"

/* A set of the table's flags: bit k is row k of the table (step_options.c), in this order. */
typedef enum StepFlag {
    STEP_FLAG_STRATEGY = 1u << 0,
    STEP_FLAG_MEMORY_BUDGET = 1u << 1,
    STEP_FLAG_PLANNER = 1u << 2,
    STEP_FLAG_POLICY = 1u << 3,
    STEP_FLAG_NO_RNG_REPLAY = 1u << 4,
    STEP_FLAG_DETERMINISM_CHECK = 1u << 5,
    STEP_FLAG_OFFLOAD = 1u << 6,
    STEP_FLAG_OFFLOAD_DIR = 1u << 7,
    STEP_FLAG_OFFLOAD_NO_CACHE = 1u << 8,
    STEP_FLAG_OFFLOAD_MMAP = 1u << 9,
    STEP_FLAG_OFFLOAD_DIRECT = 1u << 10,
    STEP_FLAG_OFFLOAD_READ_AHEAD = 1u << 11,
    STEP_FLAG_OFFLOAD_WRITE_BEHIND = 1u << 12,
    STEP_FLAG_ACCUMULATE = 1u << 13,
    STEP_FLAG_ZERO = 1u << 14,
    STEP_FLAG_PIPELINE_STAGES = 1u << 15,
    STEP_FLAG_MICRO_BATCHES = 1u << 16,
    STEP_FLAG_PIPELINE_SCHEDULE = 1u << 17,
    STEP_FLAGS_ALL = (1u << 18) - 1,
} StepFlag;

/* How a step keeps its activations, as the command line said. */
typedef struct StepOptions {
    Strategy strategy;    /* --strategy (none), --policy, --no-rng-replay, --determinism-check */
    PlannerKind planner;  /* --planner (dp) */
    size_t memory_budget; /* --memory-budget in bytes; 0: not given */
    bool offload;         /* --offload was given */
    OffloadOptions offload_opts; /* --offload and the --offload-* flags */
    int accumulate;       /* --accumulate: micro-batches per step in one process (1) */
    int zero_stage;       /* --zero: ZeRO stage under data parallelism (0) */
    int pipeline_stages;  /* --pipeline-stages: P ranks in a pipeline; 0: no pipeline */
    int micro_batches;    /* --micro-batches: M a step through the pipeline (1) */
    int pipeline_schedule; /* --pipeline-schedule: a PipeSchedule (1f1b) */
    unsigned given;       /* the StepFlag of every flag given */
} StepOptions;

/* Strategy none with its defaults, planner dp, no budget, no offload, one micro-batch,
 * ZeRO stage 0. */
StepOptions step_options_defaults(void);

/* The table's rows in `accepted` (a set of StepFlag), parsed into *o (base/flags.h). */
FlagSet step_options_flags(StepOptions *o, unsigned accepted);

/* What a run does beyond what its flags say, which decides whether a flag applies to it:
 * strategies it may use besides the one given (a set of 1u << StrategyKind; a bench's
 * sweep), whether it offloads without --offload, whether its dropout masks are
 * counter-based (a GPT whose dropout draws from DROPOUT_RNG_COUNTER: nothing for a replay
 * to restore, so --no-rng-replay changes nothing) and whether it has more than one rank
 * (--zero shards across them). train's run does what its flags say and nothing else. */
typedef struct StepScope {
    unsigned strategies;
    bool offloads;
    bool counter_masks; /* dropout masks from Philox, made again from their counters */
    bool several_ranks; /* under mpirun with two ranks or more */
} StepScope;

/* REMAT_OK if every flag given applies to a run of the strategy given (none by default),
 * offloading when --offload was given, and doing what `more` adds (as above; also
 * --no-rng-replay with counter masks, --zero in one process), and the flags make sense
 * together; else REMAT_EINVAL with a message that names the flag and says why. Together
 * they refuse --strategy budget without --memory-budget, --planner revolve with
 * --no-rng-replay or --determinism-check, budget with --offload. */
RematStatus step_options_check(const StepOptions *o, StepScope more);

#endif /* REMAT_APP_STEP_OPTIONS_H */
