/* commands.h: the verbs of the `tune` command line, one entry point each.
 *
 * Each takes the arguments after its verb (argv[0] is the first of them),
 * parses them with argv.h, prints its own usage and errors, and returns the
 * process exit status: 0 done, 1 failed, 2 a usage error (and 3, 128 + signal
 * where the verb says so). main.c dispatches to them from one table; only
 * main() exits. */
#ifndef TUNE_COMMANDS_H
#define TUNE_COMMANDS_H

#include "db.h"

int tune_cmd_run(int argc, char **argv);    /* run_cmd.c */
int tune_cmd_db(int argc, char **argv);     /* db_cmd.c: best, list, show, export */
int tune_cmd_bundle(int argc, char **argv); /* bundle_cmd.c */

/* `tune db export`: one problem's results of db written to out_path ("-" or
 * NULL: stdout) in format (kernel_tuner or t4). Returns the exit status;
 * failures are printed to stderr. (db_export_cmd.c) */
int tune_cmd_db_export(db_conn *db, const char *format, const char *recipe, const char *problem,
                       const char *out_path);

#endif
