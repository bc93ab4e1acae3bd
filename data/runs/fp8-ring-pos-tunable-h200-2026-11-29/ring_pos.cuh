// ring_pos.cuh: a position in a ring of S mbarrier-guarded slots, for pipelines whose producer and
// consumers walk the slots in order: the slot and the parity of its current use.
//
//   tune::Ring<S, kCarried> p;                     // slot 0, first use
//   mbar_wait(full + p.slot() * 8, p.phase());     // a consumer waits for the slot's current fill
//   mbar_wait(empty + p.slot() * 8, p.phase() ^ 1u);  // the producer waits for the previous use's
//                                                  // release (a fresh barrier has parity 1 complete)
//   p.advance();
//
// Two ways to keep it, the same positions: kCarried 0 divides a running index by S at each use
// (a multiply-shift when S is not a power of two); kCarried 1 carries the slot and flips the parity
// when it wraps (a compare per step, two live registers). Which one schedules better depends on the
// kernel around it, so templates expose it as a tunable (RING_POS).
#pragma once

namespace tune {

template <int S, int kCarried> struct Ring;

template <int S> struct Ring<S, 0> {
  int it = 0;  // uses of the ring so far
  __device__ __forceinline__ int slot() const { return it % S; }
  __device__ __forceinline__ unsigned phase() const { return (unsigned)(it / S) & 1u; }
  __device__ __forceinline__ void advance() { ++it; }
  // the slot `lag` uses back (lag <= uses so far): a consumer that releases slots a fixed number of
  // uses behind the one it issues keeps one index, not two
  __device__ __forceinline__ int slot_back(int lag) const { return (it - lag) % S; }
};

template <int S> struct Ring<S, 1> {
  int s = 0;
  unsigned ph = 0;
  __device__ __forceinline__ int slot() const { return s; }
  __device__ __forceinline__ unsigned phase() const { return ph; }
  __device__ __forceinline__ int slot_back(int lag) const { return s >= lag ? s - lag : s - lag + S; }  // lag <= S
  __device__ __forceinline__ void advance() {
    if (++s == S) {
      s = 0;
      ph ^= 1u;
    }
  }
};

}  // namespace tune
