/* stop_signal.c: the stop signals of the measuring commands (stop_signal.h). */
#include "stop_signal.h"

#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session.h"

/* A stop signal this soon after the first is the same stop: `timeout -s INT` signals the child and
   then its whole group, and a terminal may repeat a key; only a later one means "quit now". */
#define STOP_REPEAT_S 2

static struct timespec first_stop; /* when the first stop signal came (CLOCK_MONOTONIC) */

/* Ctrl-C, or SIGTERM (what `timeout` and service managers send): stop after the work in flight,
   print the summary, mark the run or comparison interrupted and exit 128 + the signal; a stop
   signal STOP_REPEAT_S or more after the first leaves at once. Only async-signal-safe calls here. */
static void on_stop_signal(int sig) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (tune_interrupted) {
    if (now.tv_sec - first_stop.tv_sec - (now.tv_nsec < first_stop.tv_nsec) >= STOP_REPEAT_S) _exit(128 + sig);
    return;
  }
  first_stop = now;
  tune_interrupted = sig;
  static const char m_int[] = "\ninterrupt: finishing the work in flight (Ctrl-C again after 2 s to quit now)\n";
  static const char m_term[] = "\nSIGTERM: finishing the work in flight (SIGTERM again after 2 s to quit now)\n";
  if (sig == SIGTERM ? write(2, m_term, sizeof m_term - 1) : write(2, m_int, sizeof m_int - 1)) {}
}

void tune_stop_signals_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}
