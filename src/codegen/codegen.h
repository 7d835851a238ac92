// The code generator's core: a fused elementwise region described as a small expression DAG
// over float32 inputs with static shapes, and emit_cpp, which writes it as one C++ function
// with the broadcasting index math baked in. jit.h builds and loads that source.
//
// The emitted function has the signature
//   extern "C" void fn(const float* const* in, float* out, int64_t begin, int64_t end)
// and computes out[i] for i in [begin, end) (flat, row-major indices of the output), reading
// in[k] as a dense row-major tensor of input_shapes[k] that numpy-broadcasts to output_shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nnfuse::codegen {

enum class OpKind {
  kInput,  // reads input `input`
  kConst,  // a scalar float constant `value`
  // unary (operand a)
  kRelu,
  kNeg,
  kAbs,
  kExp,
  kLog,
  kSqrt,
  kTanh,
  kSigmoid,
  kErf,
  // binary (operands a, b)
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,
  kPow,
};

bool is_unary(OpKind k);
bool is_binary(OpKind k);
const char* op_name(OpKind k);

// One node of the region; its result is referred to by its index in Region::ops.
struct Op {
  OpKind kind = OpKind::kConst;
  int a = -1;       // first operand (op index), unary and binary ops
  int b = -1;       // second operand (op index), binary ops
  int input = -1;   // kInput: index into Region::input_shapes
  float value = 0;  // kConst
};

struct Region {
  std::vector<std::vector<int64_t>> input_shapes;  // static shapes of the float32 inputs
  std::vector<int64_t> output_shape;
  std::vector<Op> ops;  // topological order: operands precede their users
  int output = -1;      // the op whose value is written to `out`

  // Builder helpers: each appends an op and returns its index.
  int add_input(int input_index);
  int add_const(float v);
  int add_unary(OpKind k, int a);
  int add_binary(OpKind k, int a, int b);
};

// Empty when `r` is well formed (ops topologically ordered with operands of the right arity,
// inputs in range, every input shape broadcastable to output_shape, output set), else why not.
std::string validate(const Region& r);

int64_t num_elements(const std::vector<int64_t>& shape);

// The C++17 source of one function named `fn_name` computing the region (see above).
// Throws std::invalid_argument if validate(r) is not empty or fn_name is not an identifier.
std::string emit_cpp(const Region& r, const std::string& fn_name);

}  // namespace nnfuse::codegen
