"""worker_inputs.py: the integer inputs of tuner/inputs.c, reproduced bit for bit, so that a peer
sees the same routing or sequence lengths as tune's variants for the same seed and arg position
(the worker seeds each input by the request's seed and the arg's index in the recipe).
Checked against values from the C code by the peer family tests."""
import math

M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def uniform01(key):
    return ((splitmix64(key & M64) >> 11) + 0.5) * 2.0 ** -53


def stream_base(seed, arg_index):
    """The first key of an arg's stream (inputs.c tune_inputs_fill)."""
    return splitmix64((seed & M64) ^ splitmix64(arg_index + 1))


def offsets(seed, arg_index, parts, total, min_part):
    """init {"offsets", total, min_part}: parts + 1 prefix sums 0 .. total, each part min_part plus a
    share of the rest weighted by u^3 (most parts short, a few long)."""
    base = stream_base(seed, arg_index)
    spare = float(total - parts * min_part)
    cubes = [uniform01(base + i) ** 3 for i in range(parts)]
    wsum = 0.0
    for c in cubes:
        wsum += c
    out, w = [0], 0.0
    for i in range(parts):
        w += cubes[i]
        share = int(spare) if i + 1 == parts else math.floor(spare * (w / wsum))
        out.append((i + 1) * min_part + share)
    return out


def randint(seed, arg_index, n, lo, hi):
    """init {"randint", lo, hi}: element i from key base + 2 i, lo + splitmix64(key) % (hi - lo + 1)."""
    base = stream_base(seed, arg_index)
    return [lo + splitmix64((base + 2 * i) & M64) % (hi - lo + 1) for i in range(n)]


def permutation(seed, arg_index, n):
    """init {"permutation"}: 0 .. n - 1 shuffled by Fisher-Yates from the end, element i swapped
    with j = splitmix64(base + i) % (i + 1)."""
    base = stream_base(seed, arg_index)
    out = list(range(n))
    for i in range(n - 1, 0, -1):
        j = splitmix64((base + i) & M64) % (i + 1)
        out[i], out[j] = out[j], out[i]
    return out


def rows_by_segment(cu, rows):
    """[(i, positions within segment i)] of sorted rows of a packed layout whose segment i (an
    expert's tokens, a sequence) holds rows cu[i] .. cu[i + 1]; empty segments are skipped."""
    out, i = [], 0
    for t in rows:
        while t >= cu[i + 1]:
            i += 1
        if not out or out[-1][0] != i:
            out.append((i, []))
        out[-1][1].append(t - cu[i])
    return out
