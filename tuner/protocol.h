/* protocol.h: messages between the tuner and its GPU worker over pipes.
 *
 * A frame is [u32 json_len][u32 blob_len][json][blob], little-endian as the
 * host: both ends are the same binary on the same machine. The JSON header
 * says what the message is ({"op": ...}); the blob carries a cubin when one
 * is needed. Reads can time out (the tuner's watchdog). */
#ifndef TUNE_PROTOCOL_H
#define TUNE_PROTOCOL_H

#include <stddef.h>

#include <jansson.h>

#include "recipe.h"
#include "tune_err.h"

#define TUNE_MSG_MAX_JSON (16u << 20)
#define TUNE_MSG_MAX_BLOB (512u << 20)

/* Write one frame. blob may be NULL. */
int tune_msg_write(int fd, json_t *msg, const void *blob, size_t blob_n, tune_err *err);

/* Read one frame; *msg (json_decref) and *blob (free, may be NULL) belong to
 * the caller. timeout_ms < 0 waits forever. Returns TUNE_OK, TUNE_EIO with
 * "closed" in the message on EOF, or TUNE_EWORKER with "timeout" when the
 * deadline passed. */
int tune_msg_read(int fd, json_t **msg, void **blob, size_t *blob_n, int timeout_ms, tune_err *err);

/* One launch step of a measure message: {"kernel", "grid", "block", "shared", "stream"}, plus
 * "cluster": [x, y, z] only for a thread-block cluster (a plain launch's message is as before
 * clusters existed). kernel is the lowered name to look up in the cubin. */
json_t *tune_launch_to_json(const tune_launch *l, const char *kernel);
/* The inverse; kernel is copied into l->kernel. A missing or malformed cluster reads {1, 1, 1}. */
void tune_launch_from_json(json_t *j, tune_launch *l);

/* The sample policy of a measure message: "min_samples", "max_samples", "max_ms". samples 0:
 * the default policy (10 to 200 samples, until the median's 95 % interval is within 1 % or
 * 2 s: the message as it always was); samples >= 3: exactly that many (a quick timing for
 * successive halving, halving.h). Values under 3 read as the default. */
#define TUNE_MEASURE_MIN_SAMPLES 10
#define TUNE_MEASURE_MAX_SAMPLES 200
#define TUNE_MEASURE_MAX_MS 2000.0
void tune_measure_policy_to_json(json_t *msg, int samples);
/* The worker's reading of those fields; missing or out-of-range ones take the defaults. */
void tune_measure_policy_from_json(json_t *msg, int *min_samples, int *max_samples, double *max_ms);

/* The kernel time of a measure reply: "kernel_ns", the summed durations [ns] of the variant's
 * own kernels that the worker's CUPTI timer recorded from the start of the measure to its end
 * (every launch: both verifications, warm-up, timed, the check after timing; with their scratch
 * zeroing; not tune_* helper kernels, memsets, copies or the problem's reference, which runs at
 * problem setup), and "kernel_count", how many. A reply without it (no CUPTI, a crash, a worker
 * older than the field, the fake worker unless told) says nothing about kernel time. */
void tune_reply_kernels_to_json(json_t *reply, double kernel_ns, long long n_kernels);
/* 1 with *kernel_ns [ns] when the reply carries a valid figure (a finite number >= 0), else 0
 * with *kernel_ns = 0. */
int tune_reply_kernels_from_json(json_t *reply, double *kernel_ns);

/* Sustained timing (docs/measurement.md): after verification, back-to-back launches over
 * rotating buffer sets (inputs and outputs) larger than 2x L2, warmed up for WARMUP_MS so the
 * clocks settle at what the power limit allows; a sample is (end of the last kernel - start of
 * the first) / N over N launches lasting about SAMPLE_MS; MIN..MAX samples until the median's
 * 95 % interval is within 1 % or MAX_MS passed. tools/peers/peer_server.py uses the same
 * numbers for the peers. */
#define TUNE_SUSTAINED_WARMUP_MS 200.0
#define TUNE_SUSTAINED_SAMPLE_MS 20.0
#define TUNE_SUSTAINED_MIN_SAMPLES 5
#define TUNE_SUSTAINED_MAX_SAMPLES 50
#define TUNE_SUSTAINED_MAX_MS 2000.0
#define TUNE_SUSTAINED_MAX_LAUNCHES 10000
#define TUNE_SUSTAINED_MAX_SET_BYTES (4ull << 30) /* all rotating sets together */

#endif
