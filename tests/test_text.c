/*
 * test_text.c — text written to a terminal with its controls made visible (base/text.h):
 * C0 controls but newline and tab, DEL and C1 controls (in UTF-8, or as 8-bit bytes) come
 * out as escapes; Arabic and every other character as they are.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"

/* What text_write_visible writes for the `len` bytes of `text`, into buf. */
static void visible(const char *text, size_t len, const char *indent, char *buf, size_t size)
{
    FILE *f = fmemopen(buf, size, "w");
    assert_non_null(f);
    text_write_visible(f, text, len, indent);
    assert_int_equal(fclose(f), 0);
}

static void test_text_escapes_c0_del_and_c1_controls(void **state)
{
    (void)state;
    char out[256];
    static const char raw[] = "a\x1b[2Jb\x07\rc\x7f" "d\xc2\x9b" "31m\xc2\x80";
    visible(raw, sizeof raw - 1, NULL, out, sizeof out);
    assert_string_equal(out, "a\\x1b[2Jb\\x07\\x0dc\\x7fd\\u009b31m\\u0080");
    visible("x\0y", 3, NULL, out, sizeof out); /* a NUL inside is a character too */
    assert_string_equal(out, "x\\x00y");
}

static void test_text_keeps_valid_utf8_newlines_and_tabs(void **state)
{
    (void)state;
    char out[256];
    static const char arabic[] = "التنشيطات\tإعادة الحساب ✓ · 28.5% \xc2\xa0 \xf0\x9f\x98\x80\n";
    visible(arabic, sizeof arabic - 1, NULL, out, sizeof out);
    assert_string_equal(out, arabic);
    visible("one\ntwo\n", 8, "  ", out, sizeof out); /* each newline followed by the indent */
    assert_string_equal(out, "one\n  two\n  ");
}

static void test_text_escapes_8_bit_c1_bytes_and_passes_other_bytes(void **state)
{
    (void)state;
    char out[256];
    /* A lone 0x9B (CSI to an 8-bit terminal) and the stray 0x80 of a surrogate are escaped;
     * a truncated sequence, an overlong '/', the rest of the surrogate and a lead byte at
     * the very end, none of them a control anywhere, pass as they are. */
    static const char raw[] = "\x9b" "1m \xd8 \xc0\xaf \xed\xa0\x80 \xe2";
    visible(raw, sizeof raw - 1, NULL, out, sizeof out);
    assert_string_equal(out, "\\x9b1m \xd8 \xc0\xaf \xed\xa0\\x80 \xe2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_escapes_c0_del_and_c1_controls),
        cmocka_unit_test(test_text_keeps_valid_utf8_newlines_and_tabs),
        cmocka_unit_test(test_text_escapes_8_bit_c1_bytes_and_passes_other_bytes),
    };
    return cmocka_run_group_tests_name("text", tests, NULL, NULL);
}
