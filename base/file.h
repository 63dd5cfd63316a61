/*
 * file.h — the files remat is given by name (a text corpus, a model file to load, a path
 * to save to), checked the same way in every room before anything is read or written.
 *
 * Reading. A plain open(2) of a FIFO waits until something opens its other end, so a
 * "not a regular file" check made after opening comes too late: `train --data FIFO` hung
 * for ever. file_open_regular opens with O_NONBLOCK, which returns at once for a FIFO or
 * a device, checks the type of what it opened (fstat on the descriptor, so nothing can
 * be swapped in between), and only then makes the descriptor blocking again.
 *
 * Writing. remat writes a file by renaming a finished temporary file over the path
 * (file_replace_finish), and rename replaces whatever the path named — a device node
 * such as /dev/null included, when run as root. file_check_writable refuses such a
 * target, and a missing or unwritable directory, before any work is done, so a program
 * can call it at start-up rather than learn it after hours of training.
 *
 * What this is not: a file abstraction. Callers get a plain descriptor and use the
 * system calls they need.
 */
#ifndef REMAT_FILE_H
#define REMAT_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/error.h"

/* What kind of file `mode` (a struct stat's st_mode) describes, for messages: "a regular
 * file", "a directory", "a FIFO", "a character device", "a block device", "a socket",
 * "a symbolic link". */
const char *file_kind(mode_t mode);

/* Opens the regular file at `path` for reading, without blocking on a FIFO. On success
 * stores a descriptor (close-on-exec, blocking; the caller closes it) in *fd and the
 * file's size in *size. On error stores nothing and returns REMAT_EIO, with a message that
 * begins with `who` and names the path and the reason ("cannot open X: No such file or
 * directory", "X is a FIFO, not a regular file"); REMAT_EINVAL for a NULL argument. */
RematStatus file_open_regular(const char *who, const char *path, int *fd, uint64_t *size);

/* The directory part of `path`, as a new string the caller frees: "." for a bare name,
 * "/" for "/name". NULL with REMAT_ENOMEM. */
char *file_directory(const char *path);

/* Creates a new file, open for writing and reading, in directory `dir`, mode 0600:
 * without a name (O_TMPFILE, which the kernel frees if the process dies) when `unnamed`
 * asks for it and the file system has it; otherwise by mkstemp(`name`), whose last six
 * characters XXXXXX become the file's, and *named is set. Returns the descriptor
 * (close-on-exec; the caller closes it and removes a named file), or -1 with errno set and
 * nothing created. */
int file_create_new(const char *dir, char *name, bool unnamed, bool *named);

/* A file written whole before it replaces the one at `path`: a new file (never one that
 * was there, so a planted link or FIFO is not followed), without a name while it is written
 * where the file system allows (file_create_new), so that a kill leaves nothing behind, and
 * named PATH.tmp.XXXXXX then renamed over the path only once complete: a reader finds the
 * old file or the new one, never a part of one. A kill between naming and renaming (the
 * whole write, for a named file) leaves PATH.tmp.XXXXXX behind, which the next replacement
 * of the path removes; two replacements of one path at the same time are not supported. */
typedef struct FileReplacement {
    FILE *out;        /* where the contents go (fileno(out) for write(2)) */
    const char *path; /* the file it replaces (borrowed) */
    char *tmp;        /* PATH.tmp.XXXXXX, its name once it has one */
    bool named;       /* whether `tmp` exists (and must be removed if the write fails) */
} FileReplacement;

/* Starts the replacement of `path`, mode 0644 (an ordinary file, as under umask 022):
 * unnamed when `unnamed` asks for it and the system allows (naming it later goes through
 * /proc/self/fd), else named at once. Returns 0 or an errno value, with nothing created. */
int file_replace_start(FileReplacement *f, const char *path, bool unnamed);

/* Finishes what file_replace_start began: flushes the contents (and, when `durable`, to
 * the disk), names the file, closes it, renames it over the path and, when `durable`,
 * flushes the directory so that the rename survives a crash. Returns 0, or an errno value
 * with *step naming what failed ("write", "fsync", "naming the temporary file", "close",
 * "rename", or FILE_STEP_DIRECTORY: the file was replaced, its directory not flushed);
 * until the rename the old file is untouched and a failure removes the new one. */
int file_replace_finish(FileReplacement *f, bool durable, const char **step);
#define FILE_STEP_DIRECTORY "flushing its directory"

/* `text` as the whole of `path`, replaced as above (not durable): REMAT_OK, or REMAT_EIO
 * with "WHO PATH: STEP failed: ERROR" (who: the flag or program that names the path). */
RematStatus file_replace_text(const char *who, const char *path, const char *text);

/* Checks that a file can be written at `path` by renaming a new file over it: the path is
 * not empty and does not end in '/'; its directory exists, is a directory, and lets this
 * process create a file (tried for real, with an unnamed O_TMPFILE where the file system
 * has them, so nothing is left behind); and whatever is at the path now, if anything, is
 * a regular file (not a directory, device, FIFO, socket or symbolic link). Changes
 * nothing. REMAT_OK, or REMAT_EIO (REMAT_EINVAL for a NULL or empty path) with a message
 * that names the path and what is wrong. The check is advisory: the file system can
 * change between it and the write, which checks again. */
RematStatus file_check_writable(const char *path);

/* Whether paths `a` and `b` name the same file: the same file (device and inode) when both
 * exist; otherwise the same name in the same directory, once the directories are resolved
 * (so "run.st", "./run.st" and "/abs/run.st" are one path). False when either is NULL. For
 * a program that must not write one file twice, or over a file it reads. */
bool file_same_path(const char *a, const char *b);

/* Reads exactly `len` bytes of the open file `fd` at `offset` into `buf`, going on after a
 * short read or a signal. Returns 0, an errno value, or -1 if the file ended first. */
int file_pread_all(int fd, void *buf, size_t len, uint64_t offset);

/* Reads the whole regular file at `path` (opened as file_open_regular does, so a FIFO or
 * a directory is refused at once, never waited on) into a new buffer the caller frees,
 * with a '\0' after its *size bytes. Files over `max_bytes` are refused, so that a huge
 * or growing file cannot exhaust memory. On error stores nothing and returns REMAT_EIO (a
 * message beginning with `who` that names the path and the reason); REMAT_ENOMEM. */
RematStatus file_read_all(const char *who, const char *path, size_t max_bytes, char **text, size_t *size);

/* For a program's main, before it writes any file: makes the file-size limit (ulimit -f)
 * an error, EFBIG ("File too large"), that the write reports and the program handles,
 * instead of SIGXFSZ, whose default action kills the process and loses its output. */
void file_size_limit_as_error(void);

/* For a program's end: flushes standard output and says whether everything written to
 * it arrived. REMAT_OK, or REMAT_EIO ("cannot write to standard output: No space left on
 * device") when a write or the flush failed (stdout on a full disk, /dev/full, a closed
 * pipe), so the program can exit non-zero instead of claiming a success nobody saw. */
RematStatus file_flush_stdout(void);

#endif /* REMAT_FILE_H */
