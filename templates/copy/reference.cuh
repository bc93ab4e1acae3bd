// reference.cuh: the plain copy every variant of copy.cuh is checked against.
extern "C" __global__ void copy_reference(const float *src, float *dst, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
