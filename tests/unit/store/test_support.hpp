// Fakes shared by the settings, store and route tests: a clock the test sets, and a
// temporary folder removed at the end of the test. Their own namespace: the plugin
// tests have another TempDir in handler::testing, and two inline classes of one name
// would silently break the one-definition rule in the single test binary.
#pragma once

#include "core/clock.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace handler::store_testing {

class FakeClock final : public Clock {
public:
    explicit FakeClock(std::int64_t now_ms = 1'700'000'000'000) : now_ms_(now_ms) {}
    std::int64_t now_ms() const override { return now_ms_; }
    void set(std::int64_t now_ms) { now_ms_ = now_ms; }
    void advance(std::int64_t delta_ms) { now_ms_ += delta_ms; }

private:
    std::int64_t now_ms_;
};

class TempDir {
public:
    TempDir() {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "handler-test-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) std::abort();
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

} // namespace handler::store_testing
