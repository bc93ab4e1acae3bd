// vec.cuh: vector types by width and global loads/stores with optional cache hints.
// Shared by every memory-bound family (copy, elementwise, normalization, softmax, transpose).
//
//   vec_of_bytes<B>::type    float | float2 | float4 for B = 4 | 8 | 16 (copy.cuh)
//   load_g<HINT>, store_g<HINT>   one vector global -> registers / registers -> global
//   words<B>                 B bytes as B/4 32-bit words in registers, the form bf16 data is
//                            unpacked from and packed into; load_words / store_words move one
//   unpack_bf16, pack_bf16       words<B> of bf16 <-> B / 2 fp32 (pairs: common/bf16.cuh)
#pragma once

#include "common/bf16.cuh"

namespace tune {

template <int BYTES> struct vec_of_bytes;
template <> struct vec_of_bytes<4> { typedef float type; };
template <> struct vec_of_bytes<8> { typedef float2 type; };
template <> struct vec_of_bytes<16> { typedef float4 type; };

// HINT 0: plain ld/st. HINT 1: read-only non-coherent load (ld.global.nc) and
// streaming store (st.global.cs), which keep a one-pass stream out of L1/L2's way.
// A HINT 1 load must not read data written by the same kernel (ld.global.nc is not coherent).
template <int HINT, typename T> __device__ __forceinline__ T load_g(const T *p) {
  if constexpr (HINT) return __ldg(p);
  else return *p;
}
template <int HINT, typename T> __device__ __forceinline__ void store_g(T *p, const T &v) {
  if constexpr (HINT) __stcs(p, v);
  else *p = v;
}

// ---------------------------------------------------------------------------------------------
// Raw words: BYTES of any element type held as 32-bit words, so one code path serves fp32, bf16
// and any other element width. Loads and stores are single vector instructions (the address must
// be BYTES-aligned).

template <int BYTES> struct uvec_of_bytes;
template <> struct uvec_of_bytes<4> { typedef unsigned type; };
template <> struct uvec_of_bytes<8> { typedef uint2 type; };
template <> struct uvec_of_bytes<16> { typedef uint4 type; };

template <int BYTES> struct words {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "words: 4, 8 or 16 bytes");
  static constexpr int kN = BYTES / 4;
  unsigned w[kN];
};

__device__ __forceinline__ void to_words(unsigned v, words<4> &o) { o.w[0] = v; }
__device__ __forceinline__ void to_words(const uint2 &v, words<8> &o) { o.w[0] = v.x; o.w[1] = v.y; }
__device__ __forceinline__ void to_words(const uint4 &v, words<16> &o) {
  o.w[0] = v.x; o.w[1] = v.y; o.w[2] = v.z; o.w[3] = v.w;
}
__device__ __forceinline__ unsigned from_words(const words<4> &o) { return o.w[0]; }
__device__ __forceinline__ uint2 from_words(const words<8> &o) { return make_uint2(o.w[0], o.w[1]); }
__device__ __forceinline__ uint4 from_words(const words<16> &o) { return make_uint4(o.w[0], o.w[1], o.w[2], o.w[3]); }

// BYTES at p (global, BYTES-aligned) -> registers; HINT as load_g.
template <int HINT, int BYTES> __device__ __forceinline__ words<BYTES> load_words(const void *p) {
  typedef typename uvec_of_bytes<BYTES>::type V;
  words<BYTES> r;
  to_words(load_g<HINT>(reinterpret_cast<const V *>(p)), r);
  return r;
}
// registers -> BYTES at p (global, BYTES-aligned); HINT as store_g.
template <int HINT, int BYTES> __device__ __forceinline__ void store_words(void *p, const words<BYTES> &v) {
  typedef typename uvec_of_bytes<BYTES>::type V;
  store_g<HINT>(reinterpret_cast<V *>(p), from_words(v));
}

// The 2 * words<BYTES>::kN bf16 of v as fp32, in memory order.
template <int BYTES> __device__ __forceinline__ void unpack_bf16(const words<BYTES> &v, float (&f)[BYTES / 2]) {
#pragma unroll
  for (int i = 0; i < BYTES / 4; ++i) {
    f[2 * i] = bf16_lo(v.w[i]);
    f[2 * i + 1] = bf16_hi(v.w[i]);
  }
}
// BYTES / 2 fp32 -> bf16 words, in memory order.
template <int BYTES> __device__ __forceinline__ words<BYTES> pack_bf16(const float (&f)[BYTES / 2]) {
  words<BYTES> v;
#pragma unroll
  for (int i = 0; i < BYTES / 4; ++i) v.w[i] = pack_bf16x2(f[2 * i], f[2 * i + 1]);
  return v;
}

}  // namespace tune
