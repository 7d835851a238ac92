// Numpy-broadcasting loop nests for the elementwise kernels: the output is walked in storage
// order as rows of one contiguous inner run, and each input either advances with the run
// (stride 1) or repeats one element across it (stride 0). Adjacent dims that broadcast alike
// are merged first, so a same-shape op is one run, a row bias [N] over [M, N] is M runs of N
// against the same N values, and a column [M, 1] over [M, N] is M runs against one value each.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/tensor.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/layout.h"

namespace nnfuse::cpu {

struct BroadcastLoop {
  Dims dims;                  // merged dims of the output, outermost first; never empty
  std::vector<Dims> strides;  // per input: element stride per merged dim (0 = broadcast)
  int64_t numel = 0;

  int64_t inner() const { return dims.back(); }
  // Stride (0 or 1) of input k along the inner run.
  int64_t inner_stride(size_t k) const { return strides[k].back(); }
};

// The loop over `out` (a C-order shape) reading inputs of shapes `ins` (C-order storage,
// right-aligned, each broadcastable to `out`).
BroadcastLoop make_broadcast_loop(const Dims& out, const std::vector<Dims>& ins);

// True when a plain tensor of shape `s` is stored in the same order as it would be
// channels-last once right-aligned to rank `rank`: [.., C, 1, 1] shapes (per-channel vectors,
// scalars), so it can broadcast against channels-last tensors of that rank directly.
bool plain_matches_nhwc(const Dims& s, size_t rank);

// The layout an elementwise kernel outputs for inputs with these shapes and layouts, or nullopt
// when it cannot work on them directly: kPlain when every input is plain; kNHWC when some input
// is channels-last, the output has rank 3 to 5, every channels-last input has the output's
// rank and every plain input satisfies plain_matches_nhwc. `shapes`
// may be nullopt for unknown static shapes (then only all-plain inputs are accepted).
std::optional<Layout> elementwise_layout(const std::vector<std::optional<Dims>>& shapes,
                                         const std::vector<Layout>& layouts);

// Calls f(offsets, out_offset, len) for every piece of every inner run, where offsets[k] is the
// element offset of input k at the start of the piece; pieces run in parallel when the loop is
// large. `cost` scales the parallel threshold (elementwise work units per element).
template <typename F>
void for_each_run(const BroadcastLoop& loop, int64_t cost, F&& f) {
  const int64_t inner = loop.inner();
  if (loop.numel == 0 || inner == 0) return;
  const int64_t rows = loop.numel / inner;
  const size_t nin = loop.strides.size(), outer_rank = loop.dims.size() - 1;
  const int64_t threads = omp_get_max_threads();
  // Few long rows: cut each into pieces (multiples of 16 elements) so every thread has work.
  int64_t pieces = 1;
  if (rows < 4 * threads) {
    pieces =
        std::clamp<int64_t>((4 * threads + rows - 1) / rows, 1, std::max<int64_t>(1, inner / 4096));
  }
  const int64_t piece = ((inner + pieces - 1) / pieces + 15) / 16 * 16;
  pieces = (inner + piece - 1) / piece;
  parallel_blocks(rows * pieces, loop.numel * cost, [&](int64_t t0, int64_t t1) {
    int64_t row = t0 / pieces, pc = t0 % pieces;
    std::vector<int64_t> idx(outer_rank, 0), base(nin, 0), offs(nin, 0);
    int64_t r = row;
    for (size_t d = outer_rank; d-- > 0;) {
      idx[d] = r % loop.dims[d];
      r /= loop.dims[d];
      for (size_t k = 0; k < nin; ++k) base[k] += idx[d] * loop.strides[k][d];
    }
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t start = pc * piece;
      for (size_t k = 0; k < nin; ++k) offs[k] = base[k] + start * loop.strides[k].back();
      f(offs.data(), row * inner + start, std::min(piece, inner - start));
      if (++pc < pieces) continue;
      pc = 0;
      ++row;
      for (size_t d = outer_rank; d-- > 0;) {
        for (size_t k = 0; k < nin; ++k) base[k] += loop.strides[k][d];
        if (++idx[d] < loop.dims[d]) break;
        for (size_t k = 0; k < nin; ++k) base[k] -= loop.strides[k][d] * loop.dims[d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace nnfuse::cpu
