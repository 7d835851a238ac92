#include "ir/dump.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ir/atomic_file.h"
#include "ir/error.h"

namespace nnfuse {

namespace {

using Json = nlohmann::ordered_json;

// --- the tree shared by JSON and YAML ---

// A float attribute as the double with the same shortest decimal form (0.1f -> 0.1, not
// 0.100000001490116); non-finite values become strings, which JSON can hold.
Json float_json(float f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof(buf), f);
  return std::strtod(std::string(buf, res.ptr).c_str(), nullptr);
}

Json shape_json(const Shape& s) {
  if (!s.has_rank) return nullptr;
  Json dims = Json::array();
  for (const Dim& d : s.dims) {
    if (d.known()) {
      dims.push_back(d.value);
    } else {
      dims.push_back(d.param.empty() ? "?" : d.param);
    }
  }
  return dims;
}

Json value_json(const Value* v) {
  return {
      {"name", v->name()}, {"dtype", dtype_name(v->dtype())}, {"shape", shape_json(v->shape())}};
}

Json attr_json(const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::kFloat:
      return float_json(a.f);
    case Attribute::Kind::kInt:
      return a.i;
    case Attribute::Kind::kString:
      return a.s;
    case Attribute::Kind::kTensor:
      return "tensor<" + dtype_name(a.t.dtype()) + dims_str(a.t.shape()) + ">";
    case Attribute::Kind::kFloats: {
      Json xs = Json::array();
      for (float f : a.floats) xs.push_back(float_json(f));
      return xs;
    }
    case Attribute::Kind::kInts:
      return a.ints;
    case Attribute::Kind::kStrings:
      return a.strings;
    case Attribute::Kind::kGraph:
      return "<graph>";
  }
  return nullptr;
}

Json node_json(const Node* n) {
  Json ins = Json::array(), outs = Json::array(), attrs = Json::object();
  for (const Value* v : n->inputs()) ins.push_back(v ? v->name() : "");
  for (const Value* v : n->outputs()) outs.push_back(v ? v->name() : "");
  for (auto& [k, a] : n->attrs()) attrs[k] = attr_json(a);
  Json j = {{"name", n->name()}, {"op_type", n->op_type()}, {"domain", n->domain()},
            {"inputs", ins},     {"outputs", outs},         {"attributes", attrs}};
  if (!n->fused_by().empty()) {
    j["fused_by"] = n->fused_by();
    j["fused_from"] = n->fused_from();
  }
  return j;
}

Json graph_json(const Graph& g) {
  Json opsets = Json::object();
  for (auto& [domain, version] : g.opsets) opsets[domain.empty() ? "ai.onnx" : domain] = version;
  Json inputs = Json::array(), outputs = Json::array(), inits = Json::array(),
       value_info = Json::array(), nodes = Json::array();
  for (const Value* v : g.runtime_inputs()) inputs.push_back(value_json(v));
  for (const Value* v : g.outputs()) outputs.push_back(value_json(v));
  for (const Value* v : g.values()) {
    if (v->is_constant()) {
      inits.push_back(value_json(v));
    } else if (!v->is_graph_input() && !v->is_graph_output()) {
      value_info.push_back(value_json(v));
    }
  }
  for (const Node* n : g.nodes()) nodes.push_back(node_json(n));
  return {{"name", g.name},     {"opsets", opsets},      {"inputs", inputs},
          {"outputs", outputs}, {"initializers", inits}, {"value_info", value_info},
          {"nodes", nodes}};
}

// Names from a model may hold invalid UTF-8; it becomes U+FFFD rather than an exception.
std::string dump_text(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// --- YAML, written by hand from the same tree ---

bool yaml_plain_ok(const std::string& s) {
  if (s.empty()) return false;
  char c0 = s[0];
  if (!((c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z') || c0 == '_')) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-' || c == '/';
    if (!ok) return false;
  }
  // Words YAML 1.1 or 1.2 would read as booleans or null.
  std::string lower;
  for (char c : s) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  for (const char* w : {"true", "false", "yes", "no", "on", "off", "y", "n", "null"}) {
    if (lower == w) return false;
  }
  return true;
}

// A JSON string literal is a valid YAML double-quoted scalar.
std::string yaml_string(const std::string& s) { return yaml_plain_ok(s) ? s : dump_text(s, -1); }

std::string yaml_scalar(const Json& j) {
  if (j.is_string()) return yaml_string(j.get<std::string>());
  if (j.is_null()) return "null";
  std::string s = j.dump();
  // YAML 1.1 readers want a '.' in a float with an exponent ("1e-05" -> "1.0e-05").
  if (j.is_number_float() && s.find('.') == std::string::npos) {
    size_t e = s.find_first_of("eE");
    s.insert(e == std::string::npos ? s.size() : e, ".0");
  }
  return s;
}

bool yaml_flow(const Json& j) {
  if (j.is_primitive() || j.empty()) return true;
  if (!j.is_array()) return false;
  for (const Json& x : j) {
    if (!x.is_primitive()) return false;
  }
  return true;
}

std::string yaml_flow_text(const Json& j) {
  if (j.is_object()) return "{}";  // only empty objects are written in flow style
  if (!j.is_array()) return yaml_scalar(j);
  std::string s = "[";
  for (size_t i = 0; i < j.size(); ++i) s += (i ? ", " : "") + yaml_scalar(j[i]);
  return s + "]";
}

void yaml_block(const Json& j, int indent, std::string& out);

void yaml_block(const Json& j, int indent, std::string& out) {
  std::string pad(static_cast<size_t>(indent), ' ');
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) {
      out += pad + yaml_string(k) + ":";
      if (yaml_flow(v)) {
        out += " " + yaml_flow_text(v) + "\n";
      } else {
        out += "\n";
        yaml_block(v, indent + 2, out);
      }
    }
    return;
  }
  for (const Json& item : j) {
    if (yaml_flow(item)) {
      out += pad + "- " + yaml_flow_text(item) + "\n";
    } else if (item.is_object()) {
      // The item's first key goes on the dash's line; the rest line up under it.
      std::string body;
      yaml_block(item, indent + 2, body);
      out += pad + "- " + body.substr(static_cast<size_t>(indent) + 2);
    } else {
      out += pad + "-\n";
      yaml_block(item, indent + 2, out);
    }
  }
}

// --- DOT ---

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out;
}

// A quoted label from lines, each escaped, joined by DOT's "\n".
std::string dot_label(std::initializer_list<std::string> lines) {
  std::string s = "\"";
  bool first = true;
  for (const std::string& l : lines) {
    s += (first ? "" : "\\n") + dot_escape(l);
    first = false;
  }
  return s + "\"";
}

// "n3": a DOT node id (built without `"n" + std::to_string(i)`, which trips GCC 12's
// -Wrestrict false positive).
std::string dot_id(char kind, size_t i) {
  std::string id(1, kind);
  id += std::to_string(i);
  return id;
}

std::string typed_shape(const Value* v) { return dtype_name(v->dtype()) + v->shape().str(); }

}  // namespace

std::string graph_to_json(const Graph& g) { return dump_text(graph_json(g), 2) + "\n"; }

std::string graph_to_yaml(const Graph& g) {
  std::string out = "# nnfuse graph dump\n";
  yaml_block(graph_json(g), 0, out);
  return out;
}

std::string graph_to_dot(const Graph& g) {
  std::ostringstream os;
  os << "digraph " << dot_label({g.name.empty() ? "graph" : g.name}) << " {\n"
     << "  graph [rankdir=TB, fontname=\"Helvetica\"];\n"
     << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef2f8\", "
        "fontname=\"Helvetica\"];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=10];\n";

  // Where each value comes from: a node id or a graph-input id.
  std::map<const Value*, std::string> source;
  std::vector<Value*> inputs = g.runtime_inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string id = dot_id('i', i);
    source[inputs[i]] = id;
    os << "  " << id << " [shape=ellipse, style=filled, fillcolor=\"#dff0d8\", label="
       << dot_label({inputs[i]->name(), typed_shape(inputs[i])}) << "];\n";
  }
  std::vector<Node*> nodes = g.nodes();
  int clusters = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    std::string id = dot_id('n', i);
    for (const Value* v : n->outputs()) {
      if (v) source[v] = id;
    }
    std::string decl = id + " [label=" + dot_label({n->op_type(), n->name()}) + "]";
    if (n->fused_by().empty()) {
      os << "  " << decl << ";\n";
      continue;
    }
    std::string from;
    for (size_t k = 0; k < n->fused_from().size(); ++k) {
      from += (k ? ", " : " ") + n->fused_from()[k];
    }
    os << "  subgraph cluster_" << clusters++ << " {\n"
       << "    label=" << dot_label({n->fused_by() + ":" + from}) << ";\n"
       << "    style=\"rounded,dashed\"; color=\"#c0392b\"; fontcolor=\"#c0392b\";\n"
       << "    " << id << " [label=" << dot_label({n->op_type(), n->name()})
       << ", fillcolor=\"#fde2dd\"];\n"
       << "  }\n";
  }
  const std::vector<Value*>& outputs = g.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    os << "  o" << i << " [shape=ellipse, style=filled, fillcolor=\"#fcf3cf\", label="
       << dot_label({outputs[i]->name(), typed_shape(outputs[i])}) << "];\n";
  }
  // Edges: one per use of a non-constant value, labelled with the value and its shape.
  auto edge = [&](const Value* v, const std::string& to) {
    auto it = source.find(v);
    if (it == source.end()) return;  // a constant, or a value nothing defines
    os << "  " << it->second << " -> " << to
       << " [label=" << dot_label({v->name(), v->shape().str()}) << "];\n";
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const Value* v : nodes[i]->inputs()) {
      if (v) edge(v, dot_id('n', i));
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) edge(outputs[i], dot_id('o', i));
  os << "}\n";
  return os.str();
}

void dump_graph(const Graph& g, const std::string& format, const std::string& path) {
  std::string text;
  if (format == "json") {
    text = graph_to_json(g);
  } else if (format == "yaml") {
    text = graph_to_yaml(g);
  } else if (format == "dot") {
    text = graph_to_dot(g);
  } else {
    fail(ErrorKind::kInvalidArgument, "unknown graph dump format \"", format,
         "\" (accepted: yaml, json, dot)");
  }
  write_file_atomically(path, "the graph dump", [&](std::ostream& out) { out << text; });
}

}  // namespace nnfuse
