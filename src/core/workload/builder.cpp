#include "workload/builder.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <sstream>

namespace cco::workload::detail {

using namespace cco::model;

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  return s.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-:/") ==
         std::string::npos;
}

void Builder::header(const Node& root, Step& step) const {
  check_fields(root,
               {"schema", "schema_version", "name", "description", "parameters", "buffers", "ops"},
               "the workload");
  const Node& schema = need(root, "schema", "the workload");
  if (literal(schema, "field 'schema'") != kWorkloadSchema)
    fail(schema.pos, "field 'schema' is '" + schema.s + "'; a workload file has \"schema\": \"" +
                         kWorkloadSchema + "\"");
  const Node& ver = need(root, "schema_version", "the workload");
  const std::string v = literal(ver, "field 'schema_version'");
  int major = -1, minor = -1, patch = -1;
  char tail = 0;
  if (std::sscanf(v.c_str(), "%d.%d.%d%c", &major, &minor, &patch, &tail) != 3 || major < 0 ||
      minor < 0 || patch < 0)
    fail(ver.pos,
         "field 'schema_version' is '" + v + "'; expected MAJOR.MINOR.PATCH such as \"1.0.0\"");
  if (major != 1 || minor > 0)
    fail(ver.pos, "schema_version " + v + " is not supported: this ccoverlap reads " +
                      std::string(kWorkloadSchemaVersion) + " (and any 1.0.x)");
  step.schema_version = v;
  const Node& nm = need(root, "name", "the workload");
  step.name = literal(nm, "field 'name'");
  if (step.name.empty()) fail(nm.pos, "field 'name' must not be empty");
  if (const Node* d = root.get("description"))
    step.description = literal(*d, "field 'description'");
}

void Builder::parameters(const Node& params) {
  need_type(params, Node::T::Object, "field 'parameters'");
  std::set<std::string> used;
  for (std::size_t j = 0; j < params.keys.size(); ++j) {
    const std::string& name = params.keys[j];
    const SourcePos kp = params.key_pos[j];
    if (!is_identifier(name))
      fail(kp, "parameter name '" + name +
                   "' must be an identifier (letters, digits and '_', not starting with a digit)");
    if (reserved_names().count(name)) fail(kp, "parameter name '" + name + "' is reserved");
    const Node* def = &params.values[j];
    ParamInfo info{{}, kp, false};
    if (def->type == Node::T::Object) {
      check_fields(*def, {"default", "description"}, "parameter '" + name + "'");
      if (const Node* d = def->get("description"))
        info.description = literal(*d, "field 'description'");
      def = &need(*def, "default", "parameter '" + name + "'");
    }
    Value v;
    if (def->type == Node::T::Int) {
      v = Value{false, def->i, {}};
    } else if (def->type == Node::T::String) {
      v = subst(*def);
    } else {
      fail(def->pos, "parameter '" + name +
                         "' must be an integer, a string or {\"default\": ..., "
                         "\"description\": ...}, got " +
                         std::string(type_name(def->type)));
    }
    for (const auto& [k, text] : opt_.overrides) {
      if (k != name) continue;
      used.insert(name);
      info.overridden = true;
      if (v.is_str) {
        v.s = text;
        continue;
      }
      int64_t x = 0;
      const auto r = std::from_chars(text.data(), text.data() + text.size(), x);
      if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
        throw StepError(file_, {},
                        "--param " + name + "=" + text + ": parameter '" + name +
                            "' takes an integer (its default is " + std::to_string(v.i) + ")");
      v.i = x;
    }
    params_.emplace_back(name, v);
    param_info_.push_back(info);
  }
}

template <class F>
void Builder::repeat(const Node& obj, const std::string& what, const F& each_item) {
  check_fields(obj, {"repeat", "as", "items", "reverse", "if"}, "a repeat in " + what);
  if (!included(obj)) return;
  const int64_t count =
      ranged(*obj.get("repeat"), "field 'repeat'", 0, static_cast<int64_t>(kMaxElements));
  const Node& as = need(obj, "as", "a repeat");
  const std::string var = literal(as, "field 'as'");
  if (!is_identifier(var)) fail(as.pos, "field 'as' must be an identifier, got '" + var + "'");
  if (reserved_names().count(var)) fail(as.pos, "'" + var + "' is reserved");
  for (const auto& p : params_)
    if (p.first == var)
      fail(as.pos, "repeat variable '" + var + "' would hide the parameter of that name");
  for (const auto& p : vars_)
    if (p.first == var)
      fail(as.pos, "repeat variable '" + var + "' would hide an enclosing repeat's variable");
  const Node& items = need(obj, "items", "a repeat");
  need_type(items, Node::T::Array, "field 'items'");
  bool reverse = false;
  if (const Node* rv = obj.get("reverse"))
    reverse = rv->type == Node::T::Bool ? rv->b : get_int(*rv, "field 'reverse'") != 0;
  for (int64_t r = 0; r < count; ++r) {
    // Nested repeats of empty or excluded items never reach the op limit: bound the work itself.
    visits_ += items.items.size() + 1;
    if (visits_ > kMaxVisits) fail(obj.pos, "the repeats expand to more than 10 million elements");
    vars_.emplace_back(var, reverse ? count - 1 - r : r);
    for (const auto& it : items.items) each_item(it);
    vars_.pop_back();
  }
}

void Builder::buffer_element(const Node& el) {
  need_type(el, Node::T::Object, "a buffer");
  if (el.get("repeat"))
    repeat(el, "buffers", [this](const Node& it) { buffer_element(it); });
  else
    buffer(el);
}

void Builder::buffer(const Node& obj) {
  check_fields(obj, {"name", "dtype", "elements", "description", "if"}, "a buffer");
  if (!included(obj)) return;
  StepBuffer b;
  const Node& nm = need(obj, "name", "a buffer");
  b.name = get_str(nm, "field 'name'");
  b.pos = obj.pos;
  if (!valid_name(b.name))
    fail(nm.pos, "buffer name '" + b.name +
                     "' must be non-empty and hold only letters, digits and _ . - : /");
  const std::string what = "buffer '" + b.name + "'";
  if (const Node* d = obj.get("dtype")) b.dtype = get_dtype(*d, "field 'dtype' of " + what);
  b.elements = ranged(need(obj, "elements", what), "field 'elements' of " + what, 1, kMaxBytes);
  if (const Node* d = obj.get("description")) get_str(*d, "field 'description'");
  if (buffers_.size() >= kMaxElements) fail(obj.pos, "more than 100000 buffers");
  buffers_.push_back(std::move(b));
}

void Builder::op_element(const Node& el) {
  need_type(el, Node::T::Object, "an op");
  if (el.get("repeat"))
    repeat(el, "ops", [this](const Node& it) { op_element(it); });
  else if (el.get("buckets"))
    bucket_element(el);
  else
    op(el);
}

void Builder::op(const Node& obj) {
  const Node& kind_n = need(obj, "kind", "an op");
  const std::string kind = get_str(kind_n, "field 'kind'");
  std::vector<std::string> fields = {"id", "kind", "stream", "after", "description", "if"};
  StepOp o;
  o.pos = obj.pos;
  if (kind == "gemm") {
    o.kind = OpKind::Gemm;
    fields.insert(fields.end(),
                  {"m", "n", "k", "dtype", "engine", "a", "b", "c", "grad", "grad_elements"});
  } else if (kind == "elementwise" || kind == "norm") {
    o.kind = kind == "norm" ? OpKind::Norm : OpKind::Elementwise;
    fields.insert(fields.end(), {"bytes", "elements", "dtype", "grad", "grad_elements"});
  } else {
    bool ok = false;
    try {
      o.coll = parse_collective(kind);
      ok = o.coll != Collective::Broadcast && o.coll != Collective::Reduce &&
           o.coll != Collective::Gather && o.coll != Collective::Scatter;
    } catch (const Error&) {
    }
    if (!ok)
      fail(kind_n.pos, "unknown op kind '" + kind +
                           "' (kinds: gemm, elementwise, norm, allreduce, allgather, "
                           "reducescatter, alltoall, sendrecv)");
    o.kind = OpKind::Collective;
    fields.insert(fields.end(), {"bytes", "elements", "dtype", "op", "send", "recv"});
  }
  check_fields(obj, fields, kind + " op");
  if (!included(obj)) return;

  RawOp r;
  const Node& id_n = need(obj, "id", kind + " op");
  o.id = get_str(id_n, "field 'id'");
  if (!valid_name(o.id))
    fail(id_n.pos,
         "op id '" + o.id + "' must be non-empty and hold only letters, digits and _ . - : /");
  const std::string what = kind + " op '" + o.id + "'";
  auto field = [&](const char* f) { return "field '" + std::string(f) + "' of " + what; };
  o.stream = o.is_compute() ? StreamId::Compute : StreamId::Comm;
  if (const Node* s = obj.get("stream")) o.stream = get_stream(*s, field("stream"));
  if (const Node* d = obj.get("description")) o.description = get_str(*d, field("description"));
  if (const Node* a = obj.get("after")) {
    need_type(*a, Node::T::Array, field("after"));
    for (const auto& e : a->items) {
      if (e.type == Node::T::Object) {
        check_fields(e, {"op", "if"}, "an entry of " + field("after"));
        if (!included(e)) continue;
        r.after.push_back(get_ref(need(e, "op", "an entry of " + field("after")), field("after")));
      } else if (e.type == Node::T::String) {
        r.after.push_back(get_ref(e, field("after")));
      } else {
        fail(e.pos, "an entry of " + field("after") +
                        " must be an op id or {\"op\": ..., \"if\": ...}, got " +
                        type_name(e.type));
      }
    }
  }
  if (const Node* d = obj.get("dtype")) o.dtype = get_dtype(*d, field("dtype"));

  if (o.kind == OpKind::Gemm)
    gemm_fields(obj, o, r, what);
  else if (o.is_membound())
    membound_size(obj, o, what);
  else
    collective_fields(obj, o, r, what);
  if (const Node* g = obj.get("grad")) {
    o.grad = get_str(*g, field("grad"));
    if (o.grad.empty()) fail(g->pos, field("grad") + " must not be empty");
    if (const Node* ge = obj.get("grad_elements")) {
      r.grad_elements = ranged(*ge, field("grad_elements"), 1, kMaxBytes);
    } else if (o.kind == OpKind::Gemm) {
      r.grad_elements = o.m * o.n;
    } else {
      fail(obj.pos, what + " has 'grad' and needs 'grad_elements' (the gradient's element count)");
    }
  } else if (obj.get("grad_elements")) {
    fail(obj.key_at("grad_elements"),
         field("grad_elements") + " needs 'grad' (the bucket tag) beside it");
  }
  if (ops_.size() >= kMaxElements) fail(obj.pos, "more than 100000 ops");
  r.op = std::move(o);
  ops_.push_back(std::move(r));
}

namespace {
std::string field_of(const char* f, const std::string& what) {
  return "field '" + std::string(f) + "' of " + what;
}
}  // namespace

/// A GEMM's m, n, k, engine and buffers.
void Builder::gemm_fields(const Node& obj, StepOp& o, RawOp& r, const std::string& what) const {
  auto field = [&](const char* f) { return field_of(f, what); };
  o.m = ranged(need(obj, "m", what), field("m"), 1, kMaxDim);
  o.n = ranged(need(obj, "n", what), field("n"), 1, kMaxDim);
  o.k = ranged(need(obj, "k", what), field("k"), 1, kMaxDim);
  if (const Node* e = obj.get("engine")) {
    const std::string en = get_str(*e, field("engine"));
    if (en == "cublaslt")
      o.engine = GemmEngine::CublasLt;
    else if (en == "builtin")
      o.engine = GemmEngine::Builtin;
    else
      fail(e->pos,
           field("engine") + " is '" + en + "'; engines are \"cublaslt\" and \"builtin\"");
    if (o.engine == GemmEngine::Builtin && o.m >= int64_t{64} * 65535)
      fail(obj.get("m")->pos, field("m") + " is " + std::to_string(o.m) +
                                  "; the built-in GEMM takes m below 4194240 (grid limit)");
  }
  if (const Node* x = obj.get("a")) r.a = get_ref(*x, field("a"));
  if (const Node* x = obj.get("b")) r.b = get_ref(*x, field("b"));
  if (const Node* x = obj.get("c")) r.c = get_ref(*x, field("c"));
}

/// A memory-bound op's size: bytes, or elements of its dtype rounded up to whole floats.
void Builder::membound_size(const Node& obj, StepOp& o, const std::string& what) const {
  auto field = [&](const char* f) { return field_of(f, what); };
  const int64_t esz = static_cast<int64_t>(dtype_size(o.dtype));
  const Node& bn = size_field(obj, what);
  if (obj.get("bytes")) {
    o.bytes = ranged(bn, field("bytes"), 4, kMaxBytes);
    if (obj.get("dtype"))
      fail(obj.key_at("dtype"), field("dtype") + " goes with 'elements', not 'bytes'");
    if (o.bytes % 4 != 0)
      fail(bn.pos,
           field("bytes") + " is " + std::to_string(o.bytes) +
               "; the memory-bound kernel works on floats, so it must be a multiple of 4");
  } else {
    // elements of `dtype`, rounded up to whole floats of the kernel
    o.bytes = (ranged(bn, field("elements"), 1, kMaxBytes / esz) * esz + 3) / 4 * 4;
  }
  o.dtype = DType::F32;
}

/// A collective's size (a multiple of what its ranks need), reduction and buffers.
void Builder::collective_fields(const Node& obj, StepOp& o, RawOp& r, const std::string& what) const {
  auto field = [&](const char* f) { return field_of(f, what); };
  const int64_t esz = static_cast<int64_t>(dtype_size(o.dtype));
  const Node& bn = size_field(obj, what);
  o.bytes = obj.get("bytes") ? ranged(bn, field("bytes"), 1, kMaxBytes)
                             : ranged(bn, field("elements"), 1, kMaxBytes / esz) * esz;
  const bool per_rank = o.coll == Collective::AllGather || o.coll == Collective::ReduceScatter ||
                        o.coll == Collective::AllToAll;
  const int64_t gran = esz * (per_rank ? opt_.nranks : 1);
  if (o.bytes % gran != 0)
    fail(bn.pos, (obj.get("bytes") ? field("bytes") + " is " + std::to_string(o.bytes)
                                   : field("elements") + " is " + std::to_string(o.bytes / esz)) +
                     "; " + to_string(o.coll) + " of " + to_string(o.dtype) + " on " +
                     std::to_string(opt_.nranks) + " ranks needs a multiple of " +
                     (obj.get("bytes") ? std::to_string(gran) + " bytes"
                                       : std::to_string(gran / esz) + " elements"));
  if (const Node* x = obj.get("op")) {
    if (o.coll != Collective::AllReduce && o.coll != Collective::ReduceScatter)
      fail(obj.key_at("op"),
           "field 'op' (the reduction) applies to allreduce and reducescatter only");
    try {
      o.redop = parse_redop(get_str(*x, field("op")));
    } catch (const StepError&) {
      throw;
    } catch (const Error& e) {
      fail(x->pos, field("op") + ": " + e.what());
    }
  }
  if (const Node* x = obj.get("send")) r.send = get_ref(*x, field("send"));
  if (const Node* x = obj.get("recv")) r.recv = get_ref(*x, field("recv"));
}

void Builder::bucket_element(const Node& el) {
  check_fields(el, {"buckets", "if"}, "a buckets element");
  const Node& b = *el.get("buckets");
  need_type(b, Node::T::Object, "field 'buckets'");
  check_fields(b,
               {"id", "grads", "collective", "dtype", "op", "cap_bytes", "first_cap_bytes",
                "stream", "description"},
               "buckets");
  if (!included(el)) return;
  BucketSpec s;
  s.pos = el.pos;
  const Node& id_n = need(b, "id", "buckets");
  s.id = get_str(id_n, "field 'id' of buckets");
  s.id_pos = id_n.pos;
  if (!valid_name(s.id))
    fail(id_n.pos,
         "buckets id '" + s.id + "' must be non-empty and hold only letters, digits and _ . - : /");
  const std::string what = "buckets '" + s.id + "'";
  auto field = [&](const char* f) { return "field '" + std::string(f) + "' of " + what; };
  const Node& g = need(b, "grads", what);
  s.grads = get_str(g, field("grads"));
  s.grads_pos = g.pos;
  if (const Node* c = b.get("collective")) {
    const std::string cn = get_str(*c, field("collective"));
    if (cn == "allreduce")
      s.coll = Collective::AllReduce;
    else if (cn == "reducescatter")
      s.coll = Collective::ReduceScatter;
    else
      fail(c->pos, field("collective") + " is '" + cn +
                       "'; buckets are \"allreduce\" or \"reducescatter\"");
  }
  if (const Node* d = b.get("dtype")) s.dtype = get_dtype(*d, field("dtype"));
  if (const Node* x = b.get("op")) {
    try {
      s.redop = parse_redop(get_str(*x, field("op")));
    } catch (const StepError&) {
      throw;
    } catch (const Error& e) {
      fail(x->pos, field("op") + ": " + e.what());
    }
  }
  s.cap = ranged(need(b, "cap_bytes", what), field("cap_bytes"), 1, kMaxBytes);
  s.first_cap = s.cap;
  if (const Node* f = b.get("first_cap_bytes"))
    s.first_cap = ranged(*f, field("first_cap_bytes"), 1, kMaxBytes);
  if (const Node* st = b.get("stream")) s.stream = get_stream(*st, field("stream"));
  if (const Node* d = b.get("description")) s.description = get_str(*d, field("description"));
  buckets_.push_back(std::move(s));
}

/// Turns each buckets element into collectives, DDP's way: gradients in the order their ops are
/// declared (the order backward produces them) fill a bucket until it holds at least the cap
/// (first_cap for the first bucket); a bucket's collective waits for all its gradients and is
/// declared right after the last of them. Returns the declaration list with them in place.
std::vector<RawOp> Builder::expand_buckets() {
  std::map<std::string, std::size_t> tag_owner;
  std::vector<std::vector<RawOp>> after_op(ops_.size());  // generated ops to place after op i
  for (std::size_t bi = 0; bi < buckets_.size(); ++bi) {
    const auto& s = buckets_[bi];
    if (auto [it, fresh] = tag_owner.emplace(s.grads, bi); !fresh)
      fail(s.grads_pos, "gradients '" + s.grads + "' are already bucketed by buckets '" +
                            buckets_[it->second].id + "' (line " +
                            std::to_string(buckets_[it->second].pos.line) + ")");
    std::vector<std::size_t> grads;
    for (std::size_t i = 0; i < ops_.size(); ++i)
      if (ops_[i].op.grad == s.grads) grads.push_back(i);
    if (grads.empty()) fail(s.grads_pos, "no op has \"grad\": \"" + s.grads + "\"");
    const int64_t esz = static_cast<int64_t>(dtype_size(s.dtype));
    const int64_t gran = s.coll == Collective::ReduceScatter ? opt_.nranks : 1;
    std::vector<std::size_t> cur;
    int64_t elems = 0, cap = s.first_cap;
    int index = 0;
    auto close = [&]() {
      RawOp r;
      StepOp& o = r.op;
      o.id = s.id + "_" + std::to_string(index);
      o.kind = OpKind::Collective;
      o.coll = s.coll;
      o.redop = s.redop;
      o.dtype = s.dtype;
      o.stream = s.stream;
      o.pos = s.pos;
      r.group = static_cast<int>(bi);
      o.bytes = (elems + gran - 1) / gran * gran * esz;
      std::string names;
      for (auto g : cur) {
        r.after.push_back(Ref{ops_[g].op.id, s.pos});
        names += (names.empty() ? "" : ", ") + ops_[g].op.id;
      }
      o.description = (s.description.empty() ? "" : s.description + ": ") + "bucket " +
                      std::to_string(index) + " of " + s.id + " (" + names + ")";
      after_op[cur.back()].push_back(std::move(r));
      ++index;
      cur.clear();
      elems = 0;
      cap = s.cap;
    };
    for (auto g : grads) {
      cur.push_back(g);
      elems += ops_[g].grad_elements;
      if (elems * esz >= cap) close();
    }
    if (!cur.empty()) close();
  }
  std::vector<RawOp> out;
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    out.push_back(std::move(ops_[i]));
    for (auto& g : after_op[i]) out.push_back(std::move(g));
  }
  if (out.size() > kMaxElements) fail({}, "more than 100000 ops after bucketing");
  return out;
}

/// Resolves names, orders the ops and checks everything that needs the whole step, in passes.
void Builder::finish(Step& step, std::vector<RawOp>& raw) const {
  step.buffers = buffers_;
  Index buf_index, op_index;
  std::map<std::string, std::vector<int>> groups;  // buckets id -> its collectives
  index_names(step, raw, buf_index, op_index, groups);
  const Links reads = resolve_buffers(step, raw, buf_index);
  const Links after_src = resolve_after(raw, op_index, groups);
  std::vector<std::vector<int>> dependents;
  const std::vector<int> order = issue_order(raw, after_src, dependents);
  check_streams(raw);
  // The ops in place, and each one's neighbours on its stream in issue order.
  const std::size_t n = raw.size();
  step.ops.reserve(n);
  for (auto& r : raw) step.ops.push_back(r.op);
  step.order = order;
  step.stream_prev.assign(n, -1);
  std::vector<int> stream_next(n, -1);
  int last[2] = {-1, -1};
  for (int v : order) {
    const int s = static_cast<int>(step.ops[static_cast<std::size_t>(v)].stream);
    step.stream_prev[static_cast<std::size_t>(v)] = last[s];
    if (last[s] >= 0) stream_next[static_cast<std::size_t>(last[s])] = v;
    last[s] = v;
  }
  check_reads(step, reads, dependents, stream_next);
}

/// Buffer and op ids are unique, buckets ids unique and no op's; `groups`: each buckets id's
/// collectives.
void Builder::index_names(const Step& step, const std::vector<RawOp>& raw, Index& buf_index,
                          Index& op_index, std::map<std::string, std::vector<int>>& groups) const {
  for (std::size_t i = 0; i < step.buffers.size(); ++i) {
    const auto& b = step.buffers[i];
    if (auto [it, fresh] = buf_index.emplace(b.name, static_cast<int>(i)); !fresh)
      fail(b.pos, "duplicate buffer name '" + b.name + "' (first at line " +
                      std::to_string(step.buffers[static_cast<std::size_t>(it->second)].pos.line) +
                      ")");
  }
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto& o = raw[i].op;
    if (auto [it, fresh] = op_index.emplace(o.id, static_cast<int>(i)); !fresh)
      fail(o.pos, "duplicate op id '" + o.id + "' (first at line " +
                      std::to_string(raw[static_cast<std::size_t>(it->second)].op.pos.line) + ")");
  }
  for (std::size_t bi = 0; bi < buckets_.size(); ++bi) {
    const auto& s = buckets_[bi];
    if (op_index.count(s.id)) fail(s.id_pos, "buckets id '" + s.id + "' is also an op id");
    if (groups.count(s.id)) fail(s.id_pos, "duplicate buckets id '" + s.id + "'");
    auto& g = groups[s.id];
    for (std::size_t i = 0; i < raw.size(); ++i)
      if (raw[i].group == static_cast<int>(bi)) g.push_back(static_cast<int>(i));
  }
}

/// Each op's buffers resolved and checked (type, size, one writer, a collective's input written
/// by no op); the buffers' writers and fills set. Returns each op's reads (buffer, where).
Builder::Links Builder::resolve_buffers(Step& step, std::vector<RawOp>& raw,
                                        const Index& buf_index) const {
  const int nr = opt_.nranks;
  Links reads(raw.size());  // (buffer, where)
  auto resolve_buf = [&](const Ref& r, const StepOp& o, const char* role, DType t,
                         int64_t elems) -> int {
    if (r.empty()) return -1;
    auto it = buf_index.find(r.name);
    if (it == buf_index.end())
      fail(r.pos, "undefined buffer '" + r.name + "' (" + role + " of op '" + o.id + "')");
    const auto& b = step.buffers[static_cast<std::size_t>(it->second)];
    if (b.dtype != t || b.elements != elems)
      fail(r.pos, std::string(role) + " of op '" + o.id + "' needs " + std::to_string(elems) + " " +
                      to_string(t) + " elements; buffer '" + b.name + "' (line " +
                      std::to_string(b.pos.line) + ") holds " + std::to_string(b.elements) + " " +
                      to_string(b.dtype));
    return it->second;
  };
  for (std::size_t i = 0; i < raw.size(); ++i) {
    RawOp& r = raw[i];
    StepOp& o = r.op;
    if (o.kind == OpKind::Gemm) {
      o.a = resolve_buf(r.a, o, "input a (m x k)", o.dtype, o.m * o.k);
      o.b = resolve_buf(r.b, o, "input b (k x n)", o.dtype, o.k * o.n);
      o.c = resolve_buf(r.c, o, "output c (m x n)", o.dtype, o.m * o.n);
      if (o.c >= 0 && (o.c == o.a || o.c == o.b))
        fail(r.c.pos, "gemm '" + o.id + "' reads and writes buffer '" + r.c.name + "'");
      if (o.a >= 0) reads[i].emplace_back(o.a, r.a.pos);
      if (o.b >= 0) reads[i].emplace_back(o.b, r.b.pos);
    } else if (o.kind == OpKind::Collective) {
      o.send = resolve_buf(r.send, o, "input (send)", o.dtype, o.send_elements(nr));
      o.recv = resolve_buf(r.recv, o, "output (recv)", o.dtype, o.recv_elements(nr));
      if (o.send >= 0 && o.send == o.recv)
        fail(r.recv.pos, "collective '" + o.id +
                             "' sends and receives in the same buffer (in place is not supported)");
      if (o.send >= 0) reads[i].emplace_back(o.send, r.send.pos);
    }
    const int out = o.kind == OpKind::Gemm ? o.c : o.kind == OpKind::Collective ? o.recv : -1;
    if (out >= 0) {
      auto& b = step.buffers[static_cast<std::size_t>(out)];
      if (b.writer >= 0)
        fail(o.kind == OpKind::Gemm ? r.c.pos : r.recv.pos,
             "buffer '" + b.name + "' is written by op '" +
                 raw[static_cast<std::size_t>(b.writer)].op.id + "' and by op '" + o.id +
                 "': a buffer has at most one writer");
      b.writer = static_cast<int>(i);
      b.fill = BufferFill::Output;
    }
  }
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const StepOp& o = raw[i].op;
    if (o.kind != OpKind::Collective || o.send < 0) continue;
    auto& b = step.buffers[static_cast<std::size_t>(o.send)];
    if (b.writer >= 0)
      fail(raw[i].send.pos,
           "collective '" + o.id + "' sends buffer '" + b.name + "', which op '" +
               raw[static_cast<std::size_t>(b.writer)].op.id +
               "' writes: a collective's input must be a buffer no op writes, so that its "
               "result can be checked exactly (docs/WORKLOADS.md, Verification); express "
               "the dependency with \"after\"");
    b.fill = BufferFill::Pattern;
  }
  return reads;
}

/// Each op's "after" names resolved to op indices (a buckets id: all its collectives), sorted
/// and unique. Returns, per op, each target with where it was named.
Builder::Links Builder::resolve_after(std::vector<RawOp>& raw, const Index& op_index,
                                      const std::map<std::string, std::vector<int>>& groups) const {
  const std::size_t n = raw.size();
  Links after_src(n);
  for (std::size_t i = 0; i < n; ++i) {
    StepOp& o = raw[i].op;
    for (const auto& ref : raw[i].after) {
      std::vector<int> targets;
      if (auto it = op_index.find(ref.name); it != op_index.end()) {
        targets.push_back(it->second);
      } else if (auto g = groups.find(ref.name); g != groups.end()) {
        targets = g->second;
      } else {
        fail(ref.pos, "op '" + o.id + "' is after '" + ref.name +
                          "', which is not an op id (nor a buckets id)");
      }
      for (int t : targets) {
        if (t == static_cast<int>(i)) fail(ref.pos, "op '" + o.id + "' is after itself");
        after_src[i].emplace_back(t, ref.pos);
        o.after.push_back(t);
      }
    }
    std::sort(o.after.begin(), o.after.end());
    o.after.erase(std::unique(o.after.begin(), o.after.end()), o.after.end());
  }
  return after_src;
}

/// The issue order: Kahn's algorithm, the ready op declared first goes first; a cycle fails,
/// named from where its first edge was written. `dependents`: each op's dependents.
std::vector<int> Builder::issue_order(const std::vector<RawOp>& raw, const Links& after_src,
                                      std::vector<std::vector<int>>& dependents) const {
  const std::size_t n = raw.size();
  dependents.assign(n, {});
  std::vector<int> indeg(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (int d : raw[i].op.after) {
      dependents[static_cast<std::size_t>(d)].push_back(static_cast<int>(i));
      ++indeg[i];
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(static_cast<int>(i));
  std::vector<int> order;
  std::vector<char> done(n, 0);
  while (!ready.empty()) {
    const int v = ready.top();
    ready.pop();
    order.push_back(v);
    done[static_cast<std::size_t>(v)] = 1;
    for (int w : dependents[static_cast<std::size_t>(v)])
      if (--indeg[static_cast<std::size_t>(w)] == 0) ready.push(w);
  }
  if (order.size() != n) {
    // Every op left waits for another op left: walk those edges until one repeats.
    int v = 0;
    while (done[static_cast<std::size_t>(v)]) ++v;
    std::vector<int> path;
    std::vector<int> seen(n, -1);
    while (seen[static_cast<std::size_t>(v)] < 0) {
      seen[static_cast<std::size_t>(v)] = static_cast<int>(path.size());
      path.push_back(v);
      for (int d : raw[static_cast<std::size_t>(v)].op.after)
        if (!done[static_cast<std::size_t>(d)]) {
          v = d;
          break;
        }
    }
    std::vector<int> cyc(path.begin() + seen[static_cast<std::size_t>(v)], path.end());
    std::string text;
    for (int c : cyc) text += "'" + raw[static_cast<std::size_t>(c)].op.id + "' is after ";
    text += "'" + raw[static_cast<std::size_t>(cyc[0])].op.id + "'";
    SourcePos where = raw[static_cast<std::size_t>(cyc[0])].op.pos;
    const int next = cyc.size() > 1 ? cyc[1] : cyc[0];
    for (const auto& [t, p] : after_src[static_cast<std::size_t>(cyc[0])])
      if (t == next) where = p;
    fail(where, "dependency cycle: " + text);
  }
  return order;
}

/// All collectives of a step share one stream (one communicator on two streams can deadlock).
void Builder::check_streams(const std::vector<RawOp>& raw) const {
  const std::size_t n = raw.size();
  int coll_stream = -1, first_coll = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const StepOp& o = raw[i].op;
    if (o.kind != OpKind::Collective) continue;
    if (coll_stream < 0) {
      coll_stream = static_cast<int>(o.stream);
      first_coll = static_cast<int>(i);
    } else if (coll_stream != static_cast<int>(o.stream)) {
      fail(o.pos,
           "collective '" + o.id + "' is on stream \"" + to_string(o.stream) + "\" but '" +
               raw[static_cast<std::size_t>(first_coll)].op.id + "' is on \"" +
               to_string(raw[static_cast<std::size_t>(first_coll)].op.stream) +
               "\": collectives of one communicator on two streams can deadlock in NCCL, so all "
               "collectives of a step share one stream");
    }
  }
}

/// Every read waits for its buffer's writer.
void Builder::check_reads(const Step& step, const Links& reads,
                          const std::vector<std::vector<int>>& dependents,
                          const std::vector<int>& stream_next) const {
  const std::size_t n = step.ops.size();
  // A read is safe when the writer happens before the reader in every mode: a path of `after`
  // edges and same-stream order edges (the seq mode puts everything on one stream in the same
  // order, so such a path orders them there too).
  std::map<int, std::vector<std::pair<int, SourcePos>>> by_writer;  // writer -> (reader, where)
  for (std::size_t i = 0; i < n; ++i)
    for (const auto& [bi, where] : reads[i]) {
      const int w = step.buffers[static_cast<std::size_t>(bi)].writer;
      if (w >= 0) by_writer[w].emplace_back(static_cast<int>(i), where);
    }
  for (const auto& [w, readers] : by_writer) {
    std::vector<char> reach(n, 0);
    std::vector<int> stack = {w};
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      auto visit = [&](int x) {
        if (x >= 0 && !reach[static_cast<std::size_t>(x)]) {
          reach[static_cast<std::size_t>(x)] = 1;
          stack.push_back(x);
        }
      };
      for (int d : dependents[static_cast<std::size_t>(v)]) visit(d);
      visit(stream_next[static_cast<std::size_t>(v)]);
    }
    for (const auto& [rd, where] : readers) {
      if (reach[static_cast<std::size_t>(rd)]) continue;
      const auto& wo = step.ops[static_cast<std::size_t>(w)];
      const auto& ro = step.ops[static_cast<std::size_t>(rd)];
      std::string name;
      for (const auto& b : step.buffers)
        if (b.writer == w) name = b.name;
      fail(where, "op '" + ro.id + "' reads buffer '" + name + "', which op '" + wo.id +
                      "' writes, without waiting for it: add \"" + wo.id + "\" to its \"after\"");
    }
  }
}

Step Builder::build(const Node& root) {
  Step step;
  step.file = file_;
  step.nranks = opt_.nranks;
  need_type(root, Node::T::Object, "a workload file");
  header(root, step);
  if (const Node* p = root.get("parameters")) parameters(*p);
  for (const auto& [k, v] : opt_.overrides) {
    bool known = false;
    for (const auto& p : params_) known = known || p.first == k;
    if (known) continue;
    std::string list;
    for (const auto& p : params_) list += (list.empty() ? "" : ", ") + p.first;
    throw StepError(file_, {},
                    "--param " + k + "=" + v + ": the workload has no parameter '" + k +
                        "' (parameters: " + (list.empty() ? "none" : list) + ")");
  }
  if (const Node* b = root.get("buffers")) {
    need_type(*b, Node::T::Array, "field 'buffers'");
    for (const auto& el : b->items) buffer_element(el);
  }
  const Node& ops = need(root, "ops", "the workload");
  need_type(ops, Node::T::Array, "field 'ops'");
  for (const auto& el : ops.items) op_element(el);
  if (ops_.empty()) fail(ops.pos, "the step has no ops (after repeats and conditions)");
  auto raw = expand_buckets();
  finish(step, raw);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    StepParam p;
    p.name = params_[i].first;
    p.is_string = params_[i].second.is_str;
    p.value = params_[i].second.i;
    p.text = params_[i].second.s;
    p.description = param_info_[i].description;
    p.overridden = param_info_[i].overridden;
    p.pos = param_info_[i].pos;
    step.params.push_back(std::move(p));
  }
  if (opt_.gpu_memory > 0) check_memory(step, opt_.gpu_memory, opt_.check);
  return step;
}

}  // namespace cco::workload::detail
