// cco doctor's decisions on made-up findings (GPU-free): each check says what it found and,
// when something is wrong, what to fix.
#include <gtest/gtest.h>

#include "cli/doctor.hpp"

using namespace cco::cli::doctor;

TEST(Doctor, NoLauncherIsThreadsMode) {
  const auto c = launcher({});
  EXPECT_EQ(c.status, Status::Ok);
  EXPECT_NE(c.detail.find("one thread per visible GPU"), std::string::npos) << c.detail;
  EXPECT_EQ(rendezvous_port({}, [](int) { return true; }).status, Status::Skip);
}

TEST(Doctor, TorchrunJobAndItsPort) {
  const cco::boot::Env env = {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"},
                              {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
  const auto c = launcher(env);
  EXPECT_EQ(c.status, Status::Ok);
  EXPECT_NE(c.detail.find("torchrun: rank 0 of 2"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find(":29501"), std::string::npos) << "MASTER_PORT + 1 by default: " << c.detail;
  int asked = 0;
  const auto free_port = rendezvous_port(env, [&](int p) { asked = p; return true; });
  EXPECT_EQ(free_port.status, Status::Ok);
  EXPECT_EQ(asked, 29501);
  const auto taken = rendezvous_port(env, [](int) { return false; });
  EXPECT_EQ(taken.status, Status::Fail);
  EXPECT_NE(taken.fix.find("CCO_MASTER_PORT"), std::string::npos);
  // Rank 1 does not listen: nothing to bind.
  auto other = env;
  other["RANK"] = "1";
  other["LOCAL_RANK"] = "1";
  EXPECT_EQ(rendezvous_port(other, [](int) { return false; }).status, Status::Skip);
  // Under torchrun's agent store the port is a free one, published in the store: nothing to bind.
  auto with_store = env;
  with_store["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  const auto store = rendezvous_port(with_store, [](int) { return false; });
  EXPECT_EQ(store.status, Status::Ok);
  EXPECT_NE(store.detail.find("torchrun's store at 127.0.0.1:29500"), std::string::npos) << store.detail;
  // A broken job is a failure with the launcher's own reason.
  auto broken = env;
  broken.erase("MASTER_PORT");
  const auto b = launcher(broken);
  EXPECT_EQ(b.status, Status::Fail);
  EXPECT_NE(b.detail.find("MASTER_PORT"), std::string::npos) << b.detail;
}

TEST(Doctor, NvlinkMulticast) {
  EXPECT_EQ(nvlink_multicast({{"NCCL_NVLS_ENABLE", "0"}}).status, Status::Ok);
  const auto unset = nvlink_multicast({});
  EXPECT_EQ(unset.status, Status::Warn);
  EXPECT_NE(unset.fix.find("NCCL_NVLS_ENABLE=0"), std::string::npos);
  EXPECT_EQ(nvlink_multicast({{"NCCL_NVLS_ENABLE", "1"}}).status, Status::Ok);
}

TEST(Doctor, MaxConnections) {
  const auto unset = max_connections({});
  EXPECT_EQ(unset.status, Status::Ok);
  EXPECT_NE(unset.detail.find("default, 8"), std::string::npos) << unset.detail;
  const auto one = max_connections({{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}});
  EXPECT_EQ(one.status, Status::Warn);
  EXPECT_NE(one.detail.find("in the order they are launched"), std::string::npos) << one.detail;
  EXPECT_NE(one.fix.find("Megatron-LM"), std::string::npos) << one.fix;
  EXPECT_EQ(max_connections({{"CUDA_DEVICE_MAX_CONNECTIONS", "16"}}).status, Status::Ok);
  EXPECT_EQ(max_connections({{"CUDA_DEVICE_MAX_CONNECTIONS", "x"}}).status, Status::Warn);
  EXPECT_EQ(max_connections({{"CUDA_DEVICE_MAX_CONNECTIONS", "0"}}).status, Status::Warn);
}

TEST(Doctor, PytorchProbeAndItsNccl) {
  std::string nccl;
  const auto t = pytorch("torch=2.11.0+cu130 cuda=13.0 nccl=2.28.9 gpus=8\n", 0, &nccl);
  EXPECT_EQ(t.status, Status::Ok);
  EXPECT_EQ(nccl, "2.28.9");
  EXPECT_NE(t.detail.find("torch 2.11.0+cu130, CUDA 13.0, NCCL 2.28.9, 8 GPU(s)"), std::string::npos) << t.detail;
  EXPECT_EQ(program_nccl("2.28.9", nccl).status, Status::Ok);
  const auto differ = program_nccl("2.27.3", nccl);
  EXPECT_EQ(differ.status, Status::Warn);
  EXPECT_NE(differ.detail.find("another NCCL than the program runs"), std::string::npos);
  std::string none;
  EXPECT_EQ(pytorch("", 1, &none).status, Status::Skip);
  EXPECT_EQ(pytorch("", 124, &none).status, Status::Warn);
  EXPECT_EQ(pytorch("torch=2.5.0 cuda=None nccl=none gpus=0", 0, &none).status, Status::Warn);
  EXPECT_EQ(none, "");
  EXPECT_EQ(program_nccl("2.28.9", "").status, Status::Skip);
}

TEST(Doctor, FormatJsonAndExitCode) {
  std::vector<Check> checks = {{"GPUs", Status::Ok, "1 x H100", ""},
                               {"CUPTI", Status::Warn, "not found", "set CCO_CUPTI_LIB"}};
  EXPECT_EQ(exit_code(checks), 0) << "warnings do not fail";
  const auto text = format(checks);
  EXPECT_NE(text.find("ok    GPUs"), std::string::npos) << text;
  EXPECT_NE(text.find("fix: set CCO_CUPTI_LIB"), std::string::npos) << text;
  checks.push_back({"preload library", Status::Fail, "cannot load", "build it"});
  EXPECT_EQ(exit_code(checks), 1);
  const auto j = to_json(checks);
  EXPECT_EQ(j["schema"], "ccoverlap.doctor");
  EXPECT_EQ(j["checks"][2]["status"], "FAIL");
  EXPECT_FALSE(j["ok"].get<bool>());
}
