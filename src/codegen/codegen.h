// The code generator's core: a fused region described as a small expression DAG over float32
// inputs with static shapes, and emit_cpp, which writes it as one C++ function with the
// broadcasting index math baked in. jit.h builds and loads that source.
//
// Iteration domain: domain_shape (output_shape when empty). Every input numpy-broadcasts to it.
// A region is either
//  - elementwise (no reduction op): out has the domain's shape; a work item is one element;
//  - a row region (exactly one reduction op, over the domain's last axis): a work item is one
//    row of the domain. The ops the reduction depends on run over the row's elements; the
//    reduction combines them into one value per row; the other ops run after it, per element
//    of the row (out has the domain's numel) or once per row (out has numel(domain) / last dim
//    elements: row output, which needs the output op not to read a value that varies along
//    the last axis after the reduction).
//
// The emitted function has the signature
//   extern "C" void fn(const float* const* in, float* out, int64_t begin, int64_t end)
// and computes work items [begin, end) (flat, row-major), reading in[k] as a dense row-major
// tensor of input_shapes[k] and writing out as a dense row-major tensor; the runtime splits
// [0, work_items(r)) across its threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nnfuse::codegen {

// The numeric values are part of the encoded form (encode_ops) that fused models store: never
// renumber, only append.
enum class OpKind : int {
  kInput = 0,  // reads input `input`
  kConst = 1,  // a scalar float constant `value`
  // unary (operand a)
  kRelu = 2,
  kNeg = 3,
  kAbs = 4,
  kExp = 5,
  kLog = 6,
  kSqrt = 7,
  kTanh = 8,
  kSigmoid = 9,
  kErf = 10,
  // binary (operands a, b)
  kAdd = 11,
  kSub = 12,
  kMul = 13,
  kDiv = 14,
  kMax = 15,
  kMin = 16,
  kPow = 17,
  // reductions over the domain's last axis (operand a); at most one per region. Max/Min give NaN
  // when the row holds a NaN (as ONNX); an empty row gives 0, NaN (0 / 0), -inf, +inf.
  kReduceSum = 18,
  kReduceMean = 19,
  kReduceMax = 20,
  kReduceMin = 21,
};

bool is_unary(OpKind k);
bool is_binary(OpKind k);
bool is_reduction(OpKind k);
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
  std::vector<int64_t> domain_shape;  // the iteration domain; empty: output_shape
  std::vector<Op> ops;                // topological order: operands precede their users
  int output = -1;                    // the op whose value is written to `out`

  // Builder helpers: each appends an op and returns its index.
  int add_input(int input_index);
  int add_const(float v);
  int add_unary(OpKind k, int a);
  int add_binary(OpKind k, int a, int b);
  int add_reduction(OpKind k, int a);
};

// Empty when `r` is well formed (ops topologically ordered with operands of the right arity,
// inputs in range, every input shape broadcastable to the domain, output set, at most one
// reduction, output numel as described at the top; a row region needs a domain of rank >= 1),
// else why not.
std::string validate(const Region& r);

int64_t num_elements(const std::vector<int64_t>& shape);

// The region's iteration domain (domain_shape, or output_shape when that is empty).
const std::vector<int64_t>& domain(const Region& r);
// Index of the reduction op, or -1 for an elementwise region.
int reduction_op(const Region& r);
// The number of work items: the output's elements for an elementwise region, the domain's rows
// for a row region.
int64_t work_items(const Region& r);
// Elements of the domain one work item touches (1, or the row length).
int64_t work_per_item(const Region& r);

// The region evaluated directly, in float, with the ONNX ops' semantics: the reference the
// generated code is tested against and what runs when no generated code can be built.
// inputs[k] holds num_elements(input_shapes[k]) floats; out receives num_elements(output_shape).
// Throws std::invalid_argument if validate(r) is not empty.
void evaluate(const Region& r, const std::vector<const float*>& inputs, float* out);

// The encoded form a fused model stores: 4 integers per op (kind, a, b, input) and one float per
// op (value). decode checks what it reads (kinds, operand order, shapes) and throws
// std::invalid_argument naming the problem.
std::vector<int64_t> encode_ops(const Region& r);
std::vector<float> encode_values(const Region& r);
Region decode(const std::vector<int64_t>& ops, const std::vector<float>& values, int output,
              std::vector<std::vector<int64_t>> input_shapes, std::vector<int64_t> output_shape,
              std::vector<int64_t> domain_shape);

// The C++17 source of one function named `fn_name` computing the region (see above).
// Throws std::invalid_argument if validate(r) is not empty or fn_name is not an identifier.
std::string emit_cpp(const Region& r, const std::string& fn_name);
// emit_cpp's source in two parts, preamble + function, so that several regions' functions can
// be compiled as one source with the preamble once (jit_build_many).
std::string emit_cpp_preamble();
std::string emit_cpp_function(const Region& r, const std::string& fn_name);

// The same region as CUDA source: one kernel
//   extern "C" __global__ void fn(const float* const* in, float* out, int64_t n)
// (`in` a device array of device pointers) where each thread computes work items
// blockIdx.x * blockDim.x + threadIdx.x, stepping by gridDim.x * blockDim.x, below n =
// work_items(r). Throws like emit_cpp.
std::string emit_cuda(const Region& r, const std::string& fn_name);

}  // namespace nnfuse::codegen
