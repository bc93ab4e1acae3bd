// ring_pos.cuh: a position in a ring of S mbarrier-guarded slots, for pipelines whose producer and
// consumers walk the slots in order: the slot and the parity of its current use, advanced one
// step at a time, so that no step divides a running index by S.
//
//   tune::RingPos<S> p;                      // slot 0, first use
//   mbar_wait(full + p.slot * 8, p.phase);   // a consumer waits for the slot's current fill
//   mbar_wait(empty + p.slot * 8, p.phase ^ 1);  // the producer waits for the previous use's release
//                                            // (the first use finds parity 1 complete on a fresh barrier)
//   p.advance();
#pragma once

namespace tune {

template <int S> struct RingPos {
  int slot = 0;
  unsigned phase = 0;  // parity of the slot's use: (k iteration / S) & 1
  __device__ __forceinline__ void advance() {
    if (++slot == S) {
      slot = 0;
      phase ^= 1u;
    }
  }
};

}  // namespace tune
