/* fuzz_util.h: what the fuzz harnesses share (tests/fuzz).
 *
 * Each harness defines LLVMFuzzerTestOneInput and may define
 * LLVMFuzzerInitialize; it links either libFuzzer (-fsanitize=fuzzer, TUNE_FUZZ=ON)
 * or replay_main.c, which runs it over files and directories of inputs, so a
 * corpus replays in the normal build too. Scratch files live in one temporary
 * directory per process (fuzz_scratch_dir), removed at exit. A harness must
 * not exit(): a failure it cannot recover from is abort(), which the fuzzer
 * reports with the input. */
#ifndef TUNE_FUZZ_UTIL_H
#define TUNE_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A fresh directory under $TMPDIR (or /tmp), made on the first call and
 * removed with its contents at exit; aborts when it cannot be made. */
const char *fuzz_scratch_dir(void);

/* Write data[0..size) to path, replacing it; aborts on failure. */
void fuzz_write_file(const char *path, const uint8_t *data, size_t size);

/* Print a harness's verdict on an input to stderr when TUNE_FUZZ_VERBOSE is set
 * (to see what a corpus exercises); silent otherwise, as fuzzing needs. */
void fuzz_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* stdout to /dev/null: harnessed code prints progress lines meant for a user. */
void fuzz_quiet_stdout(void);

#endif
