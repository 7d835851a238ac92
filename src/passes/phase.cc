#include "passes/phase.h"

#include <map>
#include <set>

#include "ir/error.h"

namespace nnfuse {

namespace {

// The pass names `name` stands for: a phase's passes, else itself.
std::vector<std::string> expand(const std::map<std::string, const Phase*>& phases,
                                const std::string& name) {
  auto it = phases.find(name);
  if (it == phases.end()) return {name};
  std::vector<std::string> r;
  for (const PhasePass& p : it->second->passes) r.push_back(p.pass->info().name);
  return r;
}

}  // namespace

std::vector<OrderConstraint> order_constraints(const std::vector<Phase>& phases) {
  std::map<std::string, const Phase*> by_name;
  for (const Phase& ph : phases) by_name[ph.name] = &ph;
  std::vector<OrderConstraint> r;
  auto add = [&](const std::vector<std::string>& subjects, const Order& o) {
    for (const std::string& other : o.others) {
      for (const std::string& b : expand(by_name, other)) {
        for (const std::string& a : subjects) {
          if (a == b) continue;  // a phase's pass named by the phase's own need
          if (o.kind == Order::kAfter) {
            r.push_back({b, a, o.reason});
          } else {
            r.push_back({a, b, o.reason});
          }
        }
      }
    }
  };
  for (const Phase& ph : phases) {
    const std::vector<std::string> all = expand(by_name, ph.name);
    for (const Order& o : ph.order) add(all, o);
    for (const PhasePass& p : ph.passes) {
      for (const Order& o : p.order) add({p.pass->info().name}, o);
    }
  }
  return r;
}

std::vector<std::string> pass_order(const std::vector<Phase>& phases) {
  std::vector<std::string> r;
  for (const Phase& ph : phases) {
    for (const PhasePass& p : ph.passes) r.push_back(p.pass->info().name);
  }
  return r;
}

std::vector<std::string> order_violations(const std::vector<std::string>& order,
                                          const std::vector<OrderConstraint>& constraints) {
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < order.size(); ++i) at.emplace(order[i], i);
  std::vector<std::string> r;
  std::set<std::string> missing;
  for (const OrderConstraint& c : constraints) {
    auto f = at.find(c.first);
    auto t = at.find(c.then);
    for (auto [it, name] : {std::pair{f, &c.first}, std::pair{t, &c.then}}) {
      if (it == at.end() && missing.insert(*name).second) {
        r.push_back("an ordering constraint names " + *name + ", which is not in the pipeline");
      }
    }
    if (f != at.end() && t != at.end() && f->second > t->second) {
      r.push_back(c.then + " runs before " + c.first + ", but must run after it: " + c.reason);
    }
  }
  return r;
}

void check_phases(std::vector<Phase>& phases) {
  std::set<std::string> names;
  for (const Phase& ph : phases) {
    if (!names.insert(ph.name).second) fail(ErrorKind::kInternal, "phase ", ph.name, " twice");
    for (const PhasePass& p : ph.passes) {
      if (!names.insert(p.pass->info().name).second) {
        fail(ErrorKind::kInternal, "pass ", p.pass->info().name, " twice in the pipeline");
      }
    }
  }
  std::vector<std::string> broken = order_violations(pass_order(phases), order_constraints(phases));
  if (!broken.empty()) fail(ErrorKind::kInternal, "the pipeline's order: ", broken.front());
  // Numbered backwards, so that an unlisted pass takes the number of the listed one after it.
  int listed = 0;
  for (const Phase& ph : phases) {
    if (ph.listed) listed += static_cast<int>(ph.passes.size());
  }
  int next = listed + 1;
  for (auto ph = phases.rbegin(); ph != phases.rend(); ++ph) {
    for (auto p = ph->passes.rbegin(); p != ph->passes.rend(); ++p) {
      if (ph->listed) --next;
      p->number = next;
    }
  }
}

void run_phases(const std::vector<Phase>& phases, Graph& g, PassContext& ctx,
                const std::vector<PassObserver*>& observers) {
  for (PassObserver* o : observers) o->started(g);
  for (const Phase& phase : phases) {
    for (const PhasePass& p : phase.passes) {
      for (PassObserver* o : observers) o->before(p);
      if (!p.pass->enabled(ctx)) continue;
      const PassInfo& info = p.pass->info();
      if (info.fusion) ctx.report.record(info.name);
      p.pass->run(g, ctx);
      for (PassObserver* o : observers) o->after(p, g);
    }
  }
  for (PassObserver* o : observers) o->finished(g);
}

}  // namespace nnfuse
