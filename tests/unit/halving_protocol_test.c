/* halving_protocol_test.c: the pieces of successive halving that need no GPU: the
 * measure message's sample policy through a real pipe (protocol.c), both with
 * a quick sample count and without one (the message as it always was), the
 * quick-only note and the modelled quick measure time (halving.c). Exit status
 * 0 when every CHECK passed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "halving.h"
#include "protocol.h"

/* msg through a pipe and back, then read as the worker reads it */
static void round_trip(json_t *msg, int *lo, int *hi, double *ms, json_t **back) {
  int fd[2];
  CHECK(pipe(fd) == 0);
  tune_err e;
  tune_err_clear(&e);
  CHECK(tune_msg_write(fd[1], msg, NULL, 0, &e) == TUNE_OK);
  CHECK(tune_msg_read(fd[0], back, NULL, NULL, 1000, &e) == TUNE_OK);
  close(fd[0]);
  close(fd[1]);
  tune_measure_policy_from_json(*back, lo, hi, ms);
}

static void test_policy(void) {
  int lo, hi;
  double ms;
  json_t *back = NULL;
  /* no sample count: byte for byte the message backend_cuda.c always sent */
  json_t *msg = json_pack("{s:s}", "op", "measure");
  tune_measure_policy_to_json(msg, 0);
  json_t *old = json_pack("{s:s,s:i,s:i,s:f}", "op", "measure", "min_samples", 10, "max_samples", 200, "max_ms", 2000.0);
  char *a = json_dumps(msg, JSON_COMPACT), *b = json_dumps(old, JSON_COMPACT);
  CHECK(a && b && !strcmp(a, b));
  free(a);
  free(b);
  json_decref(old);
  round_trip(msg, &lo, &hi, &ms, &back);
  CHECK(lo == 10 && hi == 200 && ms == 2000.0);
  CHECK(json_equal(msg, back));
  json_decref(back);
  json_decref(msg);
  /* a quick timing: exactly 3 samples */
  msg = json_pack("{s:s}", "op", "measure");
  tune_measure_policy_to_json(msg, TUNE_HALVING_QUICK_SAMPLES);
  round_trip(msg, &lo, &hi, &ms, &back);
  CHECK(lo == 3 && hi == 3 && ms == 2000.0);
  json_decref(back);
  json_decref(msg);
  /* 7 samples; under 3 is the default policy */
  msg = json_pack("{s:s}", "op", "measure");
  tune_measure_policy_to_json(msg, 7);
  round_trip(msg, &lo, &hi, &ms, &back);
  CHECK(lo == 7 && hi == 7);
  json_decref(back);
  json_decref(msg);
  msg = json_pack("{s:s}", "op", "measure");
  tune_measure_policy_to_json(msg, 2);
  round_trip(msg, &lo, &hi, &ms, &back);
  CHECK(lo == 10 && hi == 200);
  json_decref(back);
  json_decref(msg);
  /* a message without the fields (an older sender) and a malformed one: the defaults */
  msg = json_pack("{s:s}", "op", "measure");
  round_trip(msg, &lo, &hi, &ms, &back);
  CHECK(lo == 10 && hi == 200 && ms == 2000.0);
  json_decref(back);
  json_decref(msg);
  msg = json_pack("{s:s,s:i,s:i,s:f}", "op", "measure", "min_samples", 1, "max_samples", 0, "max_ms", -5.0);
  round_trip(msg, &lo, &hi, &ms, &back);
  CHECK(lo == 10 && hi == 200 && ms == 2000.0);
  json_decref(back);
  json_decref(msg);
}

static void test_note(void) {
  char buf[512] = "replay: something";
  tune_halving_note(buf, sizeof buf, 3, 0.1, buf); /* prev may be the buffer itself */
  CHECK(tune_halving_is_quick(buf));
  CHECK(!strncmp(buf, "halving: quick timing only (3 samples), ", strlen("halving: quick timing only (3 samples), ")));
  CHECK(strstr(buf, "10 %") != NULL);
  CHECK(strstr(buf, "; replay: something") != NULL);
  tune_halving_note(buf, sizeof buf, 3, 0.25, NULL);
  CHECK(tune_halving_is_quick(buf) && strstr(buf, "25 %") && !strchr(buf, ';'));
  CHECK(!tune_halving_is_quick(""));
  CHECK(!tune_halving_is_quick(NULL));
  CHECK(!tune_halving_is_quick("peak: faster than the measured copy bandwidth"));
  /* the note is what db_query_best matches (db/db_query.c) */
  CHECK(!strcmp(TUNE_HALVING_NOTE, "halving: quick timing only"));
}

static void test_quick_ms(void) {
  CHECK(fabs(tune_halving_quick_ms(100, 10, 3) - 30) < 1e-9);
  CHECK(fabs(tune_halving_quick_ms(200, 200, 3) - 3) < 1e-9);
  CHECK(tune_halving_quick_ms(100, 3, 3) == 100); /* nothing to save */
  CHECK(tune_halving_quick_ms(100, 0, 3) == 100); /* not timed: its whole time */
  CHECK(tune_halving_quick_ms(0, 10, 3) == 0);
}

int main(void) {
  test_policy();
  test_note();
  test_quick_ms();
  printf("halving_protocol_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
