// Codex's app server conversation (JSON-RPC lines on its stdio), through its parser library (harness_parser_fuzz.hpp).
#include <codex/app_server.hpp>

#include "fuzz/harness_parser_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return handler::fuzz::fuzz_harness_parser<handler::codex::AppServerParser>(data, size);
}
