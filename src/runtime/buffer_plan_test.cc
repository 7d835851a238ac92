// Buffers alone (plan_buffers), over values and steps made by hand: arena slots by liveness,
// outputs in their input's slot where the kernel may write there and nothing reads the input
// after, graph outputs outside the arena, and which step frees what.
#include "runtime/buffer_plan.h"

#include <gtest/gtest.h>

#include "runtime/plan_test_util.h"

namespace nnfuse {
namespace buffer_plan_test {

class ScratchKernel : public Kernel {
 public:
  explicit ScratchKernel(size_t bytes) : bytes_(bytes) {}
  void run(KernelIO&) override {}
  size_t scratch_bytes() const override { return bytes_; }

 private:
  size_t bytes_;
};

struct Steps {
  std::vector<PlanValue> values;
  std::vector<PlanStep> steps;

  int value(const std::string& name, int64_t floats) {
    PlanValue v;
    v.name = name;
    v.dtype = DType::kFloat32;
    v.static_shape = true;
    v.shape = {floats};
    values.push_back(v);
    return static_cast<int>(values.size()) - 1;
  }
  // A kernel step reading `in` into `out`, which may take input `in_place`'s storage.
  void kernel(std::vector<int> in, int out, int in_place = -1, size_t scratch = 0) {
    PlanStep st;
    st.kernel = std::make_unique<ScratchKernel>(scratch);
    st.inputs = std::move(in);
    st.outputs = {out};
    st.in_place = {in_place};
    steps.push_back(std::move(st));
  }
};

TEST(BufferPlan, SlotsByLivenessAndInPlace) {
  // x -> a -> b (in place over a) -> c (reads a too: not in place) -> y (a graph output).
  Steps s;
  const int x = s.value("x", 16), a = s.value("a", 16), b = s.value("b", 16);
  const int c = s.value("c", 16), y = s.value("y", 16);
  s.values[x].graph_input = true;
  s.values[y].graph_output = true;
  s.kernel({x}, a);
  s.kernel({a}, b, /*in_place=*/0, /*scratch=*/256);
  s.kernel({b}, c, 0);
  s.kernel({c}, y, 0, 128);
  BufferPlan p = plan_buffers(s.values, s.steps, {y}, /*use_arena=*/true);
  // b takes a's slot (a dies there), c b's (likewise); y, a graph output, none.
  EXPECT_EQ(s.values[b].alias_of, a);
  EXPECT_EQ(s.values[c].alias_of, a);
  EXPECT_GE(s.values[a].buffer, 0);
  EXPECT_EQ(s.values[y].buffer, -1);
  EXPECT_EQ(s.values[x].buffer, -1);
  ASSERT_EQ(p.buffers.size(), 1u);
  EXPECT_EQ(p.buffers[0].bytes, 64u);
  EXPECT_EQ(p.buffers[0].first, 0);
  EXPECT_EQ(p.buffers[0].last, 3);
  EXPECT_EQ(p.total_activation_bytes, 4 * 64u);  // a, b, c and y
  EXPECT_EQ(p.scratch_bytes, 256u);
  // Each value is dropped by its last reader.
  EXPECT_EQ(s.steps[1].frees, std::vector<int>{a});
  EXPECT_EQ(s.steps[2].frees, std::vector<int>{b});
  EXPECT_EQ(s.steps[3].frees, std::vector<int>{c});
}

TEST(BufferPlan, AnInputReadLaterKeepsItsSlot) {
  // a -> b, and a read again after b: b gets a slot of its own, which may not overlap a's.
  Steps s;
  const int x = s.value("x", 8), a = s.value("a", 8), b = s.value("b", 8);
  const int c = s.value("c", 8), y = s.value("y", 8);
  s.values[x].graph_input = true;
  s.values[y].graph_output = true;
  s.kernel({x}, a);
  s.kernel({a}, b, 0);
  s.kernel({a, b}, c, 1);  // may overwrite b, which dies here
  s.kernel({c}, y);
  BufferPlan p = plan_buffers(s.values, s.steps, {y}, true);
  EXPECT_EQ(s.values[b].alias_of, -1);
  EXPECT_EQ(s.values[c].alias_of, b);
  ASSERT_GE(s.values[a].buffer, 0);
  ASSERT_GE(s.values[b].buffer, 0);
  const size_t oa = p.memory.offsets[s.values[a].buffer], ob = p.memory.offsets[s.values[b].buffer];
  EXPECT_TRUE(oa + 32 <= ob || ob + 32 <= oa) << oa << " " << ob;
  // Without the arena nothing is planned, nothing shared.
  Steps t;
  t.value("x", 8);
  t.value("a", 8);
  t.values[0].graph_input = true;
  t.kernel({0}, 1, 0);
  p = plan_buffers(t.values, t.steps, {}, /*use_arena=*/false);
  EXPECT_TRUE(p.buffers.empty());
  EXPECT_EQ(t.values[1].buffer, -1);
  EXPECT_EQ(t.values[1].alias_of, -1);
  EXPECT_EQ(t.steps[0].frees, std::vector<int>{1});
}

}  // namespace buffer_plan_test
}  // namespace nnfuse
