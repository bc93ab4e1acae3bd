// wgmma.cuh: warpgroup tensor-core helpers (sm_90a only): shared-memory matrix descriptors, the
// wgmma fences, and wgmma.mma_async m64nNk16 bf16 -> fp32 with both operands in shared memory.
// Used by GEMM (templates/gemm/gemm_sm90.cuh); any family with 128-thread warpgroups may use it.
//
// A warpgroup is 4 consecutive warps whose first warp index is a multiple of 4. Every thread of it
// executes each wgmma_* call below (they are .sync.aligned). Order of use for one batch:
//   wgmma_fence_acc(acc); wgmma_arrive(); wgmma_m64nNk16_ss(...) x k; wgmma_commit();
//   ... wgmma_wait<n>(); wgmma_fence_acc(acc);
// wgmma_wait<n> returns once at most n committed batches of this warpgroup are still running; only
// then may the accumulators be read, or the shared memory the finished batches read be overwritten.
//
// Accumulator layout (fp32, m64nN, PTX ISA "wgmma D fragments"): warp w (0..3) of the warpgroup
// owns rows 16w .. 16w+15; with g = lane / 4, t = lane % 4, for each n8 chunk j (0 .. N/8-1):
//   d[4j + 0..1] = (row 16w + g,     cols 8j + 2t .. +1)
//   d[4j + 2..3] = (row 16w + g + 8, cols 8j + 2t .. +1)
//
// Descriptors (PTX ISA "matrix descriptor"): bits 0-13 start address >> 4, 16-29 leading byte
// offset >> 4, 32-45 stride byte offset >> 4, 49-51 base offset (0: tiles 1024-byte aligned),
// 62-63 swizzle (1 = 128-byte). With the 128-byte swizzle a row of 64 bf16 (128 bytes) holds its
// 16-byte chunk c at c ^ (row % 8) (address bits 4-6 ^= bits 7-9), so tiles must be 1024-byte aligned.
//   K-major operand (rows of 64 k, e.g. A [m][k], or B stored [n][k]): SBO = 1024 (8 rows of 128 B),
//     LBO unused (16); the k16 step kk starts 32 * kk bytes further (inside the swizzle atom).
//   MN-major operand (B stored [k][n] in column blocks of 64 n: block j = 64 rows of k x 128 B):
//     LBO = bytes between 64-wide n blocks, SBO = 1024 (8 k rows); the k16 step kk starts
//     kk * 2048 bytes further; pass TRANS_B = 1 to the wgmma.
#pragma once

namespace tune {

enum { kWgmmaSwizzleNone = 0, kWgmmaSwizzle128B = 1, kWgmmaSwizzle64B = 2, kWgmmaSwizzle32B = 3 };

// Descriptor of a shared-memory operand starting at byte address `smem_addr`.
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned smem_addr, unsigned lbo_bytes, unsigned sbo_bytes,
                                                         unsigned swizzle) {
  return (unsigned long long)((smem_addr & 0x3FFFFu) >> 4) |
         ((unsigned long long)((lbo_bytes & 0x3FFFFu) >> 4) << 16) |
         ((unsigned long long)((sbo_bytes & 0x3FFFFu) >> 4) << 32) | ((unsigned long long)swizzle << 62);
}

// The same descriptor moved by `bytes` (a multiple of 16) in shared memory.
__device__ __forceinline__ unsigned long long wgmma_desc_advance(unsigned long long desc, unsigned bytes) {
  return desc + (unsigned long long)(bytes >> 4);
}

// Make register and shared-memory writes of this warpgroup visible to the wgmma that follow.
__device__ __forceinline__ void wgmma_arrive() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

// Close the batch of wgmma issued since the last commit.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

// Wait until at most N committed batches of this warpgroup are still running.
template <int N> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// A compiler-only fence on the accumulators: no read or write of them moves across it (they are
// written asynchronously by wgmma between the issue and wgmma_wait).
template <int R> __device__ __forceinline__ void wgmma_fence_acc(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The functions below: scale_d == 0 computes D = A * B (the accumulators' old values are ignored),
// otherwise D += A * B. TRANS_B: 0 = B K-major, 1 = B MN-major. A is always K-major.
// D[64 x 64] (+)= A[64 x 16] * B[16 x 64], both from shared memory (descriptors).
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], unsigned long long desc_a,
                                                unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, %35;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TRANS_B));
}

// D[64 x 128] (+)= A[64 x 16] * B[16 x 128], both from shared memory (descriptors).
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], unsigned long long desc_a,
                                                unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, %67;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TRANS_B));
}

// D[64 x 256] (+)= A[64 x 16] * B[16 x 256], both from shared memory (descriptors).
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n256k16_ss(float (&d)[128], unsigned long long desc_a,
                                                unsigned long long desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, %131;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TRANS_B));
}

// Dispatch on N (64, 128 or 256).
template <int N, int TRANS_B>
__device__ __forceinline__ void wgmma_m64k16_ss(float (&d)[N / 2], unsigned long long desc_a,
                                                unsigned long long desc_b, int scale_d) {
  static_assert(N == 64 || N == 128 || N == 256, "wgmma_m64k16_ss: N must be 64, 128 or 256");
  if constexpr (N == 64) wgmma_m64n64k16_ss<TRANS_B>(d, desc_a, desc_b, scale_d);
  else if constexpr (N == 128) wgmma_m64n128k16_ss<TRANS_B>(d, desc_a, desc_b, scale_d);
  else wgmma_m64n256k16_ss<TRANS_B>(d, desc_a, desc_b, scale_d);
}

}  // namespace tune
