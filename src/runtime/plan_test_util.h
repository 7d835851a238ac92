// Checks of execution plans shared by the runtime's tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "runtime/plan.h"

namespace nnfuse::testing {

// Independent check of a plan: replays the steps, tracks which plan values are live (from
// the step that writes them to the last step that reads them or any value sharing their
// storage) and asserts that no two live values in different storage groups overlap in the
// arena.
inline void expect_no_live_overlap(const ExecutionPlan& plan) {
  const auto& values = plan.values();
  auto root = [&](int id) {
    while (values[id].alias_of >= 0) id = values[id].alias_of;
    return id;
  };
  const auto& steps = plan.steps();
  std::vector<int64_t> first(values.size(), -1), last(values.size(), -1);
  for (size_t s = 0; s < steps.size(); ++s) {
    for (int id : steps[s].outputs) {
      if (id >= 0) first[id] = static_cast<int64_t>(s);
    }
    for (int id : steps[s].inputs) {
      if (id >= 0) last[id] = static_cast<int64_t>(s);
    }
  }
  // Group intervals: union over members.
  std::map<int, std::pair<int64_t, int64_t>> group;
  for (size_t id = 0; id < values.size(); ++id) {
    if (first[id] < 0) continue;
    int r = root(static_cast<int>(id));
    if (values[r].buffer < 0) continue;
    auto [it, fresh] = group.emplace(r, std::make_pair(first[id], std::max(first[id], last[id])));
    if (!fresh) {
      it->second.first = std::min(it->second.first, first[id]);
      it->second.second = std::max(it->second.second, std::max(first[id], last[id]));
    }
  }
  for (auto& [a, ia] : group) {
    for (auto& [b, ib] : group) {
      if (a >= b || ia.second < ib.first || ib.second < ia.first) continue;
      size_t a0 = plan.memory().offsets[values[a].buffer];
      size_t b0 = plan.memory().offsets[values[b].buffer];
      size_t a1 = a0 + plan.buffers()[values[a].buffer].bytes;
      size_t b1 = b0 + plan.buffers()[values[b].buffer].bytes;
      EXPECT_FALSE(a0 < b1 && b0 < a1)
          << values[a].name << " and " << values[b].name << " are live together and overlap";
    }
  }
}

}  // namespace nnfuse::testing
