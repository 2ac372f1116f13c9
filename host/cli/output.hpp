// How the CLI shows answers to people: aligned tables and key/value records; with
// --json the answer's JSON, pretty-printed, so scripts need no table parsing.
#pragma once

#include "cli/time_format.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace handler::cli {

void print_json(std::ostream& out, const boost::json::value& value);
void print_table(std::ostream& out, const boost::json::array& rows,
                 const std::vector<std::string>& columns);
void print_record(std::ostream& out, const boost::json::object& record);
void print_status(std::ostream& out, const boost::json::object& status);

// The API's times (milliseconds since the Unix epoch) among `fields` of `record`, as a
// person reads them: in a table their age, in a record the local time and the age. A
// field that is absent or not a number is left as it is.
enum class TimeStyle { age, local_time };
void show_times(boost::json::object& record, std::initializer_list<std::string_view> fields,
                const Clock& clock, const TimeZone& zone, TimeStyle style);

// The id in `field` of `record` replaced by its name from `names`; an id not there, or
// null, is left as it is.
void show_name(boost::json::object& record, std::string_view field,
               const std::map<std::int64_t, std::string>& names);

// A JSON scalar as a person reads it: strings unquoted, null as "-", arrays joined.
std::string display(const boost::json::value& value);

// OBJECT's string FIELD, or "" when it is missing or not a string (an event's payload,
// written by a harness, may lack any field).
std::string text_of(const boost::json::object& object, std::string_view field);

// `text` with every control character shown as a space: C0, DEL, and C1 (U+0080 to
// U+009F, two bytes in UTF-8), which some terminals also act on. Hosts, paths, titles and
// messages may come from inside a container, and the terminal is no place for their
// escape sequences. display() applies it to every string it prints. `keep_lines`: line
// feeds and tabs stay (an agent's answer, which has paragraphs).
std::string printable(std::string_view text, bool keep_lines = false);

// A prompt's images (its payload's "images") for a person: " [image/png, 12 KiB]" each,
// or "" when it has none.
std::string images_note(const boost::json::object& payload);

} // namespace handler::cli
