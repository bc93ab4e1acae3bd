#!/usr/bin/env python3
"""peer_server_test.py: tools/peers/peer_server.py without torch or a GPU.

The statistics and stop rule against tuner/worker.c's, the sustained mode's set count and calls per
sample, the recipe -> peer mapping, both timing protocols on a fake device whose kernels take a set
time, and the JSON protocol with a fake backend. CuptiLibTest loads libtune_cupti_py.so ($PEERS_LIB)
and checks that it refuses cleanly where there is no driver.

usage: peer_server_test.py [TestClass ...]
"""
import ctypes
import importlib.util
import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "peers"))
import peer_server as ps  # noqa: E402
import worker_inputs  # noqa: E402
from recipe_args import arg_names  # noqa: E402 (tests/unit)

MiB = 1 << 20


class StatsTest(unittest.TestCase):
    def test_rel_ci_is_the_workers_order_statistics(self):
        s = [float(x) for x in range(1, 11)]  # n 10: h = 0.98 sqrt(10) = 3.099; lo 1, hi 9; median s[5]
        self.assertAlmostEqual(ps.median_rel_ci(s), (10 - 2) / 6.0)
        s = [float(x) for x in range(1, 201)]  # n 200: h 13.86; lo 86, hi 114; median s[100]
        self.assertAlmostEqual(ps.median_rel_ci(list(reversed(s))), (115 - 87) / 101.0)

    def test_rel_ci_clamps_to_the_samples(self):
        self.assertAlmostEqual(ps.median_rel_ci([1.0, 2.0, 4.0]), (4 - 1) / 2.0)
        self.assertEqual(ps.median_rel_ci([0.0, 0.0, 0.0]), 1.0)

    def test_stop_rule(self):
        same = [100.0] * 9
        self.assertEqual(ps.sampling_done(same, 10, 200, 0), (False, None))
        self.assertEqual(ps.sampling_done(same + [100.0], 10, 200, 0), (True, 0.0))
        noisy = [100.0 + (i % 2) * 10 for i in range(10)]
        stop, ci = ps.sampling_done(noisy, 10, 200, 1999.0)
        self.assertFalse(stop)
        self.assertGreater(ci, 0.01)
        self.assertTrue(ps.sampling_done(noisy, 10, 200, 2001.0)[0])
        self.assertTrue(ps.sampling_done(noisy * 20, 10, 200, 0)[0])  # 200 samples: the cap

    def test_summary_median_as_reported(self):
        self.assertEqual(ps.summarize([3.0, 1.0, 2.0]), {"median_ns": 2.0, "min_ns": 1.0, "max_ns": 3.0, "samples": 3})
        self.assertEqual(ps.summarize([4.0, 1.0, 2.0, 3.0])["median_ns"], 2.5)

    def test_clocks_fold_like_tune_clocks_fold(self):
        c = ps.Clocks()
        c.fold((-1, -1, 0, 0))
        self.assertEqual(c.as_dict(), {"sm_mhz": -1, "mem_mhz": -1, "power_w": 0, "clock_reasons": 0})
        c.fold((1980, 2619, 0x1, 300))
        c.fold((1755, 2619, 0x4, 690))
        c.fold((1830, -1, 0x0, 500))
        self.assertEqual(c.as_dict(), {"sm_mhz": 1755, "mem_mhz": 2619, "power_w": 690, "clock_reasons": 0x5})


class SustainedRulesTest(unittest.TestCase):
    def test_rotation_sets(self):
        self.assertEqual(ps.rotation_sets(1 * MiB, 50 * MiB), 101)      # ceil(100) + 1
        self.assertEqual(ps.rotation_sets(32 * MiB, 50 * MiB), 5)       # ceil(3.125) + 1
        self.assertEqual(ps.rotation_sets(384 * MiB, 50 * MiB), 2)      # at least 2
        self.assertEqual(ps.rotation_sets(2 << 30, 50 * MiB), 2)        # 4 GiB: still two
        self.assertEqual(ps.rotation_sets(3 << 30, 50 * MiB), 1)        # two would pass 4 GiB
        self.assertEqual(ps.rotation_sets(1 << 10, 50 * MiB), 102401)
        self.assertEqual(ps.rotation_sets(1 << 10, 3 << 30), 4 << 20)   # capped at 4 GiB
        self.assertEqual(ps.rotation_sets(32 * MiB, 0), 5)              # no L2 reported: 64 MiB

    def test_calls_per_sample(self):
        self.assertEqual(ps.calls_per_sample(1e6), 20)
        self.assertEqual(ps.calls_per_sample(3e5), 66)                  # rounded down
        self.assertEqual(ps.calls_per_sample(1e3), 10000)
        self.assertEqual(ps.calls_per_sample(3e7), 1)
        self.assertEqual(ps.calls_per_sample(0.0), 10000)


def load_server_as(name):
    """A second peer_server module from its file, registered under name (as a script is under __main__)."""
    spec = importlib.util.spec_from_file_location(name, ps.__file__)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class PeersForTest(unittest.TestCase):
    GEMM = {"M": 4096, "N": 4096, "K": 4096, "b_layout": "col"}
    PREFILL = {"B": 4, "HQ": 32, "HKV": 8, "S": 4096, "D": 128, "causal": True}
    # recipes/attention/decode.lua's dims: lengths 1 .. 256 * 16 = 4096, drawn per seed
    DECODE = {"B": 32, "HQ": 32, "HKV": 8, "D": 128, "page_size": 16, "max_pages": 256}

    def names(self, recipe, dims):
        return [(p.name, p.family, p.opts) for p in ps.peers_for(recipe, dims)]

    def test_gemm_recipes(self):
        for r in ("gemm", "gemm.splitk", "gemm.gemv_rows", "gemm.skinny"):
            self.assertEqual(self.names(r, self.GEMM), [("cublas", "gemm", {"dtype": "bf16"})])
        for r in ("gemm.f16", "gemm.f16.splitk", "gemm.f16.gemv_rows"):
            self.assertEqual(self.names(r, self.GEMM), [("cublas", "gemm", {"dtype": "f16"})])
        self.assertEqual(ps.peers_for("gemm", self.GEMM)[0].set_bytes, 3 * 2 * 4096 * 4096)

    def test_attention_recipes(self):
        for r in ("attention.prefill", "attention.prefill_sm90"):
            self.assertEqual([n for n, _, _ in self.names(r, self.PREFILL)], ["cudnn-sdpa", "flash-sdpa"])
        p = ps.peers_for("attention.decode", self.DECODE)
        self.assertEqual([(x.name, x.family, x.opts["backend"]) for x in p],
                         [("cudnn-sdpa", "decode", "cudnn"), ("flash-sdpa", "decode", "flash")])
        # q and o one token each; k and v of the expected length (4096 + 1) / 2, rounded up, at HKV heads
        self.assertEqual(p[0].set_bytes, 2 * 32 * 128 * (2 * 32 + 2 * 8 * 2049))
        one = dict(self.DECODE, B=1, max_pages=2048)  # one sequence: always the full length
        self.assertEqual(ps.peers_for("attention.decode", one)[0].set_bytes, 2 * 128 * (2 * 32 + 2 * 8 * 32768))
        with self.assertRaisesRegex(ps.PeerError, "lack page_size, max_pages"):  # the dims before paging
            ps.peers_for("attention.decode", {"B": 32, "HQ": 32, "HKV": 8, "L": 4096, "D": 128})
        self.assertEqual(ps.peers_for("attention.prefill", self.PREFILL)[0].set_bytes,
                         2 * 4 * 4096 * 128 * (2 * 32 + 2 * 8))

    def test_memory_recipes(self):
        self.assertEqual(self.names("copy", {"N": 16 * MiB}), [("torch", "copy", {})])
        self.assertEqual(ps.peers_for("copy", {"N": 16 * MiB})[0].set_bytes, 128 * MiB)
        for r in ("softmax", "softmax.split", "softmax.cluster", "softmax.stream", "softmax.stream_tail"):
            self.assertEqual(self.names(r, {"rows": 64, "cols": 131072}), [("torch", "softmax", {})])
        self.assertEqual(self.names("rmsnorm.add", {"T": 4, "H": 8, "residual": True}),
                         [("torch", "rmsnorm", {"residual": True})])
        self.assertEqual(self.names("rmsnorm", {"T": 4, "H": 8, "residual": False}),
                         [("torch", "rmsnorm", {"residual": False})])
        self.assertEqual(ps.peers_for("rmsnorm.add", {"T": 4, "H": 8})[0].set_bytes, 2 * (4 * 32 + 8))
        self.assertEqual(self.names("transpose.bf16", {"R": 2, "C": 3}), [("torch", "transpose", {"dtype": "bf16"})])
        self.assertEqual(ps.peers_for("transpose.f32", {"R": 2, "C": 3})[0].set_bytes, 2 * 6 * 4)
        self.assertEqual(self.names("elementwise", {"rows": 2, "cols": 3}), [("torch", "elementwise", {})])

    def test_a_peer_knows_its_server_under_any_name(self):
        """peer.api is the module that made the peer, whatever its name (the server runs as __main__):
        peer_server's own peers and a family module's alike."""
        combine = {"T": 4, "H": 8, "top_k": 2}
        self.assertIs(ps.peers_for("gemm", self.GEMM)[0].api, ps)
        self.assertIs(ps.peers_for("moe.combine", combine)[0].api, ps)
        other = load_server_as("peer_server_elsewhere")
        self.addCleanup(sys.modules.pop, "peer_server_elsewhere")
        self.assertIsNot(other, ps)
        self.assertIs(other.peers_for("moe.combine", combine)[0].api, other)

    def test_no_peer_and_missing_dims(self):
        self.assertEqual(ps.peers_for("layernorm", {}), [])
        self.assertEqual(ps.peers_for("gemmish", self.GEMM), [])
        with self.assertRaisesRegex(ps.PeerError, "lack K, b_layout"):
            ps.peers_for("gemm", {"M": 1, "N": 2})


class DecodeLengthsTest(unittest.TestCase):
    """attention.decode's peers attend over one length (SDPA's), the mean of the lengths the worker
    draws for the same seed from the recipe's seq_lens init."""
    D = PeersForTest.DECODE

    def test_seq_lens_arg_index_is_the_recipes(self):
        args = arg_names("attention/decode.lua", "attention/shared/decode.lua")
        self.assertEqual(args.index("seq_lens"), ps.DECODE_SEQ_LENS_ARG)
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "recipes", "attention",
                               "decode.lua")) as f:
            self.assertIn('{ "randint", "B == 1 and max_pages * page_size or 1", "max_pages * page_size" }', f.read())

    def test_the_workers_draw(self):
        for seed in (1, 7, 123456789012345):
            self.assertEqual(ps.decode_lengths(self.D, seed), worker_inputs.randint(seed, 4, 32, 1, 4096))
        lens = ps.decode_lengths(self.D, 3)
        self.assertTrue(all(1 <= n <= 4096 for n in lens))
        self.assertGreater(len(set(lens)), 16, "mixed lengths")
        self.assertEqual(ps.decode_lengths(dict(self.D, B=1, max_pages=2048), 5), [32768])

    def test_sdpa_gets_the_mean_rounded_up(self):
        self.assertEqual(ps.sdpa_len([1, 2]), 2)
        self.assertEqual(ps.sdpa_len([4096] * 8), 4096)
        self.assertEqual(ps.sdpa_len([1, 8192, 100]), 2765)
        self.assertEqual(ps.decode_mean_len(self.D), 2049)

    def test_the_peers_length(self):
        L, lens = ps.decode_kv_len(self.D, 11)
        self.assertEqual(lens, ps.decode_lengths(self.D, 11))
        self.assertEqual(L, -(-sum(lens) // 32))
        self.assertEqual(ps.decode_kv_len({"B": 2, "HQ": 8, "HKV": 8, "L": 300, "D": 64}, 11), (300, None))


class FakeDevice:
    """Kernels that take kernel_ns each, kernels_per_call per call; time advances with them."""

    def __init__(self, kernel_ns=1000.0, kernels_per_call=1, l2_bytes=50 * MiB, host_ns=1.0):
        self.kernel_ns, self.kernels_per_call, self.l2_bytes = kernel_ns, kernels_per_call, l2_bytes
        self.host_ns = host_ns  # the host's time per call (1 ns: the kernels' times stay round)
        self.t = 0.0  # [s]
        self.pending = []  # durations since the last collect
        self.log = []  # what happened, in order
        self.clock_samples = 0

    def now(self):
        return self.t

    def run_call(self, i):
        self.log.append(("call", i))
        self.t += self.host_ns * 1e-9
        for _ in range(self.kernels_per_call):
            self.pending.append(self.kernel_ns)
            self.t += self.kernel_ns * 1e-9

    def collect(self):
        p, self.pending = self.pending, []
        self.log.append(("collect", len(p)))
        return sum(p), sum(p), len(p), "k1;k2" if p else ""

    def clocks(self):
        self.clock_samples += 1
        self.log.append(("clocks",))
        return 1980 - self.clock_samples, 2619, 0, 300 + self.clock_samples

    def flush_l2(self, value):
        self.log.append(("flush", value))

    def memset(self, ptr, value, nbytes):
        self.log.append(("memset", ptr, value, nbytes))

    def synchronize(self):
        self.log.append(("sync",))


class FakeOp:
    def __init__(self, dev, n_sets=1):
        self.dev, self.n_sets = dev, n_sets

    def call(self, i):
        self.dev.run_call(i)

    def outputs(self, i):
        return [(0x1000 + i, 64)]


class BurstTest(unittest.TestCase):
    def test_protocol_steps(self):
        dev = FakeDevice(kernel_ns=2e6)  # 2 ms a call: the warm-up stops after 20 ms
        r = ps.measure_burst(dev, FakeOp(dev), now=dev.now)
        calls = [e for e in dev.log if e[0] == "call"]
        first_collect = dev.log.index(("collect", 10))
        self.assertEqual(len([e for e in dev.log[:first_collect] if e[0] == "call"]), 10)  # 10 calls: 20 ms
        self.assertEqual(len(calls), 10 + 10)  # equal samples: the minimum of 10
        timed = dev.log[first_collect + 1:]
        # per sample: poison the outputs, flush (value = sample index), call, synchronize, collect
        self.assertEqual(timed[1:6], [("memset", 0x1000, 0xff, 64), ("flush", 0), ("call", 0), ("sync",), ("collect", 1)])
        self.assertEqual([e[1] for e in timed if e[0] == "flush"], list(range(10)))
        # clocks: before the first sample, before the 8th, after the last
        self.assertEqual([i for i, e in enumerate(timed) if e[0] == "clocks"], [0, 36, len(timed) - 1])
        self.assertEqual((r["median_ns"], r["samples"], r["rel_ci"], r["timing"]), (2e6, 10, 0.0, "burst"))
        self.assertEqual((r["sm_mhz"], r["power_w"], r["kernels"], r["kernels_per_call"]), (1977, 303, "k1;k2", 1))

    def test_samples_alternate_sets(self):
        dev = FakeDevice(kernel_ns=2e6)
        ps.measure_burst(dev, FakeOp(dev, n_sets=2), now=dev.now)
        first_collect = dev.log.index(("collect", 10))
        timed = dev.log[first_collect + 1:]
        self.assertEqual([e[1] for e in timed if e[0] == "call"], [0, 1] * 5)
        self.assertEqual([e[1] for e in timed if e[0] == "memset"], [0x1000, 0x1001] * 5)  # each set's own outputs

    def test_warmup_at_least_three_calls_at_most_fifty(self):
        for kernel_ns, warm in ((1e8, 3), (1e3, 50)):
            dev = FakeDevice(kernel_ns=kernel_ns)
            ps.measure_burst(dev, FakeOp(dev), now=dev.now)
            self.assertEqual(dev.log[warm * 2], ("collect", warm))

    def test_sample_sums_the_kernels_of_a_call(self):
        dev = FakeDevice(kernel_ns=5e3, kernels_per_call=3)
        r = ps.measure_burst(dev, FakeOp(dev), now=dev.now)
        self.assertEqual((r["median_ns"], r["kernels_per_call"]), (15e3, 3))

    def test_noisy_samples_run_to_the_time_cap(self):
        dev = FakeDevice()
        op = FakeOp(dev)
        n = [0]

        def call(i):  # alternating 10 ms and 20 ms: the interval of the median never closes
            n[0] += 1
            dev.kernel_ns = 1e7 * (1 + n[0] % 2)
            dev.run_call(i)
        op.call = call
        r = ps.measure_burst(dev, op, now=dev.now)
        self.assertGreater(r["rel_ci"], 0.01)
        # 15 ms a sample on average: stopped by the first sample that ends past 2 s
        self.assertEqual(r["samples"], 134)

    def test_a_call_without_kernels_is_an_error(self):
        dev = FakeDevice(kernels_per_call=0)
        with self.assertRaisesRegex(ps.PeerError, "no kernel ran"):
            ps.measure_burst(dev, FakeOp(dev), now=dev.now)


class SustainedTest(unittest.TestCase):
    def test_protocol_steps(self):
        dev = FakeDevice(kernel_ns=1e5)  # 100 us a call: 200 per 20 ms sample
        r = ps.measure_sustained(dev, FakeOp(dev, n_sets=3), now=dev.now)
        first_collect = next(i for i, e in enumerate(dev.log) if e[0] == "collect")
        warm = [e for e in dev.log[:first_collect] if e[0] == "call"]
        self.assertEqual(len(warm), 2000)  # 200 ms of calls, no synchronization in between
        self.assertNotIn(("sync",), dev.log[:first_collect - 1])
        calls = [e[1] for e in dev.log if e[0] == "call"]
        self.assertEqual(calls[:7], [0, 1, 2, 0, 1, 2, 0])  # the sets in turn, across samples too
        self.assertEqual(calls[2000:2003], [2, 0, 1])
        self.assertNotIn("flush", [e[0] for e in dev.log])  # rotation, not a flush, keeps L2 cold
        self.assertEqual((r["calls_per_sample"], r["samples"], r["sets"]), (200, 5, 3))
        self.assertAlmostEqual(r["median_ns"], 1e5)
        self.assertEqual((r["timing"], r["kernels_per_call"]), ("sustained", 1))
        self.assertEqual(dev.clock_samples, 1 + 5)  # during the warm-up and during each sample

    def test_every_set_runs_in_the_warmup(self):
        dev = FakeDevice(kernel_ns=1e9)
        ps.measure_sustained(dev, FakeOp(dev, n_sets=4), now=dev.now)
        self.assertEqual([e[0] for e in dev.log[:7]], ["call"] * 4 + ["clocks", "sync", "collect"])
        self.assertEqual(dev.log[6], ("collect", 4))

    def test_a_call_without_kernels_is_an_error(self):
        dev = FakeDevice(kernels_per_call=0, host_ns=1e5)
        with self.assertRaisesRegex(ps.PeerError, "launched no kernel"):
            ps.measure_sustained(dev, FakeOp(dev, n_sets=2), now=dev.now)


class FakeBackend:
    def __init__(self, fail=None, device_error=None):
        self.fail, self.device_error, self.calls = fail or {}, device_error, []

    def hello(self):
        if self.device_error:
            raise ps.DeviceError(self.device_error)
        return {"device": "Fake H100", "uuid": "GPU-0", "timer": "cupti"}

    def measure(self, peer, timing, seed):
        self.calls.append((peer.name, peer.family, timing, seed))
        if self.device_error:
            raise ps.DeviceError(self.device_error)
        if peer.name in self.fail:
            raise ps.PeerError(self.fail[peer.name])
        return {"median_ns": 1000.0, "samples": 10, "timing": timing, "timer": "cupti"}


def converse(backend, *requests):
    out = io.StringIO()
    lines = [r if isinstance(r, str) else json.dumps(r) for r in requests]
    ps.serve(backend, io.StringIO("\n".join(lines) + "\n"), out)
    return [json.loads(x) for x in out.getvalue().splitlines()]


class ProtocolTest(unittest.TestCase):
    def test_hello_and_quit(self):
        replies = converse(FakeBackend(), {"op": "hello"}, {"op": "quit"}, {"op": "hello"})
        self.assertEqual(replies, [{"ok": True, "device": "Fake H100", "uuid": "GPU-0", "timer": "cupti"}, {"ok": True}])

    def test_measure(self):
        b = FakeBackend(fail={"cudnn-sdpa": "No available kernel. Aborting execution."})
        dims = {"B": 1, "HQ": 2, "HKV": 2, "S": 64, "D": 64, "causal": False}
        [r] = converse(b, {"op": "measure", "recipe": "attention.prefill", "problem": "p1", "dims": dims,
                           "timing": "sustained", "seed": 7})
        self.assertEqual((r["ok"], r["problem"]), (True, "p1"))
        self.assertEqual(r["results"], [{"peer": "flash-sdpa", "median_ns": 1000.0, "samples": 10, "timing": "sustained", "timer": "cupti"}])
        self.assertEqual(r["skipped"], [{"peer": "cudnn-sdpa", "reason": "No available kernel. Aborting execution."}])
        self.assertEqual(b.calls, [("cudnn-sdpa", "prefill", "sustained", 7), ("flash-sdpa", "prefill", "sustained", 7)])

    def test_defaults_burst_and_seed_zero(self):
        b = FakeBackend()
        [r] = converse(b, {"op": "measure", "recipe": "copy", "problem": "64MiB", "dims": {"N": 16}})
        self.assertEqual(b.calls, [("torch", "copy", "burst", 0)])
        self.assertEqual([x["peer"] for x in r["results"]], ["torch"])

    def test_unknown_recipe(self):
        b = FakeBackend()
        [r] = converse(b, {"op": "measure", "recipe": "layernorm", "problem": "x", "dims": {}})
        self.assertEqual(r, {"ok": True, "problem": "x", "results": [],
                             "skipped": [{"peer": "*", "reason": "no peer for recipe layernorm"}]})
        self.assertEqual(b.calls, [])

    def test_errors(self):
        replies = converse(FakeBackend(), "{not json", {"op": "dance"}, ["op"],
                           {"op": "measure", "recipe": "gemm", "problem": "p", "dims": {"M": 1}},
                           {"op": "measure", "recipe": "gemm", "problem": "p", "dims": {}, "timing": "warm"},
                           {"op": "measure", "recipe": "gemm", "problem": "p", "dims": {}, "seed": "1"},
                           {"op": "measure", "recipe": "gemm", "dims": {}})
        self.assertTrue(all(r["ok"] is False for r in replies), replies)
        self.assertIn("bad JSON", replies[0]["error"])
        self.assertIn("unknown op 'dance'", replies[1]["error"])
        self.assertIn("lack N, K, b_layout", replies[3]["error"])
        self.assertIn("burst or sustained", replies[4]["error"])
        self.assertIn("seed", replies[5]["error"])
        self.assertIn("problem", replies[6]["error"])

    def test_no_device_means_no_timing(self):
        b = FakeBackend(device_error="CUPTI cannot be opened (x)")
        replies = converse(b, {"op": "hello"}, {"op": "measure", "recipe": "copy", "problem": "p", "dims": {"N": 4}})
        self.assertEqual(replies, [{"ok": False, "error": "CUPTI cannot be opened (x)"}] * 2)


def have_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


@unittest.skipIf(have_driver(), "a CUDA driver is present: this checks the refusal without one")
class CuptiLibTest(unittest.TestCase):
    """libtune_cupti_py.so built by tools/peers/CMakeLists.txt, on a machine without a driver."""

    def setUp(self):
        self.path = os.environ.get("PEERS_LIB")
        self.assertTrue(self.path and os.path.exists(self.path), f"PEERS_LIB={self.path}: the library to test")

    def test_open_fails_with_a_message(self):
        lib = ctypes.CDLL(self.path)
        msg = ctypes.create_string_buffer(2048)
        self.assertNotEqual(lib.tune_cupti_py_open(msg, len(msg)), 0)
        self.assertTrue(msg.value, "no reason given")
        libs = ctypes.create_string_buffer(1024)
        lib.tune_cupti_py_library(libs, len(libs))
        if msg.value.startswith(b"libcupti cannot be opened"):
            self.assertEqual(libs.value, b"")
        else:  # loaded, then refused by the missing driver: the file is named
            self.assertIn(b"libcupti", libs.value)
        s, sp, n = ctypes.c_double(1), ctypes.c_double(1), ctypes.c_int(1)
        names = ctypes.create_string_buffer(8)
        rc = lib.tune_cupti_py_collect(ctypes.byref(s), ctypes.byref(sp), ctypes.byref(n), names, len(names), msg, len(msg))
        self.assertNotEqual(rc, 0)
        self.assertEqual((msg.value, s.value, sp.value, n.value), (b"CUPTI is not open", 0.0, 0.0, 0))
        self.assertEqual(lib.tune_nvml_py_open(b"GPU-00000000-0000-0000-0000-000000000000"), -1)
        sm, mem, pw, r = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(7), ctypes.c_ulonglong(7)
        lib.tune_nvml_py_sample(ctypes.byref(sm), ctypes.byref(mem), ctypes.byref(r), ctypes.byref(pw))
        self.assertEqual((sm.value, mem.value, r.value, pw.value), (-1, -1, 0, 0))

    def test_server_refuses_to_time(self):
        dev = ps.CudaDevice(self.path)
        replies = converse(ps.TorchBackend(dev), {"op": "hello"},
                           {"op": "measure", "recipe": "copy", "problem": "p", "dims": {"N": 4}})
        self.assertEqual([r["ok"] for r in replies], [False, False])
        self.assertIn("no CUDA driver", replies[0]["error"])
        self.assertEqual(replies[1]["error"], replies[0]["error"])
        self.assertNotIn("torch", sys.modules)  # never imported before CUPTI is open


if __name__ == "__main__":
    unittest.main()
