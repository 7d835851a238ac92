// The LSTM kernel on oneDNN matmuls against the reference kernel: each direction, with and
// without B and initial states, each output subset; and what it declines.
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

std::vector<FastInput> inputs_of(const Case& c, uint32_t seed) {
  const int64_t d = c.direction == "bidirectional" ? 2 : 1;
  std::vector<FastInput> in = {{random_tensor({c.t, c.n, c.i}, seed, -1.5f, 1.5f), false},
                               {random_tensor({d, 4 * c.h, c.i}, seed + 1, -0.5f, 0.5f), true},
                               {random_tensor({d, 4 * c.h, c.h}, seed + 2, -0.5f, 0.5f), true}};
  in.push_back({c.bias ? random_tensor({d, 8 * c.h}, seed + 3) : Tensor(), true});
  in.push_back({Tensor(), true});  // sequence_lens
  if (c.init) {
    in.push_back({random_tensor({d, c.n, c.h}, seed + 4), false});
    in.push_back({random_tensor({d, c.n, c.h}, seed + 5), false});
  }
  return in;
}

TEST(OnednnLstm, MatchesTheReference) {
  const std::vector<Case> cases = {
      {5, 2, 3, 4, "forward", true, false},      {7, 3, 8, 16, "reverse", true, true},
      {6, 2, 5, 8, "bidirectional", true, true}, {4, 1, 6, 32, "bidirectional", false, false},
      {1, 4, 2, 3, "forward", false, true},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.direction + " T " + std::to_string(c.t) + " N " + std::to_string(c.n) + " I " +
                 std::to_string(c.i) + " H " + std::to_string(c.h));
    Attrs attrs = {{"direction", attr_string(c.direction)}, {"hidden_size", attr_int(c.h)}};
    expect_matches_ref("onednn.lstm", "LSTM", inputs_of(c, seed += 10), attrs, 3, 1e-5f, 1e-4f, 14);
  }
}

TEST(OnednnLstm, DeclinesWhatItDoesNotRun) {
  const Case c{4, 2, 3, 4, "forward", true, true};
  const Attrs base = {{"hidden_size", attr_int(4)}};
  const std::vector<FastInput> in = inputs_of(c, 3);
  EXPECT_TRUE(testing::fast_accepts("onednn.lstm", "LSTM", in, base, 14, 3));
  Attrs clip = base;
  clip["clip"] = attr_float(1.0f);
  EXPECT_FALSE(testing::fast_accepts("onednn.lstm", "LSTM", in, clip, 14, 3));
  Attrs layout = base;
  layout["layout"] = attr_int(1);
  EXPECT_FALSE(testing::fast_accepts("onednn.lstm", "LSTM", in, layout, 14, 3));
  std::vector<FastInput> dyn = in;
  dyn[1].constant = false;
  EXPECT_FALSE(testing::fast_accepts("onednn.lstm", "LSTM", dyn, base, 14, 3));
  std::vector<FastInput> short_seq = in;
  short_seq[4] = {Tensor::from_vector<int32_t>({2}, {4, 2}), true};
  EXPECT_FALSE(testing::fast_accepts("onednn.lstm", "LSTM", short_seq, base, 14, 3));
  std::vector<FastInput> full_seq = in;
  full_seq[4] = {Tensor::from_vector<int32_t>({2}, {4, 4}), true};
  EXPECT_TRUE(testing::fast_accepts("onednn.lstm", "LSTM", full_seq, base, 14, 3));
}

}  // namespace
}  // namespace nnfuse
