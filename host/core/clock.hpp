// The clock is a side effect like any other: behind an interface so tests can set time.
#pragma once

#include <chrono>
#include <cstdint>

namespace handler {

class Clock {
public:
    virtual ~Clock() = default;
    // Milliseconds since the Unix epoch: what the store records.
    virtual std::int64_t now_ms() const = 0;
};

class SystemClock final : public Clock {
public:
    std::int64_t now_ms() const override {
        using namespace std::chrono;
        return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
    }
};

} // namespace handler
