#include "cli/output.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <ostream>

namespace handler::cli {
namespace json = boost::json;

namespace {

void pretty(std::ostream& out, const json::value& value, int indent) {
    const std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
    const std::string inner(static_cast<std::size_t>(indent + 1) * 2, ' ');
    if (value.is_object()) {
        const auto& object = value.as_object();
        if (object.empty()) { out << "{}"; return; }
        out << "{\n";
        bool first = true;
        for (const auto& [key, element] : object) {
            if (!first) out << ",\n";
            first = false;
            out << inner << json::serialize(json::string(key)) << ": ";
            pretty(out, element, indent + 1);
        }
        out << '\n' << pad << '}';
    } else if (value.is_array()) {
        const auto& array = value.as_array();
        if (array.empty()) { out << "[]"; return; }
        out << "[\n";
        for (std::size_t i = 0; i < array.size(); ++i) {
            if (i != 0) out << ",\n";
            out << inner;
            pretty(out, array[i], indent + 1);
        }
        out << '\n' << pad << ']';
    } else {
        out << json::serialize(value);
    }
}

} // namespace

void print_json(std::ostream& out, const json::value& value) {
    pretty(out, value, 0);
    out << '\n';
}

std::string printable(std::string_view text, bool keep_lines) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
            static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
            out.push_back(' ');
            ++i;
        } else {
            const bool kept = keep_lines && (byte == '\n' || byte == '\t');
            out.push_back(!kept && (byte < 0x20 || byte == 0x7f) ? ' ' : text[i]);
        }
    }
    return out;
}

std::string text_of(const json::object& object, std::string_view field) {
    const auto* value = object.if_contains(field);
    return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
}

std::string display(const json::value& value) {
    if (value.is_null()) return "-";
    if (value.is_string()) return printable(value.as_string());
    if (value.is_array()) {
        std::string joined;
        for (const auto& element : value.as_array()) {
            if (!joined.empty()) joined += ", ";
            joined += display(element);
        }
        return joined.empty() ? "-" : joined;
    }
    return json::serialize(value);
}

void show_times(json::object& record, std::initializer_list<std::string_view> fields,
                const Clock& clock, const TimeZone& zone, TimeStyle style) {
    for (const std::string_view field : fields) {
        auto* value = record.if_contains(field);
        if (value == nullptr || !value->is_int64()) continue;
        const std::int64_t at_ms = value->as_int64();
        *value = style == TimeStyle::age ? format_age(at_ms, clock.now_ms())
                                         : format_when(at_ms, clock, zone);
    }
}

void show_name(json::object& record, std::string_view field,
               const std::map<std::int64_t, std::string>& names) {
    auto* value = record.if_contains(field);
    if (value == nullptr || !value->is_int64()) return;
    if (const auto found = names.find(value->as_int64()); found != names.end())
        *value = found->second;
}

void print_table(std::ostream& out, const json::array& rows,
                 const std::vector<std::string>& columns) {
    if (rows.empty()) {
        out << "(none)\n";
        return;
    }
    std::vector<std::vector<std::string>> cells(1);
    std::vector<std::size_t> widths;
    for (const auto& column : columns) {
        std::string heading = column;
        std::transform(heading.begin(), heading.end(), heading.begin(),
                       [](unsigned char c) { return c == '_' ? ' ' : std::toupper(c); });
        widths.push_back(heading.size());
        cells.front().push_back(std::move(heading));
    }
    for (const auto& row : rows) {
        cells.emplace_back();
        for (std::size_t i = 0; i < columns.size(); ++i) {
            const json::value* field = row.is_object() ? row.as_object().if_contains(columns[i])
                                                       : nullptr;
            std::string text = field != nullptr ? display(*field) : "-";
            widths[i] = std::max(widths[i], text.size());
            cells.back().push_back(std::move(text));
        }
    }
    for (const auto& line : cells) {
        std::string text;
        for (std::size_t i = 0; i < line.size(); ++i) {
            text += line[i];
            if (i + 1 < line.size()) text += std::string(widths[i] - line[i].size() + 2, ' ');
        }
        out << text << '\n';
    }
}

void print_record(std::ostream& out, const json::object& record) {
    std::size_t width = 0;
    for (const auto& [key, value] : record) width = std::max(width, key.size());
    for (const auto& [key, value] : record)
        out << std::string(key) << ':' << std::string(width - key.size() + 1, ' ')
            << display(value) << '\n';
}

void print_status(std::ostream& out, const json::object& status) {
    out << "handlerd " << display(status.at("version")) << " is running (pid "
        << display(status.at("pid")) << ", plugin ABI " << display(status.at("abi")) << ")\n";
    out << "  socket: " << display(status.at("socket")) << '\n';
    if (const auto* tcp = status.if_contains("tcp"); tcp != nullptr && tcp->is_object())
        out << "  web/API: http://" << display(tcp->as_object().at("address")) << ':'
            << display(tcp->as_object().at("port")) << "/\n";
    else
        out << "  web/API: TCP listener off ([api] tcp = false)\n";
    if (const auto* plugins = status.if_contains("plugins"); plugins != nullptr &&
                                                             plugins->is_object()) {
        const auto& counts = plugins->as_object();
        out << "  plugins: " << display(counts.at("loaded")) << " loaded, "
            << display(counts.at("refused")) << " refused, " << display(counts.at("failed"))
            << " failed";
        if (const auto* disabled = counts.if_contains("disabled");
            disabled != nullptr && disabled->to_number<std::int64_t>() > 0)
            out << ", " << display(*disabled) << " disabled";
        if (counts.at("refused").to_number<std::int64_t>() +
                counts.at("failed").to_number<std::int64_t>() > 0)
            out << " (see `handler plugins list`)";
        out << '\n';
    }
}

std::string images_note(const json::object& payload) {
    std::string note;
    const auto* images = payload.if_contains("images");
    if (images == nullptr || !images->is_array()) return note;
    for (const auto& image : images->as_array()) {
        if (!image.is_object()) continue;
        const auto* mime_type = image.as_object().if_contains("mimeType");
        const auto* data = image.as_object().if_contains("data");
        const std::size_t bytes = data != nullptr && data->is_string() ? data->as_string().size() / 4 * 3 : 0;
        note += " [" + printable(mime_type != nullptr && mime_type->is_string() ? std::string(mime_type->as_string()) : "image") +
                ", " + std::to_string((bytes + 1023) / 1024) + " KiB]";
    }
    return note;
}

} // namespace handler::cli
