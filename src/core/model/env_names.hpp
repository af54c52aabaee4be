// Every CCO_* environment variable, spelled once (issue 35): cco sets the ones the preload library,
// the tuner plugin and the rank set-up read, so a name written twice could drift apart unseen.
// tests/repo/check_tree.py fails when a source file spells one of them as a bare literal elsewhere.
// What each means for a user: docs/PRELOAD.md (the library's table), docs/MULTINODE.md (ranks),
// docs/TRACE.md (CUPTI), docs/TUNER.md (plugin).
#pragma once

namespace cco::env {

// ---- read by the preload library (set by `cco run`, `cco tune -- CMD` or the user) ----------
inline constexpr const char* kDisable = "CCO_DISABLE";                  ///< 1: everything off
inline constexpr const char* kPolicy = "CCO_POLICY";                    ///< a named policy
inline constexpr const char* kPlan = "CCO_PLAN";                        ///< a plan file
inline constexpr const char* kPlanForce = "CCO_PLAN_FORCE";             ///< a plan made for another machine
inline constexpr const char* kPriorityMethod = "CCO_PRIORITY_METHOD";   ///< launch-attr|stream|both
inline constexpr const char* kStats = "CCO_STATS";                      ///< statistics at exit
inline constexpr const char* kVerbose = "CCO_VERBOSE";                  ///< a line per kernel decided
inline constexpr const char* kTrace = "CCO_TRACE";                      ///< a CUPTI trace per process
inline constexpr const char* kTracePid = "CCO_TRACE_PID";               ///< the process that writes it as named
inline constexpr const char* kNvtx = "CCO_NVTX";                        ///< 0: no NVTX ranges in the trace
inline constexpr const char* kTraceCalls = "CCO_TRACE_CALLS";           ///< 0: no library calls in the trace
inline constexpr const char* kTraceLaunchTimes = "CCO_TRACE_LAUNCH_TIMES";  ///< 0: no CUPTI launch timestamps
inline constexpr const char* kStepsDir = "CCO_STEPS_DIR";               ///< time the steps, write step files
inline constexpr const char* kCompare = "CCO_COMPARE";                  ///< configurations rotated between steps
inline constexpr const char* kWarmupSteps = "CCO_WARMUP_STEPS";         ///< steps before the rotation
inline constexpr const char* kStepNvtx = "CCO_STEP_NVTX";               ///< steps from NVTX ranges of this name
inline constexpr const char* kTune = "CCO_TUNE";                        ///< search the candidates online
inline constexpr const char* kTuneSteps = "CCO_TUNE_STEPS";             ///< the search's step budget
inline constexpr const char* kTuneTime = "CCO_TUNE_TIME";               ///< its time budget (s)
inline constexpr const char* kTuneWait = "CCO_TUNE_WAIT";               ///< how long a rank waits for rank 0 (s)
inline constexpr const char* kTuneDiagnose = "CCO_TUNE_DIAGNOSE";       ///< rank 0 diagnoses the first stage
inline constexpr const char* kTuneExit = "CCO_TUNE_EXIT";               ///< each rank ends itself at the final decision
inline constexpr const char* kCompareDiagnose = "CCO_COMPARE_DIAGNOSE"; ///< rank 0 checks the first rounds

// ---- read by cco's Python start-up hook (src/inject/startup/sitecustomize.py, which spells them too)
inline constexpr const char* kFramework = "CCO_FRAMEWORK";              ///< framework controls asked for
inline constexpr const char* kFrameworkOut = "CCO_FRAMEWORK_OUT";       ///< where it reports what it did

// ---- cco itself ----------------------------------------------------------------------------------
inline constexpr const char* kListOptions = "CCO_LIST_OPTIONS";         ///< 1: a command lists its options, runs nothing

// ---- libraries cco and the preload library load -----------------------------------------------
inline constexpr const char* kPreloadLib = "CCO_PRELOAD_LIB";           ///< libcco_preload.so for cco run
inline constexpr const char* kTunerLib = "CCO_TUNER_LIB";               ///< libcco_tuner.so for cco run
inline constexpr const char* kNcclLib = "CCO_NCCL_LIB";                 ///< the libnccl.so.2 cco loads
inline constexpr const char* kCublasltLib = "CCO_CUBLASLT_LIB";         ///< the libcublasLt cco loads
inline constexpr const char* kCuptiLib = "CCO_CUPTI_LIB";               ///< the libcupti tracing loads

// ---- ranks of cco bench and cco tune (docs/MULTINODE.md) --------------------------------------
inline constexpr const char* kRank = "CCO_RANK";
inline constexpr const char* kWorldSize = "CCO_WORLD_SIZE";
inline constexpr const char* kLocalRank = "CCO_LOCAL_RANK";
inline constexpr const char* kMasterAddr = "CCO_MASTER_ADDR";
inline constexpr const char* kMasterPort = "CCO_MASTER_PORT";
inline constexpr const char* kBootstrapFile = "CCO_BOOTSTRAP_FILE";
/// A secret the job's ranks share (docs/MULTINODE.md): set, rank 0 takes only hellos that carry it.
inline constexpr const char* kJobSecret = "CCO_JOB_SECRET";
inline constexpr const char* kBootstrapTimeout = "CCO_BOOTSTRAP_TIMEOUT";

// ---- files cco reads and keeps ----------------------------------------------------------------
inline constexpr const char* kCacheDir = "CCO_CACHE_DIR";               ///< cco tune's cache
inline constexpr const char* kWorkloadPath = "CCO_WORKLOAD_PATH";       ///< folders of workloads by name

}  // namespace cco::env
