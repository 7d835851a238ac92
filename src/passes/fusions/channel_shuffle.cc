// ChannelShuffleFusionPass: the channel shuffle of ShuffleNet-style networks, as exporters write
// it, becomes one Gather of the channels:
//   Reshape(Transpose(Reshape(x [N, C, S...], [N, g, C/g, S...]), perm [0, 2, 1, 3...]),
//           [N, C, S...])  ==  Gather(x, idx, axis 1),  idx[c] = (c % g) * (C / g) + c / g.
// The Gather is a standard op (the fused model runs anywhere), and the kernels run it in the
// producing conv's channels-last layout as a per-pixel permutation, so the conv outputs around a
// shuffle are no longer reordered to plain for the 5-D Transpose.
#include <algorithm>

#include "passes/fusions/fusions.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Match;
using pattern::Pat;

class ChannelShuffleFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"ChannelShuffleFusionPass",
                            "Turns a channel shuffle (Reshape, Transpose, Reshape) into one "
                            "Gather of the channels",
                            true,
                            true,
                            {"Reshape", "Transpose", "Reshape"}};
    return i;
  }
  void run(Graph& g, PassContext& ctx) override {
    using namespace pattern;
    Pat split = op("Reshape", {any("x"), constant("split_shape")}, false).named("split");
    Pat swap = op("Transpose", {split}).named("swap");
    Pat merge = op("Reshape", {swap, constant("merge_shape")}, false).named("merge");
    const std::string pass = info().name;
    rewrite_all(
        g, ctx, pass, {{"", merge}}, [&](const std::string&, const Match& m) -> std::string {
          Value* x = m.value("x");
          Value* y = m.node("merge")->output(0);
          const Value* mid = m.node("split")->output(0);
          if (!x->shape().fully_known() || !mid->shape().fully_known() ||
              !y->shape().fully_known()) {
            return std::string("the shapes are not static");
          }
          const Dims xs = x->shape().static_dims(), ms = mid->shape().static_dims();
          const size_t r = xs.size();
          if (r < 3 || ms.size() != r + 1 || y->shape().static_dims() != xs) {
            return std::string("not a split of dim 1 into two, merged back to the input's shape");
          }
          if (ms[0] != xs[0] || ms[1] * ms[2] != xs[1]) {
            return std::string("the first Reshape does not split the channel dim");
          }
          for (size_t i = 2; i < r; ++i) {
            if (ms[i + 1] != xs[i]) return std::string("the first Reshape changes a spatial dim");
          }
          std::vector<int64_t> perm = m.node("swap")->attr_ints("perm", {});
          std::vector<int64_t> want(r + 1);
          for (size_t i = 0; i <= r; ++i) want[i] = static_cast<int64_t>(i);
          std::swap(want[1], want[2]);
          if (perm != want)
            return std::string("the Transpose does not swap the two channel factors");
          const int64_t groups = ms[1], per = ms[2];
          Tensor idx(DType::kInt64, {xs[1]});
          for (int64_t c = 0; c < xs[1]; ++c)
            idx.data<int64_t>()[c] = (c % groups) * per + c / groups;
          Value* iv = add_constant(g, m.node("merge")->name() + "_channels", std::move(idx));
          return apply_fusion(g, ctx, pass, m.nodes(), "Gather", "", {x, iv}, {y},
                              {{"axis", attr_int(1)}});
        });
    // A Slice along a constant Gather's axis is the Gather of the sliced indices: each half
    // of a shuffled tensor gathers straight from the unshuffled one (the whole-tensor Gather
    // goes once no Slice reads it).
    Pat gather = op("Gather", {any("data"), constant("idx")}).named("gather");
    Pat slice = op("Slice", {gather}, false).named("slice");
    std::vector<Value*> gathered;
    rewrite_all(g, ctx, pass, {{"", slice}},
                [&](const std::string&, const Match& m) -> std::string {
                  Node* gn = m.node("gather");
                  Node* sn = m.node("slice");
                  const Tensor* idx = constant_value(m.value("idx"));
                  const Value* gy = gn->output(0);
                  if (idx->rank() != 1 || !gy->shape().has_rank) {
                    return std::string("the Gather's indices are not 1-D");
                  }
                  const int64_t rank = static_cast<int64_t>(gy->shape().dims.size());
                  int64_t axis = gn->attr_int("axis", 0);
                  if (axis < 0) axis += rank;
                  std::vector<int64_t> args[4];  // starts, ends, axes, steps
                  for (size_t i = 1; i < sn->num_inputs() && i <= 4; ++i) {
                    const Tensor* t = sn->input(i) ? constant_value(sn->input(i)) : nullptr;
                    if (sn->input(i) && !t)
                      return std::string("the Slice's bounds are not constants");
                    if (t) args[i - 1] = t->to_int64_vector();
                  }
                  if (args[0].size() != 1 || args[1].size() != 1) {
                    return std::string("the Slice is not along one axis");
                  }
                  int64_t sa = args[2].empty() ? 0 : args[2][0];
                  if (sa < 0) sa += rank;
                  const int64_t step = args[3].empty() ? 1 : args[3][0];
                  if (sa != axis || step != 1) {
                    return std::string("the Slice is not along the Gather's axis with step 1");
                  }
                  const int64_t d = idx->numel();
                  int64_t s = args[0][0], e = args[1][0];
                  s = std::clamp<int64_t>(s < 0 ? s + d : s, 0, d);
                  e = std::clamp<int64_t>(e < 0 ? e + d : e, 0, d);
                  if (e <= s) return std::string("the Slice is empty");
                  Tensor part(DType::kInt64, {e - s});
                  for (int64_t i = s; i < e; ++i) part.data<int64_t>()[i - s] = idx->int_at(i);
                  Value* pv = add_constant(g, sn->name() + "_channels", std::move(part));
                  gathered.push_back(gn->output(0));
                  return apply_fusion(g, ctx, pass, {sn}, "Gather", "", {m.value("data"), pv},
                                      {sn->output(0)}, {{"axis", attr_int(axis)}});
                });
    for (Value* v : gathered) {
      if (g.contains(v->producer()) && v->uses().empty() && !v->is_graph_output()) {
        g.remove_node(v->producer());
      }
    }
    if (!gathered.empty()) g.remove_dead_values();
  }
};

}  // namespace

std::unique_ptr<Pass> make_channel_shuffle_pass() {
  return std::make_unique<ChannelShuffleFusion>();
}

}  // namespace nnfuse
