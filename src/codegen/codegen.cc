#include "codegen/codegen.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace nnfuse::codegen {

bool is_unary(OpKind k) { return k >= OpKind::kRelu && k <= OpKind::kErf; }
bool is_binary(OpKind k) { return k >= OpKind::kAdd && k <= OpKind::kPow; }

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
  }
  return "?";
}

int Region::add_input(int input_index) {
  Op op;
  op.kind = OpKind::kInput;
  op.input = input_index;
  ops.push_back(op);
  return static_cast<int>(ops.size()) - 1;
}

int Region::add_const(float v) {
  Op op;
  op.kind = OpKind::kConst;
  op.value = v;
  ops.push_back(op);
  return static_cast<int>(ops.size()) - 1;
}

int Region::add_unary(OpKind k, int a) {
  Op op;
  op.kind = k;
  op.a = a;
  ops.push_back(op);
  return static_cast<int>(ops.size()) - 1;
}

int Region::add_binary(OpKind k, int a, int b) {
  Op op;
  op.kind = k;
  op.a = a;
  op.b = b;
  ops.push_back(op);
  return static_cast<int>(ops.size()) - 1;
}

int64_t num_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string validate(const Region& r) {
  for (int64_t d : r.output_shape) {
    if (d < 0) return "output shape has a negative dimension";
  }
  for (size_t k = 0; k < r.input_shapes.size(); ++k) {
    const auto& s = r.input_shapes[k];
    if (s.size() > r.output_shape.size()) {
      return std::string("input ") + std::to_string(k) + " has higher rank than the output";
    }
    const size_t off = r.output_shape.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] != 1 && s[d] != r.output_shape[off + d]) {
        return std::string("input ") + std::to_string(k) + " does not broadcast to the output";
      }
    }
  }
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const Op& op = r.ops[i];
    const int n = static_cast<int>(i);
    auto operand_ok = [n](int x) { return x >= 0 && x < n; };
    if (op.kind == OpKind::kInput) {
      if (op.input < 0 || op.input >= static_cast<int>(r.input_shapes.size())) {
        return std::string("op ") + std::to_string(i) + " reads a missing input";
      }
    } else if (is_unary(op.kind)) {
      if (!operand_ok(op.a)) return std::string("op ") + std::to_string(i) + " has a bad operand";
    } else if (is_binary(op.kind)) {
      if (!operand_ok(op.a) || !operand_ok(op.b)) {
        return std::string("op ") + std::to_string(i) + " has a bad operand";
      }
    } else if (op.kind != OpKind::kConst) {
      return std::string("op ") + std::to_string(i) + " has an unknown kind";
    }
  }
  if (r.output < 0 || r.output >= static_cast<int>(r.ops.size())) return "output op not set";
  return {};
}

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0)) return false;
  }
  return true;
}

// An exact float literal (hexfloat, C++17).
std::string float_literal(float v) {
  if (std::isnan(v)) return "__builtin_nanf(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inff()" : "(-__builtin_inff())";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", static_cast<double>(v));
  return std::string("(") + buf + "f)";
}

std::string var(int i) { return std::string("t") + std::to_string(i); }

std::string op_expr(const Op& op, const std::vector<bool>& last_stride_zero) {
  const std::string a = op.a >= 0 ? var(op.a) : std::string();
  const std::string b = op.b >= 0 ? var(op.b) : std::string();
  switch (op.kind) {
    case OpKind::kInput:
      return std::string("p") + std::to_string(op.input) +
             (last_stride_zero[static_cast<size_t>(op.input)] ? "[0]" : "[j]");
    case OpKind::kConst:
      return float_literal(op.value);
    case OpKind::kRelu:
      return a + " < 0.0f ? 0.0f : " + a;
    case OpKind::kNeg:
      return std::string("-") + a;
    case OpKind::kAbs:
      return std::string("std::fabs(") + a + ")";
    case OpKind::kExp:
      return std::string("std::exp(") + a + ")";
    case OpKind::kLog:
      return std::string("std::log(") + a + ")";
    case OpKind::kSqrt:
      return std::string("std::sqrt(") + a + ")";
    case OpKind::kTanh:
      return std::string("std::tanh(") + a + ")";
    case OpKind::kSigmoid:
      return std::string("1.0f / (1.0f + std::exp(-") + a + "))";
    case OpKind::kErf:
      return std::string("std::erf(") + a + ")";
    case OpKind::kAdd:
      return a + " + " + b;
    case OpKind::kSub:
      return a + " - " + b;
    case OpKind::kMul:
      return a + " * " + b;
    case OpKind::kDiv:
      return a + " / " + b;
    case OpKind::kMax:
      return a + " < " + b + " ? " + b + " : " + a;
    case OpKind::kMin:
      return b + " < " + a + " ? " + b + " : " + a;
    case OpKind::kPow:
      return std::string("std::pow(") + a + ", " + b + ")";
  }
  return "0.0f";
}

}  // namespace

std::string emit_cpp(const Region& r, const std::string& fn_name) {
  if (std::string why = validate(r); !why.empty()) {
    throw std::invalid_argument(std::string("emit_cpp: ") + why);
  }
  if (!is_identifier(fn_name)) {
    throw std::invalid_argument(std::string("emit_cpp: bad function name '") + fn_name + "'");
  }

  std::string s;
  s += "// Generated by nnfuse codegen.\n";
  s += "#include <cmath>\n#include <cstdint>\n\n";
  s += std::string("extern \"C\" void ") + fn_name +
       "(const float* const* in, float* out, int64_t begin, int64_t end) {\n";

  if (num_elements(r.output_shape) == 0) {
    s += "  (void)in;\n  (void)out;\n  (void)begin;\n  (void)end;\n}\n";
    return s;
  }

  // Output shape as rank >= 1; input strides aligned to it (0 where broadcast).
  std::vector<int64_t> oshape = r.output_shape;
  if (oshape.empty()) oshape.push_back(1);
  const size_t rank = oshape.size();
  const size_t n_in = r.input_shapes.size();
  std::vector<std::vector<int64_t>> strides(n_in, std::vector<int64_t>(rank, 0));
  std::vector<bool> last_stride_zero(n_in, true);
  for (size_t k = 0; k < n_in; ++k) {
    const auto& is = r.input_shapes[k];
    const size_t off = rank - is.size();
    int64_t stride = 1;
    for (size_t d = is.size(); d-- > 0;) {
      if (is[d] != 1) strides[k][off + d] = stride;
      stride *= is[d];
    }
    last_stride_zero[k] = strides[k][rank - 1] == 0;
  }
  const int64_t inner = oshape[rank - 1];

  s += std::string("  constexpr int64_t kInner = ") + std::to_string(inner) + ";\n";
  s += "  int64_t i = begin;\n";
  s += "  while (i < end) {\n";
  s += "    const int64_t row = i / kInner;\n";
  s += "    const int64_t j0 = i - row * kInner;\n";
  s += "    const int64_t j1 = end - i < kInner - j0 ? j0 + (end - i) : kInner;\n";
  for (size_t k = 0; k < n_in; ++k) {
    s += std::string("    int64_t o") + std::to_string(k) + " = 0;\n";
  }
  bool any_outer = false;
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (oshape[d] != 1) any_outer = true;
  }
  if (any_outer) {
    s += "    {\n      int64_t r = row;\n";
    for (size_t d = rank - 1; d-- > 0;) {
      if (oshape[d] == 1) continue;
      s += std::string("      {\n        const int64_t c = r % ") + std::to_string(oshape[d]) +
           ";\n        r /= " + std::to_string(oshape[d]) + ";\n";
      for (size_t k = 0; k < n_in; ++k) {
        if (strides[k][d] == 0) continue;
        s += std::string("        o") + std::to_string(k) + " += c * " +
             std::to_string(strides[k][d]) + ";\n";
      }
      s += "      }\n";
    }
    s += "      (void)r;\n    }\n";
  }
  for (size_t k = 0; k < n_in; ++k) {
    const std::string ks = std::to_string(k);
    s += std::string("    const float* p") + ks + " = in[" + ks + "] + o" + ks + ";\n";
    s += std::string("    (void)p") + ks + ";\n";
  }
  s += "    float* po = out + row * kInner;\n";
  s += "#pragma omp simd\n";
  s += "    for (int64_t j = j0; j < j1; ++j) {\n";
  for (size_t i = 0; i < r.ops.size(); ++i) {
    s += std::string("      const float ") + var(static_cast<int>(i)) + " = " +
         op_expr(r.ops[i], last_stride_zero) + ";\n";
  }
  s += std::string("      po[j] = ") + var(r.output) + ";\n";
  s += "    }\n";
  s += "    i += j1 - j0;\n";
  s += "  }\n";
  s += "}\n";
  return s;
}

}  // namespace nnfuse::codegen
