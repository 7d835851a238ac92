// Region basics: op kinds, builders, validation and the evaluation plan. evaluate.cc,
// encode.cc and emit.cc hold the rest of codegen.h.
#include "codegen/codegen.h"

#include <string>

#include "codegen/region_plan.h"

namespace nnfuse::codegen {

bool is_unary(OpKind k) { return k >= OpKind::kRelu && k <= OpKind::kErf; }
bool is_binary(OpKind k) { return k >= OpKind::kAdd && k <= OpKind::kPow; }
bool is_reduction(OpKind k) { return k >= OpKind::kReduceSum && k <= OpKind::kReduceMin; }

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::kInput:
      return "Input";
    case OpKind::kConst:
      return "Const";
    case OpKind::kRelu:
      return "Relu";
    case OpKind::kNeg:
      return "Neg";
    case OpKind::kAbs:
      return "Abs";
    case OpKind::kExp:
      return "Exp";
    case OpKind::kLog:
      return "Log";
    case OpKind::kSqrt:
      return "Sqrt";
    case OpKind::kTanh:
      return "Tanh";
    case OpKind::kSigmoid:
      return "Sigmoid";
    case OpKind::kErf:
      return "Erf";
    case OpKind::kAdd:
      return "Add";
    case OpKind::kSub:
      return "Sub";
    case OpKind::kMul:
      return "Mul";
    case OpKind::kDiv:
      return "Div";
    case OpKind::kMax:
      return "Max";
    case OpKind::kMin:
      return "Min";
    case OpKind::kPow:
      return "Pow";
    case OpKind::kReduceSum:
      return "ReduceSum";
    case OpKind::kReduceMean:
      return "ReduceMean";
    case OpKind::kReduceMax:
      return "ReduceMax";
    case OpKind::kReduceMin:
      return "ReduceMin";
  }
  return "?";
}

namespace {

int append(std::vector<Op>& ops, OpKind k, int a = -1, int b = -1, int input = -1,
           float value = 0) {
  Op op;
  op.kind = k;
  op.a = a;
  op.b = b;
  op.input = input;
  op.value = value;
  ops.push_back(op);
  return static_cast<int>(ops.size()) - 1;
}

}  // namespace

int Region::add_input(int input_index) { return append(ops, OpKind::kInput, -1, -1, input_index); }
int Region::add_const(float v) { return append(ops, OpKind::kConst, -1, -1, -1, v); }
int Region::add_unary(OpKind k, int a) { return append(ops, k, a); }
int Region::add_binary(OpKind k, int a, int b) { return append(ops, k, a, b); }
int Region::add_reduction(OpKind k, int a) { return append(ops, k, a); }

int64_t num_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const std::vector<int64_t>& domain(const Region& r) {
  return r.domain_shape.empty() ? r.output_shape : r.domain_shape;
}

int reduction_op(const Region& r) {
  for (size_t i = 0; i < r.ops.size(); ++i) {
    if (is_reduction(r.ops[i].kind)) return static_cast<int>(i);
  }
  return -1;
}

int64_t work_items(const Region& r) {
  const auto& dom = domain(r);
  if (reduction_op(r) < 0 || dom.empty()) return num_elements(dom);
  return num_elements(std::vector<int64_t>(dom.begin(), dom.end() - 1));
}

int64_t work_per_item(const Region& r) {
  const auto& dom = domain(r);
  return reduction_op(r) < 0 || dom.empty() ? 1 : dom.back();
}

namespace {

// Why `shape` cannot be used: a negative dimension, or more elements than the index math holds.
std::string shape_problem(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return what + " has a negative dimension";
  }
  for (int64_t d : shape) {
    // Generated code multiplies offsets by dims; 2^62 leaves headroom for that.
    if (__builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 62)) {
      return what + " has too many elements";
    }
  }
  return {};
}

std::string op_problem(const Region& r, size_t i) {
  const Op& op = r.ops[i];
  const int n = static_cast<int>(i);
  auto operand_ok = [n](int x) { return x >= 0 && x < n; };
  const std::string name = std::string("op ") + std::to_string(i);
  const int kind = static_cast<int>(op.kind);
  if (kind < static_cast<int>(OpKind::kInput) || kind > static_cast<int>(OpKind::kReduceMin)) {
    return name + " has an unknown kind " + std::to_string(kind);
  }
  if (op.kind == OpKind::kInput) {
    if (op.input < 0 || op.input >= static_cast<int>(r.input_shapes.size())) {
      return name + " reads a missing input";
    }
  } else if (is_unary(op.kind) || is_reduction(op.kind)) {
    if (!operand_ok(op.a)) return name + " has a bad operand";
  } else if (is_binary(op.kind)) {
    if (!operand_ok(op.a) || !operand_ok(op.b)) return name + " has a bad operand";
  }
  return {};
}

}  // namespace

std::string validate(const Region& r) {
  const auto& dom = domain(r);
  if (std::string why = shape_problem(r.output_shape, "the output shape"); !why.empty()) {
    return why;
  }
  if (std::string why = shape_problem(r.domain_shape, "the domain shape"); !why.empty()) {
    return why;
  }
  for (size_t k = 0; k < r.input_shapes.size(); ++k) {
    const auto& s = r.input_shapes[k];
    const std::string name = std::string("input ") + std::to_string(k);
    if (std::string why = shape_problem(s, name); !why.empty()) return why;
    if (s.size() > dom.size()) return name + " has higher rank than the domain";
    const size_t off = dom.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] != 1 && s[d] != dom[off + d]) return name + " does not broadcast to the domain";
    }
  }
  int reductions = 0;
  for (size_t i = 0; i < r.ops.size(); ++i) {
    if (std::string why = op_problem(r, i); !why.empty()) return why;
    if (is_reduction(r.ops[i].kind)) ++reductions;
  }
  if (reductions > 1) return "more than one reduction op";
  if (r.output < 0 || r.output >= static_cast<int>(r.ops.size())) return "output op not set";

  const int64_t out_n = num_elements(r.output_shape);
  const int64_t dom_n = num_elements(dom);
  if (reductions == 0) {
    if (out_n != dom_n) {
      return std::string("the output has ") + std::to_string(out_n) + " elements, the domain " +
             std::to_string(dom_n);
    }
    return {};
  }
  if (dom.empty()) return "a row region needs a domain of rank >= 1";
  if (out_n == dom_n) return {};
  const int64_t rows = work_items(r);
  if (out_n != rows) {
    return std::string("the output has ") + std::to_string(out_n) +
           " elements, neither the domain's " + std::to_string(dom_n) + " nor its " +
           std::to_string(rows) + " rows";
  }
  if (varies_along_row(r)[static_cast<size_t>(r.output)]) {
    return "the output has one value per row but depends on a value that varies along the row "
           "after the reduction";
  }
  return {};
}

std::vector<bool> varies_along_row(const Region& r) {
  std::vector<bool> v(r.ops.size(), false);
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const Op& op = r.ops[i];
    if (op.kind == OpKind::kInput) {
      const auto& s = r.input_shapes[static_cast<size_t>(op.input)];
      v[i] = !s.empty() && s.back() != 1;
    } else if (is_unary(op.kind)) {
      v[i] = v[static_cast<size_t>(op.a)];
    } else if (is_binary(op.kind)) {
      v[i] = v[static_cast<size_t>(op.a)] || v[static_cast<size_t>(op.b)];
    }  // constants and the reduction's result: one value per row
  }
  return v;
}

namespace {

// Marks `from` and the ops it reads, transitively; `stop` (the reduction, whose value is known
// by then) is neither marked nor looked through.
std::vector<bool> ancestors(const Region& r, int from, int stop) {
  std::vector<bool> m(r.ops.size(), false);
  if (from == stop) return m;
  m[static_cast<size_t>(from)] = true;
  for (size_t i = static_cast<size_t>(from) + 1; i-- > 0;) {
    if (!m[i]) continue;
    const Op& op = r.ops[i];
    for (int x : {op.a, op.b}) {
      if (x >= 0 && x != stop &&
          (is_unary(op.kind) || is_binary(op.kind) || is_reduction(op.kind))) {
        m[static_cast<size_t>(x)] = true;
      }
    }
  }
  return m;
}

}  // namespace

RegionPlan make_plan(const Region& r) {
  RegionPlan p;
  p.dom = domain(r);
  if (p.dom.empty()) p.dom.push_back(1);
  const size_t rank = p.dom.size();
  const size_t n_in = r.input_shapes.size();
  p.strides.assign(n_in, std::vector<int64_t>(rank, 0));
  p.last_stride_zero.assign(n_in, true);
  for (size_t k = 0; k < n_in; ++k) {
    const auto& s = r.input_shapes[k];
    const size_t off = rank - s.size();
    int64_t stride = 1;
    for (size_t d = s.size(); d-- > 0;) {
      if (s[d] != 1) p.strides[k][off + d] = stride;
      stride *= s[d];
    }
    p.last_stride_zero[k] = p.strides[k][rank - 1] == 0;
  }
  p.red = reduction_op(r);
  p.row_len = p.dom.back();
  p.rows = num_elements(std::vector<int64_t>(p.dom.begin(), p.dom.end() - 1));
  if (p.red >= 0) {
    p.row_output = num_elements(r.output_shape) != num_elements(p.dom);
    p.pre = ancestors(r, r.ops[static_cast<size_t>(p.red)].a, -1);
    p.post = ancestors(r, r.output, p.red);
    p.emitted.resize(r.ops.size());
    for (size_t i = 0; i < r.ops.size(); ++i) p.emitted[i] = p.pre[i] || p.post[i];
  }
  return p;
}

}  // namespace nnfuse::codegen
