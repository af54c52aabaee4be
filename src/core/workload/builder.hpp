// Expansion of a parsed workload file into a Step: parameters (with --param overrides),
// repeats, conditions, buffers, ops and buckets, checked field by field with positions. Internal
// to src/core/workload/ (parse_step in workload.cpp is its entry point).
#pragma once

#include <climits>
#include <map>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "workload/detail.hpp"
#include "workload/expr.hpp"

namespace cco::workload::detail {

struct Ref {
  std::string name;
  SourcePos pos;
  bool empty() const { return name.empty(); }
};

struct RawOp {
  StepOp op;
  std::vector<Ref> after;
  Ref a, b, c, send, recv;
  int64_t grad_elements = 0;  // gradient elements (for buckets), 0: not a gradient
  int group = -1;             // index of the buckets element that generated it
};

struct BucketSpec {
  std::string id;
  std::string grads;
  Collective coll = Collective::AllReduce;
  RedOp redop = RedOp::Sum;
  DType dtype = DType::BF16;
  int64_t cap = 0, first_cap = 0;
  StreamId stream = StreamId::Comm;
  std::string description;
  SourcePos pos, grads_pos, id_pos;
};

struct ParamInfo {
  std::string description;
  SourcePos pos;
  bool overridden = false;
};

constexpr std::size_t kMaxElements = 100000;  // ops or buffers after expansion
constexpr std::size_t kMaxVisits = 10000000;  // repeat iterations plus items visited
constexpr int64_t kMaxDim = INT32_MAX;        // GEMM dimensions (int in the kernels)
constexpr int64_t kMaxBytes = int64_t{1} << 40;

/// Buffer and op ids: letters, digits and _ . - : /
bool valid_name(const std::string& s);

class Builder {
 public:
  Builder(std::string file, const StepLoadOptions& opt) : file_(std::move(file)), opt_(opt) {}
  Step build(const Node& root);

 private:
  std::string file_;
  const StepLoadOptions& opt_;
  std::vector<std::pair<std::string, Value>> params_;  // evaluated so far, in order
  std::vector<ParamInfo> param_info_;
  std::vector<std::pair<std::string, int64_t>> vars_;  // repeat variables, innermost last
  std::vector<StepBuffer> buffers_;
  std::vector<RawOp> ops_;
  std::vector<BucketSpec> buckets_;
  std::size_t visits_ = 0;  // repeat iterations and items expanded so far

  [[noreturn]] void fail(SourcePos p, const std::string& msg) const {
    throw StepError(file_, p, msg);
  }

  // ---- values ---------------------------------------------------------------------------------

  std::optional<Value> lookup(const std::string& name) const {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (it->first == name) return Value{false, it->second, {}};
    for (const auto& [n, v] : params_)
      if (n == name) return v;
    if (name == "ranks") return Value{false, opt_.nranks, {}};
    return std::nullopt;
  }

  /// Position of byte `offset` of a string node's decoded text (exact unless escapes precede it).
  static SourcePos pos_in(const Node& str, std::size_t offset) {
    SourcePos p = str.pos;
    int chars = 0;
    for (std::size_t j = 0; j < offset && j < str.s.size(); ++j)
      if ((static_cast<unsigned char>(str.s[j]) & 0xC0) != 0x80) ++chars;
    p.column += 1 + chars;
    return p;
  }

  /// Substitutes every "${...}" of a string node. A string that is exactly one "${...}" keeps the
  /// expression's type (integer or string); otherwise the result is text.
  Value subst(const Node& n) const {
    const std::string& s = n.s;
    std::string out;
    std::size_t j = 0;
    std::optional<Value> whole;
    while (j < s.size()) {
      const std::size_t open = s.find("${", j);
      if (open == std::string::npos) {
        out += s.substr(j);
        break;
      }
      out += s.substr(j, open - j);
      const std::size_t close = s.find('}', open + 2);
      if (close == std::string::npos) fail(pos_in(n, open), "'${' without a closing '}'");
      const std::string expr = s.substr(open + 2, close - open - 2);
      const std::size_t base = open + 2;
      ExprEval ev(
          expr, [this](const std::string& name) { return lookup(name); },
          [&](std::size_t at, const std::string& msg) {
            throw StepError(file_, pos_in(n, base + at),
                            "in \"${" + (expr.size() > 80 ? expr.substr(0, 77) + "..." : expr) +
                                "}\": " + msg);
          });
      Value v = ev.run();
      if (open == 0 && close + 1 == s.size()) whole = v;
      out += v.text();
      j = close + 1;
    }
    if (whole) return *whole;
    return Value{true, 0, out};
  }

  int64_t get_int(const Node& n, const std::string& what) const {
    if (n.type == Node::T::Int) return n.i;
    if (n.type == Node::T::String) {
      const Value v = subst(n);
      if (!v.is_str) return v.i;
      fail(n.pos, what +
                      " must be an integer or a \"${...}\" integer expression, got the string '" +
                      v.s + "'");
    }
    fail(n.pos,
         what + " must be an integer or a \"${...}\" integer expression, got " + type_name(n.type));
  }

  std::string get_str(const Node& n, const std::string& what) const {
    if (n.type != Node::T::String)
      fail(n.pos, what + " must be a string, got " + type_name(n.type));
    return subst(n).text();
  }

  /// A string taken as it is (no expressions): the schema, names of the workload.
  std::string literal(const Node& n, const std::string& what) const {
    if (n.type != Node::T::String)
      fail(n.pos, what + " must be a string, got " + type_name(n.type));
    return n.s;
  }

  int64_t ranged(const Node& n, const std::string& what, int64_t lo, int64_t hi) const {
    const int64_t v = get_int(n, what);
    if (v < lo || v > hi)
      fail(n.pos, what + " is " + std::to_string(v) + "; it must be in " + std::to_string(lo) +
                      ".." + std::to_string(hi));
    return v;
  }

  DType get_dtype(const Node& n, const std::string& what) const {
    const std::string s = get_str(n, what);
    try {
      return parse_dtype(s);
    } catch (const Error& e) {
      fail(n.pos, what + ": " + e.what());
    }
  }

  StreamId get_stream(const Node& n, const std::string& what) const {
    const std::string s = get_str(n, what);
    if (s == "compute") return StreamId::Compute;
    if (s == "comm") return StreamId::Comm;
    fail(n.pos, what + " is '" + s + "'; the streams are \"compute\" and \"comm\"");
  }

  Ref get_ref(const Node& n, const std::string& what) const { return Ref{get_str(n, what), n.pos}; }

  void check_fields(const Node& obj, const std::vector<std::string>& allowed,
                    const std::string& what) const {
    for (std::size_t j = 0; j < obj.keys.size(); ++j) {
      if (std::find(allowed.begin(), allowed.end(), obj.keys[j]) != allowed.end()) continue;
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(obj.key_pos[j],
           "unknown field '" + obj.keys[j] + "' in " + what + " (fields: " + list + ")");
    }
  }

  const Node& need(const Node& obj, const char* key, const std::string& what) const {
    const Node* v = obj.get(key);
    if (!v) fail(obj.pos, what + " needs the field '" + key + "'");
    return *v;
  }

  void need_type(const Node& n, Node::T t, const std::string& what) const {
    if (n.type != t) fail(n.pos, what + " must be " + type_name(t) + ", got " + type_name(n.type));
  }

  /// The size of a memory-bound op or collective: exactly one of "bytes" and "elements".
  const Node& size_field(const Node& obj, const std::string& what) const {
    const Node* b = obj.get("bytes");
    const Node* e = obj.get("elements");
    if (b && e) fail(obj.key_at("elements"), what + " has both 'bytes' and 'elements': give one");
    if (!b && !e) fail(obj.pos, what + " needs the field 'bytes' or 'elements'");
    return b ? *b : *e;
  }

  /// Whether an element's "if" allows it (absent: yes).
  bool included(const Node& obj) const {
    const Node* c = obj.get("if");
    return !c || get_int(*c, "field 'if'") != 0;
  }

  // ---- sections -----------------------------------------------------------------------------

  void header(const Node& root, Step& step) const;
  void parameters(const Node& params);
  template <class F>
  void repeat(const Node& obj, const std::string& what, const F& each_item);
  void buffer_element(const Node& el);
  void buffer(const Node& obj);
  void op_element(const Node& el);
  void op(const Node& obj);
  // op()'s fields per kind.
  void gemm_fields(const Node& obj, StepOp& o, RawOp& r, const std::string& what) const;
  void membound_size(const Node& obj, StepOp& o, const std::string& what) const;
  void collective_fields(const Node& obj, StepOp& o, RawOp& r, const std::string& what) const;
  void bucket_element(const Node& obj);
  std::vector<RawOp> expand_buckets();
  void finish(Step& step, std::vector<RawOp>& raw) const;

  // finish()'s passes.
  using Index = std::map<std::string, int>;                          // name -> index
  using Links = std::vector<std::vector<std::pair<int, SourcePos>>>;  // per op: (index, where)
  void index_names(const Step& step, const std::vector<RawOp>& raw, Index& buf_index,
                   Index& op_index, std::map<std::string, std::vector<int>>& groups) const;
  Links resolve_buffers(Step& step, std::vector<RawOp>& raw, const Index& buf_index) const;
  Links resolve_after(std::vector<RawOp>& raw, const Index& op_index,
                      const std::map<std::string, std::vector<int>>& groups) const;
  std::vector<int> issue_order(const std::vector<RawOp>& raw, const Links& after_src,
                               std::vector<std::vector<int>>& dependents) const;
  void check_streams(const std::vector<RawOp>& raw) const;
  void check_reads(const Step& step, const Links& reads,
                   const std::vector<std::vector<int>>& dependents,
                   const std::vector<int>& stream_next) const;
};

}  // namespace cco::workload::detail
