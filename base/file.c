/*
 * file.c — opening files to read, checking paths to write, and replacing files (see file.h).
 */
#define _GNU_SOURCE /* O_TMPFILE (Linux 3.11): a file that has no name yet; linkat naming it; asprintf; mkostemp */

#include "base/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *file_kind(mode_t mode)
{
    static const struct { mode_t type; const char *name; } KINDS[] = {
        {S_IFREG, "a regular file"}, {S_IFDIR, "a directory"}, {S_IFIFO, "a FIFO"}, {S_IFCHR, "a character device"},
        {S_IFBLK, "a block device"}, {S_IFSOCK, "a socket"}, {S_IFLNK, "a symbolic link"}};
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if ((mode & S_IFMT) == KINDS[i].type) return KINDS[i].name;
    return "a file of unknown kind";
}

RematStatus file_open_regular(const char *who, const char *path, int *fd, uint64_t *size)
{
    if (!who || !path || !fd || !size)
        return remat_fail(REMAT_EINVAL, "file_open_regular: a caller's name, a path and two outputs are required");
    struct stat st;
    const int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), open_err = errno;
    /* The type of what was opened (fstat: nothing can be swapped in between); a socket
     * cannot be opened at all (ENXIO), and stat says what it is rather than why not. */
    const bool known = f >= 0 ? fstat(f, &st) == 0 : stat(path, &st) == 0;
    RematStatus status = REMAT_OK;
    int flags;
    if (known && !S_ISREG(st.st_mode))
        status = remat_fail(REMAT_EIO, "%s: %s is %s, not a regular file", who, path, file_kind(st.st_mode));
    else if (f < 0 || !known)
        status = remat_fail(REMAT_EIO, "%s: cannot open %s: %s", who, path, strerror(f < 0 ? open_err : errno));
    /* O_NONBLOCK means nothing to a regular file's reads, but the caller asked for an
     * ordinary descriptor; it is cleared so the flag cannot surprise a later use. */
    else if ((flags = fcntl(f, F_GETFL)) < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0)
        status = remat_fail(REMAT_EIO, "%s: cannot make %s blocking: %s", who, path, strerror(errno));
    if (status != REMAT_OK) {
        if (f >= 0) close(f);
        return status;
    }
    *fd = f;
    *size = (uint64_t)st.st_size;
    return REMAT_OK;
}

char *file_directory(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    char *dir = !slash ? strdup(".") : slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
    return dir ? dir : remat_fail_null(REMAT_ENOMEM, "file_directory: no memory");
}

int file_create_new(const char *dir, char *name, bool unnamed, bool *named)
{
    *named = false;
    if (unnamed) {
        const int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
    }
    const int fd = mkostemp(name, O_CLOEXEC);
    *named = fd >= 0;
    return fd;
}

/* The letters of a temporary file's XXXXXX, as mkostemp and name_unnamed choose them. */
static const char TEMP_LETTERS[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/* Removes, best effort, what killed replacements of `path` left in `dir`: the names PATH.tmp.
 * and six letters or digits. */
static void remove_leftovers(const char *dir, const char *path)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const size_t n = strlen(base);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, base, n) != 0 || strncmp(e->d_name + n, ".tmp.", 5) != 0) continue;
        const char *x = e->d_name + n + 5;
        if (strlen(x) == 6 && strspn(x, TEMP_LETTERS) == 6) unlinkat(dirfd(d), e->d_name, 0);
    }
    if (d) closedir(d);
}

/* Ends a replacement, done or failed: closes the new file and removes it while it still
 * has its temporary name (not renamed over the path). */
static void replace_end(FileReplacement *f)
{
    if (f->out) fclose(f->out);
    if (f->named) unlink(f->tmp);
    free(f->tmp);
    *f = (FileReplacement){0};
}

int file_replace_start(FileReplacement *f, const char *path, bool unnamed)
{
    *f = (FileReplacement){.path = path};
    char *dir = file_directory(path);
    if (!dir || asprintf(&f->tmp, "%s.tmp.XXXXXX", path) < 0) {
        free(dir);
        f->tmp = NULL; /* asprintf leaves it undefined when it fails */
        return ENOMEM;
    }
    remove_leftovers(dir, path);
    unnamed = unnamed && access("/proc/self/fd", X_OK) == 0; /* the way to name it later */
    const int fd = file_create_new(dir, f->tmp, unnamed, &f->named);
    free(dir);
    /* A new file is private (0600); the file it replaces is an ordinary one. */
    if (fd >= 0 && fchmod(fd, 0644) == 0 && (f->out = fdopen(fd, "w"))) return 0;
    const int err = errno;
    if (fd >= 0) close(fd);
    replace_end(f);
    return err;
}

/* Gives the unnamed file `fd` the name `tmp`, its last six characters (XXXXXX) chosen
 * so that no file has that name yet. Returns 0 or an errno value. */
static int name_unnamed(int fd, char *tmp)
{
    const size_t n_letters = sizeof TEMP_LETTERS - 1;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    char *x = tmp + strlen(tmp) - 6;
    for (uint64_t attempt = 0; attempt < 100; attempt++) {
        uint64_t v = (uint64_t)getpid() * 1000003u + attempt;
        for (int i = 0; i < 6; i++, v /= n_letters) x[i] = TEMP_LETTERS[v % n_letters];
        if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) return 0;
        if (errno != EEXIST) return errno;
    }
    return EEXIST;
}

/* Flushes the directory of `path`, so that a rename into it survives a crash. Returns 0
 * or an errno value. */
static int fsync_directory(const char *path)
{
    char *dir = file_directory(path);
    const int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    const int err = !dir ? ENOMEM : fd < 0 || fsync(fd) != 0 ? errno : 0;
    if (fd >= 0) close(fd);
    free(dir);
    return err;
}

int file_replace_finish(FileReplacement *f, bool durable, const char **step)
{
    *step = "write";
    int err = ferror(f->out) || fflush(f->out) != 0 ? (errno ? errno : EIO) : 0;
    if (!err && durable) {
        *step = "fsync";
        err = fsync(fileno(f->out)) != 0 ? errno : 0;
    }
    if (!err && !f->named) {
        *step = "naming the temporary file";
        err = name_unnamed(fileno(f->out), f->tmp);
        f->named = !err;
    }
    FILE *out = f->out;
    f->out = NULL;
    if (fclose(out) != 0 && !err) { /* closed in every case: a failed file is removed below */
        *step = "close";
        err = errno;
    }
    if (!err && rename(f->tmp, f->path) != 0) {
        *step = "rename";
        err = errno;
    }
    if (!err) f->named = false; /* it is the file at the path now */
    if (!err && durable) {
        *step = FILE_STEP_DIRECTORY;
        err = fsync_directory(f->path);
    }
    replace_end(f);
    return err;
}

RematStatus file_replace_text(const char *who, const char *path, const char *text)
{
    FileReplacement f; /* a reader finds the old file or the new one, never a part */
    const char *step = "creating a temporary file beside it";
    int err = file_replace_start(&f, path, true);
    if (!err) {
        fputs(text, f.out);
        err = file_replace_finish(&f, false, &step);
    }
    return err ? remat_fail(REMAT_EIO, "%s %s: %s failed: %s", who, path, step, strerror(err)) : REMAT_OK;
}

/* Whether this process may create a file in `dir`, found by creating one: an unnamed
 * O_TMPFILE, which vanishes when closed; on a file system without O_TMPFILE (or one such
 * as /proc that refuses it), a named file removed at once. access(2) would not do: for
 * root it says yes to any directory, /proc included. Returns 0 or an errno value. */
static int can_create_in(const char *dir)
{
    char *probe;
    if (asprintf(&probe, "%s/.remat-write-check-XXXXXX", dir) < 0) return ENOMEM;
    bool named;
    const int fd = file_create_new(dir, probe, true, &named);
    const int err = fd < 0 ? errno : 0;
    if (named) unlink(probe);
    if (fd >= 0) close(fd);
    free(probe);
    return err;
}

RematStatus file_check_writable(const char *path)
{
    if (!path || !path[0]) return remat_fail(REMAT_EINVAL, "cannot write a file: the path is empty");
    if (path[strlen(path) - 1] == '/')
        return remat_fail(REMAT_EIO, "cannot write %s: the path ends in '/', so it names a directory", path);

    struct stat st;
    const bool exists = lstat(path, &st) == 0;
    if (!exists && errno != ENOENT) return remat_fail(REMAT_EIO, "cannot write %s: %s", path, strerror(errno));
    if (exists && !S_ISREG(st.st_mode))
        return remat_fail(REMAT_EIO, "cannot write %s: it is %s, not a regular file; a file is written by "
                          "renaming a new one over the path, which would replace %s", path, file_kind(st.st_mode),
                          S_ISLNK(st.st_mode) ? "the link, not the file it points to" : "it");

    char *dir = file_directory(path);
    if (!dir) return REMAT_ENOMEM;
    RematStatus status = REMAT_OK;
    int err;
    if (stat(dir, &st) != 0)
        status = remat_fail(REMAT_EIO, "cannot write %s: its directory %s: %s", path, dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        status = remat_fail(REMAT_EIO, "cannot write %s: %s is %s, not a directory", path, dir, file_kind(st.st_mode));
    else if ((err = can_create_in(dir)) != 0)
        status = remat_fail(REMAT_EIO, "cannot write %s: cannot create a file in %s: %s", path, dir, strerror(err));
    free(dir);
    return status;
}

int file_pread_all(int fd, void *buf, size_t len, uint64_t offset)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t)offset);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return -1;
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return 0;
}

RematStatus file_read_all(const char *who, const char *path, size_t max_bytes, char **text, size_t *size)
{
    if (!text || !size) return remat_fail(REMAT_EINVAL, "file_read_all: two outputs are required");
    int fd;
    uint64_t length;
    if (file_open_regular(who, path, &fd, &length) != REMAT_OK) return remat_last_status();
    RematStatus status = REMAT_OK;
    char *buf = NULL;
    if (length > max_bytes)
        status = remat_fail(REMAT_EIO, "%s: %s holds %llu bytes, more than the %zu such a file may have", who, path,
                            (unsigned long long)length, max_bytes);
    else if (!(buf = malloc((size_t)length + 1)))
        status = remat_fail(REMAT_ENOMEM, "%s: no memory to read %s", who, path);
    const int err = status == REMAT_OK ? file_pread_all(fd, buf, (size_t)length, 0) : 0;
    if (err)
        status = remat_fail(REMAT_EIO, "%s: cannot read %s: %s", who, path,
                            err > 0 ? strerror(err) : "it became shorter while being read");
    close(fd);
    if (status != REMAT_OK) {
        free(buf);
        return status;
    }
    buf[length] = '\0';
    *text = buf;
    *size = (size_t)length;
    return REMAT_OK;
}

void file_size_limit_as_error(void)
{
    signal(SIGXFSZ, SIG_IGN);
}

RematStatus file_flush_stdout(void)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return REMAT_OK;
    return remat_fail(REMAT_EIO, "cannot write to standard output: %s", errno ? strerror(errno) : "a write failed");
}

/* The canonical spelling of `path`: its directory resolved (realpath) and its name; NULL
 * when the directory does not resolve. The caller frees it. */
static char *canonical(const char *path)
{
    char *dir = file_directory(path);
    char *real = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    if (!real) return NULL;
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    char *out;
    if (asprintf(&out, "%s/%s", real, name) < 0) out = NULL;
    free(real);
    return out;
}

bool file_same_path(const char *a, const char *b)
{
    if (!a || !b) return false;
    if (!strcmp(a, b)) return true;
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ca = canonical(a), *cb = canonical(b);
    const bool same = ca && cb && !strcmp(ca, cb);
    free(ca);
    free(cb);
    return same;
}
