// The fusion switch file: which passes run. Three formats are accepted:
//  - CANN GE JSON: {"Switch":{"GraphFusion":{"ALL":"on","ConvBatchnormFusionPass":"off"},
//                             "UBFusion":{...}}} — a per-pass entry beats "ALL";
//  - the legacy one-per-line form: "ConvBatchnormFusionPass:off" (blank lines and # comments
//    allowed);
//  - rules: {"rules":[{"name":"conv_bn_relu","ops":["Conv","BatchNormalization","Relu"],
//                      "action":"fuse"|"off"}]} — a rule whose op list is a built-in pattern
//    turns that pass on or off; other op lists are user fusion rules (kept in user_rules()).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/report.h"

namespace nnfuse {

struct UserRule {
  std::string name;
  std::vector<std::string> ops;
};

class FusionSwitches {
 public:
  FusionSwitches() = default;
  // Parses a switch file; `known` lists every pass (names and, for rules, their op lists).
  // Throws kInvalidArgument naming the file and the line or field for malformed input or an
  // unknown pass name.
  static FusionSwitches load(const std::string& path, const std::vector<PassInfo>& known,
                             const std::map<std::string, std::vector<std::string>>& pass_ops);
  static FusionSwitches parse(const std::string& text, const std::string& label,
                              const std::vector<PassInfo>& known,
                              const std::map<std::string, std::vector<std::string>>& pass_ops);

  // Whether a pass runs: its own entry, else ALL, else its default.
  bool enabled(const PassInfo& p) const;
  void set(const std::string& pass, bool on) { per_pass_[pass] = on; }
  void set_all(bool on) { all_ = on; }
  const std::vector<UserRule>& user_rules() const { return user_rules_; }

 private:
  std::optional<bool> all_;
  std::map<std::string, bool> per_pass_;
  std::vector<UserRule> user_rules_;
};

}  // namespace nnfuse
