// The random-graph generator's quantized patterns (random_graph_gen.h): activations rounded to
// 8-bit grids of random scales and zero points (uint8 and int8, symmetric and not), weights held
// as int8 codes with one scale per tensor or per output channel, in the forms ONNX tools write:
//   QDQ        DequantizeLinear -> Conv / MatMul (+ bias, + activation) -> QuantizeLinear ->
//              DequantizeLinear, residual sums and concats of dequantized tensors, pass-through
//              ops (MaxPool, Transpose, Reshape, Flatten) between a pair of one grid;
//   QOperator  QLinearConv, QLinearMatMul (int32 bias, per-channel weight scales);
//   dynamic    DynamicQuantizeLinear -> MatMulInteger / ConvInteger -> Cast -> Mul (+ bias).
// The grids are drawn for values of order one, so some values saturate, as calibrated models'
// outliers do.
#include "random_graph_gen.h"

namespace nnfuse::fuzz::detail {

namespace {

// Scales of no simple binary form, so a division and a product by the reciprocal differ.
const std::vector<float> kActivationScales = {0.0078f, 0.0131f, 0.0197f, 0.0313f, 0.0517f};

}  // namespace

Gen::Grid Gen::grid(bool u8) {
  const float s = kActivationScales[pick(kActivationScales.size())];
  Value* zero;
  if (u8) {
    const std::vector<int> zeros = {128, 0, 255, 101};
    const int z = zeros[pick(zeros.size())];
    zero = constant(Tensor::scalar<uint8_t>(static_cast<uint8_t>(z)));
  } else {
    const std::vector<int> zeros = {0, -128, 17, -3};
    const int z = zeros[pick(zeros.size())];
    zero = constant(Tensor::scalar<int8_t>(static_cast<int8_t>(z)));
  }
  return {scalar(s), zero, s};
}

Value* Gen::quantize(Value* x, const Grid& g) {
  return make("QuantizeLinear", {x, g.scale, g.zero})[0];
}

Value* Gen::dequantize(Value* q, const Grid& g) {
  return node("DequantizeLinear", {q, g.scale, g.zero});
}

Value* Gen::fake_quant(Value* x) {
  const Grid g = grid(coin());
  return dequantize(quantize(x, g), g);
}

// int8 codes of dims d in [-127, 127] with zero points 0 (symmetric, as ONNX Runtime's
// quantizers write weights); one scale per index of `axis` when per_axis, else one. The
// scales go to *scales, the scale and zero point values to *scale and *zero.
Value* Gen::int8_weights(const Dims& d, int axis, bool per_axis, std::vector<float>* scales,
                         Value** scale, Value** zero) {
  Tensor w(DType::kInt8, d);
  uint32_t s = choose_(0xffffffu) * 2654435761u + 1;
  for (int64_t i = 0; i < w.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    w.data<int8_t>()[i] = static_cast<int8_t>(static_cast<int>((s >> 8) % 255) - 127);
  }
  const int64_t n = per_axis ? d[static_cast<size_t>(axis)] : 1;
  scales->assign(static_cast<size_t>(n), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    (*scales)[static_cast<size_t>(i)] = 0.002f + 0.006f * static_cast<float>(s >> 8) / 16777216.0f;
  }
  if (per_axis) {
    *scale = constant(Tensor::from_vector<float>({n}, *scales));
    *zero = constant(Tensor::from_vector<int8_t>({n}, std::vector<int8_t>(n, 0)));
  } else {
    *scale = scalar((*scales)[0]);
    *zero = constant(Tensor::scalar<int8_t>(0));
  }
  return constant(std::move(w));
}

// DQ(Q(x)) -> Conv(DQ(int8 W), bias) [-> Relu] -> Q -> DQ [-> + x, Q, DQ]: ONNX Runtime's QDQ
// conv. The bias is an int32 DequantizeLinear of scale x_scale * w_scale half the time.
Value* Gen::qdq_conv(Value* x) {
  const Dims d = dims(x);
  const ConvGeometry cg = conv_geometry(d);
  const Grid gx = grid(coin());
  Value* xd = dequantize(quantize(x, gx), gx);
  std::vector<float> ws;
  Value *wscale, *wzero;
  const bool per_axis = coin();
  Value* wq =
      int8_weights({cg.out, d[1] / cg.group, cg.k, cg.k}, 0, per_axis, &ws, &wscale, &wzero);
  std::map<std::string, Attribute> axis0 = {{"axis", attr_int(0)}};
  std::vector<Value*> ins = {xd, node("DequantizeLinear", {wq, wscale, wzero},
                                      per_axis ? axis0 : std::map<std::string, Attribute>{})};
  switch (pick(3)) {
    case 0: {
      std::vector<int32_t> codes(static_cast<size_t>(cg.out));
      std::vector<float> bs(static_cast<size_t>(cg.out));
      for (int64_t i = 0; i < cg.out; ++i) {
        codes[static_cast<size_t>(i)] = static_cast<int32_t>(pick(2001)) - 1000;
        bs[static_cast<size_t>(i)] = gx.s * ws[per_axis ? static_cast<size_t>(i) : 0];
      }
      Value* bq = constant(Tensor::from_vector<int32_t>({cg.out}, codes));
      Value* bscale = constant(Tensor::from_vector<float>({cg.out}, bs));
      Value* bzero =
          constant(Tensor::from_vector<int32_t>({cg.out}, std::vector<int32_t>(cg.out, 0)));
      ins.push_back(node("DequantizeLinear", {bq, bscale, bzero}, axis0));
      break;
    }
    case 1:
      ins.push_back(weight({cg.out}));
      break;
    default:
      break;
  }
  Value* y = node("Conv", ins, conv_attrs(cg));
  if (coin()) y = coin() ? unary("Relu", y) : activation(y);
  y = fake_quant(y);
  if (coin() && dims(y) == d) y = fake_quant(node("Add", {y, xd}));
  return y;
}

// DQ(Q(x)) -> MatMul(DQ(int8 W)) [+ bias] [-> activation] -> Q -> DQ, W per column or per tensor.
Value* Gen::qdq_dense(Value* x) {
  const int64_t k = dims(x).back();
  const int64_t n = std::vector<int64_t>{1, 3, 8, 16, 17}[pick(5)];
  Value* xd = fake_quant(x);
  std::vector<float> ws;
  Value *wscale, *wzero;
  const bool per_axis = coin();
  Value* wq = int8_weights({k, n}, 1, per_axis, &ws, &wscale, &wzero);
  std::map<std::string, Attribute> attrs;
  if (per_axis) attrs["axis"] = attr_int(1);
  Value* y = node("MatMul", {xd, node("DequantizeLinear", {wq, wscale, wzero}, attrs)});
  if (coin()) y = node("Add", {y, weight({n})});
  if (coin()) y = activation(y);
  return fake_quant(y);
}

// A residual sum (or product) of two dequantized tensors, quantized again.
Value* Gen::qdq_binary(Value* x) {
  Value* other = partner_same(x);
  return fake_quant(node(coin() ? "Add" : "Mul", {fake_quant(x), fake_quant(other)}));
}

// A concat of two dequantized tensors, on one grid half the time.
Value* Gen::qdq_concat(Value* x) {
  const int64_t axis = static_cast<int64_t>(pick(dims(x).size()));
  Value* other = partner_same(x);
  Value *a, *b;
  if (coin()) {
    const Grid g = grid(coin());
    a = dequantize(quantize(x, g), g);
    b = dequantize(quantize(other, g), g);
  } else {
    a = fake_quant(x);
    b = fake_quant(other);
  }
  return fake_quant(node("Concat", {a, b}, {{"axis", attr_int(axis)}}));
}

// An op that moves values without changing them, between a DQ and a Q of one grid.
Value* Gen::qdq_pass_through(Value* x) {
  const Dims d = dims(x);
  const Grid g = grid(coin());
  Value* xd = dequantize(quantize(x, g), g);
  Value* y;
  switch (d.size() == 4 ? pick(4) : 1 + pick(3)) {
    case 0: {
      const int64_t k = coin() ? 2 : 3, s = coin() ? 1 : 2;
      if (d[2] < k || d[3] < k) throw Rejected{};
      y = node("MaxPool", {xd},
               {{"kernel_shape", attr_ints({k, k})}, {"strides", attr_ints({s, s})}});
      break;
    }
    case 1: {
      std::vector<int64_t> perm(d.size());
      std::iota(perm.begin(), perm.end(), 0);
      for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[pick(i)]);
      y = node("Transpose", {xd}, {{"perm", attr_ints(perm)}});
      break;
    }
    case 2:
      y = node("Reshape", {xd, ints({-1, d.back()})});
      break;
    default:
      y = node("Flatten", {xd}, {{"axis", attr_int(1)}});
      break;
  }
  return dequantize(quantize(y, g), g);
}

// Cast<float>(sum) * (a_scale * w_scale): an integer product back to float. The cast sum (up to
// 1e5) and the scales' product (about 1e-4) stay out of the pool of values later steps take, which
// holds values of order one: attention over the raw sums made scores of 1e9, whose Softmax picked
// its maximum by rounding alone (seed 97234).
Value* Gen::dequantize_sum(Value* sum, Value* a_scale, Value* w_scale) {
  Value* f = make("Cast", {sum}, {{"to", attr_int(static_cast<int64_t>(DType::kFloat32))}})[0];
  return node("Mul", {f, make("Mul", {a_scale, w_scale})[0]});
}

// DynamicQuantizeLinear -> MatMulInteger(int8 or uint8 B) -> Cast -> Mul(a_scale * B_scale)
// [+ bias] [-> activation]: ONNX Runtime's quantize_dynamic dense layer.
Value* Gen::dynamic_dense(Value* x) {
  const int64_t k = dims(x).back();
  const int64_t n = std::vector<int64_t>{1, 3, 8, 16, 17}[pick(5)];
  const std::vector<Value*> q = make("DynamicQuantizeLinear", {x}, {}, 3);
  std::vector<float> ws;
  Value *wscale, *wzero;
  const bool per_axis = coin();
  Value* wq = int8_weights({k, n}, 1, per_axis, &ws, &wscale, &wzero);
  const std::vector<Value*> acc = make("MatMulInteger", {q[0], wq, q[2], wzero});
  Value* y = dequantize_sum(acc[0], q[1], wscale);
  if (coin()) y = node("Add", {y, weight({n})});
  if (coin()) y = activation(y);
  return y;
}

// DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul(a_scale * w_scale).
Value* Gen::dynamic_conv(Value* x) {
  const Dims d = dims(x);
  const ConvGeometry cg = conv_geometry(d);
  const std::vector<Value*> q = make("DynamicQuantizeLinear", {x}, {}, 3);
  std::vector<float> ws;
  Value *wscale, *wzero;
  Value* wq = int8_weights({cg.out, d[1] / cg.group, cg.k, cg.k}, 0, false, &ws, &wscale, &wzero);
  const std::vector<Value*> acc = make("ConvInteger", {q[0], wq, q[2], wzero}, conv_attrs(cg));
  Value* y = dequantize_sum(acc[0], q[1], wscale);
  return coin() ? unary("Relu", y) : y;
}

// Q(x) -> QLinearConv(int8 W, int32 bias) -> DQ: the QOperator form.
Value* Gen::qlinear_conv(Value* x) {
  const Dims d = dims(x);
  const ConvGeometry cg = conv_geometry(d);
  const Grid gx = grid(coin()), gy = grid(coin());
  std::vector<float> ws;
  Value *wscale, *wzero;
  const bool per_axis = coin();
  Value* wq =
      int8_weights({cg.out, d[1] / cg.group, cg.k, cg.k}, 0, per_axis, &ws, &wscale, &wzero);
  std::vector<Value*> ins = {quantize(x, gx), gx.scale, gx.zero,  wq,
                             wscale,          wzero,    gy.scale, gy.zero};
  if (coin()) {
    std::vector<int32_t> codes(static_cast<size_t>(cg.out));
    for (auto& c : codes) c = static_cast<int32_t>(pick(2001)) - 1000;
    ins.push_back(constant(Tensor::from_vector<int32_t>({cg.out}, codes)));
  }
  return dequantize(make("QLinearConv", ins, conv_attrs(cg))[0], gy);
}

// Q(x) -> QLinearMatMul(int8 B, per column or per tensor) -> DQ.
Value* Gen::qlinear_matmul(Value* x) {
  const int64_t k = dims(x).back();
  const int64_t n = std::vector<int64_t>{1, 3, 8, 16, 17}[pick(5)];
  const Grid gx = grid(coin()), gy = grid(coin());
  std::vector<float> ws;
  Value *wscale, *wzero;
  Value* wq = int8_weights({k, n}, 1, coin(), &ws, &wscale, &wzero);
  return dequantize(make("QLinearMatMul", {quantize(x, gx), gx.scale, gx.zero, wq, wscale, wzero,
                                           gy.scale, gy.zero})[0],
                    gy);
}

void Gen::quantized_step(Value* x) {
  const int64_t r = rank(x);
  switch (pick(9)) {
    case 0:
      if (r == 4) {
        qdq_conv(x);
      } else {
        qdq_dense(x);
      }
      break;
    case 1:
      qdq_dense(x);
      break;
    case 2:
      qdq_binary(x);
      break;
    case 3:
      qdq_concat(x);
      break;
    case 4:
      qdq_pass_through(x);
      break;
    case 5:
      dynamic_dense(x);
      break;
    case 6:
      if (r == 4) {
        dynamic_conv(x);
      } else {
        dynamic_dense(x);
      }
      break;
    case 7:
      if (r == 4) {
        qlinear_conv(x);
      } else {
        qlinear_matmul(x);
      }
      break;
    default:
      if (r == 4) {
        qdq_conv(x);
      } else {
        qlinear_matmul(x);
      }
      break;
  }
}

}  // namespace nnfuse::fuzz::detail
