#include "kernels/cpu/cpu_broadcast.h"

namespace nnfuse::cpu {

BroadcastLoop make_broadcast_loop(const Dims& out, const std::vector<Dims>& ins) {
  const size_t r = out.size(), nin = ins.size();
  // Per input, the stride of each output dim (0 where the input has extent 1).
  std::vector<Dims> full(nin, Dims(r, 0));
  for (size_t k = 0; k < nin; ++k) {
    const Dims& s = ins[k];
    int64_t stride = 1;
    for (size_t i = s.size(); i-- > 0;) {
      const size_t o = r - s.size() + i;
      full[k][o] = s[i] == 1 ? 0 : stride;
      stride *= s[i];
    }
  }
  BroadcastLoop loop;
  loop.numel = 1;
  for (int64_t d : out) loop.numel *= d;
  loop.strides.assign(nin, {});
  // Walk from the innermost dim outwards, dropping extent-1 dims and merging a dim into the
  // one inside it when every input steps through both as one.
  Dims dims;
  std::vector<Dims> strides(nin);
  for (size_t i = r; i-- > 0;) {
    if (out[i] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < nin && merge; ++k) {
      merge = full[k][i] == strides[k].back() * dims.back();
    }
    if (merge) {
      dims.back() *= out[i];
      continue;
    }
    dims.push_back(out[i]);
    for (size_t k = 0; k < nin; ++k) strides[k].push_back(full[k][i]);
  }
  if (dims.empty()) {  // one element
    dims.push_back(1);
    for (size_t k = 0; k < nin; ++k) strides[k].push_back(1);
  }
  std::reverse(dims.begin(), dims.end());
  for (size_t k = 0; k < nin; ++k) {
    std::reverse(strides[k].begin(), strides[k].end());
    loop.strides[k] = std::move(strides[k]);
  }
  loop.dims = std::move(dims);
  return loop;
}

bool plain_matches_nhwc(const Dims& s, size_t rank) {
  if (s.size() > rank) return false;
  const size_t pad = rank - s.size();
  for (size_t i = 2; i < rank; ++i) {
    if (i >= pad && s[i - pad] != 1) return false;
  }
  return true;
}

std::optional<Layout> elementwise_layout(const std::vector<std::optional<Dims>>& shapes,
                                         const std::vector<Layout>& layouts) {
  bool any_nhwc = false;
  for (Layout l : layouts) any_nhwc |= l == Layout::kNHWC;
  if (!any_nhwc) return Layout::kPlain;
  Dims out;
  for (const std::optional<Dims>& s : shapes) {
    if (!s) return std::nullopt;
    std::optional<Dims> b = broadcast_dims(out, *s);
    if (!b) return std::nullopt;
    out = *b;
  }
  if (!channels_last_rank(out.size())) return std::nullopt;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Dims& s = *shapes[k];
    if (layouts[k] == Layout::kNHWC ? s.size() != out.size() : !plain_matches_nhwc(s, out.size())) {
      return std::nullopt;
    }
  }
  return Layout::kNHWC;
}

}  // namespace nnfuse::cpu
