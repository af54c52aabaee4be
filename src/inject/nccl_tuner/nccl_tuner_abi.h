// NCCL's tuner plugin ABI, as far as libcco_tuner.so needs it. Written for ccoverlap from the
// layout of NCCL 2.28.9 (tag v2.28.9-1): src/include/plugin/tuner/tuner_v5.h (ncclTuner_v5_t,
// ncclTunerConstants_v5_t, ncclNvlDomainInfo_v5_t), src/include/plugin/tuner/tuner_v4.h
// (ncclTuner_v4_t) and src/include/nccl_common.h (ncclFunc_t, ncclDebugLogger_t and its levels
// and subsystems). This is not NCCL's header: the names carry a `cco` prefix so that it can sit
// beside nccl.h, and nothing here needs nccl.h or CUDA.
//
// How NCCL 2.28.9 finds a tuner (src/plugin/tuner.cc, src/plugin/plugin_open.cc): NCCL_TUNER_PLUGIN
// names a file (dlopen'ed RTLD_NOW|RTLD_LOCAL; a name without '/' is also tried as
// libnccl-tuner-NAME.so; "none" disables tuners), then NCCL looks up, in this order,
// `ncclTunerPlugin_v5`, `_v4`, `_v3`, `_v2`, and takes the first one found. NCCL 2.24 to 2.27 look
// for `_v4` first. The plugin object is one per process; init() is called once per communicator.
//
// What NCCL does with the answer (src/enqueue.cc, getAlgoInfo): *nChannels is 0 when getCollInfo
// is called (NCCL has not decided yet); after the call NCCL picks algorithm and protocol from the
// cost table and its own channel count for the size, then a non-zero *nChannels *replaces* that
// count; the scheduler then clamps the channels a kernel plan uses to the communicator's channels
// (nvlsChannels for NVLS). A failing getCollInfo or init fails the collective or the
// communicator (NCCLCHECK), so a plugin must always answer success.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// ncclResult_t (an enum in nccl.h, passed as an int): 0 ncclSuccess, 3 ncclInternalError.
typedef int ccoNcclResult_t;
#define CCO_NCCL_SUCCESS 0
#define CCO_NCCL_INTERNAL_ERROR 3

/// ncclDebugLogLevel.
typedef enum {
  ccoNcclLogNone = 0,
  ccoNcclLogVersion = 1,
  ccoNcclLogWarn = 2,
  ccoNcclLogInfo = 3,
  ccoNcclLogAbort = 4,
  ccoNcclLogTrace = 5
} ccoNcclDebugLogLevel;

/// ncclDebugLogSubSys bits used here (NCCL_INIT, NCCL_TUNING, NCCL_ALL).
#define CCO_NCCL_SUBSYS_INIT 0x1UL
#define CCO_NCCL_SUBSYS_TUNING 0x40UL
#define CCO_NCCL_SUBSYS_ALL (~0UL)

/// ncclDebugLogger_t: NCCL's own ncclDebugLog. A WARN is printed when NCCL_DEBUG is WARN or
/// higher (NCCL prints nothing by default) and becomes ncclGetLastError()'s text.
typedef void (*ccoNcclDebugLogger_t)(ccoNcclDebugLogLevel level, unsigned long flags,
                                     const char* file, int line, const char* fmt, ...);

/// ncclFunc_t.
typedef enum {
  ccoNcclFuncBroadcast = 0,
  ccoNcclFuncReduce = 1,
  ccoNcclFuncAllGather = 2,
  ccoNcclFuncReduceScatter = 3,
  ccoNcclFuncAllReduce = 4,
  ccoNcclFuncSendRecv = 5,
  ccoNcclFuncSend = 6,
  ccoNcclFuncRecv = 7,
  ccoNcclFuncAlltoAll = 8,
  ccoNcclFuncScatter = 9,
  ccoNcclFuncGather = 10,
  ccoNcclNumFuncs = 11
} ccoNcclFunc_t;

/// ncclNvlDomainInfo_v5_t.
typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ccoNcclNvlDomainInfo_v5_t;

#define CCO_NCCL_NUM_ALGORITHMS_V5 \
  7 /* Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT */
#define CCO_NCCL_NUM_PROTOCOLS_V5 3 /* LL, LL128, Simple */
#define CCO_NCCL_NUM_HW_LINKS_V5 3
#define CCO_NCCL_NUM_COMPCAPS_V5 4
#define CCO_NCCL_NUM_TUNING_SCALES_V5 3

/// ncclTunerConstants_v5_t (in/out for init; ccoverlap never writes it).
typedef struct {
  double baseLatencies[CCO_NCCL_NUM_ALGORITHMS_V5][CCO_NCCL_NUM_PROTOCOLS_V5];
  double hwLatencies[CCO_NCCL_NUM_HW_LINKS_V5][CCO_NCCL_NUM_ALGORITHMS_V5]
                    [CCO_NCCL_NUM_PROTOCOLS_V5];
  double llMaxBws[CCO_NCCL_NUM_COMPCAPS_V5][CCO_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[CCO_NCCL_NUM_COMPCAPS_V5][CCO_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[CCO_NCCL_NUM_COMPCAPS_V5][CCO_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[CCO_NCCL_NUM_COMPCAPS_V5][CCO_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[CCO_NCCL_NUM_COMPCAPS_V5][CCO_NCCL_NUM_TUNING_SCALES_V5];
} ccoNcclTunerConstants_v5_t;

/// getCollInfo, the same in v4 and v5. collCostTable is float[numAlgo][numProto] passed as
/// float** (NCCL casts a 2-D array); entries NCCL ignores hold -1.0.
typedef ccoNcclResult_t (*ccoNcclGetCollInfo_t)(void* context, ccoNcclFunc_t collType,
                                                size_t nBytes, int numPipeOps,
                                                float** collCostTable, int numAlgo, int numProto,
                                                int regBuff, int* nChannels);

/// ncclTuner_v5_t: the symbol `ncclTunerPlugin_v5` (NCCL 2.28).
typedef struct {
  const char* name;
  ccoNcclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                          ccoNcclDebugLogger_t logFunction,
                          ccoNcclNvlDomainInfo_v5_t* nvlDomainInfo,
                          ccoNcclTunerConstants_v5_t* constants);
  ccoNcclGetCollInfo_t getCollInfo;
  ccoNcclResult_t (*finalize)(void* context);
} ccoNcclTuner_v5_t;

/// ncclTuner_v4_t: the symbol `ncclTunerPlugin_v4` (NCCL 2.24 to 2.27; 2.28 still accepts it).
typedef struct {
  const char* name;
  ccoNcclResult_t (*init)(size_t nRanks, size_t nNodes, ccoNcclDebugLogger_t logFunction,
                          void** context);
  ccoNcclGetCollInfo_t getCollInfo;
  ccoNcclResult_t (*destroy)(void* context);
} ccoNcclTuner_v4_t;

#ifdef __cplusplus
}  // extern "C"
#endif
