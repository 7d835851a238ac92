#include "report/graph_svg.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

extern char** environ;

namespace nnfuse {

namespace {

constexpr const char* kPalette[] = {"#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4",
                                    "#1aa3b8", "#d62fc8", "#7fa019", "#469990", "#9a6324",
                                    "#800000", "#808000", "#000075", "#c85a7c", "#6a4fb3"};

// A DOT string literal.
std::string q(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (c == '\n') {
      r += "\\n";
      continue;
    }
    r += c;
  }
  return r + "\"";
}

// The first `depth` components of a '/'-separated node name ("(top)" for a name without any).
std::string block_of(const std::string& name, int depth) {
  size_t pos = name.empty() || name[0] != '/' ? 0 : 1;
  const size_t start = pos;
  for (int d = 0; d < depth; ++d) {
    const size_t next = name.find('/', pos);
    if (next == std::string::npos) {
      return d == 0 ? std::string("(top)") : name.substr(0, pos - 1);
    }
    pos = next + 1;
  }
  return pos > start ? name.substr(0, pos - 1) : std::string("(top)");
}

std::vector<const Node*> drawn_nodes(const Graph& g) {
  std::vector<const Node*> r;
  for (const Node* n : g.nodes()) {
    if (!n->is(Op::kConstant)) r.push_back(n);
  }
  return r;
}

std::string color_of(const std::map<std::string, std::string>& colors, const std::string& rule) {
  auto it = colors.find(rule);
  return it == colors.end() ? "#888888" : it->second;
}

const char* kHeader =
    "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=11, nodesep=0.25, ranksep=0.3];\n"
    "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef2f8\", color=\"#8a94a6\", "
    "fontname=\"Helvetica\", fontsize=10];\n"
    "  edge [color=\"#7a8190\", arrowsize=0.6];\n";

// The nodes `part` of g (all when the graph is small), their edges and the graph inputs they
// read.
std::string picture(const Graph& g, const std::vector<const Node*>& part,
                    const std::map<std::string, std::string>& colors, const FusionGroups* groups) {
  std::ostringstream os;
  os << "digraph g {\n" << kHeader;
  std::map<const Node*, std::string> id;
  for (size_t i = 0; i < part.size(); ++i) id[part[i]] = std::string("n").append(std::to_string(i));
  // Before fusion: each fused node's originals in a cluster of the rule's color.
  std::map<std::string, std::vector<const Node*>> clusters;
  std::vector<const Node*> loose;
  for (const Node* n : part) {
    auto it = groups ? groups->group_of.find(n->name()) : decltype(groups->group_of.end()){};
    if (groups && it != groups->group_of.end()) {
      clusters[it->second].push_back(n);
    } else {
      loose.push_back(n);
    }
  }
  auto decl = [&](const Node* n, const std::string& indent) {
    os << indent << id[n] << " [label=" << q(n->op_type() + "\n" + n->name())
       << ", tooltip=" << q(n->name());
    if (!groups && !n->fused_by().empty()) {
      const std::string c = color_of(colors, n->fused_by());
      os << ", fillcolor=" << q(c + "33") << ", color=" << q(c) << ", penwidth=2";
    }
    os << "];\n";
  };
  int k = 0;
  for (const auto& [fused, members] : clusters) {
    const std::string rule = groups->rule_of.count(fused) ? groups->rule_of.at(fused) : "";
    const std::string c = color_of(colors, rule);
    os << "  subgraph cluster_" << k++ << " {\n    label=" << q(rule)
       << "; tooltip=" << q(rule + ": " + fused) << "; style=\"rounded,filled\"; color=" << q(c)
       << "; fillcolor=" << q(c + "1f") << "; fontcolor=" << q(c) << "; penwidth=2;\n";
    for (const Node* n : members) decl(n, "    ");
    os << "  }\n";
  }
  for (const Node* n : loose) decl(n, "  ");
  std::map<const Value*, std::string> inputs;
  for (const Value* v : g.runtime_inputs()) inputs[v] = "";
  int next_input = 0;
  std::set<std::pair<std::string, std::string>> edges;
  for (const Node* n : part) {
    for (const Value* v : n->inputs()) {
      if (!v) continue;
      std::string from;
      if (const Node* p = v->producer(); p && id.count(p)) {
        from = id[p];
      } else if (auto in = inputs.find(v); in != inputs.end()) {
        if (in->second.empty()) {
          in->second = std::string("i").append(std::to_string(next_input++));
          os << "  " << in->second
             << " [shape=ellipse, fillcolor=\"#dff0d8\", label=" << q(v->name()) << "];\n";
        }
        from = in->second;
      }
      if (!from.empty() && edges.insert({from, id[n]}).second) {
        os << "  " << from << " -> " << id[n] << ";\n";
      }
    }
  }
  os << "}\n";
  return os.str();
}

}  // namespace

std::map<std::string, std::string> rule_colors(const std::vector<std::string>& rules) {
  std::map<std::string, std::string> r;
  const size_t n = sizeof kPalette / sizeof kPalette[0];
  for (const std::string& rule : rules) {
    if (!r.count(rule)) r[rule] = kPalette[r.size() % n];
  }
  return r;
}

FusionGroups fusion_groups(const Graph& fused) {
  FusionGroups f;
  for (const Node* n : fused.nodes()) {
    if (n->fused_by().empty()) continue;
    f.rule_of[n->name()] = n->fused_by();
    for (const std::string& o : n->fused_from()) f.group_of[o] = n->name();
  }
  return f;
}

GraphPicture graph_dot(const Graph& g, const std::map<std::string, std::string>& colors,
                       const FusionGroups* groups) {
  GraphPicture pic;
  const std::vector<const Node*> nodes = drawn_nodes(g);
  pic.nodes = nodes.size();
  if (nodes.size() <= kMaxPictureNodes) {
    pic.overview = picture(g, nodes, colors, groups);
    return pic;
  }
  // Collapsed: the shallowest split into at least 4 blocks, at most 80.
  int depth = 1;
  auto count_blocks = [&](int d) {
    std::set<std::string> b;
    for (const Node* n : nodes) b.insert(block_of(n->name(), d));
    return b.size();
  };
  while (depth < 4 && count_blocks(depth) < 4) ++depth;
  if (count_blocks(depth) > 80 && depth > 1) --depth;
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Node*>> members;
  std::map<const Node*, std::string> block;
  for (const Node* n : nodes) {
    const std::string b = block_of(n->name(), depth);
    if (!members.count(b)) order.push_back(b);
    members[b].push_back(n);
    block[n] = b;
  }
  std::ostringstream os;
  os << "digraph g {\n" << kHeader;
  std::map<std::string, std::string> id;
  for (size_t i = 0; i < order.size(); ++i) {
    const std::string& b = order[i];
    id[b] = std::string("b").append(std::to_string(i));
    int fused = 0;
    std::string rule;
    for (const Node* n : members[b]) {
      std::string r = n->fused_by();
      if (groups) {
        auto it = groups->group_of.find(n->name());
        if (it != groups->group_of.end())
          r = groups->rule_of.count(it->second) ? groups->rule_of.at(it->second) : "";
      }
      if (!r.empty()) {
        ++fused;
        if (rule.empty()) rule = r;
      }
    }
    os << "  " << id[b] << " [label="
       << q(b + "\n" + std::to_string(members[b].size()) + " nodes" +
            (fused ? ", " + std::to_string(fused) + (groups ? " in fusions" : " fused") : ""))
       << ", tooltip=" << q(b);
    if (fused) {
      const std::string c = color_of(colors, rule);
      os << ", color=" << q(c) << ", penwidth=2";
    }
    os << "];\n";
  }
  std::set<std::pair<std::string, std::string>> edges;
  for (const Node* n : nodes) {
    for (const Value* v : n->inputs()) {
      const Node* p = v ? v->producer() : nullptr;
      if (!p || !block.count(p) || block[p] == block[n]) continue;
      if (edges.insert({id[block[p]], id[block[n]]}).second) {
        os << "  " << id[block[p]] << " -> " << id[block[n]] << ";\n";
      }
    }
  }
  os << "}\n";
  pic.overview = os.str();
  for (const std::string& b : order)
    pic.blocks.push_back({b, picture(g, members[b], colors, groups)});
  return pic;
}

std::string dot_to_svg(const std::string& dot_text, std::string* error) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path();
  static std::atomic<int> counter{0};
  const std::string stem =
      (dir / ("nnfuse-dot-" + std::to_string(getpid()) + "-" + std::to_string(counter++))).string();
  const std::string in = stem + ".dot", out = stem + ".svg", log = stem + ".log";
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove(in, ec);
    fs::remove(out, ec);
    fs::remove(log, ec);
  };
  {
    std::ofstream f(in);
    f << dot_text;
    if (!f) {
      if (error) *error = "cannot write " + in;
      return "";
    }
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<std::string> args = {"dot", "-Tsvg", "-o", out, in};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "dot", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    cleanup();
    if (error) *error = "Graphviz's `dot` did not start (install graphviz)";
    return "";
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::ifstream svg(out);
  std::stringstream text;
  text << svg.rdbuf();
  std::string s = text.str();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || s.find("<svg") == std::string::npos) {
    std::ifstream l(log);
    std::stringstream why;
    why << l.rdbuf();
    cleanup();
    if (error) *error = "Graphviz's `dot` failed: " + why.str().substr(0, 300);
    return "";
  }
  cleanup();
  return s.substr(s.find("<svg"));
}

}  // namespace nnfuse
