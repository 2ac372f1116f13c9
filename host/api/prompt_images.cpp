#include "api/prompt_images.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <vector>

namespace handler::api {
namespace {

struct ImageType {
    std::string_view mime_type;
    std::string_view magic; // the file's first bytes
    std::size_t magic_offset = 0;
};

// WebP is a RIFF file: "RIFF", four bytes of length, then "WEBP".
constexpr std::array<ImageType, 5> kImageTypes{{
    {"image/png", "\x89PNG\r\n\x1a\n"},
    {"image/jpeg", "\xff\xd8\xff"},
    {"image/gif", "GIF87a"},
    {"image/gif", "GIF89a"},
    {"image/webp", "WEBP", 8},
}};

std::string known_types() { return "image/png, image/jpeg, image/gif or image/webp"; }

bool starts_as(std::string_view content, const ImageType& type) {
    return content.size() >= type.magic_offset + type.magic.size() &&
           content.substr(type.magic_offset, type.magic.size()) == type.magic;
}

} // namespace

Result<PromptImage> image_of_file(std::string_view bytes, std::string_view where) {
    const std::string at(where);
    if (bytes.size() > kMaxImageBytes)
        return make_error(ErrorCode::too_large, at + " is larger than " + std::to_string(kMaxImageBytes / (1024 * 1024)) +
                                                    " MiB, the most a model API takes per image");
    const auto type = std::find_if(kImageTypes.begin(), kImageTypes.end(),
                                   [&](const ImageType& candidate) { return starts_as(bytes, candidate); });
    if (type == kImageTypes.end())
        return make_error(ErrorCode::invalid_argument, at + " is not an image of a type a model takes (" + known_types() + ")");
    std::string data(4 * ((bytes.size() + 2) / 3), '\0');
    const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(data.data()),
                                        reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    data.resize(static_cast<std::size_t>(written));
    return PromptImage{std::string(type->mime_type), std::move(data)};
}

Result<void> check_prompt_image(const PromptImage& image, std::string_view where) {
    const std::string at(where);
    const bool known = std::any_of(kImageTypes.begin(), kImageTypes.end(),
                                   [&](const ImageType& type) { return type.mime_type == image.mime_type; });
    if (!known)
        return make_error(ErrorCode::invalid_argument,
                          at + ".mimeType is '" + image.mime_type + "'; an image is " + known_types());
    // Base64 of kMaxImageBytes is 4/3 of it; checked first, so nothing larger is decoded.
    if (image.data.size() > (kMaxImageBytes + 2) / 3 * 4)
        return make_error(ErrorCode::too_large, at + " is larger than " + std::to_string(kMaxImageBytes / (1024 * 1024)) +
                                                    " MiB, the most a model API takes per image");
    // EVP_DecodeBlock skips leading and trailing blanks and takes a length that is not a
    // multiple of four; neither is base64 as a model API reads it.
    if (image.data.empty() || image.data.size() % 4 != 0 ||
        image.data.find_first_of(" \t\r\n") != std::string::npos)
        return make_error(ErrorCode::invalid_argument, at + ".data is not base64 (standard alphabet, padded, no blanks)");
    std::vector<unsigned char> bytes(image.data.size() / 4 * 3);
    const int decoded = EVP_DecodeBlock(bytes.data(), reinterpret_cast<const unsigned char*>(image.data.data()),
                                        static_cast<int>(image.data.size()));
    if (decoded < 0)
        return make_error(ErrorCode::invalid_argument, at + ".data is not base64 (standard alphabet, padded, no blanks)");
    // A padding character may only end the text.
    const std::size_t padding = image.data.size() - image.data.find_last_not_of('=') - 1;
    if (padding > 2 || image.data.find('=') < image.data.size() - padding)
        return make_error(ErrorCode::invalid_argument, at + ".data is not base64 (standard alphabet, padded, no blanks)");
    const std::string_view content(reinterpret_cast<const char*>(bytes.data()),
                                   static_cast<std::size_t>(decoded) - padding);
    const bool matches = std::any_of(kImageTypes.begin(), kImageTypes.end(), [&](const ImageType& type) {
        return type.mime_type == image.mime_type && starts_as(content, type);
    });
    if (!matches)
        return make_error(ErrorCode::invalid_argument,
                          at + " is not a " + image.mime_type + " file (its first bytes are not of that type)");
    return {};
}

} // namespace handler::api
