// The fakes and test helpers every area's unit tests share, in one place (STYLE.md):
// one definition each, since every test lands in the single handler_unit_tests binary
// and two inline classes of one name would silently break the one-definition rule.
#pragma once

#include "core/clock.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace handler::testing {

// A clock the test sets.
class FakeClock final : public Clock {
public:
    explicit FakeClock(std::int64_t now_ms = 1'700'000'000'000) : now_ms_(now_ms) {}
    std::int64_t now_ms() const override { return now_ms_; }
    void set(std::int64_t now_ms) { now_ms_ = now_ms; }
    void advance(std::int64_t delta_ms) { now_ms_ += delta_ms; }

private:
    std::int64_t now_ms_;
};

// A fresh private folder, removed with everything in it when the test ends.
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

    // Writes `contents` to <this>/<relative>, making the folders on the way.
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
