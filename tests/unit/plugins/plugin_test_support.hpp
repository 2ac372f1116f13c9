// Shared by the host/plugins tests: where the fixture plugins were built, and a
// temporary folder to assemble search paths in.
#pragma once

#include "plugins/memory_plugin_storage.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace handler::testing {

// tests/fixtures/CMakeLists.txt builds every fixture into <this>/<name>/.
inline std::filesystem::path fixture_plugin_dir() { return HANDLER_FIXTURE_PLUGIN_DIR; }

// For HostServices in tests that load many plugins: the loader's warnings about the
// broken fixtures are expected, and the records are asserted instead.
inline std::shared_ptr<spdlog::logger> quiet_logger() {
    return std::make_shared<spdlog::logger>("quiet", std::make_shared<spdlog::sinks::null_sink_mt>());
}

// Copies fixture `name` (its .so and plugin.toml) to <temp>/<as>/.
inline std::filesystem::path copy_fixture(const TempDir& temp, const std::string& name,
                                          const std::string& as) {
    std::filesystem::path target = temp.path() / as;
    std::filesystem::create_directories(target);
    std::filesystem::copy(fixture_plugin_dir() / name, target,
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::overwrite_existing);
    return target;
}

} // namespace handler::testing
