// Launcher environment parsing, the timeout, and the launcher factory: pure functions of an Env.
#include <gtest/gtest.h>

#include <cstdlib>

#include "bootstrap/bootstrap.hpp"

using namespace cco::boot;

namespace {

/// The ConfigError message `env` gives, checking it is one line.
std::string error_of(const Env& env) {
  try {
    parse_launch_env(env);
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return m;
  }
  ADD_FAILURE() << "expected ConfigError";
  return {};
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(Env, NoLauncherMeansNone) {
  EXPECT_FALSE(parse_launch_env({}).has_value());
  EXPECT_FALSE(parse_launch_env({{"PATH", "/bin"}, {"HOME", "/root"}}).has_value());
  // One of torchrun's pair alone is too common a name to mean torchrun.
  EXPECT_FALSE(parse_launch_env({{"RANK", "3"}}).has_value());
  EXPECT_FALSE(parse_launch_env({{"WORLD_SIZE", "3"}}).has_value());
  // An salloc shell has SLURM_NTASKS but no SLURM_PROCID: not a task.
  EXPECT_FALSE(
      parse_launch_env({{"SLURM_NTASKS", "8"}, {"SLURM_JOB_NODELIST", "n[1-2]"}}).has_value());
}

TEST(Env, Torchrun) {
  const auto w = parse_launch_env({{"RANK", "3"},
                                   {"WORLD_SIZE", "8"},
                                   {"LOCAL_RANK", "1"},
                                   {"MASTER_ADDR", "node1"},
                                   {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->launcher, "torchrun");
  EXPECT_EQ(w->rank, 3);
  EXPECT_EQ(w->world_size, 8);
  EXPECT_EQ(w->local_rank, 1);
  EXPECT_EQ(w->master_addr, "node1");
  EXPECT_EQ(w->master_port, 29501);  // torchrun's own store holds MASTER_PORT
  EXPECT_TRUE(w->rendezvous_file.empty());
}

TEST(Env, TorchrunOverridesAndMissingMaster) {
  Env e = {{"RANK", "0"},
           {"WORLD_SIZE", "2"},
           {"LOCAL_RANK", "0"},
           {"MASTER_ADDR", "a"},
           {"MASTER_PORT", "29500"}};
  e["CCO_MASTER_ADDR"] = "10.0.0.7";
  e["CCO_MASTER_PORT"] = "31000";
  auto w = parse_launch_env(e);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->master_addr, "10.0.0.7");
  EXPECT_EQ(w->master_port, 31000);
  EXPECT_TRUE(
      has(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}), "MASTER_ADDR"));
  EXPECT_TRUE(
      has(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}}), "MASTER_PORT"));
  EXPECT_TRUE(
      has(error_of(
              {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "65535"}}),
          "CCO_MASTER_PORT"));
  // No LOCAL_RANK: the rank itself.
  w = parse_launch_env(
      {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(w->local_rank, 1);
}

TEST(Env, TorchrunAgentStore) {
  // torchrun (2.4+) tells its workers that its agent's TCPStore serves them at MASTER_ADDR:PORT.
  Env e = {{"RANK", "3"},
           {"WORLD_SIZE", "8"},
           {"LOCAL_RANK", "3"},
           {"LOCAL_WORLD_SIZE", "8"},
           {"MASTER_ADDR", "n1"},
           {"MASTER_PORT", "29500"},
           {"TORCHELASTIC_USE_AGENT_STORE", "True"}};
  auto w = parse_launch_env(e);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->store.addr, "n1");
  EXPECT_EQ(w->store.port, 29500);
  EXPECT_EQ(w->store.key, "cco/rendezvous/0/");
  EXPECT_EQ(w->store.advertise, "127.0.0.1");  // all 8 ranks on this node
  EXPECT_EQ(w->master_addr, "n1");             // the fallback, as before
  EXPECT_EQ(w->master_port, 29501);
  e["TORCHELASTIC_RESTART_COUNT"] = "2";  // restarted workers never read stale addresses
  EXPECT_EQ(parse_launch_env(e)->store.key, "cco/rendezvous/2/");
  e["LOCAL_WORLD_SIZE"] = "4";  // two nodes: rank 0 publishes its host name
  EXPECT_EQ(parse_launch_env(e)->store.advertise, "");
  e["CCO_MASTER_ADDR"] = "ib-n1";  // ... or the address it is given; the store stays put
  EXPECT_EQ(parse_launch_env(e)->store.advertise, "ib-n1");
  EXPECT_EQ(parse_launch_env(e)->store.addr, "n1");
  EXPECT_EQ(parse_launch_env(e)->master_addr, "ib-n1");
  for (const char* on : {"1", "true", " TRUE "}) {
    e["TORCHELASTIC_USE_AGENT_STORE"] = on;
    EXPECT_EQ(parse_launch_env(e)->store.port, 29500) << on;
  }
  for (const char* off : {"False", "0", "", "yes"}) {
    e["TORCHELASTIC_USE_AGENT_STORE"] = off;
    EXPECT_EQ(parse_launch_env(e)->store.port, 0) << off;
    EXPECT_EQ(parse_launch_env(e)->master_port, 29501) << off;
  }
  e["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  Env f = e;  // CCO_MASTER_PORT wins over the store
  f["CCO_MASTER_PORT"] = "31000";
  EXPECT_EQ(parse_launch_env(f)->store.port, 0);
  EXPECT_EQ(parse_launch_env(f)->master_port, 31000);
  f = e;  // and so does a rendezvous file
  f["CCO_BOOTSTRAP_FILE"] = "/shared/f";
  EXPECT_EQ(parse_launch_env(f)->store.port, 0);
  // Not torchrun: the variable means nothing.
  EXPECT_EQ(parse_launch_env({{"CCO_RANK", "0"},
                              {"CCO_WORLD_SIZE", "2"},
                              {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                              {"MASTER_PORT", "29500"}})
                ->store.port,
            0);
  // MASTER_PORT=65535 still leaves no fallback port.
  e["MASTER_PORT"] = "65535";
  EXPECT_TRUE(has(error_of(e), "CCO_MASTER_PORT"));
}

TEST(Env, Slurm) {
  const auto w = parse_launch_env({{"SLURM_PROCID", "5"},
                                   {"SLURM_NTASKS", "8"},
                                   {"SLURM_LOCALID", "1"},
                                   {"SLURM_JOB_NODELIST", "node[01-04]"},
                                   {"SLURM_JOB_ID", "1234"},
                                   {"SLURM_STEP_ID", "0"}});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->launcher, "slurm");
  EXPECT_EQ(w->rank, 5);
  EXPECT_EQ(w->world_size, 8);
  EXPECT_EQ(w->local_rank, 1);
  EXPECT_EQ(w->master_addr, "node01");
  EXPECT_EQ(w->master_port, 21234);  // 20000 + (job + 997 * step) % 10000
  Env e = {{"SLURM_PROCID", "0"},
           {"SLURM_NTASKS", "2"},
           {"SLURM_JOB_NODELIST", "n1"},
           {"SLURM_JOB_ID", "99999"}};
  e["SLURM_STEP_ID"] = "2";
  EXPECT_EQ(parse_launch_env(e)->master_port, 20000 + (99999 + 997 * 2) % 10000);
}

TEST(Env, SlurmMasterSources) {
  Env e = {{"SLURM_PROCID", "0"},
           {"SLURM_NTASKS", "2"},
           {"SLURM_LOCALID", "0"},
           {"SLURM_JOB_NODELIST", "a,b"}};
  EXPECT_EQ(parse_launch_env(e)->master_addr, "a");
  EXPECT_EQ(parse_launch_env(e)->master_port, 29510);  // no job id: the default
  e["SLURM_STEP_NODELIST"] = "gpu[7,9-12]-ib";         // the step's nodes first
  EXPECT_EQ(parse_launch_env(e)->master_addr, "gpu7-ib");
  e["MASTER_ADDR"] = "m";
  e["MASTER_PORT"] = "4000";
  EXPECT_EQ(parse_launch_env(e)->master_addr, "m");
  EXPECT_EQ(parse_launch_env(e)->master_port, 4000);
  e["CCO_MASTER_ADDR"] = "c";
  EXPECT_EQ(parse_launch_env(e)->master_addr, "c");
  // SLURM_NPROCS stands in for SLURM_NTASKS (older Slurm).
  EXPECT_EQ(
      parse_launch_env({{"SLURM_PROCID", "1"}, {"SLURM_NPROCS", "3"}, {"SLURM_NODELIST", "x"}})
          ->world_size,
      3);
  EXPECT_TRUE(has(error_of({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "3"}}), "CCO_MASTER_ADDR"));
  EXPECT_TRUE(has(
      error_of(
          {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "3"}, {"SLURM_JOB_NODELIST", "a[1-2]b[3-4]"}}),
      "CCO_MASTER_ADDR"));
}

TEST(Env, SlurmFirstHost) {
  EXPECT_EQ(slurm_first_host("node[01-04]"), "node01");
  EXPECT_EQ(slurm_first_host("a,b"), "a");
  EXPECT_EQ(slurm_first_host("host-a"), "host-a");
  EXPECT_EQ(slurm_first_host("n[3,5-6],m[1-2]"), "n3");
  EXPECT_EQ(slurm_first_host("gpu[007-010]-ib,cpu1"), "gpu007-ib");
  EXPECT_THROW(slurm_first_host(""), ConfigError);
  EXPECT_THROW(slurm_first_host("a[1-2]b[3-4]"), ConfigError);
  EXPECT_THROW(slurm_first_host("node[ab]"), ConfigError);
  EXPECT_THROW(slurm_first_host("node[1-2"), ConfigError);
}

TEST(Env, OpenMpi) {
  Env e = {{"OMPI_COMM_WORLD_RANK", "2"},
           {"OMPI_COMM_WORLD_SIZE", "4"},
           {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
           {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}};
  auto w = parse_launch_env(e);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->launcher, "openmpi");
  EXPECT_EQ(w->rank, 2);
  EXPECT_EQ(w->world_size, 4);
  EXPECT_EQ(w->local_rank, 2);
  EXPECT_EQ(w->master_addr, "127.0.0.1");  // all on one node
  EXPECT_EQ(w->master_port, 29510);
  e["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";  // two nodes: the master must be named
  EXPECT_TRUE(has(error_of(e), "CCO_MASTER_ADDR"));
  e["CCO_MASTER_ADDR"] = "head";
  e["MASTER_PORT"] = "5000";
  w = parse_launch_env(e);
  EXPECT_EQ(w->master_addr, "head");
  EXPECT_EQ(w->master_port, 5000);
}

TEST(Env, OwnVariables) {
  auto w = parse_launch_env({{"CCO_RANK", "1"}, {"CCO_WORLD_SIZE", "2"}});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->launcher, "cco");
  EXPECT_EQ(w->rank, 1);
  EXPECT_EQ(w->local_rank, 1);
  EXPECT_EQ(w->master_addr, "127.0.0.1");
  EXPECT_EQ(w->master_port, 29510);
  w = parse_launch_env({{"CCO_RANK", "3"},
                        {"CCO_WORLD_SIZE", "4"},
                        {"CCO_LOCAL_RANK", "1"},
                        {"CCO_MASTER_ADDR", "h"},
                        {"CCO_MASTER_PORT", "1234"}});
  EXPECT_EQ(w->local_rank, 1);
  EXPECT_EQ(w->master_addr, "h");
  EXPECT_EQ(w->master_port, 1234);
  EXPECT_TRUE(has(error_of({{"CCO_RANK", "1"}}), "CCO_WORLD_SIZE is not"));
  EXPECT_TRUE(has(error_of({{"CCO_WORLD_SIZE", "2"}}), "CCO_RANK is not"));
}

TEST(Env, Precedence) {
  const Env slurm = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n1"}};
  Env e = slurm;  // torchrun started by srun: torchrun's workers are the ranks
  e.insert({{"RANK", "5"}, {"WORLD_SIZE", "16"}, {"MASTER_ADDR", "n1"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(parse_launch_env(e)->launcher, "torchrun");
  e = slurm;  // mpirun inside an allocation
  e.insert({{"OMPI_COMM_WORLD_RANK", "1"},
            {"OMPI_COMM_WORLD_SIZE", "2"},
            {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(parse_launch_env(e)->launcher, "openmpi");
  e.insert({{"CCO_RANK", "0"}, {"CCO_WORLD_SIZE", "1"}});
  EXPECT_EQ(parse_launch_env(e)->launcher, "cco");
}

TEST(Env, MalformedValuesGiveOneClearLine) {
  const Env base = {{"MASTER_ADDR", "a"}, {"MASTER_PORT", "29500"}};
  const auto with = [&](Env extra) {
    Env e = base;
    for (auto& [k, v] : extra) e[k] = v;
    return error_of(e);
  };
  EXPECT_TRUE(
      has(with({{"RANK", "abc"}, {"WORLD_SIZE", "4"}}), "RANK='abc' is not a whole number"));
  EXPECT_TRUE(has(with({{"RANK", "1.5"}, {"WORLD_SIZE", "4"}}), "not a whole number"));
  EXPECT_TRUE(has(with({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}), "RANK='-1' must not be negative"));
  EXPECT_TRUE(has(with({{"RANK", "4"}, {"WORLD_SIZE", "4"}}), "RANK=4 is not below WORLD_SIZE=4"));
  EXPECT_TRUE(has(with({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), "WORLD_SIZE='0' is out of range"));
  EXPECT_TRUE(
      has(with({{"RANK", "0"}, {"WORLD_SIZE", "99999999999999999999999"}}), "out of range"));
  EXPECT_TRUE(
      has(with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "x"}}), "LOCAL_RANK='x'"));
  EXPECT_TRUE(has(with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}}),
                  "LOCAL_RANK=2 is not below"));
  EXPECT_TRUE(has(with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}),
                  "MASTER_PORT='70000' is out of range (1-65535)"));
  EXPECT_TRUE(has(with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "http"}}),
                  "MASTER_PORT='http'"));
  EXPECT_TRUE(has(with({{"CCO_RANK", "0"}, {"CCO_WORLD_SIZE", "2"}, {"CCO_MASTER_PORT", "0"}}),
                  "CCO_MASTER_PORT='0'"));
  EXPECT_TRUE(has(with({{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}}), "SLURM_PROCID='x'"));
  EXPECT_TRUE(
      has(with({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}}), "is not below"));
  // Surrounding blanks are forgiven.
  EXPECT_EQ(parse_launch_env({{"CCO_RANK", " 1 "}, {"CCO_WORLD_SIZE", "2\n"}})->rank, 1);
}

TEST(Env, RendezvousFile) {
  auto w = parse_launch_env(
      {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"CCO_BOOTSTRAP_FILE", "/shared/job.addr"}});
  ASSERT_TRUE(w);  // no MASTER_ADDR/PORT needed
  EXPECT_EQ(w->rendezvous_file, "/shared/job.addr");
  EXPECT_EQ(w->secret, "");  // no CCO_JOB_SECRET: none
  EXPECT_EQ(parse_launch_env({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"CCO_BOOTSTRAP_FILE", "/f"}, {"CCO_JOB_SECRET", "k e y"}})
                ->secret,
            "k e y");
  EXPECT_EQ(w->master_addr, "");
  EXPECT_EQ(w->master_port, 0);  // any free port
  w = parse_launch_env({{"SLURM_PROCID", "0"},
                        {"SLURM_NTASKS", "2"},
                        {"CCO_BOOTSTRAP_FILE", "/f"},
                        {"CCO_MASTER_ADDR", "ib0-host"},
                        {"CCO_MASTER_PORT", "4242"}});
  EXPECT_EQ(w->master_addr, "ib0-host");
  EXPECT_EQ(w->master_port, 4242);
}

TEST(Timeout, OptionsThenEnvironmentThenDefault) {
  LaunchOptions o;
  EXPECT_EQ(resolve_timeout(o, {}), kDefaultTimeoutS);
  EXPECT_EQ(resolve_timeout(o, {{"CCO_BOOTSTRAP_TIMEOUT", "3.5"}}), 3.5);
  o.timeout_s = 7;
  EXPECT_EQ(resolve_timeout(o, {{"CCO_BOOTSTRAP_TIMEOUT", "3.5"}}), 7);
  o.timeout_s = 0;
  for (const char* bad : {"abc", "0", "-1", "inf", "nan", "1e400", "5s"}) {
    try {
      resolve_timeout(o, {{"CCO_BOOTSTRAP_TIMEOUT", bad}});
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_TRUE(has(e.what(), "CCO_BOOTSTRAP_TIMEOUT")) << e.what();
    }
  }
  o.timeout_s = -1;
  EXPECT_THROW(resolve_timeout(o, {}), ConfigError);
}

TEST(Factory, Modes) {
  LaunchOptions o;
  o.threads = 3;
  auto l = make_launcher(o, {});  // auto, nothing set: threads
  EXPECT_EQ(l->mode(), "threads");
  EXPECT_EQ(l->size(), 3);
  EXPECT_EQ(l->first_rank(), 0);
  EXPECT_EQ(l->local_ranks(), 3);

  const Env torch = {
      {"RANK", "3"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
  l = make_launcher(o, torch);
  EXPECT_EQ(l->mode(), "env:torchrun");
  EXPECT_EQ(l->size(), 4);
  EXPECT_EQ(l->first_rank(), 3);
  EXPECT_EQ(l->local_ranks(), 1);
  o.timeout_s = 9;
  EXPECT_EQ(dynamic_cast<ProcessLauncher&>(*make_launcher(o, torch)).timeout_s(), 9);
  o.timeout_s = 0;

  o.mode = "threads";  // forced, whatever the environment says
  EXPECT_EQ(make_launcher(o, torch)->mode(), "threads");
  o.mode = "auto";  // a single-rank launch runs threads
  EXPECT_EQ(
      make_launcher(o, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_NODELIST", "n"}})
          ->mode(),
      "threads");
  o.mode = "env";
  EXPECT_EQ(make_launcher(o, {{"CCO_RANK", "0"}, {"CCO_WORLD_SIZE", "1"}})->mode(), "env:cco");
  EXPECT_THROW(make_launcher(o, {}), ConfigError);
  o.mode = "mpi";
  if (!mpi_available()) {
    EXPECT_THROW(make_launcher(o, {}), ConfigError);
  }
  o.mode = "sockets";
  EXPECT_THROW(make_launcher(o, {}), ConfigError);
  o.mode = "auto";  // a malformed launcher variable is an error, not a silent fall back to threads
  EXPECT_THROW(make_launcher(o, {{"RANK", "x"}, {"WORLD_SIZE", "2"}}), ConfigError);
  EXPECT_THROW(make_launcher(o, {{"CCO_BOOTSTRAP_TIMEOUT", "soon"}}), ConfigError);
  o.threads = 0;
  EXPECT_THROW(make_launcher(o, {}), ConfigError);
}

TEST(Factory, CurrentEnvironment) {
  ::setenv("CCO_TEST_ENV_PROBE", "x=y", 1);
  const auto env = current_environment();
  ASSERT_TRUE(env.count("CCO_TEST_ENV_PROBE"));
  EXPECT_EQ(env.at("CCO_TEST_ENV_PROBE"), "x=y");
}
