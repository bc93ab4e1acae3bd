/* openai_proposer.c: tune-openai-proposer, a tune proposer (docs/llm-hook.md) backed by an
 * OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp server, ...). The C twin
 * of openai_proposer.py: same options, environment, defaults and exit codes; HTTP by libcurl,
 * JSON by jansson.
 *
 *   tune run RECIPE --strategy llm --proposer-env OPENAI_API_KEY \
 *       --proposer 'build/tune-openai-proposer --model gpt-4o-mini'
 *
 * Reads tune's request on stdin, POSTs one chat request, prints the first JSON object of the
 * model's answer on stdout (tune validates it strictly). Exit status: 0 answered; 1 the request
 * on stdin, the endpoint or its answer failed (message on stderr; tune falls back to random for
 * the batch); 2 usage. The API key goes only into the Authorization header: it is never printed.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#define PROG "tune-openai-proposer"
#define ANSWER_LIMIT (4u << 20) /* [bytes] of the endpoint's answer kept, as the Python adapter */
#define ERROR_EXCERPT 300       /* [bytes] of an HTTP error's body shown */

static const char SYSTEM[] =
    "You propose configurations for a CUDA kernel autotuner.\n"
    "The user message is a JSON request: the recipe (parameters with their allowed values,\n"
    "constraints, problems, optionally template regions with their current device code), the problem\n"
    "being tuned, the device, the best measured results so far, recent failures, and a budget.\n"
    "Answer with ONE JSON object and nothing else:\n"
    "{\"version\": 1, \"proposals\": [{\"kind\": \"params\", \"values\": {\"PARAM\": value, ...}, "
    "\"rationale\": \"...\"}]}\n"
    "Give at most `budget` proposals, each setting every parameter to one of its allowed values and\n"
    "satisfying the constraints; do not repeat configurations listed in best or failures.\n"
    "You may also propose device code for a template region:\n"
    "{\"kind\": \"code\", \"region\": \"NAME\", \"code\": \"...\", \"rationale\": \"...\"}\n"
    "where code replaces the body between the region markers and must be device code only.";

static const char USAGE[] =
    "usage: " PROG " [--url URL] [--model NAME] [--key-env NAME] [--timeout S] [--max-tokens N]\n"
    "  --url URL        base URL up to /v1 (OPENAI_BASE_URL, https://api.openai.com/v1)\n"
    "  --model NAME     model name (OPENAI_MODEL; required)\n"
    "  --key-env NAME   environment variable holding the API key (OPENAI_API_KEY); tune clears\n"
    "                   the environment, so pass it with --proposer-env NAME\n"
    "  --timeout S      HTTP timeout in seconds, whole request (50; keep it below tune's\n"
    "                   --proposer-timeout)\n"
    "  --max-tokens N   completion limit (2048)\n";

typedef struct {
  const char *url;     /* base URL up to /v1 */
  const char *model;   /* NULL when neither --model nor OPENAI_MODEL */
  const char *key_env; /* name of the variable holding the key */
  double timeout_s;    /* [s] whole request */
  long max_tokens;
} options;

typedef struct {
  char *data;  /* the answer's bytes, NUL-terminated; owned, freed by main */
  size_t n;    /* [bytes] */
  int too_big; /* set when the answer passed ANSWER_LIMIT */
} buffer;

/* Parses argv into *o; returns 0, 1 after --help, or 2 with a message on stderr. */
static int parse_args(int argc, char **argv, options *o) {
  const char *env_url = getenv("OPENAI_BASE_URL"), *env_model = getenv("OPENAI_MODEL");
  *o = (options){env_url ? env_url : "https://api.openai.com/v1", env_model, "OPENAI_API_KEY",
                 50.0, 2048};
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = NULL, *eq = strchr(a, '=');
    size_t name_len = eq ? (size_t)(eq - a) : strlen(a);
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(USAGE, stdout);
      return 1;
    }
    static const char *const names[] = {"--url", "--model", "--key-env", "--timeout", "--max-tokens"};
    int k = -1;
    for (int j = 0; j < 5; ++j)
      if (strlen(names[j]) == name_len && !strncmp(a, names[j], name_len)) k = j;
    if (k < 0) {
      fprintf(stderr, "%s" PROG ": unrecognized argument: %s\n", USAGE, a);
      return 2;
    }
    if (eq) {
      v = eq + 1;
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      fprintf(stderr, "%s" PROG ": %s expects a value\n", USAGE, names[k]);
      return 2;
    }
    char *end = NULL;
    errno = 0;
    switch (k) {
      case 0: o->url = v; break;
      case 1: o->model = v; break;
      case 2: o->key_env = v; break;
      case 3:
        o->timeout_s = strtod(v, &end);
        if (errno || end == v || *end || !(o->timeout_s > 0 && o->timeout_s < 1e6)) {
          fprintf(stderr, "%s" PROG ": --timeout: not a positive number of seconds: %s\n", USAGE, v);
          return 2;
        }
        break;
      case 4:
        o->max_tokens = strtol(v, &end, 10);
        if (errno || end == v || *end || o->max_tokens < 1) {
          fprintf(stderr, "%s" PROG ": --max-tokens: not a positive integer: %s\n", USAGE, v);
          return 2;
        }
        break;
    }
  }
  if (!o->model || !*o->model) {
    fputs(PROG ": --model or OPENAI_MODEL is required\n", stderr);
    return 2;
  }
  return 0;
}

/* libcurl write callback: keeps at most ANSWER_LIMIT bytes; returning less aborts the transfer. */
static size_t on_data(char *p, size_t size, size_t n, void *user) {
  buffer *b = user;
  size_t len = size * n;
  if (b->n + len > ANSWER_LIMIT) {
    b->too_big = 1;
    return 0;
  }
  char *grown = realloc(b->data, b->n + len + 1);
  if (!grown) return 0;
  memcpy(grown + b->n, p, len);
  b->data = grown;
  b->n += len;
  b->data[b->n] = '\0';
  return len;
}

/* The chat request's body for tune's request; NULL when out of memory. Caller frees. */
static char *chat_body(const options *o, json_t *request) {
  char *user = json_dumps(request, JSON_COMPACT | JSON_ENCODE_ANY);
  if (!user) return NULL;
  json_t *body = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}], s:I, s:f}", "model", o->model,
                           "messages", "role", "system", "content", SYSTEM, "role", "user",
                           "content", user, "max_tokens", (json_int_t)o->max_tokens,
                           "temperature", 0.2);
  free(user);
  char *text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
  json_decref(body);
  return text;
}

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Where the first JSON object of the model's text starts: inside the first code fence
 * ```json {...} ``` (or ``` {...} ```) whose body is an object, else at the text's first '{'.
 * Sets *len to the bytes from there on that may hold it; returns NULL when there is no '{'. */
static const char *find_object(const char *text, size_t n, size_t *len) {
  for (const char *f = strstr(text, "```"); f; f = strstr(f + 3, "```")) {
    const char *p = f + 3;
    if (!strncmp(p, "json", 4)) p += 4;
    while (is_space(*p)) ++p;
    if (*p != '{') continue;
    /* the fence's body runs to the last '}' that only whitespace separates from a closing ``` */
    for (const char *q = text + n - 3; q > p; --q) {
      if (strncmp(q, "```", 3)) continue;
      const char *r = q;
      while (r > p && is_space(r[-1])) --r;
      if (r > p && r[-1] == '}') {
        *len = (size_t)(r - p);
        return p;
      }
    }
  }
  const char *brace = memchr(text, '{', n);
  if (brace) *len = n - (size_t)(brace - text);
  return brace;
}

/* The JSON object in the endpoint's answer; NULL with a message in why[] otherwise. */
static json_t *model_object(const buffer *b, char *why, size_t why_n) {
  json_error_t je;
  json_t *answer = json_loadb(b->data, b->n, JSON_DECODE_ANY, &je), *out = NULL;
  if (!answer) {
    snprintf(why, why_n, "the endpoint's answer is not JSON: line %d column %d: %s", je.line,
             je.column, je.text);
    return NULL;
  }
  json_t *content = json_object_get(
      json_object_get(json_array_get(json_object_get(answer, "choices"), 0), "message"), "content");
  if (!json_is_string(content)) {
    snprintf(why, why_n, "unusable answer: no string at choices[0].message.content");
    goto done;
  }
  size_t len = 0;
  const char *text = json_string_value(content);
  const char *start = find_object(text, json_string_length(content), &len);
  if (!start) {
    snprintf(why, why_n, "unusable answer: no JSON object in the model's answer");
    goto done;
  }
  /* the first value from there on; what follows it is prose, as for Python's raw_decode */
  out = json_loadb(start, len, JSON_DISABLE_EOF_CHECK, &je);
  if (!out)
    snprintf(why, why_n, "unusable answer: the model's JSON is malformed: %s (at byte %d)", je.text,
             je.position);
  else if (!json_is_object(out)) {
    snprintf(why, why_n, "unusable answer: not a JSON object");
    json_decref(out);
    out = NULL;
  }
done:
  json_decref(answer);
  return out;
}

/* POSTs body to the endpoint into *b. Returns 0, or 1 with a message on stderr. The key is
 * copied into the header list only, and the local copy is wiped. */
static int post(const options *o, const char *body, buffer *b) {
  int rc = 1;
  char err[CURL_ERROR_SIZE] = "", *url = NULL, *auth = NULL;
  struct curl_slist *headers = NULL, *h;
  CURL *c = curl_easy_init();
  if (!c) {
    fputs(PROG ": curl_easy_init failed\n", stderr);
    return 1;
  }
  size_t ulen = strlen(o->url);
  while (ulen && o->url[ulen - 1] == '/') --ulen;
  url = malloc(ulen + sizeof "/chat/completions");
  if (!url) goto oom;
  memcpy(url, o->url, ulen);
  strcpy(url + ulen, "/chat/completions");
  /* an empty Expect: keeps curl from waiting for a 100 Continue that HTTP/1.0 servers never send */
  if (!(h = curl_slist_append(headers, "Content-Type: application/json"))) goto oom;
  headers = h;
  if (!(h = curl_slist_append(headers, "Expect:"))) goto oom;
  headers = h;
  const char *key = getenv(o->key_env);
  if (key && *key) {
    if (strpbrk(key, "\r\n")) {
      fprintf(stderr, PROG ": the key in %s holds a line break: not sent\n", o->key_env);
      goto done;
    }
    size_t n = strlen(key) + sizeof "Authorization: Bearer ";
    if (!(auth = malloc(n))) goto oom;
    snprintf(auth, n, "Authorization: Bearer %s", key);
    h = curl_slist_append(headers, auth);
    for (volatile char *w = auth; w < auth + n; ++w) *w = 0; /* volatile: not elided before free */
    if (!h) goto oom;
    headers = h;
  }
  long ms = (long)(o->timeout_s * 1000.0 + 0.5);
  if (ms < 1) ms = 1;
  CURLcode cc = CURLE_OK;
#define SET(opt, val) \
  if (cc == CURLE_OK) cc = curl_easy_setopt(c, opt, val)
  SET(CURLOPT_ERRORBUFFER, err);
  SET(CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85: the string form; the bitmask is deprecated */
  SET(CURLOPT_PROTOCOLS_STR, "http,https");
#else
  SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  SET(CURLOPT_HTTPHEADER, headers);
  SET(CURLOPT_POSTFIELDS, body);
  SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
  SET(CURLOPT_TIMEOUT_MS, ms);
  SET(CURLOPT_NOSIGNAL, 1L); /* timeouts without SIGALRM */
  SET(CURLOPT_USERAGENT, PROG "/1");
  SET(CURLOPT_WRITEFUNCTION, on_data);
  SET(CURLOPT_WRITEDATA, b);
#undef SET
  if (cc != CURLE_OK) {
    fprintf(stderr, PROG ": libcurl option refused: %s\n", curl_easy_strerror(cc));
    goto done;
  }
  cc = curl_easy_perform(c);
  if (cc == CURLE_WRITE_ERROR && b->too_big) {
    fprintf(stderr, PROG ": answer larger than the %u byte limit\n", ANSWER_LIMIT);
    goto done;
  }
  if (cc == CURLE_OPERATION_TIMEDOUT) {
    fprintf(stderr, PROG ": timed out after %g s: %s\n", o->timeout_s, err);
    goto done;
  }
  if (cc != CURLE_OK) {
    fprintf(stderr, PROG ": %s\n", *err ? err : curl_easy_strerror(cc));
    goto done;
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status > 299) {
    fprintf(stderr, PROG ": HTTP %ld: %.*s\n", status,
            (int)(b->n < ERROR_EXCERPT ? b->n : ERROR_EXCERPT), b->data ? b->data : "");
    goto done;
  }
  if (!b->data) {
    fputs(PROG ": the endpoint's answer is empty\n", stderr);
    goto done;
  }
  rc = 0;
  goto done;
oom:
  fputs(PROG ": out of memory\n", stderr);
done:
  curl_slist_free_all(headers); /* libcurl keeps no copy of the key past this */
  curl_easy_cleanup(c);
  free(auth);
  free(url);
  return rc;
}

int main(int argc, char **argv) {
  options o;
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc == 1 ? 0 : rc;

  json_error_t je;
  json_t *request = json_loadf(stdin, JSON_DECODE_ANY, &je);
  if (!request) {
    fprintf(stderr, PROG ": the request on stdin is not JSON: line %d column %d: %s\n", je.line,
            je.column, je.text);
    return 1;
  }
  char *body = chat_body(&o, request);
  json_decref(request);
  if (!body) {
    fputs(PROG ": out of memory building the chat request\n", stderr);
    return 1;
  }
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fputs(PROG ": curl_global_init failed\n", stderr);
    free(body);
    return 1;
  }
  buffer b = {0};
  rc = post(&o, body, &b);
  free(body);
  json_t *out = NULL;
  if (rc == 0) {
    char why[512];
    out = model_object(&b, why, sizeof why);
    if (!out) {
      fprintf(stderr, PROG ": %s\n", why);
      rc = 1;
    }
  }
  /* the proposals pass through as the model gave them: tune validates strictly */
  if (out && (json_dumpf(out, stdout, JSON_COMPACT | JSON_ENSURE_ASCII) != 0 ||
              fputc('\n', stdout) == EOF || fflush(stdout) != 0)) {
    fprintf(stderr, PROG ": writing the response: %s\n", strerror(errno));
    rc = 1;
  }
  json_decref(out);
  free(b.data);
  curl_global_cleanup();
  return rc;
}
