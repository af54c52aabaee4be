// Launcher environment parsing and the launcher factory. Pure functions of an Env map, so every
// launcher's variables are unit-tested without starting anything.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/detail.hpp"
#include "model/env_names.hpp"

extern char** environ;

namespace cco::boot {
namespace {

constexpr int kDefaultPort = 29510;

/// A set, non-empty variable's value (empty counts as unset: `X= cmd` clears X for a launch).
std::optional<std::string> get(const Env& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

[[noreturn]] void bad(const std::string& what) {
  throw ConfigError("launcher environment: " + what);
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

/// A whole number in [lo, hi]; the message names the variable and says which rule it broke.
long long to_int(const std::string& name, const std::string& raw, long long lo, long long hi) {
  const std::string v = trim(raw);
  const std::string shown = name + "='" + raw + "'";
  std::size_t i = 0;
  bool neg = false;
  if (i < v.size() && (v[i] == '-' || v[i] == '+')) neg = v[i++] == '-';
  if (i == v.size()) bad(shown + " is not a whole number");
  long long x = 0;
  for (; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') bad(shown + " is not a whole number");
    if (x > (INT64_MAX - 9) / 10)
      bad(shown + " is out of range (" + std::to_string(lo) + "-" + std::to_string(hi) + ")");
    x = x * 10 + (v[i] - '0');
  }
  if (neg) x = -x;
  if (neg && x != 0 && lo >= 0) bad(shown + " must not be negative");
  if (x < lo || x > hi)
    bad(shown + " is out of range (" + std::to_string(lo) + "-" + std::to_string(hi) + ")");
  return x;
}

int to_port(const std::string& name, const std::string& raw) {
  return static_cast<int>(to_int(name, raw, 1, 65535));
}

struct Names {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local;
};

/// Rank, size and local rank from one launcher's three variables, checked against each other.
void read_ranks(const Env& env, const Names& n, LaunchEnv& w) {
  const auto r = get(env, n.rank), s = get(env, n.size);
  if (!r) bad(std::string(n.size) + " is set but " + n.rank + " is not");
  if (!s) bad(std::string(n.rank) + " is set but " + n.size + " is not");
  w.launcher = n.launcher;
  w.world_size = static_cast<int>(to_int(n.size, *s, 1, 1 << 20));
  w.rank = static_cast<int>(to_int(n.rank, *r, 0, INT32_MAX));
  if (w.rank >= w.world_size)
    bad(std::string(n.rank) + "=" + std::to_string(w.rank) + " is not below " + n.size + "=" +
        std::to_string(w.world_size));
  w.local_rank = w.rank;
  if (const auto l = get(env, n.local)) {
    w.local_rank = static_cast<int>(to_int(n.local, *l, 0, INT32_MAX));
    if (w.local_rank >= w.world_size)
      bad(std::string(n.local) + "=" + std::to_string(w.local_rank) + " is not below " + n.size +
          "=" + std::to_string(w.world_size));
  }
}

/// torchrun says its agent's store serves the workers at MASTER_ADDR:MASTER_PORT: it sets
/// TORCHELASTIC_USE_AGENT_STORE to str(True) exactly then (and "False" otherwise).
bool uses_agent_store(const Env& env) {
  auto v = get(env, "TORCHELASTIC_USE_AGENT_STORE");
  if (!v) return false;
  std::string t = trim(*v);
  for (auto& c : t) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return t == "true" || t == "1";
}

void agent_store(const Env& env, const std::string& addr, int port,
                 const std::optional<std::string>& cco_addr, LaunchEnv& w) {
  w.store.addr = addr;
  w.store.port = port;
  std::string restart = "0";
  if (const auto r = get(env, "TORCHELASTIC_RESTART_COUNT")) {
    const std::string t = trim(*r);
    if (!t.empty() && t.size() < 10 && t.find_first_not_of("0123456789") == std::string::npos)
      restart = t;
  }
  w.store.key = "cco/rendezvous/" + restart + "/";
  const auto local_size = get(env, "LOCAL_WORLD_SIZE");
  if (cco_addr)
    w.store.advertise = trim(*cco_addr);
  else if (local_size && trim(*local_size) == std::to_string(w.world_size))
    w.store.advertise = "127.0.0.1";
}

}  // namespace

Env current_environment() {
  Env env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::string slurm_first_host(const std::string& list) {
  // The first entry: up to the first comma outside brackets.
  int depth = 0;
  std::size_t end = 0;
  for (; end < list.size(); ++end) {
    if (list[end] == '[') ++depth;
    if (list[end] == ']') --depth;
    if (list[end] == ',' && depth == 0) break;
  }
  const std::string first = trim(list.substr(0, end));
  const auto not_simple = [&] {
    throw ConfigError(
        "launcher environment: cannot take the first host from the Slurm node list '" + list +
        "'; set CCO_MASTER_ADDR to rank 0's host");
  };
  if (first.empty()) not_simple();
  const auto open = first.find('[');
  if (open == std::string::npos) {
    if (first.find(']') != std::string::npos) not_simple();
    return first;
  }
  const auto close = first.find(']', open);
  if (close == std::string::npos) not_simple();
  const std::string prefix = first.substr(0, open), suffix = first.substr(close + 1);
  if (suffix.find_first_of("[]") != std::string::npos) not_simple();
  std::string inner = first.substr(open + 1, close - open - 1);
  inner = inner.substr(0, inner.find(','));
  inner = inner.substr(0, inner.find('-'));
  if (inner.empty() || inner.find_first_not_of("0123456789") != std::string::npos) not_simple();
  return prefix + inner + suffix;
}

std::optional<LaunchEnv> parse_launch_env(const Env& env) {
  LaunchEnv w;
  const auto has = [&](const char* a, const char* b) { return get(env, a) || get(env, b); };
  if (has(cco::env::kRank, cco::env::kWorldSize))
    read_ranks(env, {"cco", cco::env::kRank, cco::env::kWorldSize, cco::env::kLocalRank}, w);
  else if (get(env, "RANK") && get(env, "WORLD_SIZE"))  // one alone is too common to mean torchrun
    read_ranks(env, {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"}, w);
  else if (has("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"))
    read_ranks(
        env,
        {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
        w);
  else if (get(env, "SLURM_PROCID") && (get(env, "SLURM_NTASKS") || get(env, "SLURM_NPROCS")))
    read_ranks(env,
               {"slurm", "SLURM_PROCID", get(env, "SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS",
                "SLURM_LOCALID"},
               w);
  else
    return std::nullopt;

  if (const auto f = get(env, cco::env::kBootstrapFile)) w.rendezvous_file = *f;
  if (const auto s = get(env, cco::env::kJobSecret)) w.secret = *s;
  const auto cco_addr = get(env, cco::env::kMasterAddr);
  const auto cco_port = get(env, cco::env::kMasterPort);
  if (!w.rendezvous_file.empty()) {
    // Rank 0 publishes its own address; only explicit CCO_* settings choose it.
    if (cco_addr) w.master_addr = trim(*cco_addr);
    w.master_port = cco_port ? to_port(cco::env::kMasterPort, *cco_port) : 0;
    return w;
  }

  const auto addr = get(env, "MASTER_ADDR");
  const auto port = get(env, "MASTER_PORT");
  if (w.launcher == "cco") {
    w.master_addr = cco_addr ? *cco_addr : "127.0.0.1";
    w.master_port = cco_port ? to_port(cco::env::kMasterPort, *cco_port) : kDefaultPort;
  } else if (w.launcher == "torchrun") {
    if (cco_addr)
      w.master_addr = *cco_addr;
    else if (addr)
      w.master_addr = *addr;
    else
      bad("torchrun's RANK is set but MASTER_ADDR is not (or set CCO_MASTER_ADDR)");
    if (cco_port) {
      w.master_port = to_port(cco::env::kMasterPort, *cco_port);
    } else if (port) {
      const int p = to_port("MASTER_PORT", *port);
      if (p == 65535)
        bad("MASTER_PORT=65535 leaves no port above it for ccoverlap; set CCO_MASTER_PORT");
      w.master_port = p + 1;  // the fallback when the agent's store cannot be used
      if (uses_agent_store(env) && addr) agent_store(env, trim(*addr), p, cco_addr, w);
    } else {
      bad("torchrun's RANK is set but MASTER_PORT is not (or set CCO_MASTER_PORT)");
    }
  } else if (w.launcher == "openmpi") {
    if (cco_addr)
      w.master_addr = *cco_addr;
    else if (addr)
      w.master_addr = *addr;
    else if (get(env, "OMPI_COMM_WORLD_LOCAL_SIZE") == get(env, "OMPI_COMM_WORLD_SIZE"))
      w.master_addr = "127.0.0.1";
    else
      bad("Open MPI ranks span several nodes but no master is given: set CCO_MASTER_ADDR (rank 0's "
          "host) "
          "or CCO_BOOTSTRAP_FILE, or use --bootstrap mpi in a build with MPI");
    w.master_port = cco_port ? to_port(cco::env::kMasterPort, *cco_port)
                    : port   ? to_port("MASTER_PORT", *port)
                             : kDefaultPort;
  } else {  // slurm
    if (cco_addr)
      w.master_addr = *cco_addr;
    else if (addr)
      w.master_addr = *addr;
    else if (const auto nl = get(env, "SLURM_STEP_NODELIST"))
      w.master_addr = slurm_first_host(*nl);
    else if (const auto jl = get(env, "SLURM_JOB_NODELIST"))
      w.master_addr = slurm_first_host(*jl);
    else if (const auto ol = get(env, "SLURM_NODELIST"))
      w.master_addr = slurm_first_host(*ol);
    else
      bad("SLURM_PROCID is set but no node list (SLURM_JOB_NODELIST) nor CCO_MASTER_ADDR is");
    if (cco_port) {
      w.master_port = to_port(cco::env::kMasterPort, *cco_port);
    } else if (port) {
      w.master_port = to_port("MASTER_PORT", *port);
    } else if (const auto job = get(env, "SLURM_JOB_ID")) {
      const long long j = to_int("SLURM_JOB_ID", *job, 0, INT64_MAX / 32);
      long long step = 0;
      if (const auto s = get(env, "SLURM_STEP_ID")) {
        // Slurm spells the batch and extern steps as numbers too, but be lenient with names.
        const std::string t = trim(*s);
        if (!t.empty() && t.find_first_not_of("0123456789") == std::string::npos && t.size() < 10)
          step = std::stoll(t);
      }
      w.master_port = static_cast<int>(20000 + (j + 997 * step) % 10000);
    } else {
      w.master_port = kDefaultPort;
    }
  }
  w.master_addr = trim(w.master_addr);
  return w;
}

double resolve_timeout(const LaunchOptions& opts, const Env& env) {
  if (!std::isfinite(opts.timeout_s) || opts.timeout_s < 0)
    throw ConfigError("bootstrap timeout must be a positive number of seconds, not " +
                      std::to_string(opts.timeout_s));
  if (opts.timeout_s > 0) return opts.timeout_s;
  const auto v = get(env, cco::env::kBootstrapTimeout);
  if (!v) return kDefaultTimeoutS;
  const std::string t = trim(*v);
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || errno != 0 || !std::isfinite(x) || x <= 0 ||
      x > 1e7 || t.find_first_not_of("0123456789.eE+-") != std::string::npos)
    throw ConfigError("CCO_BOOTSTRAP_TIMEOUT='" + *v + "' is not a positive number of seconds");
  return x;
}

bool mpi_available() {
#ifdef CCO_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Launcher> make_launcher(const LaunchOptions& opts, const Env& env) {
  const std::string& m = opts.mode;
  if (m != "auto" && m != "threads" && m != "env" && m != "mpi")
    throw ConfigError("unknown bootstrap mode '" + m + "' (auto, threads, env, mpi)");
  const double timeout = resolve_timeout(opts, env);
  const auto threads = [&]() -> std::unique_ptr<Launcher> {
    if (opts.threads < 1) throw ConfigError("threads bootstrap needs at least 1 rank");
    return std::make_unique<ThreadLauncher>(opts.threads, opts.first_device);
  };
  if (m == "threads") return threads();
  const auto mpi = []() -> std::unique_ptr<Launcher> {
#ifdef CCO_HAVE_MPI
    return detail::make_mpi_launcher();
#else
    throw ConfigError(
        "--bootstrap mpi: this build has no MPI (reconfigure with -DCCO_ENABLE_MPI=ON), "
        "or use --bootstrap env under mpirun");
#endif
  };
  if (m == "mpi") return mpi();
  const auto where = parse_launch_env(env);
  if (m == "env") {
    if (!where)
      throw ConfigError(
          "--bootstrap env: no launcher variables found (torchrun's RANK/WORLD_SIZE, Slurm's "
          "SLURM_PROCID/SLURM_NTASKS, Open MPI's OMPI_COMM_WORLD_RANK/SIZE, or "
          "CCO_RANK/CCO_WORLD_SIZE)");
    return std::make_unique<ProcessLauncher>(*where, timeout, opts.job_key);
  }
  // auto
  if (!where || where->world_size == 1) return threads();
  if (where->launcher == "openmpi" && mpi_available()) return mpi();
  return std::make_unique<ProcessLauncher>(*where, timeout, opts.job_key);
}

}  // namespace cco::boot
