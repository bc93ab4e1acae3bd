// vec.cuh: vector types by width and global loads/stores with optional cache hints.
// Shared by every memory-bound family (copy, elementwise, normalization).
#pragma once

namespace tune {

template <int BYTES> struct vec_of_bytes;
template <> struct vec_of_bytes<4> { typedef float type; };
template <> struct vec_of_bytes<8> { typedef float2 type; };
template <> struct vec_of_bytes<16> { typedef float4 type; };

// HINT 0: plain ld/st. HINT 1: read-only non-coherent load (ld.global.nc) and
// streaming store (st.global.cs), which keep a one-pass stream out of L1/L2's way.
template <int HINT, typename T> __device__ __forceinline__ T load_g(const T *p) {
  if constexpr (HINT) return __ldg(p);
  else return *p;
}
template <int HINT, typename T> __device__ __forceinline__ void store_g(T *p, const T &v) {
  if constexpr (HINT) __stcs(p, v);
  else *p = v;
}

}  // namespace tune
