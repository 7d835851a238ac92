// ChannelShuffleFusionPass: the channel shuffle of ShuffleNet-style networks, as exporters write
// it, becomes one Gather of the channels:
//   Reshape(Transpose(Reshape(x [N, C, S...], [N, g, C/g, S...]), perm [0, 2, 1, 3...]),
//           [N, C, S...])  ==  Gather(x, idx, axis 1),  idx[c] = (c % g) * (C / g) + c / g.
// The Gather is a standard op (the fused model runs anywhere), and the kernels run it in the
// producing conv's channels-last layout as a per-pixel permutation, so the conv outputs around a
// shuffle are no longer reordered to plain for the 5-D Transpose.
#include <algorithm>

#include "ops/onnx_ops.h"
#include "ops/op_math.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

const char* const kShufflePass = "ChannelShuffleFusionPass";

// "" when `m` splits dim 1 of x into [g, C/g], swaps the two and merges them back; else why.
std::string shuffle_reason(const RuleMatch& m) {
  const Value* mid = m.node("split")->output(0);
  const Value* y = m.root()->output(0);
  const std::optional<Dims> xs = static_shape(m["x"]), ms = static_shape(mid);
  if (!xs || !ms || !static_shape(y)) return "the shapes are not static";
  const size_t r = xs->size();
  if (r < 3 || ms->size() != r + 1 || *static_shape(y) != *xs) {
    return "not a split of dim 1 into two, merged back to the input's shape";
  }
  if ((*ms)[0] != (*xs)[0] || (*ms)[1] * (*ms)[2] != (*xs)[1]) {
    return "the first Reshape does not split the channel dim";
  }
  for (size_t i = 2; i < r; ++i) {
    if ((*ms)[i + 1] != (*xs)[i]) return "the first Reshape changes a spatial dim";
  }
  std::vector<int64_t> want(r + 1);
  for (size_t i = 0; i <= r; ++i) want[i] = static_cast<int64_t>(i);
  std::swap(want[1], want[2]);
  if (m.node("swap")->attr_ints("perm", {}) != want) {
    return "the Transpose does not swap the two channel factors";
  }
  return "";
}

Rule channel_shuffle() {
  using namespace pattern;
  Pat split = op("Reshape", {any("x"), constant("split_shape")}, false).named("split");
  Pat merge = op("Reshape", {op("Transpose", {split}).named("swap"), constant()}, false);
  return {.name = kShufflePass,
          .description =
              "Turns a channel shuffle (Reshape, Transpose, Reshape) into one Gather "
              "of the channels",
          .ops = {"Reshape", "Transpose", "Reshape"},
          .patterns = {{"", merge}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            if (std::string why = shuffle_reason(m); !why.empty()) return why;
            const Dims ms = *static_shape(m.node("split")->output(0));
            const int64_t groups = ms[1], per = ms[2];
            Tensor idx(DType::kInt64, {groups * per});
            for (int64_t c = 0; c < groups * per; ++c)
              idx.data<int64_t>()[c] = (c % groups) * per + c / groups;
            Value* iv = pattern::add_constant(m.g, m.root()->name() + "_channels", std::move(idx));
            return m.fuse(ops::Gather{m["x"], iv, 1}.spec());
          }};
}

// A Slice along a constant Gather's axis is the Gather of the sliced indices: each half of a
// shuffled tensor gathers straight from the unshuffled one (the whole-tensor Gather goes once no
// Slice reads it).
Rule sliced_gather() {
  using namespace pattern;
  Pat gather = op("Gather", {any("data"), constant("idx")}).named("gather");
  Pat slice = op("Slice", {gather}, false).named("slice");
  return {.name = kShufflePass,
          .patterns = {{"", slice}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            Node* gn = m.node("gather");
            Node* sn = m.node("slice");
            const Tensor* idx = m.constant("idx");
            const std::optional<pattern::SliceRange> r = pattern::slice_range(sn);
            if (idx->rank() != 1 || !r)
              return "not a Slice of constant bounds along one axis of 1-D indices";
            const auto rank = static_cast<int64_t>(r->src->shape().dims.size());
            const int64_t s = r->start, e = r->end;
            if (r->axis != (gn->attr_int("axis", 0) + rank) % rank)
              return "the Slice is not along the Gather's axis";
            if (e <= s) return "the Slice is empty";
            Tensor part(DType::kInt64, {e - s});
            for (int64_t i = s; i < e; ++i) part.data<int64_t>()[i - s] = idx->int_at(i);
            Value* pv = pattern::add_constant(m.g, sn->name() + "_channels", std::move(part));
            std::string why =
                m.fuse_nodes({sn}, ops::Gather{m["data"], pv, r->axis}.spec(), {sn->output(0)});
            if (why.empty() && gn->output(0)->uses().empty() && !gn->output(0)->is_graph_output())
              m.g.remove_node(gn);  // the driver then drops its dead values
            return why;
          }};
}

}  // namespace

std::unique_ptr<Pass> make_channel_shuffle_pass() {
  std::vector<Rule> stages;
  stages.push_back(channel_shuffle());
  stages.push_back(sliced_gather());
  return make_rule_pass(std::move(stages));
}

}  // namespace nnfuse
