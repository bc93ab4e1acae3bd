/* source_memo.h: the files the raw source hash reads (source_hash.c), kept per process.
 *
 * Owns: each file's part of the raw hash (the bytes hashed and the local includes it names, with
 * where they are named), read and scanned once and reused while the file is unchanged. Compile
 * keys hash the template tree once per key, and a run makes many keys of one template.
 * Not owned: resolving names (realpath, which include is found where): source_hash.c does that on
 * every hash, so a header that appears, disappears or moves is seen at once.
 *
 * Why a reused entry is never stale: it is reused only while stat() of its path gives the device,
 * inode, size, mtime and ctime (nanoseconds) that fstat() of the descriptor it was read from gave,
 * both before and after the read (a file written meanwhile is not kept). Every write, truncation,
 * rename over the path or utimensat sets ctime to the current time, and nothing sets it back. A
 * file system stamps times from a coarse clock (a jiffy; 2 s on FAT), so a second write in the tick
 * of the first could leave ctime as it was: an entry is kept only when its ctime is older than the
 * start of its read by TUNE_SOURCE_MEMO_SETTLE_S; a file changed more recently is read again on each
 * hash until it has settled.
 *
 * Threads: every call between tune_source_memo_lock and tune_source_memo_unlock (one mutex for the
 * process); an entry handed out stays valid until the unlock. */
#ifndef TUNE_SOURCE_MEMO_H
#define TUNE_SOURCE_MEMO_H

#include <stddef.h>

#include "tune_err.h"

#define TUNE_SOURCE_MEMO_SETTLE_S 2 /* [s] how old a file's ctime must be for it to be kept */
#define TUNE_SOURCE_MEMO_LINE 4096  /* the hash reads a file in pieces of at most this size - 1 */

/* A file as the raw hash reads it: in pieces of one line, or TUNE_SOURCE_MEMO_LINE - 1 bytes of a
 * longer one, each hashed up to its first NUL; a piece that is a directive #include "name" names a
 * local header, resolved after the bytes up to the end of that piece are hashed. */
typedef struct tune_source_file {
  char *text;       /* the bytes hashed, in order */
  size_t n;         /* [bytes] of text */
  int n_inc;        /* includes named */
  size_t *inc_at;   /* include k is resolved after text[0, inc_at[k]) is hashed */
  char **inc_name;  /* include k's name as written between the quotes */
} tune_source_file;

void tune_source_memo_lock(void);
void tune_source_memo_unlock(void);

/* The file at real (a path from realpath) into *out: the memo's entry while the file is unchanged,
 * else read now (and kept when settled). *own = 1 when the caller frees *out with
 * tune_source_file_free (not kept: too recent, or the memo is full). TUNE_EIO "<real>: cannot read"
 * when it cannot be read, TUNE_ENOMEM. Call with the lock held. */
int tune_source_memo_get(const char *real, tune_source_file **out, int *own, tune_err *err);
void tune_source_file_free(tune_source_file *f);

/* Forget every entry: the next hashes read every file again. */
void tune_source_memo_clear(void);
/* Files read from disk by the memo in this process (what the memo saved is seen as fewer reads). */
long tune_source_memo_reads(void);

#endif
