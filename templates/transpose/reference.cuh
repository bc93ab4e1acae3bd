// reference.cuh: the plain transpose every variant of transpose.cuh is checked against: one thread
// per element, out[c, r] = in[r, c], bits copied. Defines: ELEM_BYTES 2 | 4.
#if !defined(ELEM_BYTES)
#error "transpose reference.cuh needs -D ELEM_BYTES"
#endif
#if ELEM_BYTES == 2
typedef unsigned short ref_elem;
#else
typedef unsigned ref_elem;
#endif

// grid (ceil(C / 32), ceil(R / 8)), block (32, 8)
extern "C" __global__ void transpose_reference(const ref_elem *in, ref_elem *out, int R, int C) {
  const long long c = (long long)blockIdx.x * 32 + threadIdx.x;
  const long long r = (long long)blockIdx.y * 8 + threadIdx.y;
  if (r < R && c < C) out[c * R + r] = in[r * C + c];
}
