#include "cli/time_format.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace handler::cli {

std::int64_t LocalTimeZone::utc_offset_s(std::int64_t at_ms) const {
    const std::time_t at = static_cast<std::time_t>(at_ms / 1000);
    std::tm local{};
    if (::localtime_r(&at, &local) == nullptr) return 0;
    return local.tm_gmtoff;
}

const Clock& system_clock() {
    static const SystemClock clock;
    return clock;
}

const TimeZone& local_time_zone() {
    static const LocalTimeZone zone;
    return zone;
}

std::string format_age(std::int64_t at_ms, std::int64_t now_ms) {
    const bool future = at_ms > now_ms;
    const std::int64_t seconds = (future ? at_ms - now_ms : now_ms - at_ms) / 1000;
    if (seconds < 1) return "just now";
    std::string amount;
    if (seconds < 60)
        amount = std::to_string(seconds) + " s";
    else if (seconds < 60 * 60)
        amount = std::to_string(seconds / 60) + " min";
    else if (seconds < 48 * 60 * 60)
        amount = std::to_string(seconds / (60 * 60)) + " h";
    else
        amount = std::to_string(seconds / (24 * 60 * 60)) + " d";
    return future ? "in " + amount : amount + " ago";
}

std::string format_local_time(std::int64_t at_ms, std::int64_t utc_offset_s) {
    using namespace std::chrono;
    // Whole seconds, rounded down also before 1970.
    const sys_seconds at = floor<seconds>(sys_time<milliseconds>(milliseconds(at_ms))) +
                           seconds(utc_offset_s);
    const auto day = floor<days>(at);
    const year_month_day date(day);
    const hh_mm_ss time(at - day);
    char text[40];
    std::snprintf(text, sizeof text, "%04d-%02u-%02u %02lld:%02lld:%02lld", static_cast<int>(date.year()),
                  static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                  static_cast<long long>(time.hours().count()),
                  static_cast<long long>(time.minutes().count()),
                  static_cast<long long>(time.seconds().count()));
    return text;
}

std::string format_when(std::int64_t at_ms, const Clock& clock, const TimeZone& zone) {
    return format_local_time(at_ms, zone.utc_offset_s(at_ms)) + " (" +
           format_age(at_ms, clock.now_ms()) + ")";
}

} // namespace handler::cli
