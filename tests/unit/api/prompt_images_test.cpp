#include "api/prompt_images.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using handler::ErrorCode;
using handler::api::check_prompt_image;
using handler::api::image_of_file;
using handler::api::PromptImage;

const std::string kPng("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);

TEST(PromptImages, AFilesTypeIsReadFromItsFirstBytesAndItsDataChecksBack) {
    for (const auto& [bytes, type] : std::vector<std::pair<std::string, std::string>>{
             {kPng, "image/png"},
             {"\xff\xd8\xff\xe0 JFIF", "image/jpeg"},
             {"GIF89a\x01\x00", "image/gif"},
             {"GIF87a", "image/gif"},
             {std::string("RIFF\x10\0\0\0WEBPVP8 ", 16), "image/webp"}}) {
        auto image = image_of_file(bytes, "shot");
        ASSERT_TRUE(image) << type << ": " << image.error().message;
        EXPECT_EQ(image->mime_type, type);
        EXPECT_TRUE(check_prompt_image(*image, "images[0]")) << type;
    }
    EXPECT_EQ(image_of_file(kPng, "x")->data, "iVBORw0KGgoAAAANSUhEUg==");
    auto text = image_of_file("#!/bin/sh\nrm -rf /\n", "run.sh");
    ASSERT_FALSE(text);
    EXPECT_NE(text.error().message.find("run.sh is not an image"), std::string::npos) << text.error().message;
    auto large = image_of_file(kPng + std::string(handler::api::kMaxImageBytes, 'x'), "big.png");
    ASSERT_FALSE(large);
    EXPECT_EQ(large.error().code, ErrorCode::too_large);
}

TEST(PromptImages, ALabelThatIsNotTheContentOrBase64ThatIsNotIsRefused) {
    const std::string png = image_of_file(kPng, "x")->data;
    EXPECT_TRUE(check_prompt_image({"image/png", png}, "images[0]"));
    for (const auto& [image, expected] : std::vector<std::pair<PromptImage, std::string>>{
             {{"image/jpeg", png}, "images[1] is not a image/jpeg file"},
             {{"text/html", png}, "images[1].mimeType is 'text/html'"},
             {{"image/png", png.substr(1)}, "images[1].data is not base64"},
             {{"image/png", " " + png.substr(1)}, "images[1].data is not base64"},
             {{"image/png", png.substr(0, 4) + "====" + png.substr(8)}, "images[1].data is not base64"},
             {{"image/png", "iVBO\nRw0K"}, "images[1].data is not base64"},
             {{"image/png", "iVBO*Rw0"}, "images[1].data is not base64"},
             {{"image/png", ""}, "images[1].data is not base64"},
             {{"image/png", "AAAA"}, "images[1] is not a image/png file"}}) {
        auto checked = check_prompt_image(image, "images[1]");
        ASSERT_FALSE(checked) << image.data;
        EXPECT_NE(checked.error().message.find(expected), std::string::npos) << checked.error().message;
    }
    auto huge = check_prompt_image({"image/png", std::string(8 * 1024 * 1024, 'A')}, "images[0]");
    ASSERT_FALSE(huge);
    EXPECT_EQ(huge.error().code, ErrorCode::too_large);
}

} // namespace
