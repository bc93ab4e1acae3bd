#!/usr/bin/env python3
"""check_peers_test.py: tools/peers/check_peers.py without torch or a GPU: the problems of several
databases each once, one line per (problem, peer) and the count, and its exit codes, on a fake
backend whose peers pass, compute wrong values, or are refused.
"""
import contextlib
import io
import json
import os
import sqlite3
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "peers")))
import check_peers  # noqa: E402
import peer_server as ps  # noqa: E402


def make_db(path, problems):
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE problems (id INTEGER PRIMARY KEY, recipe_name TEXT, name TEXT, hash TEXT, dims_json TEXT)")
        db.executemany("INSERT INTO problems (recipe_name, name, hash, dims_json) VALUES (?, ?, ?, ?)",
                       [(r, n, n, json.dumps(d)) for r, n, d in problems])


class FakeBackend:
    """copy peers pass; the 1 GiB copy's peer has wrong values; gemm's peer is refused."""
    def __init__(self, dev):
        self.checked = []

    def check(self, peer, seed):
        self.checked.append((peer.name, peer.dims, seed))
        if peer.family == "copy" and peer.dims["N"] == 1 << 28:
            raise ps.WrongValues("wrong values: y differs from its float64 reference")
        if peer.family == "gemm":
            raise ps.PeerError("RuntimeError: no kernel for this shape")


class CheckPeersTest(unittest.TestCase):
    def run_main(self, problems_by_db, *args):
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for i, problems in enumerate(problems_by_db):
                paths.append(os.path.join(tmp, f"r{i}.db"))
                make_db(paths[-1], problems)
            out = io.StringIO()
            with mock.patch.object(ps, "TorchBackend", FakeBackend), mock.patch.object(ps, "CudaDevice", lambda lib: None), \
                    contextlib.redirect_stdout(out):
                rc = check_peers.main(list(args) + paths)
        return rc, out.getvalue().splitlines()

    def test_every_peer_once_and_the_count(self):
        copy64 = ("copy", "64MiB", {"N": 1 << 24})
        rc, lines = self.run_main([[copy64, ("transpose.f32", "t", {"R": 64, "C": 32})], [copy64]])
        self.assertEqual(rc, 0)
        self.assertEqual(lines, ["copy/64MiB torch: ok", "transpose.f32/t torch: ok",
                                 "peers checked: 2 ok, 0 wrong, 0 skipped"])

    def test_a_wrong_peer_fails_the_run_and_a_refused_one_is_skipped(self):
        rc, lines = self.run_main([[("copy", "1GiB", {"N": 1 << 28}),
                                    ("gemm", "m64", {"M": 64, "N": 64, "K": 64, "b_layout": "col"})]])
        self.assertEqual(rc, 1)
        self.assertIn("copy/1GiB torch: wrong: wrong values: y differs from its float64 reference", lines)
        self.assertIn("gemm/m64 cublas: skipped: RuntimeError: no kernel for this shape", lines)
        self.assertEqual(lines[-1], "peers checked: 0 ok, 1 wrong, 1 skipped")

    def test_dims_a_family_cannot_read_are_skipped(self):
        rc, lines = self.run_main([[("gemm", "old", {"M": 64})]])
        self.assertEqual(rc, 0)
        self.assertEqual(lines[0], "gemm/old: skipped: dims of gemm lack N, K, b_layout")

    def test_a_missing_database_is_an_error(self):
        err = io.StringIO()
        with mock.patch.object(ps, "TorchBackend", FakeBackend), mock.patch.object(ps, "CudaDevice", lambda lib: None), \
                contextlib.redirect_stderr(err):
            self.assertEqual(check_peers.main(["/nonexistent/x.db"]), 2)
        self.assertIn("check_peers: unable to open database file", err.getvalue())

    def test_no_database_is_a_usage_error(self):
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as e:
            check_peers.main([])
        self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
