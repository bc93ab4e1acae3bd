/* source_hash.h: content hash of a CUDA source and every local header it
 * includes (#include "x", resolved next to the including file, then under the
 * include root), so that a change in any of them changes compile keys and
 * recipe source hashes. System headers (<...>) are covered by the NVRTC
 * version in the compile key. */
#ifndef TUNE_SOURCE_HASH_H
#define TUNE_SOURCE_HASH_H

#include <xxhash.h>

#include "tune_err.h"

/* Feed path's text and its local includes (depth first, each file once) into h. */
int tune_source_hash_update(XXH64_state_t *h, const char *path, const char *include_root, tune_err *err);

#endif
