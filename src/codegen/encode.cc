// The encoded form of a region that fused models store (codegen.h): per op the integers
// (kind, a, b, input) with -1 where unused, and the float value (0 where unused). decode trusts
// nothing: the numbers come from a model file.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "codegen/codegen.h"

namespace nnfuse::codegen {

namespace {

constexpr size_t kIntsPerOp = 4;

[[noreturn]] void fail(const std::string& why) {
  throw std::invalid_argument(std::string("fused region: ") + why);
}

bool uses_a(OpKind k) { return is_unary(k) || is_binary(k) || is_reduction(k); }

}  // namespace

std::vector<int64_t> encode_ops(const Region& r) {
  std::vector<int64_t> e;
  e.reserve(r.ops.size() * kIntsPerOp);
  for (const Op& op : r.ops) {
    e.push_back(static_cast<int64_t>(op.kind));
    e.push_back(uses_a(op.kind) ? op.a : -1);
    e.push_back(is_binary(op.kind) ? op.b : -1);
    e.push_back(op.kind == OpKind::kInput ? op.input : -1);
  }
  return e;
}

std::vector<float> encode_values(const Region& r) {
  std::vector<float> e;
  e.reserve(r.ops.size());
  for (const Op& op : r.ops) e.push_back(op.kind == OpKind::kConst ? op.value : 0.0f);
  return e;
}

Region decode(const std::vector<int64_t>& ops, const std::vector<float>& values, int output,
              std::vector<std::vector<int64_t>> input_shapes, std::vector<int64_t> output_shape,
              std::vector<int64_t> domain_shape) {
  if (ops.size() % kIntsPerOp != 0) {
    fail(std::string("ops has ") + std::to_string(ops.size()) + " integers, not a multiple of 4");
  }
  const size_t n = ops.size() / kIntsPerOp;
  if (values.size() != n) {
    fail(std::string("values has ") + std::to_string(values.size()) + " floats for " +
         std::to_string(n) + " ops");
  }
  auto dims_ok = [](const std::vector<int64_t>& s) {
    for (int64_t d : s) {
      if (d < 0) return false;
    }
    return true;
  };
  for (size_t k = 0; k < input_shapes.size(); ++k) {
    if (!dims_ok(input_shapes[k])) {
      fail(std::string("input ") + std::to_string(k) + " has a negative dimension");
    }
  }
  if (!dims_ok(output_shape)) fail("the output shape has a negative dimension");
  if (!dims_ok(domain_shape)) fail("the domain shape has a negative dimension");

  Region r;
  r.ops.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t* f = &ops[i * kIntsPerOp];
    const std::string name = std::string("op ") + std::to_string(i);
    if (f[0] < static_cast<int64_t>(OpKind::kInput) ||
        f[0] > static_cast<int64_t>(OpKind::kReduceMin)) {
      fail(name + " has an unknown kind " + std::to_string(f[0]));
    }
    Op op;
    op.kind = static_cast<OpKind>(f[0]);
    const auto index = static_cast<int64_t>(i);
    auto operand = [&](int64_t x, bool used, const char* which) {
      if (!used) {
        if (x != -1) fail(name + " (" + op_name(op.kind) + ") has an unused operand " + which);
        return -1;
      }
      if (x < 0 || x >= index) {
        fail(name + " (" + op_name(op.kind) + ") has operand " + which + " = " + std::to_string(x) +
             ", not an earlier op");
      }
      return static_cast<int>(x);
    };
    op.a = operand(f[1], uses_a(op.kind), "a");
    op.b = operand(f[2], is_binary(op.kind), "b");
    if (op.kind == OpKind::kInput) {
      if (f[3] < 0 || f[3] >= static_cast<int64_t>(input_shapes.size())) {
        fail(name + " reads input " + std::to_string(f[3]) + " of " +
             std::to_string(input_shapes.size()));
      }
      op.input = static_cast<int>(f[3]);
    } else if (f[3] != -1) {
      fail(name + " (" + op_name(op.kind) + ") has an unused input index");
    }
    if (op.kind == OpKind::kConst) {
      op.value = values[i];
    } else if (!(values[i] == 0.0f)) {
      fail(name + " (" + op_name(op.kind) + ") has a value, which only Const ops have");
    }
    r.ops.push_back(op);
  }
  r.input_shapes = std::move(input_shapes);
  r.output_shape = std::move(output_shape);
  r.domain_shape = std::move(domain_shape);
  r.output = output;
  if (std::string why = validate(r); !why.empty()) fail(why);
  return r;
}

}  // namespace nnfuse::codegen
