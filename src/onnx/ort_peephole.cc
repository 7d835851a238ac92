// Standard ops in the forms ONNX Runtime runs as fewer nodes, as its own optimizer writes them:
//   Slice, Slice, ... of one input on one axis (disjoint ranges) -> Split (gaps as unused outputs)
//   MatMul(Transpose(A), Transpose(B)) swapping the last two dims  -> FusedMatMul transA, transB
//   MatMul then Mul / Div by a scalar constant                      -> FusedMatMul alpha
//   Reshape -> FusedMatMul (N-D, vector bias) -> Reshapes           -> Reshape to 2-D, Gemm
// An intermediate value is absorbed only when the rewritten node is its one reader.
#include <algorithm>
#include <map>
#include <optional>

#include "ir/error.h"
#include "onnx/ort_export.h"
#include "pattern/pattern.h"

namespace nnfuse {

namespace {

bool only_reader(const Value* v, const Node* reader) {
  if (!v || v->is_graph_output() || v->uses().size() != 1) return false;
  return v->uses()[0].node == reader;
}

// The Transpose producing v when it swaps the last two dims and `reader` is its one reader.
const Node* swap_transpose(const Value* v, const Node* reader) {
  const Node* t = v ? v->producer() : nullptr;
  if (!t || !t->is(Op::kTranspose)) return nullptr;
  if (!only_reader(v, reader) || !v->shape().has_rank) return nullptr;
  const size_t rank = v->shape().dims.size();
  if (rank < 2) return nullptr;
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return t->attr_ints("perm") == perm ? t : nullptr;
}

// The scalar float constant v holds.
std::optional<double> scalar(const Value* v) {
  const Tensor* t = pattern::constant_value(v);
  if (!t || t->numel() != 1 || !dtype_is_float(t->dtype())) return std::nullopt;
  return t->double_at(0);
}

bool is_plain_matmul(const Node& n) {
  if (n.is(Op::kMatMul)) return true;
  return n.is(Op::kFusedMatMul) && !n.input(2) && n.attr_string("activation", "").empty();
}

}  // namespace

// The constant target shape of a default-domain Reshape, when it has no 0 (copy a dim) entry:
// then it does not depend on its input's shape.
static std::optional<std::vector<int64_t>> fixed_reshape(const Node* r) {
  if (!r || !r->is(Op::kReshape) || r->num_inputs() < 2) {
    return std::nullopt;
  }
  const Tensor* t = pattern::constant_value(r->input(1));
  if (!t || !dtype_is_integer(t->dtype())) return std::nullopt;
  std::vector<int64_t> v = t->to_int64_vector();
  if (std::find(v.begin(), v.end(), 0) != v.end()) return std::nullopt;
  return v;
}

void OrtLowering::plan_gemms() {
  // A FusedMatMul of an N-D input reshaped for it, whose result is only reshaped: the input
  // reshaped to [M, K] instead and a Gemm (the bias in it), as ORT's MatMulAddFusion does.
  for (const Node* n : g_.nodes()) {
    if (absorbed(*n) || claims(*n) || !n->is(Op::kFusedMatMul)) {
      continue;
    }
    const Value* a = n->input(0);
    const Value* b = n->input(1);
    const Value* bias = n->input(2);
    const Value* y = n->output(0);
    if (!a || !b || !y || !a->shape().fully_known() || !b->is_constant() ||
        !b->shape().fully_known()) {
      continue;
    }
    const Dims ad = a->shape().static_dims(), bd = b->shape().static_dims();
    if (ad.size() < 3 || bd.size() != 2 || ad.back() != bd[0]) continue;
    if (bias && !(bias->shape().fully_known() && bias->shape().static_dims() == Dims{bd[1]})) {
      continue;
    }
    const Node* producer = a->producer();
    if (!only_reader(a, n) || !fixed_reshape(producer) || claims(*producer) ||
        absorbed(*producer) || y->is_graph_output() || y->uses().empty()) {
      continue;
    }
    bool reshaped = true;
    for (const Use& u : y->uses())
      reshaped = reshaped && u.input_index == 0 && fixed_reshape(u.node);
    if (!reshaped) continue;
    const int64_t m = checked_numel(ad) / ad.back();
    const Dims a2 = {m, ad.back()}, y2 = {m, bd[1]};
    rewrites_[producer] = [this, producer, a, a2] {
      w_.node("Reshape", {producer->input(0)->name(), w_.int64s(a2)}, {a->name()}, "",
              producer->name());
      declare_shape(a->name(), a->dtype(), a2);
    };
    rewrites_[n] = [this, n, y, y2] {
      write_dense(*n, n->input(0)->name(), n->input(1)->name(),
                  n->input(2) ? n->input(2)->name() : "", y->name(), n->name(), true);
      declare_shape(y->name(), y->dtype(), y2);
    };
  }
}

void OrtLowering::plan_peepholes() {
  plan_gemms();
  // MatMul -> FusedMatMul.
  for (const Node* n : g_.nodes()) {
    if (absorbed(*n) || claims(*n) || !is_plain_matmul(*n) || n->num_inputs() < 2) continue;
    const Node* ta = swap_transpose(n->input(0), n);
    const Node* tb = swap_transpose(n->input(1), n);
    double alpha = 1.0;
    std::vector<const Node*> scales;
    const Value* out = n->output(0);
    while (out && out->uses().size() == 1 && !out->is_graph_output()) {
      const Node* m = out->uses()[0].node;
      if (!is_default_domain(m->domain()) || m->num_inputs() != 2) break;
      std::optional<double> c;
      if (m->is(Op::kMul)) {
        c = m->input(0) == out ? scalar(m->input(1)) : scalar(m->input(0));
      } else if (m->is(Op::kDiv) && m->input(0) == out) {
        c = scalar(m->input(1));
        if (c && *c != 0.0) c = 1.0 / *c;
      }
      if (!c || *c == 0.0) break;
      alpha *= *c;
      scales.push_back(m);
      out = m->output(0);
    }
    if (!ta && !tb && scales.empty()) continue;
    const std::string a = ta ? ta->input(0)->name() : n->input(0)->name();
    const std::string b = tb ? tb->input(0)->name() : n->input(1)->name();
    for (const Node* t : {ta, tb}) {
      if (t) absorbed_.insert(t);
    }
    for (const Node* m : scales) absorbed_.insert(m);
    const std::string out_name = out->name();
    const bool trans_a = ta != nullptr, trans_b = tb != nullptr;
    const float alpha_f = static_cast<float>(alpha);
    const Value* out_value = out;
    rewrites_[n] = [this, n, a, b, out_name, trans_a, trans_b, alpha_f, out_value] {
      onnx::NodeProto* p = w_.node("FusedMatMul", {a, b}, {out_name}, kOrtDomain, n->name());
      ProtoWriter::set_float(p, "alpha", alpha_f);
      ProtoWriter::set_int(p, "transA", trans_a ? 1 : 0);
      ProtoWriter::set_int(p, "transB", trans_b ? 1 : 0);
      declare(out_value);
    };
  }
  // Slices -> Split.
  std::map<std::pair<const Value*, int64_t>, std::vector<const Node*>> groups;
  for (const Node* n : g_.nodes()) {
    if (absorbed(*n)) continue;
    if (auto r = pattern::slice_range(n); r && r->end > r->start && n->output(0)) {
      groups[{r->src, r->axis}].push_back(n);
    }
  }
  for (auto& [key, slices] : groups) {
    if (slices.size() < 2) continue;
    std::vector<std::pair<pattern::SliceRange, const Node*>> ranges;
    for (const Node* s : slices) ranges.emplace_back(*pattern::slice_range(s), s);
    std::sort(ranges.begin(), ranges.end(),
              [](const auto& x, const auto& y) { return x.first.start < y.first.start; });
    bool disjoint = true;
    for (size_t i = 1; i < ranges.size(); ++i) {
      disjoint = disjoint && ranges[i].first.start >= ranges[i - 1].first.end;
    }
    if (!disjoint) continue;
    const Value* src = key.first;
    const int64_t dim = src->shape().static_dims()[static_cast<size_t>(key.second)];
    // The pieces in order, gaps included (nullptr: a gap).
    std::vector<std::pair<int64_t, const Node*>> pieces;
    int64_t at = 0;
    for (const auto& [r, s] : ranges) {
      if (r.start > at) pieces.emplace_back(r.start - at, nullptr);
      pieces.emplace_back(r.end - r.start, s);
      at = r.end;
    }
    if (at < dim) pieces.emplace_back(dim - at, nullptr);
    const Node* first = slices.front();  // earliest in the graph's order
    for (const Node* s : slices) {
      if (s != first) absorbed_.insert(s);
    }
    const int64_t axis = key.second;
    rewrites_[first] = [this, first, src, pieces, axis] {
      std::vector<std::string> outs;
      std::vector<int64_t> sizes;
      for (const auto& [len, s] : pieces) {
        outs.push_back(s ? s->output(0)->name() : w_.fresh(src->name() + "_gap"));
        sizes.push_back(len);
      }
      std::vector<std::string> ins = {src->name()};
      if (w_.opset() >= 13) ins.push_back(w_.int64s(sizes));
      onnx::NodeProto* p = w_.node("Split", ins, outs, "", first->name());
      ProtoWriter::set_int(p, "axis", axis);
      if (w_.opset() < 13) ProtoWriter::set_ints(p, "split", sizes);
      for (const auto& [len, s] : pieces) {
        if (s) declare(s->output(0));
      }
    };
  }
}

}  // namespace nnfuse
