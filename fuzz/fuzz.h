/* Fuzz targets (STYLE.md §9). Each fuzz/fuzz-<name>.c defines
 * hutch_fuzz_<name>(): parse the input, abort() when an invariant breaks,
 * return 0. Built alone with -DHUTCH_FUZZ_MAIN for libFuzzer (make fuzz),
 * and all together into build/fuzz-replay, which replays fuzz/corpus/. */
#ifndef HUTCH_FUZZ_H
#define HUTCH_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int hutch_fuzz_exec_request(const uint8_t *data, size_t size);
int hutch_fuzz_path(const uint8_t *data, size_t size);
int hutch_fuzz_errparse(const uint8_t *data, size_t size);
int hutch_fuzz_sni(const uint8_t *data, size_t size);
int hutch_fuzz_proxy_request(const uint8_t *data, size_t size);
int hutch_fuzz_mcp_message(const uint8_t *data, size_t size);
int hutch_fuzz_http_request(const uint8_t *data, size_t size);
int hutch_fuzz_agent_message(const uint8_t *data, size_t size);

#ifdef HUTCH_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
#endif

#endif
