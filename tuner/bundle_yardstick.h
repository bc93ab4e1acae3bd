/* bundle_yardstick.h: whether the entries a deployment chooses among by time were timed alike.
 *
 * A caller that asks several families for one problem (tunert.torch's linear asks gemm.skinny,
 * gemm.splitk and gemm) runs the fastest exact entry by the medians the bundle recorded. Medians
 * taken with another timing mode, timer or measurement protocol are not comparable, so after
 * collection `tune bundle` warns on stderr once per (problem dims, GPU model) whose families'
 * winners were timed differently or without a recorded timer or protocol. Only reads the entries;
 * the bundle is made either way and the exit status does not change. */
#ifndef TUNE_BUNDLE_YARDSTICK_H
#define TUNE_BUNDLE_YARDSTICK_H

#include "bundle_int.h"

/* Lines printed before the rest are only counted. */
#define BUNDLE_YARDSTICK_MAX_LINES 20

/* Warn about s's tuned entries as above (after bundle_collect). */
void bundle_warn_yardsticks(const bstate *s);

#endif
