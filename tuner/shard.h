/* shard.h: which share of a run's work one of N independent `tune run --shard I/N` processes takes.
 *
 * The work of a recipe file is its problems (those --problem and --problems-from keep, in recipe
 * order across the file's recipes, numbered 0..P-1), each cut into S parts by config hash
 * (part = the config hash's value mod S). Part j of problem k is unit u = k*S + j, and shard I
 * takes the units with u mod N == I-1. S is 1 (whole problems, round robin) when N divides P or
 * when P >= TUNE_SHARD_WHOLE_MIN * N (at most one problem more on some shards); otherwise
 * S = N / gcd(P, N), so that every shard gets exactly P*S/N units, each shard at most one part of
 * a problem. Shards of one command line are a partition: every (problem, config) of the space is
 * in exactly one shard, whatever the machine, because problem order and config hashes are. Plain
 * arithmetic: no recipe, database or device here. */
#ifndef TUNE_SHARD_H
#define TUNE_SHARD_H

#include "tune_err.h"

/* Problems per shard from which whole problems go round robin however N and P divide. */
#define TUNE_SHARD_WHOLE_MIN 4
#define TUNE_SHARD_MAX 100000

/* Parse "I/N" (1 <= I <= N <= TUNE_SHARD_MAX) into *index (I) and *count (N); TUNE_EINVAL saying
 * what is wrong otherwise (*index and *count unchanged). */
int tune_shard_parse(const char *text, int *index, int *count, tune_err *err);

/* S, the parts each of n_problems problems is cut into for count shards (>= 1). */
int tune_shard_parts(int n_problems, int count);

/* The part of problem k (0-based) that shard index (1-based) of count takes when problems are cut
 * into parts: 0..parts-1, or -1 when it takes none of it. */
int tune_shard_part(int index, int count, int parts, int k);

/* Is the config of hex hash config_hash in part `part` of `parts`? 1 for every config when
 * parts is 1. */
int tune_shard_keeps_config(const char *config_hash, int parts, int part);

#endif
