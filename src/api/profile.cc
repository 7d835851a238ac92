#include "api/profile.h"

#include <chrono>
#include <fstream>

#include "ir/atomic_file.h"
#include "ir/error.h"

namespace nnfuse {

PlanProfile profile_plan(PlanSession& session, const std::map<std::string, Tensor>& feeds, int runs,
                         int warmup) {
  if (runs < 1) fail(ErrorKind::kInvalidArgument, "a profile needs at least one run");
  for (int i = 0; i < warmup; ++i) session.run(feeds);
  const auto& steps = session.plan().steps();
  PlanProfile p;
  p.runs = runs;
  for (const PlanStep& s : steps) {
    StepProfile sp;
    if (s.kind == PlanStep::Kind::kReorder) {
      sp.op = "Reorder";
      sp.name = "reorder " + session.plan().values()[s.inputs[0]].name;
    } else {
      sp.op = s.node->op_type();
      sp.name = s.node->name();
    }
    sp.kernel = s.kernel_name;
    sp.reference_fallback = s.reference_fallback;
    sp.view = s.kind == PlanStep::Kind::kView;
    p.steps.push_back(std::move(sp));
  }
  double offset_ms = 0;
  for (int r = 0; r < runs; ++r) {
    std::vector<StepTiming> t;
    const auto start = std::chrono::steady_clock::now();
    session.run(feeds, &t);
    const double run_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    for (const StepTiming& st : t) {
      StepProfile& sp = p.steps[st.step];
      sp.total_ms += st.ms;
      p.trace_events.push_back({{"name", sp.name},
                                {"cat", sp.op},
                                {"ph", "X"},
                                {"pid", 1},
                                {"tid", 1},
                                {"ts", (offset_ms + st.start_ms) * 1000.0},
                                {"dur", st.ms * 1000.0},
                                {"args",
                                 {{"op", sp.op},
                                  {"kernel", sp.kernel},
                                  {"reference_fallback", sp.reference_fallback},
                                  {"run", r}}}});
    }
    offset_ms += run_ms + 0.05;
    p.total_ms += run_ms;
  }
  return p;
}

void write_chrome_trace(const PlanProfile& p, const std::string& path) {
  const std::string text =
      nlohmann::json{{"traceEvents", p.trace_events}, {"displayTimeUnit", "ms"}}.dump();
  write_file_atomically(path, "the trace file", [&](std::ostream& f) { f << text; });
}

}  // namespace nnfuse
