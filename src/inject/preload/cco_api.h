/* The C API of libcco_preload.so (version 2: version 1 and cco_config_index): what a program -- or the Python module ccoverlap --
 * may ask of the preload library it runs under. docs/STEPS.md, "The C API".
 *
 * Find the functions with dlsym(RTLD_DEFAULT, "cco_api_version"): when the library is not loaded
 * the symbol is absent and the program goes on without it. Never link against the library.
 * Every function is safe from any thread, never throws, never fails the program, and returns at
 * once (no CUDA synchronisation). Errors are codes; cco_last_error() says why (per thread).
 */
#ifndef CCO_API_H
#define CCO_API_H

#ifdef __cplusplus
extern "C" {
#endif

#define CCO_API_VERSION 2

#define CCO_API_OK 0
#define CCO_API_DISABLED 1     /* the library is disabled (CCO_DISABLE, a forked child) or idle */
#define CCO_API_NO_STEPS 2     /* steps are not recorded in this process (no CCO_STEPS_DIR) */
#define CCO_API_BAD_ARGUMENT 3 /* an unknown policy, a plan that cannot switch at run time */
#define CCO_API_BUSY 4         /* a comparison owns the policy switch */

/* CCO_API_VERSION of the loaded library. */
int cco_api_version(void);

/* Marks the start of a step (and the end of the previous one) on `stream` (a CUstream or
 * cudaStream_t of the current device; NULL: the legacy default stream). The host time is taken
 * now; an event is recorded on the stream for the GPU time. From the first mark on, marks alone
 * delimit steps (no detection from collectives). */
int cco_step_mark(void* stream);

/* Makes a named policy or a plan file (as `cco run --policy`/`--plan`) the one in force from now
 * on, for every thread. Only policies that can switch at run time: shaping and priority by launch
 * attribute (plan::rotation_refusal). Refused while a comparison runs. */
int cco_policy_set(const char* name);

/* The name of the policy in force, written to buf (NUL-terminated, truncated to len - 1);
 * returns its full length. */
long cco_policy_get(char* buf, unsigned long len);

/* The library's counters: one line per policy used ("stats pid=... policy=... seen=..."),
 * written like cco_policy_get; returns the full length. */
long cco_stats(char* buf, unsigned long len);

/* The index of the configuration in force: in a comparison or a tuning run (CCO_COMPARE), its
 * position in CCO_COMPARE's list, switched at the same collective on every rank; otherwise 0 for
 * the program's plan and > 0 after cco_policy_set. -1 while the library is idle or disabled.
 * ccoverlap's NCCL tuner plugin asks it at every collective to cap channels per configuration.
 * (Since version 2.) */
int cco_config_index(void);

/* Why the last call of this thread failed ("" if none did). Valid until the thread's next call. */
const char* cco_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* CCO_API_H */
