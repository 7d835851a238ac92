#include <algorithm>
#include <random>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace conv_test {

using testing::expect_close;
using testing::run_ref1;
using testing::values;

using testing::random_tensor;

// Advances a C-order multi-index over `dims`; false after the last one.
bool next_index(Dims& idx, const Dims& dims) {
  for (size_t j = dims.size(); j-- > 0;) {
    if (++idx[j] < dims[j]) return true;
    idx[j] = 0;
  }
  return false;
}

int64_t flat(const Dims& idx, const Dims& dims) {
  int64_t f = 0;
  for (size_t j = 0; j < dims.size(); ++j) f = f * dims[j] + idx[j];
  return f;
}

struct ConvCase {
  Dims x_shape;
  int64_t m;
  Dims kernel;
  int64_t group = 1;
  Dims strides = {}, dilations = {}, pads = {};  // empty: default
  std::string auto_pad = {};                     // empty: absent
  bool bias = true;
};

// The explicit pads (begin..., end...) a case means, computed here independently.
Dims case_pads(const ConvCase& c) {
  const size_t r = c.kernel.size();
  Dims pads(2 * r, 0);
  if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
    for (size_t j = 0; j < r; ++j) {
      int64_t s = c.strides.empty() ? 1 : c.strides[j];
      int64_t d = c.dilations.empty() ? 1 : c.dilations[j];
      int64_t in = c.x_shape[2 + j];
      int64_t out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + (c.kernel[j] - 1) * d + 1 - in);
      int64_t small = total / 2, big = total - total / 2;
      pads[j] = c.auto_pad == "SAME_UPPER" ? small : big;
      pads[r + j] = c.auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (c.auto_pad != "VALID" && !c.pads.empty()) {
    pads = c.pads;
  }
  return pads;
}

// Direct formula: y[n, m, o] = b[m] + sum over c in m's group and taps k of
// x[n, c, o * s - pad + k * d] * w[m, c', k], taps outside the input skipped.
Tensor naive_conv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  const size_t r = c.kernel.size();
  const Dims pads = case_pads(c);
  Dims in(c.x_shape.begin() + 2, c.x_shape.end()), out(r);
  for (size_t j = 0; j < r; ++j) {
    int64_t s = c.strides.empty() ? 1 : c.strides[j];
    int64_t d = c.dilations.empty() ? 1 : c.dilations[j];
    out[j] = (in[j] + pads[j] + pads[r + j] - (c.kernel[j] - 1) * d - 1) / s + 1;
  }
  const int64_t n_batch = c.x_shape[0], ch = c.x_shape[1], cg = ch / c.group, mg = c.m / c.group;
  Dims y_shape = {n_batch, c.m};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  Tensor y(DType::kFloat32, y_shape);
  Dims w_shape = {c.m, cg};
  w_shape.insert(w_shape.end(), c.kernel.begin(), c.kernel.end());
  Dims x_full = c.x_shape;
  Dims yi(y_shape.size(), 0);
  do {
    const int64_t n = yi[0], m = yi[1], g = m / mg;
    double acc = b.defined() ? b.data<float>()[m] : 0.0;
    for (int64_t cl = 0; cl < cg; ++cl) {
      Dims k(r, 0);
      do {
        Dims xi = {n, g * cg + cl};
        bool inside = true;
        for (size_t j = 0; j < r; ++j) {
          int64_t s = c.strides.empty() ? 1 : c.strides[j];
          int64_t d = c.dilations.empty() ? 1 : c.dilations[j];
          int64_t p = yi[2 + j] * s - pads[j] + k[j] * d;
          inside = inside && p >= 0 && p < in[j];
          xi.push_back(p);
        }
        if (!inside) continue;
        Dims wi = {m, cl};
        wi.insert(wi.end(), k.begin(), k.end());
        acc += static_cast<double>(x.data<float>()[flat(xi, x_full)]) *
               w.data<float>()[flat(wi, w_shape)];
      } while (next_index(k, c.kernel));
    }
    y.data<float>()[flat(yi, y_shape)] = static_cast<float>(acc);
  } while (next_index(yi, y_shape));
  return y;
}

std::map<std::string, Attribute> conv_attrs(const ConvCase& c) {
  std::map<std::string, Attribute> a;
  if (c.group != 1) a["group"] = attr_int(c.group);
  if (!c.strides.empty()) a["strides"] = attr_ints(c.strides);
  if (!c.dilations.empty()) a["dilations"] = attr_ints(c.dilations);
  if (!c.pads.empty()) a["pads"] = attr_ints(c.pads);
  if (!c.auto_pad.empty()) a["auto_pad"] = attr_string(c.auto_pad);
  return a;
}

TEST(RefNnConv, HandComputed3x3) {
  Tensor x = Tensor::from_vector<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w2 = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  EXPECT_EQ(values<float>(run_ref1("Conv", {x, w2})), (std::vector<float>{12, 16, 24, 28}));
  Tensor w3 = Tensor::from_vector<float>({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  Tensor b = Tensor::from_vector<float>({1}, {0.5f});
  Tensor y = run_ref1("Conv", {x, w3, b}, {{"pads", attr_ints({1, 1, 1, 1})}});
  EXPECT_EQ(y.shape(), (Dims{1, 1, 3, 3}));
  EXPECT_EQ(values<float>(y),
            (std::vector<float>{12.5, 21.5, 16.5, 27.5, 45.5, 33.5, 24.5, 39.5, 28.5}));
  // Stride 2 with kernel_shape given explicitly.
  y = run_ref1("Conv", {x, w2},
               {{"strides", attr_ints({2, 2})}, {"kernel_shape", attr_ints({2, 2})}});
  EXPECT_EQ(values<float>(y), (std::vector<float>{12}));
}

TEST(RefNnConv, SweepAgainstDirectFormula) {
  std::vector<ConvCase> cases = {
      {{1, 3, 7, 6}, 4, {3, 3}},
      {{2, 4, 8, 9}, 6, {3, 3}, 2, {1, 1}, {}, {1, 1, 1, 1}},
      {{1, 4, 9, 9}, 4, {3, 3}, 4, {2, 2}, {}, {1, 1, 1, 1}},  // depthwise
      {{1, 3, 8, 7}, 2, {3, 2}, 1, {2, 1}, {1, 2}, {2, 0, 1, 1}},
      {{1, 2, 11, 10}, 3, {3, 3}, 1, {1, 2}, {2, 2}, {}, "SAME_UPPER"},
      {{1, 2, 10, 11}, 3, {2, 4}, 1, {2, 3}, {}, {}, "SAME_UPPER"},
      {{1, 2, 10, 11}, 3, {2, 4}, 1, {2, 3}, {}, {}, "SAME_LOWER"},
      {{1, 2, 9, 8}, 2, {3, 3}, 1, {2, 2}, {2, 1}, {}, "VALID"},
      {{2, 6, 7, 7}, 4, {1, 1}, 2, {2, 2}, {}, {}, "", false},
      {{2, 3, 12}, 5, {3}, 1, {2}, {2}, {1, 2}},           // 1-D
      {{1, 4, 13}, 4, {5}, 4, {1}, {}, {}, "SAME_LOWER"},  // 1-D depthwise
      {{2, 2, 5, 6, 4}, 3, {3, 2, 3}, 1, {1, 2, 1}, {1, 1, 2}, {1, 0, 2, 1, 1, 0}},  // 3-D
      {{1, 4, 6, 5, 5}, 2, {2, 3, 3}, 2, {2, 1, 2}, {}, {}, "SAME_UPPER"},
  };
  uint32_t seed = 1;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(dims_str(c.x_shape) + " kernel " + dims_str(c.kernel) + " " + c.auto_pad);
    Dims w_shape = {c.m, c.x_shape[1] / c.group};
    w_shape.insert(w_shape.end(), c.kernel.begin(), c.kernel.end());
    Tensor x = random_tensor(c.x_shape, seed++);
    Tensor w = random_tensor(w_shape, seed++);
    Tensor b = c.bias ? random_tensor({c.m}, seed++) : Tensor();
    std::vector<Tensor> ins = {x, w};
    if (c.bias) ins.push_back(b);
    expect_close(run_ref1("Conv", ins, conv_attrs(c)), naive_conv(c, x, w, b));
  }
}

TEST(RefNnConv, Float64) {
  Tensor x = Tensor::from_vector<double>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = Tensor::from_vector<double>({1, 1, 2, 2}, {1, 0, 0, -1});
  Tensor y = run_ref1("Conv", {x, w});
  EXPECT_EQ(y.dtype(), DType::kFloat64);
  EXPECT_EQ(values<double>(y), (std::vector<double>{-4, -4, -4, -4}));
}

TEST(RefNnConv, BadShapesThrow) {
  Tensor x = random_tensor({1, 3, 5, 5}, 1);
  // Channel mismatch.
  EXPECT_THROW(run_ref1("Conv", {x, random_tensor({2, 2, 3, 3}, 2)}), Error);
  // Group does not divide the channels.
  EXPECT_THROW(run_ref1("Conv", {x, random_tensor({2, 1, 3, 3}, 2)}, {{"group", attr_int(2)}}),
               Error);
  // Bias of the wrong size.
  EXPECT_THROW(run_ref1("Conv", {x, random_tensor({2, 3, 3, 3}, 2), random_tensor({3}, 3)}), Error);
  // Kernel larger than the input.
  EXPECT_THROW(run_ref1("Conv", {x, random_tensor({2, 3, 7, 7}, 2)}), Error);
  // Weight rank differs from the input's.
  EXPECT_THROW(run_ref1("Conv", {x, random_tensor({2, 3, 3}, 2)}), Error);
  // Bad attribute lengths and values.
  EXPECT_THROW(run_ref1("Conv", {x, random_tensor({2, 3, 3, 3}, 2)}, {{"pads", attr_ints({1})}}),
               Error);
  EXPECT_THROW(
      run_ref1("Conv", {x, random_tensor({2, 3, 3, 3}, 2)}, {{"strides", attr_ints({0, 1})}}),
      Error);
  // kernel_shape contradicting the weight.
  EXPECT_THROW(
      run_ref1("Conv", {x, random_tensor({2, 3, 3, 3}, 2)}, {{"kernel_shape", attr_ints({2, 2})}}),
      Error);
  // Weight dtype differs from the input's.
  Tensor wd(DType::kFloat64, {2, 3, 3, 3});
  EXPECT_THROW(run_ref1("Conv", {x, wd}), Error);
}

TEST(RefNnConv, UnsupportedDtypeHasReason) {
  Tensor x(DType::kInt32, {1, 1, 3, 3}), w(DType::kInt32, {1, 1, 1, 1});
  try {
    run_ref1("Conv", {x, w});
    FAIL() << "expected an unsupported error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
  Tensor xf = random_tensor({1, 1, 3, 3}, 1), wf = random_tensor({1, 1, 1, 1}, 2);
  EXPECT_THROW(run_ref1("Conv", {xf, wf}, {{"auto_pad", attr_string("SAME_MIDDLE")}}), Error);
}

// ---- ConvTranspose ----

struct ConvTCase {
  Dims x_shape;
  int64_t m;  // output channels
  Dims kernel;
  int64_t group = 1;
  Dims strides = {}, dilations = {}, pads = {}, output_padding = {}, output_shape = {};
  std::string auto_pad = {};
};

// Scatter formula: every x[n, c, i] * w[c, m', k] lands on y[n, g * M/group + m',
// i * s - pad_begin + k * d] when that is inside the output. Output size and pads are
// computed here from the spec's equations.
Tensor naive_conv_transpose(const ConvTCase& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  const size_t r = c.kernel.size();
  Dims in(c.x_shape.begin() + 2, c.x_shape.end()), out(r), pb(r, 0);
  for (size_t j = 0; j < r; ++j) {
    int64_t s = c.strides.empty() ? 1 : c.strides[j];
    int64_t d = c.dilations.empty() ? 1 : c.dilations[j];
    int64_t op = c.output_padding.empty() ? 0 : c.output_padding[j];
    int64_t full = s * (in[j] - 1) + op + (c.kernel[j] - 1) * d + 1;
    bool same = c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER";
    if (!c.output_shape.empty() || same) {
      out[j] = c.output_shape.empty() ? in[j] * s : c.output_shape[j];
      int64_t total = full - out[j];
      // Python's floor division, as the ONNX reference implementation splits the padding.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pb[j] = c.auto_pad == "SAME_UPPER" ? half : total - half;
    } else {
      pb[j] = c.pads.empty() ? 0 : c.pads[j];
      out[j] = full - pb[j] - (c.pads.empty() ? 0 : c.pads[r + j]);
    }
  }
  const int64_t ch = c.x_shape[1], cg = ch / c.group, mg = c.m / c.group;
  Dims y_shape = {c.x_shape[0], c.m};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  std::vector<double> acc(static_cast<size_t>(checked_numel(y_shape)), 0.0);
  Dims w_shape = {ch, mg};
  w_shape.insert(w_shape.end(), c.kernel.begin(), c.kernel.end());
  Dims xi(c.x_shape.size(), 0);
  do {
    const int64_t g = xi[1] / cg;
    for (int64_t ml = 0; ml < mg; ++ml) {
      Dims k(r, 0);
      do {
        Dims yi = {xi[0], g * mg + ml};
        bool inside = true;
        for (size_t j = 0; j < r; ++j) {
          int64_t s = c.strides.empty() ? 1 : c.strides[j];
          int64_t d = c.dilations.empty() ? 1 : c.dilations[j];
          int64_t o = xi[2 + j] * s - pb[j] + k[j] * d;
          inside = inside && o >= 0 && o < out[j];
          yi.push_back(o);
        }
        if (!inside) continue;
        Dims wi = {xi[1], ml};
        wi.insert(wi.end(), k.begin(), k.end());
        acc[flat(yi, y_shape)] += static_cast<double>(x.data<float>()[flat(xi, c.x_shape)]) *
                                  w.data<float>()[flat(wi, w_shape)];
      } while (next_index(k, c.kernel));
    }
  } while (next_index(xi, c.x_shape));
  Tensor y(DType::kFloat32, y_shape);
  const int64_t plane = checked_numel(out);
  for (size_t i = 0; i < acc.size(); ++i) {
    int64_t m = (static_cast<int64_t>(i) / plane) % c.m;
    y.data<float>()[i] = static_cast<float>(acc[i] + (b.defined() ? b.data<float>()[m] : 0.0f));
  }
  return y;
}

TEST(RefNnConvTranspose, HandComputed) {
  Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  EXPECT_EQ(values<float>(run_ref1("ConvTranspose", {x, w})),
            (std::vector<float>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
  Tensor y = run_ref1("ConvTranspose", {x, w}, {{"strides", attr_ints({2, 2})}});
  EXPECT_EQ(y.shape(), (Dims{1, 1, 4, 4}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(RefNnConvTranspose, SweepAgainstScatterFormula) {
  std::vector<ConvTCase> cases = {
      {{1, 2, 4, 5}, 3, {3, 3}},
      {{2, 4, 3, 4}, 6, {3, 3}, 2, {2, 2}, {}, {1, 1, 1, 1}, {1, 1}},
      {{1, 3, 4, 4}, 3, {3, 3}, 3, {2, 1}, {2, 1}, {0, 1, 2, 0}},  // depthwise
      {{1, 2, 5}, 2, {4}, 1, {3}, {}, {1, 2}, {2}},                // 1-D, output_padding
      {{1, 2, 3, 4}, 2, {3, 3}, 1, {2, 2}, {}, {}, {}, {7, 8}},    // output_shape
      {{1, 2, 3, 4}, 2, {3, 3}, 1, {2, 2}, {}, {}, {}, {6, 9}, "SAME_UPPER"},
      {{1, 2, 3, 4}, 2, {3, 2}, 1, {2, 3}, {}, {}, {}, {}, "SAME_UPPER"},
      {{1, 2, 3, 4}, 2, {3, 2}, 1, {2, 3}, {}, {}, {}, {}, "SAME_LOWER"},
      {{1, 2, 2, 3, 2}, 4, {2, 3, 2}, 2, {2, 1, 2}, {1, 2, 1}, {0, 1, 0, 1, 0, 0}},  // 3-D
  };
  uint32_t seed = 100;
  for (const ConvTCase& c : cases) {
    SCOPED_TRACE(dims_str(c.x_shape) + " kernel " + dims_str(c.kernel) + " " + c.auto_pad);
    Dims w_shape = {c.x_shape[1], c.m / c.group};
    w_shape.insert(w_shape.end(), c.kernel.begin(), c.kernel.end());
    Tensor x = random_tensor(c.x_shape, seed++);
    Tensor w = random_tensor(w_shape, seed++);
    Tensor b = random_tensor({c.m}, seed++);
    std::map<std::string, Attribute> a;
    if (c.group != 1) a["group"] = attr_int(c.group);
    if (!c.strides.empty()) a["strides"] = attr_ints(c.strides);
    if (!c.dilations.empty()) a["dilations"] = attr_ints(c.dilations);
    if (!c.pads.empty()) a["pads"] = attr_ints(c.pads);
    if (!c.output_padding.empty()) a["output_padding"] = attr_ints(c.output_padding);
    if (!c.output_shape.empty()) a["output_shape"] = attr_ints(c.output_shape);
    if (!c.auto_pad.empty()) a["auto_pad"] = attr_string(c.auto_pad);
    expect_close(run_ref1("ConvTranspose", {x, w, b}, a), naive_conv_transpose(c, x, w, b));
  }
}

TEST(RefNnConvTranspose, BadShapesThrow) {
  Tensor x = random_tensor({1, 3, 4, 4}, 1);
  EXPECT_THROW(run_ref1("ConvTranspose", {x, random_tensor({2, 2, 3, 3}, 2)}), Error);
  EXPECT_THROW(
      run_ref1("ConvTranspose", {x, random_tensor({3, 1, 3, 3}, 2)}, {{"group", attr_int(2)}}),
      Error);
  EXPECT_THROW(run_ref1("ConvTranspose", {x, random_tensor({3, 2, 3, 3}, 2)},
                        {{"pads", attr_ints({5, 5, 5, 5})}}),
               Error);
}

}  // namespace conv_test
}  // namespace nnfuse
