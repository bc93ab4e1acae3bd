/* lua_limits.h: bounds on what recipe code may spend, and stop signals inside it.
 *
 * Owns: a Lua state whose allocator counts bytes against a cap and whose count
 * hook counts instructions against a budget and checks tune_interrupted
 * (session.h), so a recipe that loops or grows without end fails with its
 * file:line and the limit instead of hanging the tuner or exhausting memory.
 * Limits apply inside tune_lua_pcall only (the budget is per outermost call: a
 * constraint check, one variant's evaluation, loading the file); outside, the
 * host's own small allocations are never refused, so Lua cannot panic there.
 * Defaults: TUNE_LUA_DEFAULT_INSTRUCTIONS and TUNE_LUA_DEFAULT_MB, overridden by
 * the environment variables TUNE_LUA_MAX_INSTRUCTIONS (a count, e.g. 1e9) and
 * TUNE_LUA_MAX_MB (MiB). The state keeps its own copy of the limits and its
 * counters; tune_lua_close frees them with the state. */
#ifndef TUNE_LUA_LIMITS_H
#define TUNE_LUA_LIMITS_H

#include <lua.h>
#include <stddef.h>

#include "tune_err.h"

#define TUNE_LUA_DEFAULT_INSTRUCTIONS 100000000LL
#define TUNE_LUA_DEFAULT_MB 1024LL
#define TUNE_LUA_INSTRUCTIONS_ENV "TUNE_LUA_MAX_INSTRUCTIONS"
#define TUNE_LUA_MB_ENV "TUNE_LUA_MAX_MB"

typedef struct tune_lua_limits {
  long long max_instructions; /* per outermost tune_lua_pcall */
  size_t max_bytes;           /* [bytes] the state may hold while a call runs */
} tune_lua_limits;

/* Defaults, then the environment. A malformed or non-positive value is an error naming the variable. */
int tune_lua_limits_init(tune_lua_limits *lim, tune_err *err);

/* A new state under lim (copied) with the count hook set; NULL when out of memory. */
lua_State *tune_lua_newstate(const tune_lua_limits *lim);

/* Close a state made by tune_lua_newstate. */
void tune_lua_close(lua_State *L);

/* Name what the next outermost call evaluates, as a phrase that follows the limit in messages
 * ("while evaluating constraint 3"); it must outlive the call. Ignored inside a call. */
void tune_lua_evaluating(lua_State *L, const char *what);

/* lua_pcall under the limits. A limit or a stop signal fails the call with an error message
 * "FILE:LINE: instruction budget of N exceeded WHAT (...)" (or "memory limit of N MiB exceeded",
 * "interrupted (signal N)"); WHAT is the phrase of tune_lua_evaluating, "in recipe code" if none. */
int tune_lua_pcall(lua_State *L, int nargs, int nresults, int msgh);

#endif
