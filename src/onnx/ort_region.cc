// A FusedRegion (a generated kernel) written back as the standard ONNX ops it computes: one node
// per op the output depends on, numpy broadcasting as the region's, its one last-axis reduction
// with keepdims (the operand widened first where it broadcasts along that axis, since the
// region reduces over the domain's full last axis), and the result reshaped or expanded to the
// node's output shape.
#include <algorithm>
#include <map>
#include <optional>

#include "ir/error.h"
#include "onnx/ort_export.h"
#include "ops/region.h"

namespace nnfuse {

namespace {

using codegen::OpKind;

// numpy broadcasting of two static shapes (valid regions only broadcast compatibly).
std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> r(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < r.size(); ++i) {
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    r[r.size() - 1 - i] = x == 1 ? y : x;
  }
  return r;
}

// An ONNX op the region computes with several of its ops (how lower.cc writes Softplus,
// LeakyRelu, HardSigmoid, HardSwish and Clip), recognized at its root op so the export writes
// the one op again.
struct Idiom {
  const char* op = nullptr;
  int x = -1;                 // the operand
  std::vector<int> interior;  // ops computed inside it (each read by the idiom alone)
  std::vector<float> attrs;   // alpha, beta (LeakyRelu: alpha; HardSigmoid: alpha, beta)
  std::vector<float> bounds;  // Clip: min, max
};

class IdiomMatcher {
 public:
  IdiomMatcher(const codegen::Region& r, const std::vector<int>& uses) : r_(r), uses_(uses) {}

  std::optional<Idiom> match(int root, int64_t opset) const {
    if (auto m = softplus(root)) return m;
    if (auto m = leaky_relu(root)) return m;
    if (auto m = hard_swish(root); m && opset >= 14) return m;
    if (auto m = hard_sigmoid(root)) return m;
    if (auto m = clip(root); m && opset >= 11) return m;
    return std::nullopt;
  }

 private:
  const codegen::Op& op(int i) const { return r_.ops[static_cast<size_t>(i)]; }
  bool is(int i, OpKind k) const { return i >= 0 && op(i).kind == k; }
  bool is_const(int i, float v) const { return is(i, OpKind::kConst) && op(i).value == v; }
  bool is_any_const(int i) const { return is(i, OpKind::kConst); }
  bool single(int i) const { return uses_[static_cast<size_t>(i)] == 1; }
  // For a commutative binary op at i: its operands with `first` first, if one of them is.
  template <typename F>
  bool either(int i, F&& first, int* a, int* b) const {
    const codegen::Op& o = op(i);
    if (first(o.a)) {
      *a = o.a;
      *b = o.b;
      return true;
    }
    if (first(o.b)) {
      *a = o.b;
      *b = o.a;
      return true;
    }
    return false;
  }

  // Add(Max(x, 0), Log(Add(1, Exp(Neg(Abs(x))))))
  std::optional<Idiom> softplus(int root) const {
    if (!is(root, OpKind::kAdd)) return std::nullopt;
    int mx = -1, lg = -1;
    if (!either(
            root, [&](int i) { return is(i, OpKind::kMax); }, &mx, &lg))
      return std::nullopt;
    if (!is(lg, OpKind::kLog) || !single(mx) || !single(lg)) return std::nullopt;
    int x = -1, zero = -1;
    if (!either(
            mx, [&](int i) { return is_const(i, 0.0f); }, &zero, &x))
      return std::nullopt;
    const int add = op(lg).a;
    int one = -1, ex = -1;
    if (!is(add, OpKind::kAdd) || !single(add) ||
        !either(
            add, [&](int i) { return is_const(i, 1.0f); }, &one, &ex)) {
      return std::nullopt;
    }
    if (!is(ex, OpKind::kExp) || !single(ex)) return std::nullopt;
    const int neg = op(ex).a;
    if (!is(neg, OpKind::kNeg) || !single(neg)) return std::nullopt;
    const int abs = op(neg).a;
    if (!is(abs, OpKind::kAbs) || !single(abs) || op(abs).a != x) return std::nullopt;
    return Idiom{"Softplus", x, {mx, lg, add, ex, neg, abs}, {}, {}};
  }

  // Add(Max(x, 0), Mul(alpha, Min(x, 0)))
  std::optional<Idiom> leaky_relu(int root) const {
    if (!is(root, OpKind::kAdd)) return std::nullopt;
    int mx = -1, mul = -1;
    if (!either(
            root, [&](int i) { return is(i, OpKind::kMax); }, &mx, &mul))
      return std::nullopt;
    if (!is(mul, OpKind::kMul) || !single(mx) || !single(mul)) return std::nullopt;
    int x = -1, zero = -1;
    if (!either(
            mx, [&](int i) { return is_const(i, 0.0f); }, &zero, &x))
      return std::nullopt;
    int alpha = -1, mn = -1;
    if (!either(
            mul, [&](int i) { return is_any_const(i); }, &alpha, &mn))
      return std::nullopt;
    if (!is(mn, OpKind::kMin) || !single(mn)) return std::nullopt;
    int x2 = -1, zero2 = -1;
    if (!either(
            mn, [&](int i) { return is_const(i, 0.0f); }, &zero2, &x2) ||
        x2 != x) {
      return std::nullopt;
    }
    return Idiom{"LeakyRelu", x, {mx, mul, mn}, {op(alpha).value}, {}};
  }

  // Max(Min(Add(Mul(alpha, x), beta), 1), 0)
  std::optional<Idiom> hard_sigmoid(int root) const {
    if (!is(root, OpKind::kMax) || !is_const(op(root).b, 0.0f)) return std::nullopt;
    const int mn = op(root).a;
    if (!is(mn, OpKind::kMin) || !single(mn) || !is_const(op(mn).b, 1.0f)) return std::nullopt;
    const int add = op(mn).a;
    if (!is(add, OpKind::kAdd) || !single(add) || !is_any_const(op(add).b)) return std::nullopt;
    const int mul = op(add).a;
    if (!is(mul, OpKind::kMul) || !single(mul) || !is_any_const(op(mul).a)) return std::nullopt;
    return Idiom{
        "HardSigmoid", op(mul).b, {mn, add, mul}, {op(op(mul).a).value, op(op(add).b).value}, {}};
  }

  // Mul(x, HardSigmoid(x; 1/6, 1/2))
  std::optional<Idiom> hard_swish(int root) const {
    if (!is(root, OpKind::kMul)) return std::nullopt;
    const int hs = op(root).b;
    auto h = single(hs) ? hard_sigmoid(hs) : std::nullopt;
    if (!h || h->x != op(root).a || h->attrs[0] != 1.0f / 6.0f || h->attrs[1] != 0.5f) {
      return std::nullopt;
    }
    h->interior.push_back(hs);
    return Idiom{"HardSwish", h->x, h->interior, {}, {}};
  }

  // Min(Max(x, lo), hi)
  std::optional<Idiom> clip(int root) const {
    if (!is(root, OpKind::kMin) || !is_any_const(op(root).b)) return std::nullopt;
    const int mx = op(root).a;
    if (!is(mx, OpKind::kMax) || !single(mx) || !is_any_const(op(mx).b)) return std::nullopt;
    return Idiom{"Clip", op(mx).a, {mx}, {}, {op(op(mx).b).value, op(op(root).b).value}};
  }

  const codegen::Region& r_;
  const std::vector<int>& uses_;
};

}  // namespace

void OrtLowering::lower_region(const Node& n) {
  const codegen::Region r = ops::fused_region_of(n);
  const std::vector<int64_t>& dom = codegen::domain(r);
  const size_t num_ops = r.ops.size();
  // The ops the output depends on.
  std::vector<bool> needed(num_ops, false);
  needed[static_cast<size_t>(r.output)] = true;
  for (size_t i = num_ops; i-- > 0;) {
    if (!needed[i]) continue;
    const codegen::Op& op = r.ops[i];
    if (op.a >= 0) needed[static_cast<size_t>(op.a)] = true;
    if (op.b >= 0) needed[static_cast<size_t>(op.b)] = true;
  }
  // Idioms: an op computed by several region ops written as the one ONNX op.
  std::vector<int> uses(num_ops, 0);
  uses[static_cast<size_t>(r.output)]++;
  for (size_t i = 0; i < num_ops; ++i) {
    if (!needed[i]) continue;
    if (r.ops[i].a >= 0) uses[static_cast<size_t>(r.ops[i].a)]++;
    if (r.ops[i].b >= 0) uses[static_cast<size_t>(r.ops[i].b)]++;
  }
  std::vector<std::optional<Idiom>> idiom(num_ops);
  const IdiomMatcher matcher(r, uses);
  for (size_t i = num_ops; i-- > 0;) {
    if (!needed[i]) continue;
    idiom[i] = matcher.match(static_cast<int>(i), w_.opset());
    if (!idiom[i]) continue;
    // Its interior ops are not written (unless read elsewhere: then no idiom).
    for (int j : idiom[i]->interior) needed[static_cast<size_t>(j)] = false;
    needed[static_cast<size_t>(idiom[i]->x)] = true;
  }
  // Ops only an idiom's interior read are not needed either.
  for (size_t i = num_ops; i-- > 0;) {
    if (static_cast<int>(i) == r.output) continue;
    bool read = false;
    for (size_t j = i + 1; j < num_ops && !read; ++j) {
      read = needed[j] &&
             (idiom[j] ? idiom[j]->x == static_cast<int>(i)
                       : (r.ops[j].a == static_cast<int>(i) || r.ops[j].b == static_cast<int>(i)));
    }
    if (!read) needed[i] = false;
  }
  // Static shapes of every op's value.
  std::vector<std::vector<int64_t>> shape(num_ops);
  for (size_t i = 0; i < num_ops; ++i) {
    const codegen::Op& op = r.ops[i];
    if (op.kind == OpKind::kInput) {
      shape[i] = r.input_shapes[static_cast<size_t>(op.input)];
    } else if (op.kind == OpKind::kConst) {
      shape[i] = {};
    } else if (codegen::is_reduction(op.kind)) {
      shape[i] = broadcast(shape[static_cast<size_t>(op.a)], {dom.back()});
      shape[i].back() = 1;
    } else if (codegen::is_binary(op.kind)) {
      shape[i] = broadcast(shape[static_cast<size_t>(op.a)], shape[static_cast<size_t>(op.b)]);
    } else {
      shape[i] = shape[static_cast<size_t>(op.a)];
    }
  }
  const std::vector<int64_t>& out_shape = r.output_shape;
  const std::vector<int64_t>& final_shape = shape[static_cast<size_t>(r.output)];
  const int64_t out_numel = codegen::num_elements(out_shape);
  const bool expand = codegen::num_elements(final_shape) != out_numel;
  const bool reshape = !expand && final_shape != out_shape;
  const bool is_value = r.ops[static_cast<size_t>(r.output)].kind == OpKind::kInput ||
                        r.ops[static_cast<size_t>(r.output)].kind == OpKind::kConst;
  const std::string out = n.output(0)->name();
  std::vector<std::string> name(num_ops);
  std::map<float, std::string> constants;
  int k = 0;
  auto node_name = [&] { return n.name() + "_" + std::to_string(k++); };
  for (size_t i = 0; i < num_ops; ++i) {
    if (!needed[i]) continue;
    const codegen::Op& op = r.ops[i];
    if (op.kind == OpKind::kInput) {
      name[i] = n.input(static_cast<size_t>(op.input))->name();
      continue;
    }
    if (op.kind == OpKind::kConst) {
      auto it = constants.find(op.value);
      if (it == constants.end()) it = constants.emplace(op.value, w_.scalar(op.value)).first;
      name[i] = it->second;
      continue;
    }
    const bool last = static_cast<int>(i) == r.output && !expand && !reshape;
    name[i] = last ? out : w_.fresh(out + "_r");
    // Every region op but inputs and constants is the ONNX op of its name.
    const char* onnx = codegen::op_name(op.kind);
    if (idiom[i]) {
      const Idiom& m = *idiom[i];
      std::vector<std::string> ins = {name[static_cast<size_t>(m.x)]};
      for (float b : m.bounds) ins.push_back(w_.scalar(b));
      onnx::NodeProto* p = w_.node(m.op, ins, {name[i]}, "", last ? n.name() : node_name());
      if (!m.attrs.empty()) ProtoWriter::set_float(p, "alpha", m.attrs[0]);
      if (m.attrs.size() > 1) ProtoWriter::set_float(p, "beta", m.attrs[1]);
      continue;
    }
    std::string a = name[static_cast<size_t>(op.a)];
    if (codegen::is_reduction(op.kind)) {
      // The region reduces the domain's whole last axis: widen an operand broadcast along it.
      const std::vector<int64_t>& sa = shape[static_cast<size_t>(op.a)];
      if (sa.empty() || sa.back() != dom.back()) {
        const std::string wide = w_.fresh(out + "_wide");
        w_.node("Expand", {a, w_.int64s(broadcast(sa, {dom.back()}))}, {wide}, "", node_name());
        a = wide;
      }
      const bool axes_input =
          w_.opset() >= 18 || (op.kind == OpKind::kReduceSum && w_.opset() >= 13);
      std::vector<std::string> ins = {a};
      if (axes_input) ins.push_back(w_.int64s({-1}));
      onnx::NodeProto* p = w_.node(onnx, ins, {name[i]}, "", last ? n.name() : node_name());
      if (!axes_input) ProtoWriter::set_ints(p, "axes", {-1});
      ProtoWriter::set_int(p, "keepdims", 1);
    } else if (codegen::is_binary(op.kind)) {
      w_.node(onnx, {a, name[static_cast<size_t>(op.b)]}, {name[i]}, "",
              last ? n.name() : node_name());
    } else {
      w_.node(onnx, {a}, {name[i]}, "", last ? n.name() : node_name());
    }
  }
  const std::string& result = name[static_cast<size_t>(r.output)];
  if (expand) {
    // The value broadcasts to the domain (an elementwise region whose output op does not read
    // every input's full shape).
    const std::vector<int64_t> wide = broadcast(final_shape, dom);
    if (wide == out_shape) {
      w_.node("Expand", {result, w_.int64s(out_shape)}, {out}, "", n.name());
    } else {
      const std::string e = w_.fresh(out + "_wide");
      w_.node("Expand", {result, w_.int64s(wide)}, {e}, "", node_name());
      w_.node("Reshape", {e, w_.int64s(out_shape)}, {out}, "", n.name());
    }
  } else if (reshape) {
    w_.node("Reshape", {result, w_.int64s(out_shape)}, {out}, "", n.name());
  } else if (is_value) {
    w_.node("Identity", {result}, {out}, "", n.name());
  }
}

}  // namespace nnfuse
