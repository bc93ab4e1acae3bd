/* lua_limits.c: instruction budget, memory cap and stop signals for recipe Lua (see lua_limits.h). */
#include "lua_limits.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* Instructions between two calls of the count hook: checks stay cheap, a stop signal is seen at once. */
#define HOOK_PERIOD 1000

typedef struct limits_state {
  tune_lua_limits lim;
  size_t bytes;          /* [bytes] held now */
  long long used;        /* instructions of the call in flight (counted per hook period) */
  int depth;             /* nested tune_lua_pcall calls */
  int refused;           /* 1: an allocation was refused in the call in flight */
  const char *what;      /* what the outermost call evaluates ("constraint 3"), for messages */
  lua_State *L;          /* the state running the call in flight (recipes get no coroutines) */
  int tripped;           /* 1: a limit or a stop signal fired; every instruction now raises */
  char where[320];       /* "file:line" where an allocation was refused */
} limits_state;

/* One per state: the allocator's ud. */
static limits_state *state_of(lua_State *L) {
  void *ud;
  lua_getallocf(L, &ud);
  return ud;
}

/* "file:line" of the innermost Lua function on L's stack at or above level, "" if none. */
static void lua_position(lua_State *L, int level, char *buf, size_t n) {
  lua_Debug ar;
  buf[0] = 0;
  for (; lua_getstack(L, level, &ar); ++level)
    if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
      snprintf(buf, n, "%s:%d", ar.short_src, ar.currentline);
      return;
    }
}

static void *limited_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  limits_state *ls = ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    free(ptr);
    ls->bytes -= old;
    return NULL;
  }
  if (ls->depth > 0 && nsize > old && ls->bytes - old + nsize > ls->lim.max_bytes) {
    /* Lua collects and retries once before it raises; the position is taken now, while the
       function that asked is still on the stack (the error unwinds it before anyone sees it) */
    ls->refused = 1;
    if (ls->L) lua_position(ls->L, 0, ls->where, sizeof ls->where);
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p) ls->bytes = ls->bytes - old + nsize;
  return p;
}

static void count_hook(lua_State *L, lua_Debug *ar) {
  limits_state *ls = state_of(L);
  if (ls->depth == 0) return;
  ls->used += ls->tripped ? 1 : HOOK_PERIOD;
  int sig = tune_interrupted;
  if (!sig && !ls->tripped && ls->used <= ls->lim.max_instructions) return;
  if (!ls->tripped) /* from now on every instruction raises, so a recipe's own pcall cannot go on */
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
  ls->tripped = 1;
  char where[320] = "";
  if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0) snprintf(where, sizeof where, "%s:%d: ", ar->short_src, ar->currentline);
  const char *what = ls->what ? ls->what : "in recipe code";
  if (sig) lua_pushfstring(L, "%sinterrupted (signal %d) %s", where, sig, what);
  else
    lua_pushfstring(L, "%sinstruction budget of %I exceeded %s (set " TUNE_LUA_INSTRUCTIONS_ENV " to change it)",
                    where, (lua_Integer)ls->lim.max_instructions, what);
  lua_error(L);
}

/* A positive number from the environment (integers or forms like 1e9), else def. */
static int env_positive(const char *name, double def, double max, double *out, tune_err *err) {
  const char *s = getenv(name);
  *out = def;
  if (!s || !s[0]) return TUNE_OK;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= 1) || v > max || v != floor(v))
    return tune_fail(err, TUNE_EINVAL, "%s=%s: want a whole number from 1 to %.0f", name, s, max);
  *out = v;
  return TUNE_OK;
}

int tune_lua_limits_init(tune_lua_limits *lim, tune_err *err) {
  memset(lim, 0, sizeof *lim);
  double ins, mb;
  if (env_positive(TUNE_LUA_INSTRUCTIONS_ENV, (double)TUNE_LUA_DEFAULT_INSTRUCTIONS, 1e18, &ins, err)) return err->code;
  if (env_positive(TUNE_LUA_MB_ENV, (double)TUNE_LUA_DEFAULT_MB, 1 << 24, &mb, err)) return err->code;
  lim->max_instructions = (long long)ins;
  lim->max_bytes = (size_t)mb << 20;
  return TUNE_OK;
}

static int panic(lua_State *L) {
  const char *m = lua_tostring(L, -1);
  fprintf(stderr, "tune: Lua error outside a protected call: %s\n", m ? m : "?");
  return 0; /* Lua aborts: a bug in tune, since every recipe call is protected */
}

lua_State *tune_lua_newstate(const tune_lua_limits *lim) {
  limits_state *ls = calloc(1, sizeof *ls);
  if (!ls) return NULL;
  ls->lim = *lim;
  lua_State *L = lua_newstate(limited_alloc, ls);
  if (!L) { free(ls); return NULL; }
  lua_atpanic(L, panic);
  lua_sethook(L, count_hook, LUA_MASKCOUNT, HOOK_PERIOD);
  return L;
}

void tune_lua_close(lua_State *L) {
  if (!L) return;
  limits_state *ls = state_of(L);
  lua_close(L);
  free(ls);
}

void tune_lua_evaluating(lua_State *L, const char *what) {
  limits_state *ls = state_of(L);
  if (ls->depth == 0) ls->what = what;
}

int tune_lua_pcall(lua_State *L, int nargs, int nresults, int msgh) {
  limits_state *ls = state_of(L);
  if (ls->depth == 0) {
    ls->used = 0;
    ls->refused = 0;
    ls->L = L;
    ls->where[0] = 0;
  }
  ls->depth++;
  int rc = lua_pcall(L, nargs, nresults, msgh);
  ls->depth--;
  if (ls->depth > 0) return rc;
  if (ls->tripped) {
    ls->tripped = 0;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, HOOK_PERIOD);
  }
  /* a refused allocation surfaces as LUA_ERRMEM, or as its message re-raised by a C function
     (require): either way the text "not enough memory" without a position */
  const char *m = rc != LUA_OK ? lua_tostring(L, -1) : NULL;
  if (ls->refused && (rc == LUA_ERRMEM || (m && !strcmp(m, "not enough memory")))) {
    lua_pop(L, 1);
    lua_pushfstring(L, "%s%smemory limit of %d MiB exceeded %s (set " TUNE_LUA_MB_ENV " to change it)", ls->where,
                    ls->where[0] ? ": " : "", (int)(ls->lim.max_bytes >> 20), ls->what ? ls->what : "in recipe code");
    rc = LUA_ERRRUN;
  }
  ls->what = NULL;
  return rc;
}
