// The phases' checker and run loop on small pipelines of passes of their own: a phase's name in
// a constraint, names no pass has, the numbers passes get, the order of the observers' calls.
#include "passes/phase.h"

#include <gtest/gtest.h>

#include "ir/error.h"

namespace nnfuse {
namespace phase_test {

const PassRecord* record(const FusionReport& r, const std::string& pass) {
  for (const PassRecord& p : r.passes) {
    if (p.name == pass) return &p;
  }
  return nullptr;
}

class FakePass : public Pass {
 public:
  FakePass(std::string name, bool on, std::vector<std::string>* ran)
      : info_{std::move(name), "", true, true}, on_(on), ran_(ran) {}
  const PassInfo& info() const override { return info_; }
  bool enabled(const PassContext&) const override { return on_; }
  void run(Graph&, PassContext&) const override { ran_->push_back(info_.name); }

 private:
  PassInfo info_;
  bool on_;
  std::vector<std::string>* ran_;
};

struct Fake {
  std::vector<std::string> ran;
  std::vector<Phase> phases;
  Phase& phase(const std::string& name, std::vector<Order> order = {}) {
    phases.push_back({name, "", {}, std::move(order)});
    return phases.back();
  }
  void add(Phase& ph, const std::string& name, std::vector<Order> order = {}, bool on = true) {
    ph.passes.push_back({std::make_unique<FakePass>(name, on, &ran), std::move(order)});
  }
};

TEST(PhaseOrder, APhaseNameStandsForEachOfItsPasses) {
  Fake f;
  Phase& a = f.phase("a", {runs_before({"b"}, "a first")});
  f.add(a, "A1");
  f.add(a, "A2", {runs_after({"A1"}, "A1 makes what A2 reads")});
  Phase& b = f.phase("b");
  f.add(b, "B1");
  f.add(b, "B2", {runs_after({"a"}, "after all of a")});
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const OrderConstraint& c : order_constraints(f.phases)) pairs.push_back({c.first, c.then});
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"A1", "B1"}, {"A2", "B1"}, {"A1", "B2"}, {"A2", "B2"},
      {"A1", "A2"}, {"A1", "B2"}, {"A2", "B2"}};
  EXPECT_EQ(pairs, expected);
  EXPECT_TRUE(order_violations(pass_order(f.phases), order_constraints(f.phases)).empty());
  EXPECT_EQ(order_violations({"A1", "B1", "A2", "B2"}, order_constraints(f.phases)),
            (std::vector<std::string>{"B1 runs before A2, but must run after it: a first"}));
}

TEST(PhaseOrder, NamesNoPassHasAreReportedOnce) {
  const std::vector<OrderConstraint> c = {{"A", "Missing", "r1"}, {"Missing", "B", "r2"}};
  EXPECT_EQ(order_violations({"A", "B"}, c),
            (std::vector<std::string>{
                "an ordering constraint names Missing, which is not in the pipeline"}));
}

TEST(PhaseOrder, CheckPhasesRefusesABrokenOrderAndNumbersThePasses) {
  Fake f;
  Phase& a = f.phase("a");
  f.add(a, "A1");
  Phase& u = f.phase("u");
  u.listed = false;
  f.add(u, "U1");
  Phase& b = f.phase("b");
  f.add(b, "B1");
  f.add(b, "B2");
  check_phases(f.phases);
  std::vector<int> numbers;
  for (const Phase& ph : f.phases) {
    for (const PhasePass& p : ph.passes) numbers.push_back(p.number);
  }
  // The unlisted pass has the number of the listed one after it.
  EXPECT_EQ(numbers, (std::vector<int>{1, 2, 2, 3}));

  f.phases[2].passes[0].order.push_back(runs_after({"B2"}, "B2 makes what B1 reads"));
  try {
    check_phases(f.phases);
    FAIL() << "a broken order was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_NE(std::string(e.what()).find("B2 makes what B1 reads"), std::string::npos) << e.what();
  }
}

struct Recorder : PassObserver {
  std::vector<std::string> events;
  void started(const Graph&) override { events.push_back("started"); }
  void before(const PhasePass& p) override { events.push_back("before " + p.pass->info().name); }
  void after(const PhasePass& p, const Graph&) override {
    events.push_back("after " + p.pass->info().name);
  }
  void finished(const Graph&) override { events.push_back("finished"); }
};

TEST(PhaseRun, RunsTheEnabledPassesWithTheObserversAround) {
  Fake f;
  Phase& a = f.phase("a");
  f.add(a, "A1");
  f.add(a, "Off", {}, false);
  Phase& b = f.phase("b");
  f.add(b, "B1");
  Graph g;
  FusionReport report;
  PassContext ctx{report};
  Recorder first, second;
  run_phases(f.phases, g, ctx, {&first, &second});
  EXPECT_EQ(f.ran, (std::vector<std::string>{"A1", "B1"}));
  const std::vector<std::string> events = {"started",   "before A1", "after A1", "before Off",
                                           "before B1", "after B1",  "finished"};
  EXPECT_EQ(first.events, events);
  EXPECT_EQ(second.events, events);
  // A fusion pass that ran is in the report even without a match; one that did not is not.
  EXPECT_TRUE(record(report, "A1"));
  EXPECT_FALSE(record(report, "Off"));
}

}  // namespace phase_test
}  // namespace nnfuse
