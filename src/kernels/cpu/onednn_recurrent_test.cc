// The LSTM and GRU kernels on oneDNN matmuls against the reference kernels: each direction,
// with and without B and initial states, both GRU reset forms; and what they decline.
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_test_support.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace {

using testing::expect_matches_ref;
using testing::FastInput;
using testing::random_tensor;
using Attrs = std::map<std::string, Attribute>;

struct Case {
  int64_t t, n, i, h;
  std::string direction;
  bool bias, init;
};

// Inputs of an LSTM (4 gates, initial h and c) or a GRU (3 gates, initial h).
std::vector<FastInput> inputs_of(const Case& c, int64_t gates, uint32_t seed) {
  const int64_t d = c.direction == "bidirectional" ? 2 : 1;
  std::vector<FastInput> in = {{random_tensor({c.t, c.n, c.i}, seed, -1.5f, 1.5f), false},
                               {random_tensor({d, gates * c.h, c.i}, seed + 1, -0.5f, 0.5f), true},
                               {random_tensor({d, gates * c.h, c.h}, seed + 2, -0.5f, 0.5f), true}};
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
      {5, 2, 3, 4, "forward", true, false},      {7, 3, 8, 16, "reverse", true, true},
      {6, 2, 5, 8, "bidirectional", true, true}, {4, 1, 6, 32, "bidirectional", false, false},
      {1, 4, 2, 3, "forward", false, true},
  };
  return c;
}

std::string trace(const Case& c) {
  return c.direction + " T " + std::to_string(c.t) + " N " + std::to_string(c.n) + " I " +
         std::to_string(c.i) + " H " + std::to_string(c.h);
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
  const std::vector<FastInput> gru = inputs_of(c, 3, 4);
  EXPECT_TRUE(testing::fast_accepts("onednn.gru", "GRU", gru, base, 14, 2));
  EXPECT_FALSE(testing::fast_accepts("onednn.gru", "GRU", gru, clip, 14, 2));
}

}  // namespace
}  // namespace nnfuse
