/* stop_signal.h: Ctrl-C and SIGTERM for the commands that measure (tune run, tune compare). */
#ifndef TUNE_STOP_SIGNAL_H
#define TUNE_STOP_SIGNAL_H

/* The first SIGINT or SIGTERM sets tune_interrupted (session.h): the command finishes what is in
   flight, records itself as interrupted and exits 128 + the signal; one STOP_REPEAT_S or more
   after the first leaves at once. */
void tune_stop_signals_install(void);

#endif
