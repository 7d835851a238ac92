// Tests of RNN, GRU and LSTM: hand-computed one-unit cases, direction and layout identities,
// sequence_lens, activations and shape errors.
#include <cmath>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace rnn_test {

using testing::expect_close;
using testing::random_tensor;
using testing::run_ref;
using testing::values;
using F = std::vector<float>;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

Attribute attr_strings(std::vector<std::string> v) {
  Attribute a;
  a.kind = Attribute::Kind::kStrings;
  a.strings = std::move(v);
  return a;
}

Tensor t(Dims shape, F v) { return Tensor::from_vector<float>(std::move(shape), v); }

// `x` reversed along axis 0.
Tensor reverse0(const Tensor& x) {
  Tensor y(x.dtype(), x.shape());
  const int64_t n = x.dim(0), block = x.numel() / n;
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < block; ++j) py[(n - 1 - i) * block + j] = px[i * block + j];
  }
  return y;
}

// a and b concatenated along axis 0.
Tensor concat0(const Tensor& a, const Tensor& b) {
  Dims shape = a.shape();
  shape[0] += b.dim(0);
  std::vector<float> v = values<float>(a);
  for (float f : values<float>(b)) v.push_back(f);
  return Tensor::from_vector<float>(shape, v);
}

// x[i0:i1, j0:j1, ...]: a block of the first two axes.
Tensor block01(const Tensor& x, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  Dims shape = x.shape();
  const int64_t inner = x.numel() / (shape[0] * shape[1]);
  const int64_t cols = shape[1];
  shape[0] = i1 - i0;
  shape[1] = j1 - j0;
  std::vector<float> v;
  const float* px = x.data<float>();
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) {
      for (int64_t k = 0; k < inner; ++k) v.push_back(px[(i * cols + j) * inner + k]);
    }
  }
  return Tensor::from_vector<float>(shape, v);
}

// Y [seq, nd, batch, hidden] -> Y[:, d:d+1].
Tensor y_direction(const Tensor& y, int64_t d) {
  const int64_t seq = y.dim(0), nd = y.dim(1), inner = y.dim(2) * y.dim(3);
  std::vector<float> v;
  const float* p = y.data<float>();
  for (int64_t s = 0; s < seq; ++s) {
    for (int64_t k = 0; k < inner; ++k) v.push_back(p[(s * nd + d) * inner + k]);
  }
  return Tensor::from_vector<float>({seq, 1, y.dim(2), y.dim(3)}, v);
}

// [a, b, c] -> [b, a, c] (layout 0 <-> layout 1 for X and the states).
Tensor swap01(const Tensor& x) {
  const int64_t a = x.dim(0), b = x.dim(1), c = x.numel() / (a * b);
  Dims shape = x.shape();
  std::swap(shape[0], shape[1]);
  Tensor y(x.dtype(), shape);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      for (int64_t k = 0; k < c; ++k) py[(j * a + i) * c + k] = px[(i * b + j) * c + k];
    }
  }
  return y;
}

int64_t gates(const std::string& op) { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
size_t outputs(const std::string& op) { return op == "LSTM" ? 3 : 2; }

// Random W, R, B for `op` with `nd` directions, hidden 3, input 2.
struct Weights {
  Tensor w, r, b;
};
Weights random_weights(const std::string& op, int64_t nd, uint32_t seed) {
  const int64_t g = gates(op), h = 3, in = 2;
  return {random_tensor({nd, g * h, in}, seed), random_tensor({nd, g * h, h}, seed + 1),
          random_tensor({nd, 2 * g * h}, seed + 2)};
}

TEST(RefRnn, LstmOneUnit) {
  // Only the cell gate sees the input and the state, so i = o = f = Sigmoid(0) = 1/2.
  Tensor x = t({2, 1, 1}, {1, 2});
  Tensor w = t({1, 4, 1}, {0, 0, 0, 1});  // [i o f c]
  Tensor r = t({1, 4, 1}, {0, 0, 0, 1});
  auto out = run_ref("LSTM", {x, w, r}, {{"hidden_size", attr_int(1)}}, 3);
  const double c1 = 0.5 * std::tanh(1.0), h1 = 0.5 * std::tanh(c1);
  const double c2 = 0.5 * c1 + 0.5 * std::tanh(2 + h1), h2 = 0.5 * std::tanh(c2);
  EXPECT_EQ(out[0].shape(), (Dims{2, 1, 1, 1}));
  EXPECT_NEAR(values<float>(out[0])[0], h1, 1e-6);
  EXPECT_NEAR(values<float>(out[0])[1], h2, 1e-6);
  EXPECT_EQ(out[1].shape(), (Dims{1, 1, 1}));
  EXPECT_NEAR(values<float>(out[1])[0], h2, 1e-6);
  EXPECT_NEAR(values<float>(out[2])[0], c2, 1e-6);
}

TEST(RefRnn, LstmPeepholesAndInputForget) {
  Tensor x = t({1, 1, 1}, {1});
  Tensor w = t({1, 4, 1}, {0, 0, 0, 1});
  Tensor r = t({1, 4, 1}, {0, 0, 0, 0});
  Tensor b = t({1, 8}, {0, 0, 0, 0, 0, 0, 0, 0});
  Tensor c0 = t({1, 1, 1}, {2});
  Tensor p = t({1, 3}, {1, 1, 5});  // [i o f]; f's is unused with input_forget
  auto out = run_ref("LSTM", {x, w, r, b, Tensor(), Tensor(), c0, p},
                     {{"hidden_size", attr_int(1)}, {"input_forget", attr_int(1)}}, 3);
  const double i = sigmoid(2), f = 1 - i, c = f * 2 + i * std::tanh(1.0);
  const double o = sigmoid(c), h = o * std::tanh(c);
  EXPECT_NEAR(values<float>(out[1])[0], h, 1e-6);
  EXPECT_NEAR(values<float>(out[2])[0], c, 1e-6);
}

TEST(RefRnn, GruOneUnitBothResetPlacements) {
  // z = r = 1/2; only the hidden gate sees the input and the state, with Rbh = 1.
  Tensor x = t({2, 1, 1}, {1, 2});
  Tensor w = t({1, 3, 1}, {0, 0, 1});  // [z r h]
  Tensor r = t({1, 3, 1}, {0, 0, 1});
  Tensor b = t({1, 6}, {0, 0, 0, 0, 0, 1});
  auto before = run_ref("GRU", {x, w, r, b}, {{"hidden_size", attr_int(1)}}, 2);
  {
    const double h1 = 0.5 * std::tanh(1 + 0.5 * 0 + 1);
    const double h2 = 0.5 * std::tanh(2 + 0.5 * h1 + 1) + 0.5 * h1;
    EXPECT_NEAR(values<float>(before[0])[0], h1, 1e-6);
    EXPECT_NEAR(values<float>(before[0])[1], h2, 1e-6);
    EXPECT_NEAR(values<float>(before[1])[0], h2, 1e-6);
  }
  auto after = run_ref("GRU", {x, w, r, b},
                       {{"hidden_size", attr_int(1)}, {"linear_before_reset", attr_int(1)}}, 2);
  {
    const double h1 = 0.5 * std::tanh(1 + 0.5 * (0 + 1));
    const double h2 = 0.5 * std::tanh(2 + 0.5 * (h1 + 1)) + 0.5 * h1;
    EXPECT_NEAR(values<float>(after[0])[0], h1, 1e-6);
    EXPECT_NEAR(values<float>(after[1])[0], h2, 1e-6);
  }
}

TEST(RefRnn, RnnOneUnitActivationsAndClip) {
  Tensor w = t({1, 1, 1}, {1});
  Tensor r = t({1, 1, 1}, {0.5f});
  auto tanh_out = run_ref("RNN", {t({2, 1, 1}, {1, 2}), w, r}, {}, 2);
  const double h1 = std::tanh(1.0);
  EXPECT_NEAR(values<float>(tanh_out[0])[1], std::tanh(2 + 0.5 * h1), 1e-6);

  Tensor x = t({2, 1, 1}, {1, -3});
  auto relu = run_ref("RNN", {x, w, r}, {{"activations", attr_strings({"Relu"})}}, 2);
  EXPECT_EQ(values<float>(relu[0]), (F{1, 0}));
  auto leaky = run_ref(
      "RNN", {x, w, r},
      {{"activations", attr_strings({"LeakyRelu"})}, {"activation_alpha", attr_floats({0.1f})}}, 2);
  EXPECT_NEAR(values<float>(leaky[0])[1], 0.1 * (-3 + 0.5), 1e-6);
  auto clipped = run_ref("RNN", {t({2, 1, 1}, {1, 2}), w, r}, {{"clip", attr_float(0.5f)}}, 2);
  EXPECT_NEAR(values<float>(clipped[0])[0], std::tanh(0.5), 1e-6);
  EXPECT_NEAR(values<float>(clipped[0])[1], std::tanh(0.5), 1e-6);
}

TEST(RefRnn, Float64) {
  Tensor x = Tensor::from_vector<double>({2, 1, 1}, {1, 2});
  Tensor w = Tensor::from_vector<double>({1, 1, 1}, {1});
  Tensor r = Tensor::from_vector<double>({1, 1, 1}, {0.5});
  auto out = run_ref("RNN", {x, w, r}, {}, 2);
  ASSERT_EQ(out[1].dtype(), DType::kFloat64);
  EXPECT_NEAR(values<double>(out[1])[0], std::tanh(2 + 0.5 * std::tanh(1.0)), 1e-12);
}

// Reverse on X equals forward on X reversed in time (Y reversed back); bidirectional stacks
// the two.
TEST(RefRnn, ReverseIsForwardOnReversedSequence) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    SCOPED_TRACE(op);
    Tensor x = random_tensor({4, 2, 2}, 1);
    Weights fw = random_weights(op, 1, 10), bw = random_weights(op, 1, 20);
    auto fwd = run_ref(op, {x, fw.w, fw.r, fw.b}, {}, outputs(op));
    auto rev =
        run_ref(op, {x, bw.w, bw.r, bw.b}, {{"direction", attr_string("reverse")}}, outputs(op));
    auto rev_check = run_ref(op, {reverse0(x), bw.w, bw.r, bw.b}, {}, outputs(op));
    expect_close(rev[0], reverse0(rev_check[0]));
    expect_close(rev[1], rev_check[1]);

    auto bi = run_ref(op, {x, concat0(fw.w, bw.w), concat0(fw.r, bw.r), concat0(fw.b, bw.b)},
                      {{"direction", attr_string("bidirectional")}}, outputs(op));
    EXPECT_EQ(bi[0].shape(), (Dims{4, 2, 2, 3}));
    expect_close(y_direction(bi[0], 0), fwd[0]);
    expect_close(y_direction(bi[0], 1), rev[0]);
    expect_close(bi[1], concat0(fwd[1], rev[1]));
    if (op == "LSTM") expect_close(bi[2], concat0(fwd[2], rev[2]));
  }
}

// A row shorter than seq_length gives zeros in Y past its end and the state of its last step,
// as if run alone on its valid prefix (reversed from its own end for reverse).
TEST(RefRnn, SequenceLens) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    for (const char* dir : {"forward", "reverse"}) {
      SCOPED_TRACE(op + " " + dir);
      Tensor x = random_tensor({4, 2, 2}, 3);
      Tensor h0 = random_tensor({1, 2, 3}, 4);
      Weights wt = random_weights(op, 1, 30);
      Tensor lens = Tensor::from_vector<int32_t>({2}, {4, 2});
      std::map<std::string, Attribute> attrs = {{"direction", attr_string(dir)}};
      auto out = run_ref(op, {x, wt.w, wt.r, wt.b, lens, h0}, attrs, outputs(op));
      // Row 1 alone on its first 2 steps.
      auto alone =
          run_ref(op, {block01(x, 0, 2, 1, 2), wt.w, wt.r, wt.b, Tensor(), block01(h0, 0, 1, 1, 2)},
                  attrs, outputs(op));
      const std::vector<float> y = values<float>(out[0]), ya = values<float>(alone[0]);
      for (int64_t s = 0; s < 4; ++s) {
        for (int64_t k = 0; k < 3; ++k) {
          const float got = y[static_cast<size_t>((s * 2 + 1) * 3 + k)];
          if (s < 2) {
            EXPECT_NEAR(got, ya[static_cast<size_t>(s * 3 + k)], 1e-6);
          } else {
            EXPECT_EQ(got, 0.0f);
          }
        }
      }
      expect_close(block01(out[1], 0, 1, 1, 2), alone[1]);
      // Row 0 is full length: the same as running it alone without sequence_lens.
      auto full =
          run_ref(op, {block01(x, 0, 4, 0, 1), wt.w, wt.r, wt.b, Tensor(), block01(h0, 0, 1, 0, 1)},
                  attrs, outputs(op));
      expect_close(block01(out[1], 0, 1, 0, 1), full[1]);
    }
  }
}

TEST(RefRnn, LayoutOneIsBatchFirst) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    SCOPED_TRACE(op);
    Tensor x = random_tensor({4, 2, 2}, 5);
    Tensor h0 = random_tensor({2, 2, 3}, 6);
    Weights wt = random_weights(op, 2, 40);
    std::vector<Tensor> in0 = {x, wt.w, wt.r, wt.b, Tensor(), h0};
    std::vector<Tensor> in1 = {swap01(x), wt.w, wt.r, wt.b, Tensor(), swap01(h0)};
    if (op == "LSTM") {
      Tensor c0 = random_tensor({2, 2, 3}, 7);
      in0.push_back(c0);
      in1.push_back(swap01(c0));
    }
    std::map<std::string, Attribute> attrs = {{"direction", attr_string("bidirectional")}};
    auto a = run_ref(op, in0, attrs, outputs(op), 14);
    attrs["layout"] = attr_int(1);
    auto b = run_ref(op, in1, attrs, outputs(op), 14);
    // Y [seq, nd, batch, H] -> [batch, seq, nd, H].
    ASSERT_EQ(b[0].shape(), (Dims{2, 4, 2, 3}));
    for (int64_t s = 0; s < 4; ++s) {
      for (int64_t d = 0; d < 2; ++d) {
        for (int64_t n = 0; n < 2; ++n) {
          for (int64_t k = 0; k < 3; ++k) {
            EXPECT_EQ(a[0].double_at(((s * 2 + d) * 2 + n) * 3 + k),
                      b[0].double_at(((n * 4 + s) * 2 + d) * 3 + k));
          }
        }
      }
    }
    expect_close(b[1], swap01(a[1]));
    if (op == "LSTM") expect_close(b[2], swap01(a[2]));
  }
}

TEST(RefRnn, BadShapesAndAttributesAreErrors) {
  Tensor x = random_tensor({2, 1, 2}, 8);
  Weights wt = random_weights("LSTM", 1, 50);
  Tensor bad_w = random_tensor({1, 12, 3}, 9);  // input_size 3, X has 2
  EXPECT_THROW(run_ref("LSTM", {x, bad_w, wt.r}, {}, 3), Error);
  Tensor bad_gates = random_tensor({1, 9, 2}, 9);  // 3 gates: a GRU's W
  EXPECT_THROW(run_ref("LSTM", {x, bad_gates, wt.r}, {}, 3), Error);
  EXPECT_THROW(run_ref("LSTM", {x, wt.w, wt.r}, {{"hidden_size", attr_int(4)}}, 3), Error);
  Tensor bad_lens = Tensor::from_vector<int32_t>({1}, {3});  // longer than seq_length 2
  EXPECT_THROW(run_ref("LSTM", {x, wt.w, wt.r, wt.b, bad_lens}, {}, 3), Error);
  try {
    run_ref("RNN", {x, random_tensor({1, 3, 2}, 1), random_tensor({1, 3, 3}, 2)},
            {{"activations", attr_strings({"Gelu"})}}, 2);
    FAIL() << "an unknown activation must be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("Gelu"), std::string::npos);
  }
  EXPECT_THROW(run_ref("GRU", {x, random_tensor({1, 9, 2}, 1), random_tensor({1, 9, 3}, 2)},
                       {{"direction", attr_string("sideways")}}, 2),
               Error);
}

}  // namespace rnn_test
}  // namespace nnfuse
