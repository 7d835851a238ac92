// The ONNX Runtime export of the quantized ops.
#include "kernels/ref/fused.h"
#include "onnx/ort_export.h"
#include "ops/quant.h"

namespace nnfuse {

void OrtLowering::lower_matmul_integer_to_float(const Node& n) {
  // MatMulIntegerToFloat = MatMulInteger, Cast to float, Mul by Mul(A_scale, B_scale), the bias
  // Add and the activation: the ops quantize_dynamic writes, which ORT fuses back itself.
  namespace q = ops::matmul_integer_to_float;
  auto name_of = [](const Value* v) { return v ? v->name() : std::string(); };
  const std::string out = name_of(n.output(0)), stem = n.name();
  std::vector<std::string> ins = {name_of(n.input(q::kA)), name_of(n.input(q::kB)),
                                  name_of(n.input(q::kAZero)), name_of(n.input(q::kBZero))};
  while (ins.back().empty()) ins.pop_back();
  const std::string acc = w_.fresh(out + "_int32"), real = w_.fresh(out + "_float"),
                    scale = w_.fresh(out + "_scale");
  w_.node("MatMulInteger", ins, {acc}, "", stem + "_int32");
  ProtoWriter::set_int(w_.node("Cast", {acc}, {real}, "", stem + "_float"), "to",
                       static_cast<int64_t>(DType::kFloat32));
  w_.node("Mul", {name_of(n.input(q::kAScale)), name_of(n.input(q::kBScale))}, {scale}, "",
          stem + "_scale");
  const bool act = ops::has_activation(n);
  const bool bias = n.input(q::kBias) != nullptr;
  const std::string deq = bias || act ? w_.fresh(out + "_dequantized") : out;
  w_.node("Mul", {real, scale}, {deq}, "", stem + "_dequantized");
  std::string last = deq;
  if (bias) {
    last = act ? w_.fresh(out + "_biased") : out;
    w_.node("Add", {deq, name_of(n.input(q::kBias))}, {last}, "", stem + "_bias");
  }
  if (act) write_activation(n, last, out, stem + "_activation");
}

void OrtLowering::lower_matmul_nbits(const Node& n) {
  // ORT's own op, as the model had it before import: the same inputs and attributes.
  std::vector<std::string> ins;
  for (const Value* v : n.inputs()) ins.push_back(v ? v->name() : std::string());
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  onnx::NodeProto* p = w_.node("MatMulNBits", ins, {n.output(0)->name()}, kOrtDomain, n.name());
  for (const char* a : {"K", "N", "bits", "block_size", "accuracy_level"}) {
    if (n.has_attr(a)) ProtoWriter::set_int(p, a, n.attr_int(a, 0));
  }
}

}  // namespace nnfuse
