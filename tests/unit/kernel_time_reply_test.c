/* kernel_time_reply_test.c: the worker's kernel time from a measure reply to the recipe's summary:
 * the reply's "kernel_ns" read back (tuner/protocol.c), missing or malformed ones read as not
 * reported; the sums taken from a backend (tuner/backend.h); the line tune_progress_recipe
 * prints beside "GPU busy" (tuner/progress.c): present where a reply reported it, with a note
 * where some did not, absent where none did and on replay. Exit status 0 when every CHECK passed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"
#include "progress.h"
#include "protocol.h"

static void reply_field(void) {
  json_t *r = json_pack("{s:s}", "status", "ok");
  double ns = -1;
  CHECK(tune_reply_kernels_from_json(r, &ns) == 0 && ns == 0); /* an older worker's reply */
  tune_reply_kernels_to_json(r, 12345.5, 7);
  CHECK(tune_reply_kernels_from_json(r, &ns) == 1 && ns == 12345.5);
  CHECK(json_integer_value(json_object_get(r, "kernel_count")) == 7);
  /* through the frame format and back, as the tuner reads it */
  char *text = json_dumps(r, JSON_COMPACT);
  json_t *back = text ? json_loads(text, 0, NULL) : NULL;
  CHECK(back && tune_reply_kernels_from_json(back, &ns) == 1 && ns == 12345.5);
  json_decref(back);
  free(text);
  tune_reply_kernels_to_json(r, 0, 0); /* a measure that ran no kernel reports a true zero */
  CHECK(tune_reply_kernels_from_json(r, &ns) == 1 && ns == 0);
  json_object_set_new(r, "kernel_ns", json_real(-1));
  CHECK(tune_reply_kernels_from_json(r, &ns) == 0 && ns == 0);
  json_object_set_new(r, "kernel_ns", json_string("5"));
  CHECK(tune_reply_kernels_from_json(r, &ns) == 0);
  json_object_set_new(r, "kernel_ns", json_integer(42)); /* an integer is a number too */
  CHECK(tune_reply_kernels_from_json(r, &ns) == 1 && ns == 42);
  json_decref(r);
}

static void take(void) {
  tune_kernel_time from = {.ns = 3e9, .n_reported = 2, .n_replies = 3}, into = {.ns = 1e9, .n_reported = 1, .n_replies = 1};
  tune_kernel_time_take(&from, &into);
  CHECK(into.ns == 4e9 && into.n_reported == 3 && into.n_replies == 4);
  CHECK(from.ns == 0 && from.n_reported == 0 && from.n_replies == 0);
}

typedef struct summary_case {
  tune_run_stats st;
  tune_backend be;
} summary_case;

static void print_summary(void *arg) {
  summary_case *c = arg;
  tune_progress_recipe("r", &c->st, 0, 10, &c->be, "exhaustive");
}

static void summary(void) {
  summary_case c;
  memset(&c, 0, sizeof c);
  snprintf(c.be.name, sizeof c.be.name, "cuda:0");
  c.st.t_measure = 6;
  c.st.t_select = 1;
  c.st.kernels = (tune_kernel_time){.ns = 2.5e9, .n_reported = 4, .n_replies = 4};
  capture(print_summary, &c);
  const char *busy = strstr(captured, "GPU busy: 70.0 % of 10.0 s wall");
  const char *k = strstr(captured, "\n  kernels on the GPU: 2.500 s (25.0 % of wall): the variants' own kernels");
  CHECK(busy && k && strchr(busy, '\n') == k); /* the line right after the busy line */
  CHECK(strstr(captured, "measures reported it") == NULL);
  c.st.kernels.n_replies = 6; /* two crashed */
  capture(print_summary, &c);
  CHECK(strstr(captured, "; 4 of 6 measures reported it (crashes, timeouts and workers without CUPTI report none)\n"));
  c.st.kernels = (tune_kernel_time){.ns = 0, .n_reported = 0, .n_replies = 5}; /* no reply carried it */
  capture(print_summary, &c);
  CHECK(strstr(captured, "GPU busy: ") != NULL);
  CHECK(strstr(captured, "kernels on the GPU") == NULL);
  c.st.kernels = (tune_kernel_time){.ns = 1e9, .n_reported = 1, .n_replies = 1};
  snprintf(c.be.name, sizeof c.be.name, "replay:x.db"); /* replay: no GPU to keep busy */
  capture(print_summary, &c);
  CHECK(strstr(captured, "GPU busy") == NULL && strstr(captured, "kernels on the GPU") == NULL);
}

int main(void) {
  reply_field();
  take();
  summary();
  printf("kernel_time_reply_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
