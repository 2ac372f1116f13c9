// Shared by the host/plugins tests: where the fixture plugins were built, and a
// temporary folder to assemble search paths in.
#pragma once

#include "plugins/memory_plugin_storage.hpp"

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

// A fresh folder, removed with everything in it when the test ends.
class TempDir {
public:
    TempDir() {
        static std::atomic<int> counter{0};
        path_ = std::filesystem::temp_directory_path() /
                ("handler-plugins-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }

    // Copies fixture `name` (its .so and plugin.toml) to <this>/<as>/.
    std::filesystem::path copy_fixture(const std::string& name, const std::string& as) const {
        std::filesystem::path target = path_ / as;
        std::filesystem::create_directories(target);
        std::filesystem::copy(fixture_plugin_dir() / name, target,
                              std::filesystem::copy_options::recursive |
                                  std::filesystem::copy_options::overwrite_existing);
        return target;
    }

    std::filesystem::path write(const std::string& relative, const std::string& contents) const {
        std::filesystem::path file = path_ / relative;
        std::filesystem::create_directories(file.parent_path());
        std::ofstream(file) << contents;
        return file;
    }

private:
    std::filesystem::path path_;
};

inline bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace handler::testing
