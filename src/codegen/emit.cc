// emit_cpp and emit_cuda: the region as source with its shapes and broadcast strides baked in.
// Both dialects share the index math and the op expressions; their float semantics match
// evaluate.cc (Max/Min as selects, reductions' NaN handling, mean = sum / N).
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/region_plan.h"

namespace nnfuse::codegen {

namespace {

enum class Dialect { kCpp, kCuda };

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

void check(const Region& r, const std::string& fn_name, const char* who) {
  if (std::string why = validate(r); !why.empty()) {
    throw std::invalid_argument(std::string(who) + ": " + why);
  }
  if (!is_identifier(fn_name)) {
    throw std::invalid_argument(std::string(who) + ": bad function name '" + fn_name + "'");
  }
}

// An exact float literal (hexfloat, C++17). nvcc's device code has the CUDA intrinsics for the
// non-finite values rather than GCC's builtins.
std::string float_literal(float v, Dialect d) {
  const bool cuda = d == Dialect::kCuda;
  if (std::isnan(v)) return cuda ? "__int_as_float(0x7fc00000)" : "__builtin_nanf(\"\")";
  if (std::isinf(v)) {
    const std::string inf = cuda ? "__int_as_float(0x7f800000)" : "__builtin_inff()";
    return v > 0 ? inf : "(-" + inf + ")";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", static_cast<double>(v));
  return std::string("(") + buf + "f)";
}

// glibc's vector math (libmvec) for the transcendental functions, declared as <math.h> does
// under -ffast-math, so the `omp simd` loops vectorize without fast-math's other semantics.
constexpr const char* kVectorMath =
    "#if defined(__GLIBC__) && defined(__x86_64__)\n"
    "#if __GLIBC__ > 2 || __GLIBC_MINOR__ >= 22\n"
    "extern \"C\" float expf(float) noexcept __attribute__((__simd__(\"notinbranch\")));\n"
    "extern \"C\" float logf(float) noexcept __attribute__((__simd__(\"notinbranch\")));\n"
    "extern \"C\" float powf(float, float) noexcept "
    "__attribute__((__simd__(\"notinbranch\")));\n"
    "#endif\n"
    "#if __GLIBC__ > 2 || __GLIBC_MINOR__ >= 35\n"
    "extern \"C\" float tanhf(float) noexcept __attribute__((__simd__(\"notinbranch\")));\n"
    "extern \"C\" float erff(float) noexcept __attribute__((__simd__(\"notinbranch\")));\n"
    "#endif\n"
    "#endif\n\n";

std::string var(int i) { return std::string("t") + std::to_string(i); }

std::string call(const char* cpp, const char* cuda, Dialect d, const std::string& arg) {
  return std::string(d == Dialect::kCpp ? cpp : cuda) + "(" + arg + ")";
}

std::string op_expr(const Op& op, const RegionPlan& p, Dialect d) {
  const std::string a = op.a >= 0 ? var(op.a) : std::string();
  const std::string b = op.b >= 0 ? var(op.b) : std::string();
  switch (op.kind) {
    case OpKind::kInput:
      return std::string("p") + std::to_string(op.input) +
             (p.last_stride_zero[static_cast<size_t>(op.input)] ? "[0]" : "[j]");
    case OpKind::kConst:
      return float_literal(op.value, d);
    case OpKind::kRelu:
      return a + " < 0.0f ? 0.0f : " + a;
    case OpKind::kNeg:
      return std::string("-") + a;
    case OpKind::kAbs:
      return call("std::fabs", "fabsf", d, a);
    case OpKind::kExp:
      return call("expf", "expf", d, a);
    case OpKind::kLog:
      return call("logf", "logf", d, a);
    case OpKind::kSqrt:
      return call("std::sqrt", "sqrtf", d, a);
    case OpKind::kTanh:
      return call("tanhf", "tanhf", d, a);
    case OpKind::kSigmoid:
      return "1.0f / (1.0f + " + call("expf", "expf", d, "-" + a) + ")";
    case OpKind::kErf:
      return call("erff", "erff", d, a);
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
      return call("powf", "powf", d, a + ", " + b);
    default:
      return "0.0f";  // reductions are emitted by their loop
  }
}

// `const float tI = ...;` for the ops `mask` selects (all when null), reductions excluded.
void emit_ops(std::string& s, const Region& r, const RegionPlan& p, const std::vector<bool>* mask,
              Dialect d, const std::string& ind) {
  for (size_t i = 0; i < r.ops.size(); ++i) {
    if ((mask != nullptr && !(*mask)[i]) || is_reduction(r.ops[i].kind)) continue;
    s += ind + "const float " + var(static_cast<int>(i)) + " = " + op_expr(r.ops[i], p, d) + ";\n";
  }
}

// Declares p<k>, input k's data at the start of row `row` (a flat index over the domain's
// leading dims), for the inputs the ops `mask` selects (all when null) read; nvcc warns about
// unused ones even when cast to void.
void emit_row_pointers(std::string& s, const Region& r, const RegionPlan& p,
                       const std::vector<bool>* mask, const std::string& ind) {
  const size_t n_in = p.strides.size();
  const size_t rank = p.dom.size();
  std::vector<bool> used(n_in, false);
  for (size_t i = 0; i < r.ops.size(); ++i) {
    if (r.ops[i].kind == OpKind::kInput && (mask == nullptr || (*mask)[i])) {
      used[static_cast<size_t>(r.ops[i].input)] = true;
    }
  }
  auto uses_dim = [&](size_t d) {
    for (size_t k = 0; k < n_in; ++k) {
      if (used[k] && p.strides[k][d] != 0) return true;
    }
    return false;
  };
  size_t outer = rank;  // the outermost leading dim some input's offset depends on
  for (size_t d = 0; d + 1 < rank && outer == rank; ++d) {
    if (uses_dim(d)) outer = d;
  }
  for (size_t k = 0; k < n_in; ++k) {
    if (used[k]) s += ind + "int64_t o" + std::to_string(k) + " = 0;\n";
  }
  if (outer < rank) {
    s += ind + "{\n" + ind + "  int64_t r = row;\n";
    for (size_t d = rank - 1; d-- > outer;) {
      const std::string dim = std::to_string(p.dom[d]);
      if (!uses_dim(d)) {
        if (p.dom[d] != 1) s += ind + "  r /= " + dim + ";\n";
        continue;
      }
      s += ind + "  {\n" + ind + "    const int64_t c = r % " + dim + ";\n" + ind +
           "    r /= " + dim + ";\n";
      for (size_t k = 0; k < n_in; ++k) {
        if (!used[k] || p.strides[k][d] == 0) continue;
        s += ind + "    o" + std::to_string(k) + " += c * " + std::to_string(p.strides[k][d]) +
             ";\n";
      }
      s += ind + "  }\n";
    }
    s += ind + "}\n";
  }
  for (size_t k = 0; k < n_in; ++k) {
    if (!used[k]) continue;
    const std::string ks = std::to_string(k);
    s += ind + "const float* p" + ks + " = in[" + ks + "] + o" + ks + ";\n";
  }
}

// The reduction over the row into `const float t<red>`, then the post phase writing `out`.
// CPU: the accumulation loop is an OpenMP simd reduction; Max/Min keep a NaN flag beside the
// accumulator because the simd max/min combiners need not propagate NaN.
void emit_row_body(std::string& s, const Region& r, const RegionPlan& p, Dialect d,
                   const std::string& ind) {
  const bool cpp = d == Dialect::kCpp;
  const Op& red = r.ops[static_cast<size_t>(p.red)];
  const bool is_sum = red.kind == OpKind::kReduceSum || red.kind == OpKind::kReduceMean;
  const bool is_max = red.kind == OpKind::kReduceMax;
  const std::string inf = float_literal(std::numeric_limits<float>::infinity(), d);
  if (is_sum) {
    s += ind + "float acc = 0.0f;\n";
    if (cpp) s += "#pragma omp simd reduction(+ : acc)\n";
  } else {
    s += ind + "float acc = " + (is_max ? "-" : "") + inf + ";\n";
    s += ind + "int any_nan = 0;\n";
    if (cpp) {
      s += std::string("#pragma omp simd reduction(") + (is_max ? "max" : "min") +
           " : acc) reduction(| : any_nan)\n";
    }
  }
  s += ind + "for (int64_t j = 0; j < kN; ++j) {\n";
  emit_ops(s, r, p, &p.pre, d, ind + "  ");
  const std::string x = var(red.a);
  if (is_sum) {
    s += ind + "  acc += " + x + ";\n";
  } else {
    s += ind + "  acc = " + x + (is_max ? " > " : " < ") + "acc ? " + x + " : acc;\n";
    s += ind + "  any_nan |= " + x + " != " + x + ";\n";
  }
  s += ind + "}\n";
  const std::string t = var(p.red);
  if (red.kind == OpKind::kReduceMean) {
    s += ind + "const float " + t + " = acc / static_cast<float>(kN);\n";
  } else if (is_sum) {
    s += ind + "const float " + t + " = acc;\n";
  } else {
    s += ind + "const float " + t + " = any_nan ? " +
         float_literal(std::numeric_limits<float>::quiet_NaN(), d) + " : acc;\n";
  }
  s += ind + "(void)" + t + ";\n";
  if (p.row_output) {
    // Validated: the output reads nothing that varies along the row, so no `j` is needed.
    s += ind + "{\n";
    emit_ops(s, r, p, &p.post, d, ind + "  ");
    s += ind + "  out[row] = " + var(r.output) + ";\n" + ind + "}\n";
    return;
  }
  if (cpp) s += "#pragma omp simd\n";
  s += ind + "for (int64_t j = 0; j < kN; ++j) {\n";
  emit_ops(s, r, p, &p.post, d, ind + "  ");
  s += ind + "  out[row * kN + j] = " + var(r.output) + ";\n";
  s += ind + "}\n";
}

}  // namespace

std::string emit_cpp_preamble() {
  return std::string("// Generated by nnfuse codegen.\n#include <cmath>\n#include <cstdint>\n\n") +
         kVectorMath;
}

std::string emit_cpp(const Region& r, const std::string& fn_name) {
  return emit_cpp_preamble() + emit_cpp_function(r, fn_name);
}

std::string emit_cpp_function(const Region& r, const std::string& fn_name) {
  check(r, fn_name, "emit_cpp");
  const RegionPlan p = make_plan(r);
  std::string s;
  s += std::string("extern \"C\" void ") + fn_name +
       "(const float* const* in, float* out, int64_t begin, int64_t end) {\n";
  if (work_items(r) == 0) {
    s += "  (void)in;\n  (void)out;\n  (void)begin;\n  (void)end;\n}\n";
    return s;
  }

  if (p.red >= 0) {
    // One work item is one row.
    s += std::string("  constexpr int64_t kN = ") + std::to_string(p.row_len) + ";\n";
    s += "  for (int64_t row = begin; row < end; ++row) {\n";
    emit_row_pointers(s, r, p, &p.emitted, "    ");
    emit_row_body(s, r, p, Dialect::kCpp, "    ");
    s += "  }\n}\n";
    return s;
  }

  // One work item is one element; [begin, end) is walked a row piece at a time so the inner
  // loop is contiguous.
  s += std::string("  constexpr int64_t kInner = ") + std::to_string(p.row_len) + ";\n";
  s += "  int64_t i = begin;\n";
  s += "  while (i < end) {\n";
  s += "    const int64_t row = i / kInner;\n";
  s += "    const int64_t j0 = i - row * kInner;\n";
  s += "    const int64_t j1 = end - i < kInner - j0 ? j0 + (end - i) : kInner;\n";
  emit_row_pointers(s, r, p, nullptr, "    ");
  s += "    float* po = out + row * kInner;\n";
  s += "#pragma omp simd\n";
  s += "    for (int64_t j = j0; j < j1; ++j) {\n";
  emit_ops(s, r, p, nullptr, Dialect::kCpp, "      ");
  s += std::string("      po[j] = ") + var(r.output) + ";\n";
  s += "    }\n";
  s += "    i += j1 - j0;\n";
  s += "  }\n";
  s += "}\n";
  return s;
}

std::string emit_cuda(const Region& r, const std::string& fn_name) {
  check(r, fn_name, "emit_cuda");
  const RegionPlan p = make_plan(r);
  std::string s;
  s += "// Generated by nnfuse codegen (CUDA).\n";
  // NVRTC has no <cstdint>.
  s += "#ifdef __CUDACC_RTC__\ntypedef long long int64_t;\n#else\n#include <cstdint>\n#endif\n\n";
  s += std::string("extern \"C\" __global__ void ") + fn_name +
       "(const float* const* in, float* out, int64_t n) {\n";
  if (work_items(r) == 0) {
    s += "  (void)in;\n  (void)out;\n  (void)n;\n}\n";
    return s;
  }
  const bool row_region = p.red >= 0;
  s += std::string("  constexpr int64_t ") + (row_region ? "kN" : "kInner") + " = " +
       std::to_string(p.row_len) + ";\n";
  s += "  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;\n";
  s += "  for (int64_t w = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < n;\n"
       "       w += step) {\n";
  if (row_region) {
    s += "    const int64_t row = w;\n";
    emit_row_pointers(s, r, p, &p.emitted, "    ");
    emit_row_body(s, r, p, Dialect::kCuda, "    ");
  } else {
    s += "    const int64_t row = w / kInner;\n";
    s += "    const int64_t j = w - row * kInner;\n";
    s += "    (void)j;\n";
    emit_row_pointers(s, r, p, nullptr, "    ");
    emit_ops(s, r, p, nullptr, Dialect::kCuda, "    ");
    s += std::string("    out[w] = ") + var(r.output) + ";\n";
  }
  s += "  }\n}\n";
  return s;
}

}  // namespace nnfuse::codegen
