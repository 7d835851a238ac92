#include "api/profile.h"

#include <chrono>
#include <fstream>
#include <vector>

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
    sp.choice = s.choice;
    sp.reference_fallback = s.reference_fallback;
    sp.view = s.kind == PlanStep::Kind::kView;
    p.steps.push_back(std::move(sp));
  }
  // The timed runs record plain numbers into storage made before them; the trace's JSON is
  // built after the last run, so its allocations do not land inside the kernels timed (a
  // kernel that allocates then met fresh heap pages and measured several times its cost).
  std::vector<std::vector<StepTiming>> timings(static_cast<size_t>(runs));
  std::vector<double> run_ms(static_cast<size_t>(runs));
  for (auto& t : timings) t.reserve(steps.size());
  for (int r = 0; r < runs; ++r) {
    std::vector<StepTiming>& t = timings[static_cast<size_t>(r)];
    const auto start = std::chrono::steady_clock::now();
    session.run(feeds, &t);
    run_ms[static_cast<size_t>(r)] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  double offset_ms = 0;
  for (int r = 0; r < runs; ++r) {
    for (const StepTiming& st : timings[static_cast<size_t>(r)]) {
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
                                  {"choice", sp.choice},
                                  {"reference_fallback", sp.reference_fallback},
                                  {"run", r}}}});
    }
    offset_ms += run_ms[static_cast<size_t>(r)] + 0.05;
    p.total_ms += run_ms[static_cast<size_t>(r)];
  }
  return p;
}

void write_chrome_trace(const PlanProfile& p, const std::string& path) {
  const std::string text =
      nlohmann::json{{"traceEvents", p.trace_events}, {"displayTimeUnit", "ms"}}.dump();
  write_file_atomically(path, "the trace file", [&](std::ostream& f) { f << text; });
}

}  // namespace nnfuse
