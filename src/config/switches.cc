#include "config/switches.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ir/error.h"

namespace nnfuse {

namespace {

using nlohmann::json;
using PassOps = std::map<std::string, std::vector<std::string>>;

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// A JSON string literal; invalid UTF-8 in the input becomes U+FFFD instead of throwing.
std::string json_quote(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string join(const std::vector<std::string>& xs, const char* sep) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? sep : "") + xs[i];
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Parses one file. `where` prefixes every message: "file:line" or "file: field.path".
class Parser {
 public:
  Parser(std::string label, const std::vector<PassInfo>& known, const PassOps& pass_ops)
      : label_(std::move(label)), known_(known), pass_ops_(pass_ops) {}

  // Fills `out` (switch settings) and `rules` (user rules, which only FusionSwitches may set).
  void parse(std::string text, FusionSwitches& out, std::vector<UserRule>& rules) {
    if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);  // a UTF-8 byte-order mark
    std::string body = trim(text);
    if (body.empty()) bad(label_, "the fusion switch file is empty");
    if (body[0] == '{' || body[0] == '[') {
      parse_json(text);
    } else {
      parse_lines(text);
    }
    out = std::move(out_);
    rules = std::move(user_rules_);
  }

 private:
  [[noreturn]] void bad(const std::string& where, const std::string& what) const {
    fail(ErrorKind::kInvalidArgument, where, ": ", what);
  }
  std::string field(const std::string& path) const { return label_ + ": " + path; }

  // Checks that `name` is a known pass; the message suggests a close name and lists some.
  void check_pass(const std::string& where, const std::string& name) const {
    for (const PassInfo& p : known_) {
      if (p.name == name) return;
    }
    std::string msg = "unknown pass " + json_quote(name);
    const PassInfo* best = nullptr;
    // Suggest only close names (a dropped "Pass" suffix is close).
    size_t best_d = std::min(std::max<size_t>(4, name.size() / 4), name.size() / 2) + 1;
    for (const PassInfo& p : known_) {
      size_t d = edit_distance(p.name, name);
      if (d < best_d) best_d = d, best = &p;
    }
    if (best) msg += " (did you mean " + json_quote(best->name) + "?)";
    std::vector<std::string> names;
    for (const PassInfo& p : known_) {
      if (p.fusion) names.push_back(p.name);
    }
    if (!names.empty()) {
      const size_t kShown = 5;
      msg += "; known passes: " +
             join(std::vector<std::string>(names.begin(),
                                           names.begin() + std::min(kShown, names.size())),
                  ", ");
      if (names.size() > kShown) msg += ", ... (" + std::to_string(names.size()) + " in all)";
    }
    bad(where, msg);
  }

  static std::optional<bool> on_off(const std::string& v) {
    if (v == "on") return true;
    if (v == "off") return false;
    return std::nullopt;
  }

  // --- legacy "PassName:on|off" lines ---

  void parse_lines(const std::string& text) {
    std::istringstream in(text);
    std::string raw;
    for (int line_no = 1; std::getline(in, raw); ++line_no) {
      std::string line = trim(raw.substr(0, raw.find('#')));
      if (line.empty()) continue;
      std::string where = label_ + ":" + std::to_string(line_no);
      size_t colon = line.find(':');
      if (colon == std::string::npos) {
        bad(where, "expected \"PassName:on\" or \"PassName:off\", got " + json_quote(line));
      }
      std::string name = trim(line.substr(0, colon));
      std::string value = trim(line.substr(colon + 1));
      if (name.empty()) bad(where, "missing pass name before ':'");
      std::optional<bool> on = on_off(value);
      if (!on) bad(where, name + ": expected \"on\" or \"off\", got " + json_quote(value));
      if (name == "ALL") {
        out_.set_all(*on);
      } else {
        check_pass(where, name);
        out_.set(name, *on);
      }
    }
  }

  // --- JSON: GE "Switch" and "rules" ---

  void parse_json(const std::string& text) {
    json doc;
    try {
      doc = json::parse(text);
    } catch (const json::parse_error& e) {
      size_t end = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
      size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + end, '\n'));
      std::string why = e.what();
      size_t at = why.find("syntax error");
      if (at == std::string::npos)
        at = why.find("] ") == std::string::npos ? 0 : why.find("] ") + 2;
      bad(label_ + ":" + std::to_string(line), "malformed JSON: " + why.substr(at));
    } catch (const json::exception& e) {  // a number out of range, bad UTF-8 in a string
      bad(label_, std::string("malformed JSON: ") + e.what());
    }
    if (!doc.is_object()) {
      bad(label_, "expected a JSON object with \"Switch\" or \"rules\", got " +
                      std::string(doc.type_name()));
    }
    if (doc.empty()) bad(label_, "expected \"Switch\" or \"rules\" in an empty JSON object");
    for (auto& [key, _] : doc.items()) {
      if (key != "Switch" && key != "rules") {
        bad(field(key), "unknown top-level key (expected \"Switch\" or \"rules\")");
      }
    }
    if (doc.contains("Switch")) parse_ge(doc["Switch"]);
    if (doc.contains("rules")) parse_rules(doc["rules"]);
  }

  // Both sections name our passes; where they disagree, "off" wins (not fusing is safe).
  void parse_ge(const json& sw) {
    if (!sw.is_object()) {
      bad(field("Switch"), "expected an object with \"GraphFusion\" and/or \"UBFusion\", got " +
                               std::string(sw.type_name()));
    }
    std::optional<bool> all;
    std::map<std::string, bool> per_pass;
    auto merge = [](std::optional<bool>& slot, bool on) { slot = slot ? (*slot && on) : on; };
    for (auto& [section, entries] : sw.items()) {
      std::string path = "Switch." + section;
      if (section != "GraphFusion" && section != "UBFusion") {
        bad(field(path), "unknown section (expected \"GraphFusion\" or \"UBFusion\")");
      }
      if (!entries.is_object()) {
        bad(field(path), "expected an object of pass name -> \"on\"/\"off\", got " +
                             std::string(entries.type_name()));
      }
      for (auto& [name, value] : entries.items()) {
        std::string where = field(path + "." + name);
        std::optional<bool> on;
        if (value.is_string()) on = on_off(value.get<std::string>());
        if (!on) bad(where, "expected \"on\" or \"off\", got " + value.dump());
        if (name == "ALL") {
          merge(all, *on);
        } else {
          check_pass(where, name);
          auto it = per_pass.find(name);
          per_pass[name] = it == per_pass.end() ? *on : (it->second && *on);
        }
      }
    }
    if (all) out_.set_all(*all);
    for (auto& [name, on] : per_pass) out_.set(name, on);
  }

  void parse_rules(const json& rules) {
    if (!rules.is_array()) {
      bad(field("rules"), "expected an array of rules, got " + std::string(rules.type_name()));
    }
    std::set<std::string> names;
    for (size_t i = 0; i < rules.size(); ++i) {
      const json& r = rules[i];
      std::string path = "rules[" + std::to_string(i) + "]";
      if (!r.is_object()) {
        bad(field(path),
            "expected an object with \"ops\" and \"action\", got " + std::string(r.type_name()));
      }
      for (auto& [key, _] : r.items()) {
        if (key != "name" && key != "ops" && key != "action") {
          bad(field(path + "." + key), "unknown key (expected \"name\", \"ops\" or \"action\")");
        }
      }
      std::string name;
      if (r.contains("name")) {
        const json& n = r["name"];
        if (!n.is_string() || n.get<std::string>().empty()) {
          bad(field(path + ".name"), "expected a non-empty string, got " + n.dump());
        }
        name = n.get<std::string>();
      }
      if (!r.contains("ops")) bad(field(path), "rule has no \"ops\"");
      const json& ops_j = r["ops"];
      if (!ops_j.is_array() || ops_j.empty()) {
        bad(field(path + ".ops"),
            "expected a non-empty array of op-type strings, got " + ops_j.dump());
      }
      std::vector<std::string> ops;
      for (size_t k = 0; k < ops_j.size(); ++k) {
        if (!ops_j[k].is_string() || ops_j[k].get<std::string>().empty()) {
          bad(field(path + ".ops[" + std::to_string(k) + "]"),
              "expected an op-type string, got " + ops_j[k].dump());
        }
        ops.push_back(ops_j[k].get<std::string>());
      }
      if (!r.contains("action")) bad(field(path), "rule has no \"action\"");
      const json& act = r["action"];
      bool fuse = act.is_string() && act.get<std::string>() == "fuse";
      if (!fuse && !(act.is_string() && act.get<std::string>() == "off")) {
        bad(field(path + ".action"), "expected \"fuse\" or \"off\", got " + act.dump());
      }

      bool builtin = false;
      for (auto& [pass, pattern] : pass_ops_) {
        if (pattern == ops) {
          out_.set(pass, fuse);
          builtin = true;
        }
      }
      if (builtin) continue;
      if (!fuse) {
        bad(field(path + ".ops"), "no built-in pattern has ops [" + join(ops, ", ") + "]");
      }
      if (name.empty()) name = join(ops, "_");
      if (!names.insert(name).second) {
        bad(field(path + ".name"), "duplicate rule name " + json_quote(name));
      }
      user_rules_.push_back({name, ops});
    }
  }

  std::string label_;
  const std::vector<PassInfo>& known_;
  const PassOps& pass_ops_;
  FusionSwitches out_;
  std::vector<UserRule> user_rules_;
};

}  // namespace

FusionSwitches FusionSwitches::parse(const std::string& text, const std::string& label,
                                     const std::vector<PassInfo>& known, const PassOps& pass_ops) {
  FusionSwitches out;
  Parser(label, known, pass_ops).parse(text, out, out.user_rules_);
  return out;
}

FusionSwitches FusionSwitches::load(const std::string& path, const std::vector<PassInfo>& known,
                                    const PassOps& pass_ops) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::kInvalidArgument, path, ": cannot read the fusion switch file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail(ErrorKind::kInvalidArgument, path, ": error reading the fusion switch file");
  return parse(text.str(), path, known, pass_ops);
}

bool FusionSwitches::enabled(const PassInfo& p) const {
  if (!p.fusion) return true;
  auto it = per_pass_.find(p.name);
  if (it != per_pass_.end()) return it->second;
  if (all_) return *all_;
  return p.default_on;
}

}  // namespace nnfuse
