#!/usr/bin/env python3
"""check_peers.py: the value check of every peer (docs/peers.md) on every problem of tune databases,
without timing: each peer's output once, against its float64 reference, as `tune compare` checks it
before it times a peer. Prints one line per (problem, peer) and a count; exits 1 when a peer is
wrong, 2 on bad usage, a database that cannot be read or a device that cannot be opened.

usage: check_peers.py [--lib PATH/libtune_cupti_py.so] [--seed N] DB...
"""
import argparse
import json
import sqlite3
import sys

import peer_server as ps


def problems(paths):
    """(recipe, problem, dims) of the databases, each (recipe, problem hash) once, in order."""
    seen = set()
    for path in paths:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            for recipe, name, h, dims in db.execute("SELECT recipe_name, name, hash, dims_json FROM problems ORDER BY id"):
                if (recipe, h) not in seen:
                    seen.add((recipe, h))
                    yield recipe, name, json.loads(dims)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=ps.default_lib(), help="libtune_cupti_py.so (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=1, help="the inputs' seed, as a comparison's (default 1)")
    ap.add_argument("db", nargs="+", help="tune databases whose problems are checked")
    args = ap.parse_args(argv)
    backend = ps.TorchBackend(ps.CudaDevice(args.lib))
    counts = {"ok": 0, "wrong": 0, "skipped": 0}
    try:
        for recipe, name, dims in problems(args.db):
            try:
                peers = ps.peers_for(recipe, dims)
            except ps.PeerError as e:
                print(f"{recipe}/{name}: skipped: {e}")
                counts["skipped"] += 1
                continue
            for p in peers:
                try:
                    backend.check(p, args.seed)
                    verdict, why = "ok", ""
                except ps.PeerError as e:
                    verdict, why = "wrong" if isinstance(e, ps.WrongValues) else "skipped", f": {e}"
                print(f"{recipe}/{name} {p.name}: {verdict}{why}")
                counts[verdict] += 1
            sys.stdout.flush()
    except ps.DeviceError as e:
        print(f"check_peers: {e}", file=sys.stderr)
        return 2
    except sqlite3.Error as e:
        print(f"check_peers: {e} (reading {', '.join(args.db)})", file=sys.stderr)
        return 2
    print(f"peers checked: {counts['ok']} ok, {counts['wrong']} wrong, {counts['skipped']} skipped")
    return 1 if counts["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
