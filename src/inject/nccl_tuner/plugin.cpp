// libcco_tuner.so's exported C layer: NCCL's tuner plugin objects `ncclTunerPlugin_v5` (NCCL 2.28)
// and `ncclTunerPlugin_v4` (NCCL 2.24 to 2.27), thin wrappers of cco::tuner::Context
// (tuner.hpp). Nothing leaves here as an exception, and every entry answers success: NCCL 2.28
// fails the communicator (init) or the collective (getCollInfo) on anything else, and a tuner must
// never do that. A context that could not be made is null, and null contexts change nothing.
#include <cstdlib>
#include <memory>

#include "nccl_tuner/nccl_tuner_abi.h"
#include "nccl_tuner/tuner.hpp"

namespace {

const char* env_get(const char* name) {
  return std::getenv(name);
}

ccoNcclResult_t make_context(void** context, std::uint64_t comm_id, std::size_t nranks,
                             std::size_t nnodes, ccoNcclDebugLogger_t logger) noexcept {
  if (!context) return CCO_NCCL_SUCCESS;
  *context = nullptr;
  try {
    *context = cco::tuner::Context::create(env_get, logger, comm_id, nranks, nnodes).release();
  } catch (...) {
    cco::tuner::warn_once(logger, "internal error at init; NCCL's channel choice is kept");
  }
  return CCO_NCCL_SUCCESS;
}

ccoNcclResult_t init_v5(void** context, std::uint64_t comm_id, std::size_t nranks,
                        std::size_t nnodes, ccoNcclDebugLogger_t logger,
                        ccoNcclNvlDomainInfo_v5_t* /*nvl_domain_info*/,
                        ccoNcclTunerConstants_v5_t* /*constants: never changed*/) {
  return make_context(context, comm_id, nranks, nnodes, logger);
}

ccoNcclResult_t init_v4(std::size_t nranks, std::size_t nnodes, ccoNcclDebugLogger_t logger,
                        void** context) {
  return make_context(context, 0, nranks, nnodes, logger);
}

// The cost table, numPipeOps and regBuff are not looked at: the decision must not depend on
// anything but the collective, its size and the plan, so that every rank decides alike.
ccoNcclResult_t get_coll_info(void* context, ccoNcclFunc_t coll_type, std::size_t n_bytes,
                              int /*num_pipe_ops*/, float** /*coll_cost_table*/, int /*num_algo*/,
                              int /*num_proto*/, int /*reg_buff*/, int* n_channels) {
  if (context)
    static_cast<cco::tuner::Context*>(context)->get_coll_info(static_cast<int>(coll_type), n_bytes,
                                                              n_channels);
  return CCO_NCCL_SUCCESS;
}

ccoNcclResult_t finalize(void* context) {
  auto* c = static_cast<cco::tuner::Context*>(context);
  if (c) {
    c->finalize();
    delete c;
  }
  return CCO_NCCL_SUCCESS;
}

}  // namespace

extern "C" {

__attribute__((visibility("default")))
ccoNcclTuner_v5_t ncclTunerPlugin_v5 = {"ccoverlap", init_v5, get_coll_info, finalize};

__attribute__((visibility("default")))
ccoNcclTuner_v4_t ncclTunerPlugin_v4 = {"ccoverlap", init_v4, get_coll_info, finalize};

}  // extern "C"
