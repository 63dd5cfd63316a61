/*
 * test_dtr_run.c — --strategy dtr on the real models (checkpoint/dtr_run.c).
 *
 * A budget below what `none` holds, so that the runtime must evict and rematerialise: the
 * MLP chain and the GPT (dropout 0.2 from the PCG32 stream and from the counter, naive and
 * fused attention, with the determinism check on) train to none's losses, gradients and
 * parameters, to the bit; the ledger never passes the budget; evictions and layer replays
 * happen. A budget too small fails the step with the ledger's out-of-memory message and the
 * parameters as they were; a budget that thrashes past the stated bound is an error; a
 * replay without the generator is caught by the determinism check. Evictions and
 * rematerialisations are marks on the ledger's timeline, as many as the runtime counts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tests/fixture_train.h"
#include "checkpoint/dtr.h"

static const Trainee MLP8 = {.kind = "mlp", .layers = 8, .width = 32};
static const Trainee GPT_STREAM = {.kind = "gpt", .layers = 4, .dropout = 0.2f};
static const Trainee GPT_COUNTER = {.kind = "gpt", .layers = 4, .dropout = 0.2f, .dropout_rng = DROPOUT_RNG_COUNTER};
static const Trainee GPT_FUSED = {.kind = "gpt", .layers = 4, .dropout = 0.2f, .dropout_rng = DROPOUT_RNG_COUNTER,
                                  .attention = ATTENTION_FUSED};

/* Plain training, with its steps' peaks. */
static void train_plain(const Trainee *t, Outcome *plain)
{
    assert_int_equal(fixture_train(t, &(Way){.step_peaks = true}, plain), REMAT_OK);
    assert_true(plain->peak_act > 0);
}

/* Training under DTR within `budget` beside what is resident now (what plain training kept of
 * its outcome), tensors rematerialised at most `max_remats` times a step (0: the default);
 * what the runtime did in *did. Its status. */
static RematStatus train_dtr(const Trainee *t, size_t budget, int max_remats, RegionReplay replay,
                             Outcome *o, DtrStats *did)
{
    budget += mem_resident();
    Strategy st = strategy_defaults(STRATEGY_DTR);
    st.replay = replay;
    Schedule *s = schedule_for_strategy(&st, t->layers);
    assert_non_null(s);
    assert_int_equal(s->n_segments, 1);
    assert_int_equal(s->segments[0].kind, SEGMENT_DTR);
    s->max_remats = max_remats;
    const DtrStats before = dtr_stats();
    const RematStatus status = fixture_train(t, &(Way){.schedule = s, .memory_budget = budget, .step_peaks = true}, o);
    const DtrStats after = dtr_stats();
    *did = (DtrStats){after.evictions - before.evictions, after.remats - before.remats, after.replays - before.replays,
                      after.choose_seconds - before.choose_seconds};
    schedule_free(s);
    assert_true(o->peak <= budget); /* the ledger never passes the budget */
    return status;
}

static const RegionReplay REPLAYED = {.preserve_rng = true};
static const RegionReplay CHECKED = {.preserve_rng = true, .determinism_check = true};

/* Bit-identical to none at every budget from none's peak down, 10% of none's activation peak
 * at a time, with and without the determinism check, until one is too small (the ledger's
 * message). The runtime must have evicted and rematerialised at some. */
static void assert_same_as_plain(const Trainee *t)
{
    Outcome plain;
    train_plain(t, &plain);
    int evicting = 0;
    for (int k = 0; k < 10; k++) {
        const size_t budget = plain.peak - plain.peak_act * (size_t)k / 10;
        RematStatus status = REMAT_OK;
        for (int check = 0; check < 2 && status == REMAT_OK; check++) {
            Outcome o;
            DtrStats did;
            char what[128];
            snprintf(what, sizeof what, "%s (%d blocks, %s, %s), dtr at none's peak - %d%% of its activations%s",
                     t->kind, t->layers, name_of(&DROPOUT_RNG_NAMES, t->dropout_rng),
                     t->attention == ATTENTION_FUSED ? "fused" : "naive", 10 * k, check ? ", checked" : "");
            status = train_dtr(t, budget, 0, check ? CHECKED : REPLAYED, &o, &did);
            if (status == REMAT_OK) {
                assert_same_outcome(&plain, &o, what);
                printf("  %s: identical to none; %lld evictions, %lld tensors rematerialised by %lld layer replays\n",
                       what, (long long)did.evictions, (long long)did.remats, (long long)did.replays);
                evicting += did.evictions > 0 && did.remats > 0 && did.replays > 0;
            } else if (status == REMAT_EOOM) {
                printf("  %s: %s\n", what, remat_last_error());
                remat_clear_error();
            } else {
                fail_msg("%s: %s", what, remat_last_error());
            }
            outcome_free(&o);
        }
        if (status != REMAT_OK) break;
    }
    assert_true(evicting > 0);
    outcome_free(&plain);
}

static void test_the_mlp_chain_is_bit_identical_to_none(void **state)
{
    (void)state;
    assert_same_as_plain(&MLP8);
}

static void test_the_gpt_with_the_stream_is_bit_identical_to_none(void **state)
{
    (void)state;
    assert_same_as_plain(&GPT_STREAM);
}

static void test_the_gpt_with_the_counter_is_bit_identical_to_none(void **state)
{
    (void)state;
    assert_same_as_plain(&GPT_COUNTER);
}

static void test_the_gpt_with_fused_attention_is_bit_identical_to_none(void **state)
{
    (void)state;
    assert_same_as_plain(&GPT_FUSED);
}

/* Enough for everything: nothing is evicted, and it is none. */
static void test_a_budget_that_holds_everything_evicts_nothing(void **state)
{
    (void)state;
    Outcome plain, o;
    train_plain(&GPT_STREAM, &plain);
    DtrStats did;
    assert_int_equal(train_dtr(&GPT_STREAM, plain.peak, 0, REPLAYED, &o, &did), REMAT_OK);
    assert_same_outcome(&plain, &o, "dtr with none's peak as its budget");
    assert_int_equal(did.evictions, 0);
    assert_int_equal(did.remats, 0);
    outcome_free(&o);
    outcome_free(&plain);
}

/* No room for activations at all: the first step fails with the ledger's message, and the
 * parameters are those the model was built with. */
static void test_a_budget_too_small_fails_cleanly(void **state)
{
    (void)state;
    const Trainee *t = &GPT_STREAM;
    Outcome plain, o;
    train_plain(t, &plain);
    DtrStats did;
    const RematStatus status = train_dtr(t, plain.peak - plain.peak_act, 0, REPLAYED, &o, &did);
    assert_int_equal(status, REMAT_EOOM);
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "out of memory: tried to allocate"));
    Model *fresh = fixture_model(t);
    assert_non_null(fresh);
    for (int i = 0; i < fresh->n_params; i++)
        assert_memory_equal(o.params[i]->data, fresh->params[i].var->value->data, o.params[i]->bytes);
    model_free(fresh);
    outcome_free(&o);
    outcome_free(&plain);
}

/* Rematerialising a tensor more often than the bound allows in one step is an error. */
static void test_thrashing_past_the_bound_is_an_error(void **state)
{
    (void)state;
    Outcome plain, o;
    train_plain(&MLP8, &plain);
    DtrStats did;
    const size_t budget = plain.peak - plain.peak_act * 11 / 20; /* 44 tensors rematerialised, a bound of 8 holds */
    const RematStatus status = train_dtr(&MLP8, budget, 1, REPLAYED, &o, &did);
    assert_int_equal(status, REMAT_ESTATE);
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "thrashes"));
    outcome_free(&o);
    outcome_free(&plain);
}

/* A replay that does not restore the stream draws other masks: the check says so. */
static void test_the_determinism_check_catches_a_replay_without_the_generator(void **state)
{
    (void)state;
    Outcome plain, o;
    train_plain(&GPT_STREAM, &plain);
    DtrStats did;
    const size_t budget = plain.peak - plain.peak_act * 13 / 20; /* dropouts' outputs evicted too */
    const RegionReplay unreplayed = {.determinism_check = true};
    const RematStatus status = train_dtr(&GPT_STREAM, budget, 0, unreplayed, &o, &did);
    assert_int_equal(status, REMAT_ESTATE);
    printf("  %s\n", remat_last_error());
    assert_non_null(strstr(remat_last_error(), "other bytes"));
    outcome_free(&o);
    outcome_free(&plain);
}

/* Every eviction and every tensor taken back is a mark on the ledger's timeline, as many as
 * the runtime counts, each changing no bytes; the bytes evicted are freed right after. */
static void test_evictions_and_remats_are_marks_on_the_timeline(void **state)
{
    (void)state;
    Outcome plain, o;
    train_plain(&MLP8, &plain);
    DtrStats did;
    assert_int_equal(mem_timeline_start(1 << 20), REMAT_OK);
    assert_int_equal(train_dtr(&MLP8, plain.peak - plain.peak_act / 2, 0, REPLAYED, &o, &did), REMAT_OK);
    mem_timeline_stop();
    assert_int_equal(mem_timeline_dropped(), 0);
    size_t n;
    const MemEvent *e = mem_timeline_events(&n);
    int64_t evictions = 0, remats = 0;
    for (size_t i = 0; i < n; i++) {
        if (!e[i].label) continue;
        assert_int_equal(e[i].delta, 0);
        assert_int_equal(e[i].kind, MEM_ACT);
        if (!strcmp(e[i].label, "dtr.evict")) {
            evictions++;
            assert_true(i + 1 < n && e[i + 1].delta < 0 && e[i + 1].kind == MEM_ACT); /* the eviction's free */
        } else {
            assert_string_equal(e[i].label, "dtr.remat");
            remats++;
        }
    }
    printf("  %lld evictions and %lld remats on the timeline\n", (long long)evictions, (long long)remats);
    assert_true(did.evictions > 0 && did.remats > 0);
    assert_int_equal(evictions, did.evictions);
    assert_int_equal(remats, did.remats);
    assert_true(did.choose_seconds > 0);
    mem_timeline_free();
    outcome_free(&o);
    outcome_free(&plain);
}

/* Strategy dtr's schedule: one DTR segment, alone; beside another it is refused. */
static void test_the_schedule_is_one_dtr_segment(void **state)
{
    (void)state;
    assert_string_equal(name_of(&STRATEGY_NAMES, STRATEGY_DTR), "dtr");
    const Segment two[] = {{0, 2, SEGMENT_DTR, NULL, 0}, {2, 2, SEGMENT_PLAIN, NULL, 0}};
    assert_null(schedule_create(STRATEGY_DTR, two, 2, 4));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    remat_clear_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_the_schedule_is_one_dtr_segment, fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_the_mlp_chain_is_bit_identical_to_none, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_the_gpt_with_the_stream_is_bit_identical_to_none, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_the_gpt_with_the_counter_is_bit_identical_to_none, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_the_gpt_with_fused_attention_is_bit_identical_to_none,
                                        fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_a_budget_that_holds_everything_evicts_nothing, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_a_budget_too_small_fails_cleanly, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_thrashing_past_the_bound_is_an_error, fixture_clean_state,
                                        fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_the_determinism_check_catches_a_replay_without_the_generator,
                                        fixture_clean_state, fixture_clean_state),
        cmocka_unit_test_setup_teardown(test_evictions_and_remats_are_marks_on_the_timeline, fixture_clean_state,
                                        fixture_clean_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
