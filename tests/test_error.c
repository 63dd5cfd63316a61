/*
 * test_error.c — the error convention: remat_fail records a status and a formatted
 * message per thread, and remat_clear_error forgets it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/platform.h"

static void test_fail_records_status_and_message(void **state)
{
    (void)state;
    remat_clear_error();
    assert_string_equal(remat_last_error(), "");
    assert_int_equal(remat_last_status(), REMAT_OK);
    assert_int_equal(remat_fail(REMAT_EINVAL, "bad shape %d x %d", 3, 4), REMAT_EINVAL);
    assert_string_equal(remat_last_error(), "bad shape 3 x 4");
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    remat_clear_error();
    assert_string_equal(remat_last_error(), "");
}

static void test_long_messages_are_truncated_not_overflowed(void **state)
{
    (void)state;
    char longer[2000];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    remat_fail(REMAT_EIO, "%s", longer);
    size_t len = strlen(remat_last_error());
    assert_true(len > 100 && len < sizeof longer - 1);
}

static void *fail_on_other_thread(void *arg)
{
    (void)arg;
    remat_fail(REMAT_ECORRUPT, "other thread");
    return NULL;
}

static void test_errors_are_per_thread(void **state)
{
    (void)state;
    remat_fail(REMAT_EOOM, "main thread");
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, fail_on_other_thread, NULL), 0);
    pthread_join(thread, NULL);
    assert_string_equal(remat_last_error(), "main thread");
    assert_int_equal(remat_last_status(), REMAT_EOOM);
}

static void test_thread_count_is_validated(void **state)
{
    (void)state;
    PlatformInfo before = platform_info();
    assert_int_equal(platform_set_threads(0), REMAT_EINVAL);
    assert_non_null(strstr(remat_last_error(), "thread count 0"));
    assert_int_equal(platform_set_threads(100000), REMAT_EINVAL);
    assert_int_equal(platform_info().threads, before.threads);
    assert_int_equal(platform_set_threads(1), REMAT_OK);
    assert_int_equal(platform_info().threads, 1);
    assert_int_equal(platform_set_threads(before.threads), REMAT_OK);
}

static void test_openblas_is_the_openmp_build(void **state)
{
    (void)state;
    PlatformInfo info = platform_info();
    assert_non_null(info.blas_config);
    assert_non_null(info.blas_core);
    if (info.blas_warning) fail_msg("%s", info.blas_warning);
    assert_string_equal(info.blas_threading, "openmp");
}

/* What platform_info says of OpenMP's waits follows the two variables libgomp reads, the
 * wait policy first. */
static void test_omp_wait_names_the_variable_set(void **state)
{
    (void)state;
    char policy[64] = "", spin[64] = "";
    const char *p = getenv("OMP_WAIT_POLICY"), *s = getenv("GOMP_SPINCOUNT");
    if (p) snprintf(policy, sizeof policy, "%s", p);
    if (s) snprintf(spin, sizeof spin, "%s", s);
    unsetenv("OMP_WAIT_POLICY");
    unsetenv("GOMP_SPINCOUNT");
    assert_string_equal(platform_info().omp_wait, "default");
    setenv("GOMP_SPINCOUNT", "1234", 1);
    assert_string_equal(platform_info().omp_wait, "GOMP_SPINCOUNT=1234");
    setenv("OMP_WAIT_POLICY", "passive", 1);
    assert_string_equal(platform_info().omp_wait, "OMP_WAIT_POLICY=passive");
    unsetenv("OMP_WAIT_POLICY");
    unsetenv("GOMP_SPINCOUNT");
    if (p) setenv("OMP_WAIT_POLICY", policy, 1);
    if (s) setenv("GOMP_SPINCOUNT", spin, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fail_records_status_and_message),
        cmocka_unit_test(test_long_messages_are_truncated_not_overflowed),
        cmocka_unit_test(test_errors_are_per_thread),
        cmocka_unit_test(test_omp_wait_names_the_variable_set),
        cmocka_unit_test(test_thread_count_is_validated),
        cmocka_unit_test(test_openblas_is_the_openmp_build),
    };
    return cmocka_run_group_tests_name("error", tests, NULL, NULL);
}
