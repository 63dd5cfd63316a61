/*
 * test_tensor.c — Tensor creation, element types, refcounting, and the errors a bad
 * shape or a budget overrun produce.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "tensor/tensor.h"

static int ledger_empty(void **state)
{
    (void)state;
    mem_set_budget(0);
    remat_clear_error();
    return mem_live_blocks() == 0 && mem_resident() == 0 ? 0 : -1;
}

static void test_create_sets_shape_and_charges_kind(void **state)
{
    (void)state;
    Tensor *t = tensor_create(MEM_ACT, DTYPE_F32, 3, (int[]){8, 128, 256});
    assert_non_null(t);
    assert_int_equal(t->ndim, 3);
    assert_int_equal(t->shape[0], 8);
    assert_int_equal(t->shape[2], 256);
    assert_int_equal(t->shape[3], 1);
    assert_int_equal(t->numel, 8 * 128 * 256);
    assert_int_equal(t->bytes, 8 * 128 * 256 * sizeof(float));
    assert_int_equal(mem_current(MEM_ACT), t->bytes);
    assert_int_equal((uintptr_t)t->data % MEM_ALIGNMENT, 0);
    char buf[32];
    assert_string_equal(tensor_shape_str(buf, sizeof buf, t), "(8,128,256)");
    tensor_free(t);
    assert_int_equal(mem_current(MEM_ACT), 0);
}

static void test_typed_tensors_use_their_element_size(void **state)
{
    (void)state;
    Tensor *mask = tensor_create(MEM_ACT, DTYPE_U8, 2, (int[]){4, 100});
    Tensor *ids = tensor_create(MEM_ACT, DTYPE_I32, 1, (int[]){7});
    assert_non_null(mask);
    assert_non_null(ids);
    /* A dropout mask is one byte per element, a quarter of a float32 tensor. */
    assert_int_equal(mask->bytes, 400);
    assert_int_equal(ids->bytes, 28);
    assert_int_equal(mem_current(MEM_ACT), 428);
    tensor_free(mask);
    tensor_free(ids);
}

static void test_zeros_and_clone(void **state)
{
    (void)state;
    Tensor *z = tensor_zeros(MEM_GRAD, 2, (int[]){3, 5});
    assert_non_null(z);
    for (size_t i = 0; i < z->numel; i++) assert_true(z->f32[i] == 0.0f);
    z->f32[7] = 2.5f;
    Tensor *c = tensor_clone(z, MEM_ACT);
    assert_non_null(c);
    assert_true(tensor_same_shape(z, c));
    assert_int_equal(c->kind, MEM_ACT);
    assert_memory_equal(c->data, z->data, z->bytes);
    assert_int_equal(mem_current(MEM_GRAD), 60);
    assert_int_equal(mem_current(MEM_ACT), 60);
    tensor_free(z);
    tensor_free(c);
}

static void test_refcount_frees_at_last_reference(void **state)
{
    (void)state;
    Tensor *t = tensor_create(MEM_ACT, DTYPE_F32, 1, (int[]){1000});
    assert_ptr_equal(tensor_retain(t), t);
    assert_int_equal(t->refcount, 2);
    tensor_free(t);
    assert_int_equal(mem_current(MEM_ACT), 4000); /* one reference still holds it */
    tensor_free(t);
    assert_int_equal(mem_current(MEM_ACT), 0);
    tensor_free(NULL);
    assert_null(tensor_retain(NULL));
}

static void test_bad_shapes_are_rejected(void **state)
{
    (void)state;
    assert_null(tensor_create(MEM_ACT, DTYPE_F32, 0, (int[]){1}));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_null(tensor_create(MEM_ACT, DTYPE_F32, 5, (int[]){1, 1, 1, 1, 1}));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_null(tensor_create(MEM_ACT, DTYPE_F32, 2, (int[]){4, 0}));
    assert_non_null(strstr(remat_last_error(), "dimension 1 is 0"));
    assert_null(tensor_create(MEM_ACT, DTYPE_F32, 2, (int[]){4, -3}));
    assert_null(tensor_create(MEM_ACT, DTYPE_F32, 2, NULL));
    assert_null(tensor_create(MEM_ACT, DTYPE_F32, 4, (int[]){1 << 30, 1 << 30, 1 << 30, 1 << 30}));
    assert_int_equal(remat_last_status(), REMAT_EINVAL);
    assert_null(tensor_create(MEM_ACT, (DType)9, 1, (int[]){3}));
    assert_null(tensor_clone(NULL, MEM_ACT));
    assert_int_equal(mem_live_blocks(), 0);
}

static void test_budget_overrun_returns_null_and_keeps_ledger(void **state)
{
    (void)state;
    Tensor *params = tensor_create(MEM_PARAM, DTYPE_F32, 1, (int[]){1024});
    mem_set_budget(4096 + 1024);
    Tensor *act = tensor_create(MEM_ACT, DTYPE_F32, 1, (int[]){1024});
    assert_null(act);
    assert_int_equal(remat_last_status(), REMAT_EOOM);
    assert_non_null(strstr(remat_last_error(), "tried to allocate 4.00 KiB of activations"));
    assert_int_equal(mem_resident(), 4096);
    mem_set_budget(0);
    tensor_free(params);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_sets_shape_and_charges_kind, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_typed_tensors_use_their_element_size, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_zeros_and_clone, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_refcount_frees_at_last_reference, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_bad_shapes_are_rejected, ledger_empty, ledger_empty),
        cmocka_unit_test_setup_teardown(test_budget_overrun_returns_null_and_keeps_ledger, ledger_empty, ledger_empty),
    };
    return cmocka_run_group_tests_name("tensor", tests, NULL, NULL);
}
