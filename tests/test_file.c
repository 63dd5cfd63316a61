/*
 * test_file.c — opening files given by name and checking paths to write: a FIFO is refused
 * at once instead of waited on, and a path is writable only when its directory takes a new
 * file and nothing but a regular file would be replaced. Every check changes nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"

/* A scratch folder made once for the group; every test leaves it empty. */
static char scratch[256];

static int group_setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/remat_test_file.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(scratch) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return rmdir(scratch);
}

static void scratch_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", scratch, name);
}

static int scratch_entries(void)
{
    DIR *dir = opendir(scratch);
    assert_non_null(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(dir);
    return n;
}

/* Asserts that the last error is `status` and mentions each of the fragments (up to 3). */
static void assert_error(RematStatus status, const char *a, const char *b, const char *c)
{
    assert_int_equal(remat_last_status(), status);
    const char *fragments[] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (fragments[i] && !strstr(remat_last_error(), fragments[i]))
            fail_msg("message \"%s\" should say \"%s\"", remat_last_error(), fragments[i]);
}

/* ---- reading ------------------------------------------------------------------------ */

static void test_open_regular_gives_descriptor_and_size(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "five.txt");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("hello", f);
    assert_int_equal(fclose(f), 0);

    int fd = -1;
    uint64_t size = 0;
    assert_int_equal(file_open_regular("test", path, &fd, &size), REMAT_OK);
    assert_true(size == 5);
    char buf[8] = "";
    assert_int_equal(read(fd, buf, sizeof buf), 5);
    assert_string_equal(buf, "hello");
    close(fd);
    assert_int_equal(unlink(path), 0);
}

/* The alarm turns a hang in open() into a failed test. */
static void test_open_regular_refuses_a_fifo_without_waiting(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "pipe");
    assert_int_equal(mkfifo(path, 0600), 0);
    int fd = -7;
    uint64_t size = 99;
    alarm(10);
    const RematStatus status = file_open_regular("reader", path, &fd, &size);
    alarm(0);
    assert_int_equal(status, REMAT_EIO);
    assert_error(REMAT_EIO, "reader: ", path, "is a FIFO, not a regular file");
    assert_int_equal(fd, -7);
    assert_true(size == 99);
    assert_int_equal(unlink(path), 0);
}

static void test_open_regular_refuses_directories_devices_and_missing_files(void **state)
{
    (void)state;
    int fd;
    uint64_t size;
    assert_int_equal(file_open_regular("r", scratch, &fd, &size), REMAT_EIO);
    assert_error(REMAT_EIO, scratch, "is a directory, not a regular file", NULL);
    assert_int_equal(file_open_regular("r", "/dev/null", &fd, &size), REMAT_EIO);
    assert_error(REMAT_EIO, "/dev/null is a character device, not a regular file", NULL, NULL);
    char missing[512];
    scratch_path(missing, sizeof missing, "missing.txt");
    assert_int_equal(file_open_regular("r", missing, &fd, &size), REMAT_EIO);
    assert_error(REMAT_EIO, missing, strerror(ENOENT), NULL);
    assert_int_equal(file_open_regular("r", NULL, &fd, &size), REMAT_EINVAL);
}

static void test_directory_of_a_path(void **state)
{
    (void)state;
    const struct { const char *path, *dir; } cases[] = {
        {"model.st", "."}, {"/model.st", "/"}, {"a/b/model.st", "a/b"}, {"/a/model.st", "/a"}, {"a/", "a"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir = file_directory(cases[i].path);
        assert_non_null(dir);
        assert_string_equal(dir, cases[i].dir);
        free(dir);
    }
}

/* ---- writing ------------------------------------------------------------------------ */

static void test_check_writable_accepts_a_new_or_regular_file(void **state)
{
    (void)state;
    char path[512];
    scratch_path(path, sizeof path, "new.st");
    assert_int_equal(file_check_writable(path), REMAT_OK);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(file_check_writable(path), REMAT_OK);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(scratch_entries(), 0); /* the probe left nothing behind */
}

/* Issue 16: `train --save /dev/null` as root replaced the device node by a regular file. */
static void test_check_writable_refuses_what_a_rename_would_replace(void **state)
{
    (void)state;
    char fifo[512], dir[512], link[512], target[512];
    scratch_path(fifo, sizeof fifo, "fifo");
    scratch_path(dir, sizeof dir, "dir");
    scratch_path(link, sizeof link, "link");
    scratch_path(target, sizeof target, "target");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(mkdir(dir, 0700), 0);
    FILE *f = fopen(target, "w");
    assert_non_null(f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(symlink(target, link), 0);

    const struct { const char *path, *says; } cases[] = {
        {"/dev/null", "it is a character device, not a regular file"},
        {"/dev/full", "it is a character device, not a regular file"},
        {fifo, "it is a FIFO, not a regular file"},
        {dir, "it is a directory, not a regular file"},
        {link, "it is a symbolic link, not a regular file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        remat_clear_error();
        assert_int_equal(file_check_writable(cases[i].path), REMAT_EIO);
        assert_error(REMAT_EIO, cases[i].path, cases[i].says, NULL);
    }
    assert_int_equal(unlink(fifo), 0);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(unlink(link), 0);
    assert_int_equal(unlink(target), 0);
}

static void test_check_writable_refuses_a_missing_or_unwritable_directory(void **state)
{
    (void)state;
    char missing[512], file[512], under_file[512], slash[512];
    scratch_path(missing, sizeof missing, "no/such/dir/x.st");
    scratch_path(file, sizeof file, "plain");
    scratch_path(under_file, sizeof under_file, "plain/x.st");
    scratch_path(slash, sizeof slash, "x.st/");
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    assert_int_equal(fclose(f), 0);

    assert_int_equal(file_check_writable(missing), REMAT_EIO);
    assert_error(REMAT_EIO, missing, strerror(ENOENT), NULL);
    assert_int_equal(file_check_writable(under_file), REMAT_EIO);
    assert_error(REMAT_EIO, under_file, strerror(ENOTDIR), NULL);
    assert_int_equal(file_check_writable(slash), REMAT_EIO);
    assert_error(REMAT_EIO, slash, "ends in '/'", NULL);
    assert_int_equal(file_check_writable(""), REMAT_EINVAL);
    assert_int_equal(file_check_writable(NULL), REMAT_EINVAL);
    /* Root ignores permission bits, so as root the unwritable directory is /proc, where
     * no one may create a file. */
    char readonly[512], inside[600];
    scratch_path(readonly, sizeof readonly, "read-only");
    assert_int_equal(mkdir(readonly, 0555), 0);
    snprintf(inside, sizeof inside, "%s/x.st", geteuid() == 0 ? "/proc" : readonly);
    assert_int_equal(file_check_writable(inside), REMAT_EIO);
    assert_error(REMAT_EIO, inside, "cannot create a file in", NULL);
    assert_int_equal(rmdir(readonly), 0);
    assert_int_equal(unlink(file), 0);
    assert_int_equal(scratch_entries(), 0);
}

/* ---- reading whole files, and comparing paths ---------------------------------------- */

static void test_read_all_reads_a_regular_file_and_refuses_the_rest(void **state)
{
    (void)state;
    char path[512], fifo[512];
    scratch_path(path, sizeof path, "whole.txt");
    scratch_path(fifo, sizeof fifo, "whole.fifo");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("twelve bytes", f);
    assert_int_equal(fclose(f), 0);
    char *text = NULL;
    size_t size = 0;
    assert_int_equal(file_read_all("reader", path, 100, &text, &size), REMAT_OK);
    assert_int_equal(size, 12);
    assert_string_equal(text, "twelve bytes");
    free(text);
    assert_int_equal(file_read_all("reader", path, 11, &text, &size), REMAT_EIO); /* over the cap */
    assert_error(REMAT_EIO, "reader: ", "holds 12 bytes, more than the 11", NULL);
    assert_int_equal(file_read_all("reader", scratch, 100, &text, &size), REMAT_EIO);
    assert_error(REMAT_EIO, "is a directory, not a regular file", NULL, NULL);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    assert_int_equal(file_read_all("reader", fifo, 100, &text, &size), REMAT_EIO); /* at once, no writer */
    assert_error(REMAT_EIO, "is a FIFO, not a regular file", NULL, NULL);
    assert_int_equal(unlink(fifo), 0);
    assert_int_equal(unlink(path), 0);
}

static void test_same_path_sees_through_spellings(void **state)
{
    (void)state;
    char a[512], dotted[600], other[512];
    scratch_path(a, sizeof a, "same.st");
    snprintf(dotted, sizeof dotted, "%s/./same.st", scratch);
    scratch_path(other, sizeof other, "other.st");
    assert_true(file_same_path(a, dotted)); /* neither exists: the same name in one directory */
    assert_false(file_same_path(a, other));
    FILE *f = fopen(a, "w");
    assert_non_null(f);
    assert_int_equal(fclose(f), 0);
    assert_true(file_same_path(dotted, a)); /* it exists: the same inode */
    assert_false(file_same_path(a, NULL));
    assert_int_equal(unlink(a), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_regular_gives_descriptor_and_size),
        cmocka_unit_test(test_open_regular_refuses_a_fifo_without_waiting),
        cmocka_unit_test(test_open_regular_refuses_directories_devices_and_missing_files),
        cmocka_unit_test(test_directory_of_a_path),
        cmocka_unit_test(test_check_writable_accepts_a_new_or_regular_file),
        cmocka_unit_test(test_check_writable_refuses_what_a_rename_would_replace),
        cmocka_unit_test(test_check_writable_refuses_a_missing_or_unwritable_directory),
        cmocka_unit_test(test_read_all_reads_a_regular_file_and_refuses_the_rest),
        cmocka_unit_test(test_same_path_sees_through_spellings),
    };
    return cmocka_run_group_tests_name("file", tests, group_setup, group_teardown);
}
