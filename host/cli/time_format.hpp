// Times as people read them. The API gives every time as milliseconds since the Unix
// epoch (UTC); the CLI shows an age ("3 min ago") in tables and the local time with its
// age in records. What "now" is and which zone is local are passed in, never read here,
// so the same moment formats the same in a test on any machine.
#pragma once

#include "core/clock.hpp"

#include <cstdint>
#include <string>

namespace handler::cli {

// The local time zone: its offset from UTC at a moment (daylight saving time moves it).
// An interface for the same reason as Clock: tests fix it.
class TimeZone {
public:
    virtual ~TimeZone() = default;
    virtual std::int64_t utc_offset_s(std::int64_t at_ms) const = 0;
};

// The zone the C library uses ($TZ, else /etc/localtime).
class LocalTimeZone final : public TimeZone {
public:
    std::int64_t utc_offset_s(std::int64_t at_ms) const override;
};

class FixedTimeZone final : public TimeZone {
public:
    explicit FixedTimeZone(std::int64_t offset_s) : offset_s_(offset_s) {}
    std::int64_t utc_offset_s(std::int64_t) const override { return offset_s_; }

private:
    std::int64_t offset_s_;
};

// The process's own, for the real command line.
const Clock& system_clock();
const TimeZone& local_time_zone();

// "just now", "42 s ago", "3 min ago", "5 h ago", "2 d ago"; a moment after now reads
// "in 12 min".
std::string format_age(std::int64_t at_ms, std::int64_t now_ms);

// "2026-05-01 14:32:05" at `utc_offset_s` east of UTC.
std::string format_local_time(std::int64_t at_ms, std::int64_t utc_offset_s);

// "2026-05-01 14:32:05 (3 min ago)": the local time and the age, for records.
std::string format_when(std::int64_t at_ms, const Clock& clock, const TimeZone& zone);

} // namespace handler::cli
