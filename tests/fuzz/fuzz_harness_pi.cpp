// pi's rpc mode conversation (pi --mode rpc), through its parser library (harness_parser_fuzz.hpp).
#include <pi/rpc_mode.hpp>

#include "fuzz/harness_parser_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return handler::fuzz::fuzz_harness_parser<handler::pi::RpcModeParser>(data, size);
}
