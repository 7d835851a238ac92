// The LSTM, GRU and RNN kernels on oneDNN matmuls against the reference kernels: each
// direction, with and without B and initial states, both GRU reset forms, RNN's activations (one
// for both directions or one each), oneDNN's products, the row-panel tasks and team mode; and
// what they decline.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "kernels/cpu/cpu_test_support.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace onednn_recurrent_test {

using testing::expect_matches_ref;
using testing::FastInput;
using testing::random_tensor;
using Attrs = std::map<std::string, Attribute>;

struct Case {
  int64_t t, n, i, h;
  std::string direction;
  bool bias, init;
};

// Inputs of an LSTM (4 gates, initial h and c), a GRU (3 gates, initial h) or an RNN (1 gate,
// initial h).
std::vector<FastInput> inputs_of(const Case& c, int64_t gates, uint32_t seed) {
  const int64_t d = c.direction == "bidirectional" ? 2 : 1;
  // R's values shrink for a wide state, so that an RNN's steps do not amplify the float sums'
  // rounding past the tolerance (each unit sums H products).
  const float r = c.h > 128 ? 0.5f * std::sqrt(16.0f / static_cast<float>(c.h)) : 0.5f;
  std::vector<FastInput> in = {{random_tensor({c.t, c.n, c.i}, seed, -1.5f, 1.5f), false},
                               {random_tensor({d, gates * c.h, c.i}, seed + 1, -0.5f, 0.5f), true},
                               {random_tensor({d, gates * c.h, c.h}, seed + 2, -r, r), true}};
  in.push_back({c.bias ? random_tensor({d, 2 * gates * c.h}, seed + 3) : Tensor(), true});
  in.push_back({Tensor(), true});  // sequence_lens
  if (c.init) {
    in.push_back({random_tensor({d, c.n, c.h}, seed + 4), false});
    if (gates == 4) in.push_back({random_tensor({d, c.n, c.h}, seed + 5), false});
  }
  return in;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {5, 2, 3, 4, "forward", true, false},
      {7, 3, 8, 16, "reverse", true, true},
      {6, 2, 5, 8, "bidirectional", true, true},
      {4, 1, 6, 32, "bidirectional", false, false},
      {1, 4, 2, 3, "forward", false, true},
      // Up to 8 rows (the cases above too): tasks of whole sequences, row-panel products; H 70
      // leaves the last panel of 64 outputs partial.
      {9, 1, 5, 70, "bidirectional", true, true},
      {6, 1, 4, 16, "forward", true, true},
      {5, 1, 3, 8, "reverse", true, false},
      // One row of one direction, a product large enough for team mode: the hidden units split
      // over the threads in whole vectors (272: 8 and 9; 260: 8 and a partial 9th), each meeting
      // the other every step.
      {6, 1, 5, 272, "forward", true, true},
      {5, 1, 3, 260, "reverse", true, false},
      // 9 rows: oneDNN's products over the whole batch.
      {4, 9, 3, 8, "bidirectional", true, true},
      {3, 9, 5, 70, "forward", true, false},
  };
  return c;
}

std::string trace(const Case& c) {
  return c.direction + " T " + std::to_string(c.t) + " N " + std::to_string(c.n) + " I " +
         std::to_string(c.i) + " H " + std::to_string(c.h);
}

// The activations attribute: a list of function names.
Attribute activations(std::vector<std::string> names) {
  Attribute a;
  a.kind = Attribute::Kind::kStrings;
  a.strings = std::move(names);
  return a;
}

TEST(OnednnRecurrent, LstmMatchesTheReference) {
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    SCOPED_TRACE(trace(c));
    Attrs attrs = {{"direction", attr_string(c.direction)}, {"hidden_size", attr_int(c.h)}};
    expect_matches_ref("onednn.lstm", "LSTM", inputs_of(c, 4, seed += 10), attrs, 3, 1e-5f, 1e-4f,
                       14);
  }
}

TEST(OnednnRecurrent, GruMatchesTheReferenceInBothResetForms) {
  uint32_t seed = 2;
  for (int lbr : {0, 1}) {
    for (const Case& c : cases()) {
      SCOPED_TRACE(trace(c) + " linear_before_reset " + std::to_string(lbr));
      Attrs attrs = {{"direction", attr_string(c.direction)},
                     {"hidden_size", attr_int(c.h)},
                     {"linear_before_reset", attr_int(lbr)}};
      expect_matches_ref("onednn.gru", "GRU", inputs_of(c, 3, seed += 10), attrs, 2, 1e-5f, 1e-4f,
                         14);
    }
  }
}

TEST(OnednnRecurrent, DeclinesWhatItDoesNotRun) {
  const Case c{4, 2, 3, 4, "forward", true, true};
  const Attrs base = {{"hidden_size", attr_int(4)}};
  const std::vector<FastInput> in = inputs_of(c, 4, 3);
  EXPECT_TRUE(testing::fast_accepts("onednn.lstm", "LSTM", in, base, 14, 3));
  Attrs clip = base;
  clip["clip"] = attr_float(1.0f);
  EXPECT_FALSE(testing::fast_accepts("onednn.lstm", "LSTM", in, clip, 14, 3));
  Attrs layout = base;
  layout["layout"] = attr_int(1);
  EXPECT_FALSE(testing::fast_accepts("onednn.lstm", "LSTM", in, layout, 14, 3));
  Attrs relu = base;
  Attribute acts;
  acts.kind = Attribute::Kind::kStrings;
  acts.strings = {"Relu", "Tanh", "Tanh"};
  relu["activations"] = acts;
  EXPECT_FALSE(testing::fast_accepts("onednn.lstm", "LSTM", in, relu, 14, 3));
  std::vector<FastInput> dyn = in;
  dyn[1].constant = false;
  EXPECT_FALSE(testing::fast_accepts("onednn.lstm", "LSTM", dyn, base, 14, 3));
  std::vector<FastInput> short_seq = in;
  short_seq[4] = {Tensor::from_vector<int32_t>({2}, {4, 2}), true};
  EXPECT_FALSE(testing::fast_accepts("onednn.lstm", "LSTM", short_seq, base, 14, 3));
  std::vector<FastInput> full_seq = in;
  full_seq[4] = {Tensor::from_vector<int32_t>({2}, {4, 4}), true};
  EXPECT_TRUE(testing::fast_accepts("onednn.lstm", "LSTM", full_seq, base, 14, 3));
  // Empty products (oneDNN's matmul divides by zero on them): the reference kernel runs them.
  for (const Case& empty :
       {Case{4, 0, 3, 4, "forward", true, true}, Case{0, 2, 3, 4, "forward", true, true}}) {
    SCOPED_TRACE(trace(empty));
    EXPECT_FALSE(testing::fast_accepts("onednn.lstm", "LSTM", inputs_of(empty, 4, 3), base, 14, 3));
    EXPECT_FALSE(testing::fast_accepts("onednn.gru", "GRU", inputs_of(empty, 3, 3), base, 14, 2));
  }
  const std::vector<FastInput> gru = inputs_of(c, 3, 4);
  EXPECT_TRUE(testing::fast_accepts("onednn.gru", "GRU", gru, base, 14, 2));
  EXPECT_FALSE(testing::fast_accepts("onednn.gru", "GRU", gru, clip, 14, 2));
}

TEST(OnednnRecurrent, RnnMatchesTheReferenceForEachActivation) {
  uint32_t seed = 5;
  for (const char* act : {"", "Tanh", "Relu", "Sigmoid"}) {
    for (const Case& c : cases()) {
      SCOPED_TRACE(trace(c) + " activation " + (*act ? act : "default"));
      Attrs attrs = {{"direction", attr_string(c.direction)}, {"hidden_size", attr_int(c.h)}};
      if (*act) attrs["activations"] = activations({act});
      expect_matches_ref("onednn.rnn", "RNN", inputs_of(c, 1, seed += 10), attrs, 2, 1e-5f, 1e-4f,
                         14);
    }
  }
}

TEST(OnednnRecurrent, RnnTakesAnActivationPerDirection) {
  uint32_t seed = 7;
  const std::vector<std::vector<std::string>> lists = {
      {"Relu", "Sigmoid"}, {"sigmoid", "Tanh"}, {"relu"}};  // one name serves both directions
  for (const std::vector<std::string>& acts : lists) {
    for (const Case& c : cases()) {
      if (c.direction != "bidirectional") continue;
      SCOPED_TRACE(trace(c) + " activations " + acts.front() + (acts.size() > 1 ? ", " : "") +
                   (acts.size() > 1 ? acts.back() : ""));
      const Attrs attrs = {{"direction", attr_string(c.direction)},
                           {"hidden_size", attr_int(c.h)},
                           {"activations", activations(acts)}};
      expect_matches_ref("onednn.rnn", "RNN", inputs_of(c, 1, seed += 10), attrs, 2, 1e-5f, 1e-4f,
                         14);
    }
  }
}

TEST(OnednnRecurrent, RnnDeclinesWhatItDoesNotRun) {
  const Case c{4, 2, 3, 4, "forward", true, true};
  const Attrs base = {{"hidden_size", attr_int(4)}};
  const std::vector<FastInput> in = inputs_of(c, 1, 5);
  auto accepts = [](const std::vector<FastInput>& inputs, const Attrs& attrs) {
    return testing::fast_accepts("onednn.rnn", "RNN", inputs, attrs, 14, 2);
  };
  auto with = [&base](const std::string& key, const Attribute& value) {
    Attrs attrs = base;
    attrs[key] = value;
    return attrs;
  };
  EXPECT_TRUE(accepts(in, base));
  EXPECT_TRUE(accepts(in, with("activations", activations({"Relu"}))));
  EXPECT_TRUE(accepts(in, with("activations", activations({"sigmoid"}))));
  EXPECT_FALSE(accepts(in, with("clip", attr_float(1.0f))));
  EXPECT_FALSE(accepts(in, with("layout", attr_int(1))));
  EXPECT_FALSE(accepts(in, with("activations", activations({"LeakyRelu"}))));
  EXPECT_FALSE(accepts(in, with("activations", activations({"Affine"}))));
  EXPECT_FALSE(accepts(in, with("activations", activations({"Tanh", "Relu"}))));  // 2, 1 direction
  EXPECT_FALSE(accepts(in, with("activation_alpha", attr_floats({0.5f}))));
  EXPECT_FALSE(accepts(in, with("activation_beta", attr_floats({0.5f}))));
  std::vector<FastInput> dyn_w = in;
  dyn_w[1].constant = false;
  EXPECT_FALSE(accepts(dyn_w, base));
  std::vector<FastInput> dyn_b = in;
  dyn_b[3].constant = false;
  EXPECT_FALSE(accepts(dyn_b, base));
  std::vector<FastInput> short_seq = in;
  short_seq[4] = {Tensor::from_vector<int32_t>({2}, {4, 2}), true};
  EXPECT_FALSE(accepts(short_seq, base));
  std::vector<FastInput> full_seq = in;
  full_seq[4] = {Tensor::from_vector<int32_t>({2}, {4, 4}), true};
  EXPECT_TRUE(accepts(full_seq, base));
  std::vector<FastInput> f64 = in;
  f64[0] = {Tensor(DType::kFloat64, {4, 2, 3}), false};
  EXPECT_FALSE(accepts(f64, base));

  const Case bi{4, 2, 3, 4, "bidirectional", true, true};
  const std::vector<FastInput> in2 = inputs_of(bi, 1, 6);
  Attrs both = base;
  both["direction"] = attr_string("bidirectional");
  EXPECT_TRUE(accepts(in2, both));
  both["activations"] = activations({"Relu", "Tanh"});
  EXPECT_TRUE(accepts(in2, both));
  both["activations"] = activations({"Relu"});
  EXPECT_TRUE(accepts(in2, both));
  both["activations"] = activations({"Relu", "Tanh", "Sigmoid"});
  EXPECT_FALSE(accepts(in2, both));
  both["activations"] = activations({"Relu", "Elu"});
  EXPECT_FALSE(accepts(in2, both));
}

}  // namespace onednn_recurrent_test
}  // namespace nnfuse
