#!/usr/bin/env python3
"""kernel_tuner_sim.py: Kernel Tuner's strategies in its simulation mode on
the recorded spaces that `tune db export --format kernel_tuner` writes, scored
exactly as `tune-bench-search` scores tune's strategies.

For each cache file, strategy and seed 1..N:
  - evaluation budgets (1, 2, 5, 10, 20, 50 % of the configs in the cache,
    rounded half up, at least 1): one Kernel Tuner run per budget with
    strategy_options max_fevals = budget (some strategies, e.g. simulated
    annealing, fit their schedule to it);
  - time budgets (the same fractions of the cache's total compile + benchmark
    time): one run with strategy_options time_limit a little above the
    largest budget; a budget's best is the best among the evaluations whose
    cumulative recorded time is within it. Kernel Tuner's simulated clock
    also counts its own wall time; the script patches
    TuningBudget.get_time_spent to count only the recorded times, as
    tune-bench-search does.
  - the search space is exactly the configs in the cache (failed ones
    included: they cost an evaluation and find nothing), passed as a
    restriction; random and numpy.random are seeded with the seed before
    each run, and the script runs under PYTHONHASHSEED=0 (it re-executes
    itself to get it) so that runs repeat.
P = (baseline - found) / (baseline - optimum); baseline: random search's
expected best, exact for evaluation budgets and, for time budgets, read from
`tune-bench-search --json` output (--baseline-json) so that both sides use
the same numbers (else estimated here from 20000 random orders).
found: best time within the budget, or the space's worst time when nothing
was found. Cells: median [q1, q3] over the seeds (linear interpolation).

Kernel Tuner 1.5.0's hill climbers (greedy_ils, greedy_mls,
ordered_greedy_mls, mls) crash in Searchspace's neighbour cache (a numpy
array where a list is expected); the script converts that argument to a list
before the call (--no-patch leaves it alone) and says so in its output.

Some runs never end: on the attention.prefill_sm90 spaces (10 parameters, 36-108 valid
configs of 864) Kernel Tuner 1.5.0's hill climbers (greedy_ils seen) sometimes loop
without finding an unvisited config while their neighbour caches grow by GBs (a pool of
such workers stalled the whole benchmark). Each run has a wall-clock limit
(--run-timeout, default 60 s; a run of the 10 % budget normally takes well under a
second): a run past it raises in its worker (SIGALRM), counts as failed for that budget
and seed (the cell's note gives how many), and the worker goes on with its next task (as
every worker, it is replaced after 20 tasks).

--eval-budgets 10 runs only the 10 % evaluation budget (a comma list of
percentages of FRACS), --no-time skips the time-budget run: cells not run
read "not run" (the same string in the JSON, whose "not_run" lists them). Each
budget is a separate Kernel Tuner run, so this is how to fit many seeds and
strategies into less CPU time.

usage: kernel_tuner_sim.py CACHE.json [CACHE.json ...] [--repeats 100]
         [--strategies a,b,...] [--baseline-json FILE] [--json OUT] [--jobs N]
         [--eval-budgets 1,2,5,10,20,50] [--no-time]
"""
import argparse
import json
import math
import multiprocessing
import os
import random
import signal
import sys
import time
import warnings

FRACS = [0.01, 0.02, 0.05, 0.10, 0.20, 0.50]
# Every single-objective strategy of Kernel Tuner 1.5.0 that runs without
# optional packages (skopt and pyatf_strategies need scikit-optimize and pyATF;
# brute_force is exhaustive; nsga2/nsga3 are multi-objective).
ALL_STRATEGIES = [
    "random_sample", "genetic_algorithm", "simulated_annealing", "bayes_opt", "pso",
    "diff_evo", "firefly_algorithm", "dual_annealing", "basinhopping", "minimize",
    "greedy_ils", "greedy_mls", "ordered_greedy_mls", "mls", "hybrid_vndx",
    "adaptive_tabu_greywolf",
]
DEFAULT_STRATEGIES = ALL_STRATEGIES
ERRORS = {"ErrorConfig", "InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig"}


def load_space(path):
    with open(path) as f:
        c = json.load(f)
    keys = c["tune_params_keys"]
    entries = []
    for e in c["cache"].values():
        t = e.get("time")
        ok = not isinstance(t, str) and t is not None and "__error__" not in e
        secs = (e.get("compile_time", 0) + e.get("verification_time", 0) + e.get("benchmark_time", 0)) / 1e3
        entries.append((tuple(e[k] for k in keys), t * 1e6 if ok else -1.0, secs))
    return c, keys, entries


def expected_best(ok_sorted, n, k, worst):
    q, e = 1.0, 0.0
    for i, v in enumerate(ok_sorted):
        nxt = q * (n - k - i) / (n - i) if n - i >= k else 0.0
        nxt = max(nxt, 0.0)
        e += v * (q - nxt)
        q = nxt
    return e + worst * q


def time_baseline_mc(entries, secs, worst, runs=20000):
    import numpy as np
    rng = np.random.default_rng(12345)
    costs = np.array([c for _, c, _ in entries])
    times = np.array([t for _, _, t in entries])
    sums = [0.0] * len(secs)
    for _ in range(runs):
        order = rng.permutation(len(entries))
        cum = np.cumsum(times[order])
        c = costs[order]
        c = np.where(c >= 0, c, np.inf)
        best = np.minimum.accumulate(c)
        for j, s in enumerate(secs):
            idx = np.searchsorted(cum, s, side="right") - 1
            v = best[idx] if idx >= 0 else np.inf
            sums[j] += v if np.isfinite(v) else worst
    return [s / runs for s in sums]


def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    if lo >= len(v) - 1:
        return v[-1]
    return v[lo] + (pos - lo) * (v[lo + 1] - v[lo])


_SPACE = {}


def _init_worker(patch):
    warnings.simplefilter("ignore")
    import logging
    logging.disable(logging.CRITICAL)
    from kernel_tuner import util
    # Count only the recorded (simulated) time, not Kernel Tuner's own wall time.
    util.TuningBudget.get_time_spent = lambda self: self.time_spent_extra
    if patch:
        from kernel_tuner.searchspace import Searchspace
        orig = Searchspace._Searchspace__add_to_neighbor_partial_cache

        def fixed(self, param_config, neighbor_indices, neighbor_method, full_neighbors=False):
            return orig(self, param_config, list(neighbor_indices), neighbor_method, full_neighbors)
        Searchspace._Searchspace__add_to_neighbor_partial_cache = fixed


def _run_one(path, strategy, seed, options):
    import numpy as np
    import kernel_tuner
    c, keys, valid = _SPACE[path]

    def restriction(p):
        return tuple(p[k] for k in keys) in valid
    random.seed(seed)
    np.random.seed(seed)
    import io
    import contextlib
    with contextlib.redirect_stdout(io.StringIO()):
        res, _ = kernel_tuner.tune_kernel(
            c["kernel_name"], "", tuple(c["problem_size"]), [], c["tune_params"],
            restrictions=[restriction], cache=path, simulation_mode=True, strategy=strategy,
            strategy_options=options, quiet=True, verbose=False)
    out = []
    for r in res:
        if not r:
            continue
        t = r.get("time")
        ok = not isinstance(t, str) and t is not None and "__error__" not in r
        secs = (r.get("compile_time", 0) + r.get("verification_time", 0) + r.get("benchmark_time", 0)) / 1e3
        out.append((t * 1e6 if ok else -1.0, secs, tuple(r.get(k) for k in keys)))
    return out


class RunTimeout(Exception):
    """A Kernel Tuner run went past --run-timeout."""


def _alarm(signum, frame):
    raise RunTimeout()


def _run_limited(path, strategy, seed, options, limit_s):
    """_run_one under a wall-clock limit (SIGALRM in the worker: each worker is one
    single-threaded process, so the alarm interrupts the run itself)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        return _run_one(path, strategy, seed, options)
    except RunTimeout:
        raise RunTimeout(f"no result within {limit_s:g} s (Kernel Tuner's run did not end; stopped)") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class _NotRun(Exception):
    """The time-budget run was not asked for (--no-time)."""


def task(args):
    path, strategy, seed, evals, secs, run_evals, run_time, limit_s = args
    if path not in _SPACE:
        c, keys, entries = load_space(path)
        _SPACE[path] = (c, keys, set(e[0] for e in entries))
    t0 = time.time()
    fe, ft, err = [], [None] * len(secs), None
    # A run that raises is reported (its budget's cell says "failed"), not hidden.
    for j, b in enumerate(evals):
        if not run_evals[j]:
            fe.append(None)
            continue
        try:
            seq = _run_limited(path, strategy, seed, {"max_fevals": b}, limit_s)
            fe.append(min((c for c, _, _ in seq if c >= 0), default=math.inf))
        except Exception as e:
            fe.append(None)
            err = err or f"max_fevals {b}: {type(e).__name__}: {str(e)[:200]}"
    try:
        if not run_time:
            raise _NotRun()
        seq = _run_limited(path, strategy, seed, {"time_limit": secs[-1] * 1.05 + 1.0}, limit_s)
        cum, best, found = 0.0, math.inf, [math.inf] * len(secs)
        for c, s, _ in seq:
            cum += s
            if c >= 0:
                best = min(best, c)
            for j, lim in enumerate(secs):
                if cum <= lim:
                    found[j] = best
        ft = found
    except _NotRun:
        pass
    except Exception as e:
        err = err or f"time_limit: {type(e).__name__}: {str(e)[:200]}"
    return path, strategy, seed, fe, ft, err, time.time() - t0


def trajectory_cap(n):
    """Evaluations a --trajectory run may spend: criterion (c)'s bar max(25 %, 10), at least 20 (all
    of a smaller space), as tune-bench-search's trajectories. B98 beyond it reads as not reached."""
    return min(n, max(20, max(int(math.floor(0.25 * n + 0.5)), 10)))


def task_trajectory(args):
    """One run of max_fevals = trajectory_cap(n): the steps of its best so far, counted in distinct
    configs evaluated (a revisit is answered from Kernel Tuner's cache and costs nothing), as
    [[evaluations, best ns], ...] at each improvement; failed configs count and find nothing."""
    path, strategy, seed, cap, limit_s = args
    if path not in _SPACE:
        c, keys, entries = load_space(path)
        _SPACE[path] = (c, keys, set(e[0] for e in entries))
    t0 = time.time()
    steps, err = [], None
    try:
        seq = _run_limited(path, strategy, seed, {"max_fevals": cap}, limit_s)
        seen, best = set(), math.inf
        for cost, _, cfg in seq:
            if cfg in seen:
                continue
            seen.add(cfg)
            if cost >= 0 and cost < best:
                best = cost
                steps.append([len(seen), cost])
            if len(seen) >= cap:
                break
    except Exception as e:
        steps, err = None, f"{type(e).__name__}: {str(e)[:200]}"
    return path, strategy, seed, steps, err, time.time() - t0


def main_trajectory(a, strategies):
    """--trajectory: per cache, strategy and seed, the best-so-far steps of one run (task_trajectory),
    written to --json for tools/bench/search_criteria.py (B98 and the criteria)."""
    import kernel_tuner
    tasks, spaces = [], {}
    # smallest spaces first: a run cut short has whole spaces done (written every minute to --json)
    for path in sorted(a.caches, key=lambda p: len(load_space(p)[2])):
        c, keys, entries = load_space(path)
        ok = sorted(cost for _, cost, _ in entries if cost >= 0)
        if not ok:
            print(f"{path}: no successful config, skipped", file=sys.stderr)
            continue
        n = len(entries)
        spaces[path] = dict(recipe=c["kernel_name"], problem=c.get("problem_name", "?"), device=c["device_name"],
                            n_points=n, n_ok=len(ok), optimum_ns=ok[0], cap=trajectory_cap(n), strategies={})
        for s in strategies:
            for seed in range(1, a.repeats + 1):
                tasks.append((path, s, seed, trajectory_cap(n), a.run_timeout))
    print(f"Kernel Tuner {kernel_tuner.__version__} in simulation mode, trajectories, {a.repeats} seeds per strategy"
          f"{'' if a.no_patch else ' (neighbour-cache bug of 1.5.0 patched: list(neighbor_indices))'}")
    t0 = last = time.time()
    left = {path: len(strategies) * a.repeats for path in spaces}

    def write(final):
        """Every space whose runs are all done (all of them when final) to --json."""
        if not a.json:
            return
        done = []
        for path, sp in spaces.items():
            if left[path] and not final:
                continue
            d = dict(sp, strategies={})
            for s, st in sp["strategies"].items():
                d["strategies"][s] = dict(st, runs=[st["runs"][k] for k in sorted(st["runs"])])
            done.append(d)
        with open(a.json + ".tmp", "w") as f:
            json.dump(dict(kernel_tuner=kernel_tuner.__version__, mode="trajectory", repeats=a.repeats,
                           strategies=strategies, runs=len(tasks), runtime_s=time.time() - t0, jobs=a.jobs,
                           complete=final, problems=done), f, separators=(",", ":"))
        os.replace(a.json + ".tmp", a.json)

    with multiprocessing.Pool(a.jobs, initializer=_init_worker, initargs=(not a.no_patch,),
                              maxtasksperchild=20) as pool:
        for path, s, seed, steps, err, dt in pool.imap_unordered(task_trajectory, tasks, chunksize=1):
            st = spaces[path]["strategies"].setdefault(s, dict(runs={}, errors=[], seconds=0.0))
            st["seconds"] += dt
            if steps is None:
                st["errors"].append(f"seed {seed}: {err}")
            else:
                st["runs"][seed] = steps
            left[path] -= 1
            if time.time() - last > 60:
                write(False)
                last = time.time()
    print(f"({len(tasks)} runs in {time.time() - t0:.0f} s)")
    write(True)
    return 0


def main():
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("caches", nargs="+")
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES))
    ap.add_argument("--baseline-json", action="append", default=[],
                    help="tune-bench-search --json output (same baselines); repeatable")
    ap.add_argument("--json", help="write every number here")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--eval-budgets", default=",".join(f"{100 * f:g}" for f in FRACS),
                    help="evaluation budgets to run, in percent of the space (others: not run)")
    ap.add_argument("--no-time", action="store_true", help="do not run the time-budget run")
    ap.add_argument("--run-timeout", type=float, default=60.0,
                    help="wall-clock limit of one Kernel Tuner run [s]; past it the run counts as failed")
    ap.add_argument("--no-patch", action="store_true", help="do not work around the neighbour-cache bug")
    ap.add_argument("--trajectory", action="store_true",
                    help="one run per seed of trajectory_cap(n) evaluations; --json gets its best-so-far steps")
    a = ap.parse_args()
    try:
        import kernel_tuner
    except ImportError:
        print("kernel_tuner is not installed (pip install kernel_tuner); nothing to compare", file=sys.stderr)
        return 3
    strategies = [s for s in a.strategies.split(",") if s]
    if a.trajectory:
        return main_trajectory(a, strategies)
    want = {round(float(x), 6) for x in a.eval_budgets.split(",") if x}
    run_evals = [round(100 * f, 6) in want for f in FRACS]
    run_time = not a.no_time
    not_run = [f"evals {100 * f:g} %" for f, r in zip(FRACS, run_evals) if not r] + ([] if run_time else ["time"])
    base_json = []
    for path in a.baseline_json:
        with open(path) as f:
            base_json += json.load(f)
    spaces = {}
    tasks = []
    for path in a.caches:
        c, keys, entries = load_space(path)
        n = len(entries)
        ok = sorted(cost for _, cost, _ in entries if cost >= 0)
        if not ok:
            print(f"{path}: no successful config, skipped", file=sys.stderr)
            continue
        opt, worst = ok[0], ok[-1]
        total = sum(t for _, _, t in entries)
        evals = [max(1, int(math.floor(f * n + 0.5))) for f in FRACS]
        secs = [f * total for f in FRACS]
        be = [expected_best(ok, n, k, worst) for k in evals]
        bt = None
        for p in base_json:
            if p.get("recipe") == c["kernel_name"] and p.get("problem") == c.get("problem_name"):
                if p["n_points"] == n:
                    bt = [b["baseline_time_ns"] for b in p["budgets"]]
                    be_tune = [b["baseline_eval_ns"] for b in p["budgets"]]
                    for x, y in zip(be, be_tune):
                        if abs(x - y) > 1e-6 * abs(y):
                            print(f"{path}: warning: evaluation baseline {x} differs from tune's {y}", file=sys.stderr)
        if bt is None:
            bt = time_baseline_mc(entries, secs, worst)
        spaces[path] = dict(kernel=c["kernel_name"], problem=c.get("problem_name", "?"), device=c["device_name"],
                            n=n, n_ok=len(ok), opt=opt, worst=worst, total=total, evals=evals, secs=secs,
                            base_eval=be, base_time=bt)
        for s in strategies:
            for seed in range(1, a.repeats + 1):
                tasks.append((path, s, seed, evals, secs, run_evals, run_time, a.run_timeout))
    print(f"Kernel Tuner {kernel_tuner.__version__} in simulation mode, {a.repeats} seeds per strategy"
          f"{'' if a.no_patch else ' (neighbour-cache bug of 1.5.0 patched: list(neighbor_indices))'}")
    results = {}
    t0 = time.time()
    # Workers are replaced every 20 tasks: Kernel Tuner 1.5.0's memory grows run after run in one
    # process (a worker reached 18 GB on the 270-config decode spaces and was killed, and a task lost
    # with its worker would leave the pool waiting for ever).
    with multiprocessing.Pool(a.jobs, initializer=_init_worker, initargs=(not a.no_patch,),
                              maxtasksperchild=20) as pool:
        for path, s, seed, fe, ft, err, dt in pool.imap_unordered(task, tasks, chunksize=1):
            results.setdefault((path, s), []).append((seed, fe, ft, err, dt))
    runtime_s = time.time() - t0
    print(f"({len(tasks)} runs in {runtime_s:.0f} s)" + (f"; not run: {', '.join(not_run)}" if not_run else ""))
    doc = []
    for path, sp in spaces.items():
        print(f"\n== {sp['kernel']} / {sp['problem']}: {sp['n']} configs ({sp['n_ok']} ok) recorded on {sp['device']}")
        print(f"P score, median [q1,q3] over {a.repeats} seeds")
        pj = dict(recipe=sp["kernel"], problem=sp["problem"], n_points=sp["n"], optimum_ns=sp["opt"],
                  budgets=[dict(fraction=f, evals=e, seconds=s, baseline_eval_ns=b1, baseline_time_ns=b2)
                           for f, e, s, b1, b2 in zip(FRACS, sp["evals"], sp["secs"], sp["base_eval"], sp["base_time"])],
                  strategies={})
        for kind in ("evals", "time"):
            head = [f"{100 * f:g}% ({e})" if kind == "evals" else f"{100 * f:g}% ({s:.1f} s)"
                    for f, e, s in zip(FRACS, sp["evals"], sp["secs"])]
            print(f"{kind:<22}" + "".join(f" {h:>18}" for h in head))
            for s in strategies:
                runs = sorted(results.get((path, s), []))
                errs = [r[3] for r in runs if r[3]]
                cells = []
                for j in range(len(FRACS)):
                    base = sp["base_eval"][j] if kind == "evals" else sp["base_time"][j]
                    den = base - sp["opt"]
                    ps, perf = [], []
                    ran = run_evals[j] if kind == "evals" else run_time
                    for _, fe, ft, _, _ in runs:
                        f = (fe if kind == "evals" else ft)[j]
                        if f is None:  # this budget's run raised
                            continue
                        f = f if math.isfinite(f) else sp["worst"]
                        perf.append(sp["opt"] / f)
                        if den > 1e-12 * sp["opt"]:
                            ps.append((base - f) / den)
                    if not ran:
                        cells.append("not run")
                    elif not perf:
                        cells.append(None)
                    elif not ps:
                        cells.append(dict(median=None, q1=None, q3=None, perf_median=quantile(perf, 0.5),
                                          frac98=sum(p >= 0.98 for p in perf) / len(perf)))
                    else:
                        cells.append(dict(median=quantile(ps, 0.5), q1=quantile(ps, 0.25), q3=quantile(ps, 0.75),
                                          perf_median=quantile(perf, 0.5),
                                          frac98=sum(p >= 0.98 for p in perf) / len(perf)))
                txt = []
                for cl in cells:
                    if cl == "not run":
                        txt.append(cl)
                    elif cl is None:
                        txt.append("failed")
                    elif cl["median"] is None:
                        txt.append("n/a")
                    else:
                        txt.append(f"{cl['median']:.2f} [{cl['q1']:.2f},{cl['q3']:.2f}]")
                note = f"  ({len(errs)} seeds had a run fail: {errs[0]})" if errs else ""
                print(f"{'kt:' + s:<22}" + "".join(f" {t:>18}" for t in txt) + note)
                pj["strategies"].setdefault(s, {})[kind] = cells
                if errs:
                    pj["strategies"][s]["errors"] = errs[:3]
                    pj["strategies"][s]["n_failed"] = len(errs)
                pj["strategies"][s]["seconds_per_seed"] = sum(r[4] for r in runs) / max(1, len(runs))
        doc.append(pj)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(kernel_tuner=kernel_tuner.__version__, repeats=a.repeats, strategies=strategies,
                           not_run=not_run, runs=len(tasks), runtime_s=runtime_s, jobs=a.jobs, problems=doc), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
