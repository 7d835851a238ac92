// The ONNX Runtime export of GroupNorm: the form PyTorch exports it in (Reshape to [N, G, -1],
// InstanceNormalization with unit scale and zero bias, Reshape back, Mul by gamma and Add of
// beta per channel), then the activation. ONNX Runtime's CPU provider has no GroupNorm contrib
// op (its GroupNorm is CUDA's, channels-last), so standard ops are the form that runs anywhere.
#include "ir/builder.h"
#include "ir/error.h"
#include "kernels/ref/fused.h"
#include "onnx/ort_export.h"
#include "ops/norm.h"

namespace nnfuse {

// X + the addend (T, or T x TW + TB, T's SiLU first with t_activation) as [N or 1, C, 1, ...];
// X alone without one.
std::string OrtLowering::with_addend(const Node& n, const Dims& xd) {
  const Value* t = n.num_inputs() > 3 ? n.input(3) : nullptr;
  if (!t) return n.input(0)->name();
  NNFUSE_CHECK(t->shape().fully_known() && !t->shape().static_dims().empty(), n.describe(),
               ": the export needs the addend's static shape");
  const std::string& name = n.name();
  std::string a = t->name();
  if (ops::t_silu(n)) {
    // T * Sigmoid(T): the SiLU as PyTorch exports it.
    const std::string sig = w_.fresh(name + "_t_sigmoid"), silu = w_.fresh(name + "_t_silu");
    w_.node("Sigmoid", {a}, {sig}, "", name + "_t_sigmoid");
    w_.node("Mul", {a, sig}, {silu}, "", name + "_t_silu");
    a = silu;
  }
  if (n.num_inputs() > 4 && n.input(4)) {
    const std::string product = w_.fresh(name + "_addend");
    w_.node("MatMul", {a, n.input(4)->name()}, {product}, "", name + "_addend");
    a = product;
    if (n.num_inputs() > 5 && n.input(5)) {
      const std::string biased = w_.fresh(name + "_addend_bias");
      w_.node("Add", {a, n.input(5)->name()}, {biased}, "", name + "_addend_bias");
      a = biased;
    }
  }
  Dims per_channel(xd.size(), 1);
  per_channel[0] = t->shape().static_dims()[0];
  per_channel[1] = xd[1];
  const std::string shaped = w_.fresh(name + "_addend_shaped");
  const std::string sum = w_.fresh(name + "_input");
  w_.node("Reshape", {a, w_.constant(name + "_addend_shape", shape_tensor(per_channel))}, {shaped},
          "", name + "_addend_shape");
  w_.node("Add", {n.input(0)->name(), shaped}, {sum}, "", name + "_add");
  return sum;
}

void OrtLowering::lower_group_norm(const Node& n) {
  const Value* x = n.input(0);
  NNFUSE_CHECK(x->shape().fully_known() && x->shape().static_dims().size() >= 3 &&
                   n.input(1)->is_constant() && n.input(2)->is_constant(),
               n.describe(), ": the export needs a static input shape and constant gamma and beta");
  const Dims xd = x->shape().static_dims();
  const int64_t g = n.attr_int("num_groups", 0), c = xd[1];
  const std::string& name = n.name();
  const std::string out = n.output(0)->name();
  const bool act = ref::read_activation(n).kind != ref::ActivationKind::kNone;
  const std::string shifted = act ? w_.fresh(out + "_shifted") : out;
  const std::string in = with_addend(n, xd);
  const Tensor& gamma = n.input(1)->constant();
  const Tensor& beta = n.input(2)->constant();
  const float eps = n.attr_float("epsilon", 1e-5f);
  if (g == c) {
    // One channel a group: InstanceNormalization itself, its scale and bias per channel.
    ProtoWriter::set_float(
        w_.node("InstanceNormalization",
                {x->name(), w_.constant(name + "_gamma", gamma), w_.constant(name + "_beta", beta)},
                {shifted}, "", name + (act ? "_instance_norm" : "")),
        "epsilon", eps);
    if (act) write_activation(n, shifted, out, name);
    return;
  }
  Tensor ones(DType::kFloat32, {g});
  for (int64_t i = 0; i < g; ++i) ones.data<float>()[i] = 1.0f;
  auto all = [](const Tensor& t, float v) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (t.data<float>()[i] != v) return false;
    }
    return true;
  };
  const bool scale = !all(gamma, 1.0f), shift = !all(beta, 0.0f);
  const std::string grouped = w_.fresh(out + "_grouped"), normed = w_.fresh(out + "_normed");
  const std::string back = scale || shift ? w_.fresh(out + "_back") : shifted;
  const std::string scaled = scale && shift ? w_.fresh(out + "_scaled") : shifted;
  w_.node("Reshape", {in, w_.constant(name + "_groups", shape_tensor({xd[0], g, -1}))}, {grouped},
          "", name + "_reshape");
  ProtoWriter::set_float(w_.node("InstanceNormalization",
                                 {grouped, w_.constant(name + "_ones", ones),
                                  w_.constant(name + "_zeros", Tensor(DType::kFloat32, {g}))},
                                 {normed}, "", name + "_instance_norm"),
                         "epsilon", eps);
  w_.node("Reshape", {normed, w_.constant(name + "_shape", shape_tensor(xd))}, {back}, "",
          name + "_reshape_back");
  // gamma and beta per channel, [C, 1, ...], where they are not 1 and 0.
  Dims per_channel(xd.size() - 1, 1);
  per_channel[0] = c;
  if (scale) {
    w_.node("Mul", {back, w_.constant(name + "_gamma", gamma.reshaped(per_channel))}, {scaled}, "",
            name + "_gamma");
  }
  if (shift) {
    w_.node("Add", {scale ? scaled : back, w_.constant(name + "_beta", beta.reshaped(per_channel))},
            {shifted}, "", name + "_beta");
  }
  if (act) write_activation(n, shifted, out, name);
}

}  // namespace nnfuse
