// fp8.cuh: fp8 e4m3 (the OCP "fn" variant: bias 7, no infinities, 0x7f / 0xff NaN, largest 448) as
// raw bytes. The exact decode that references use (every e4m3 value is exact in fp32); the kernels
// feed the bytes to the tensor cores unchanged. tuner/inputs.c holds the host's encode.
#pragma once

namespace tune {

// The value of an e4m3 byte, exactly (NaN for 0x7f and 0xff).
__device__ __forceinline__ float e4m3_to_f32(unsigned char v) {
  const int e = (v >> 3) & 0xf, m = v & 7;
  if (e == 0xf && m == 7) return __int_as_float(0x7fc00000);
  const float mag = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);  // subnormal: m 2^-9
  return (v & 0x80) ? -mag : mag;
}

}  // namespace tune
