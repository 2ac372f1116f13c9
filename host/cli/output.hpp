// How the CLI shows answers to people: aligned tables and key/value records; with
// --json the answer's JSON, pretty-printed, so scripts need no table parsing.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace handler::cli {

void print_json(std::ostream& out, const boost::json::value& value);
void print_table(std::ostream& out, const boost::json::array& rows,
                 const std::vector<std::string>& columns);
void print_record(std::ostream& out, const boost::json::object& record);
void print_status(std::ostream& out, const boost::json::object& status);

// A JSON scalar as a person reads it: strings unquoted, null as "-", arrays joined.
std::string display(const boost::json::value& value);

} // namespace handler::cli
