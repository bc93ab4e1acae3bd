/* peer_client.h: the peer server (tools/peers/peer_server.py) as a child process.
 *
 * tune compare times the vendor libraries (cuBLAS, cuDNN, PyTorch) through a
 * persistent process that speaks JSON lines on stdin/stdout and times each peer
 * with tune's own CUPTI timer by the same protocol as the worker (docs/peers.md).
 * One request, one reply line. The child's stderr is passed through. */
#ifndef TUNE_PEER_CLIENT_H
#define TUNE_PEER_CLIENT_H

#include <jansson.h>

#include "tune_err.h"

typedef struct tune_peer_client tune_peer_client;

/* Start `sh -c command` and exchange the hello; *hello (the server's reply, owned by the
 * client) says device and versions. TUNE_EWORKER when it cannot start or refuses. */
int tune_peer_start(const char *command, tune_peer_client **out, const json_t **hello, tune_err *err);
/* Send req and read one reply into *rep (the caller's, json_decref). TUNE_EWORKER when the
 * server died or answered something that is not JSON. */
int tune_peer_call(tune_peer_client *c, json_t *req, json_t **rep, tune_err *err);
/* Ask it to quit, wait for it, free. NULL is ignored. */
void tune_peer_stop(tune_peer_client *c);

#endif
