// ReasoningSplitter: a reply's <think> block apart from its answer, the same
// however the stream cuts the text into pieces.
#include "tern/reasoning.h"

#include <gtest/gtest.h>

#include <string>

namespace {

struct Split {
  std::string answer, reasoning;
  bool unclosed = false;
};

// Feeds `text` cut at `cuts` (increasing offsets), then finishes.
Split run(const std::string& text, const std::vector<size_t>& cuts) {
  Split s;
  tern::ReasoningSplitter sp([&](const std::string& t) { s.answer += t; },
                             [&](const std::string& t) { s.reasoning += t; });
  size_t prev = 0;
  for (size_t c : cuts) sp.feed(std::string_view(text).substr(prev, c - prev)), prev = c;
  sp.feed(std::string_view(text).substr(prev));
  s.unclosed = sp.in_reasoning();
  sp.finish();
  return s;
}

// Every way of cutting the text into one, two or three pieces, and one
// character at a time, gives the answer and reasoning expected.
void expect_split(const std::string& text, const std::string& answer, const std::string& reasoning,
                  bool unclosed = false) {
  std::vector<std::vector<size_t>> cuttings = {{}};
  for (size_t i = 0; i <= text.size(); ++i) {
    cuttings.push_back({i});
    for (size_t j = i; j <= text.size(); ++j) cuttings.push_back({i, j});
  }
  std::vector<size_t> each;
  for (size_t i = 1; i < text.size(); ++i) each.push_back(i);
  cuttings.push_back(each);
  for (const auto& cuts : cuttings) {
    const Split s = run(text, cuts);
    std::string where;
    for (size_t c : cuts) where += std::to_string(c) + " ";
    EXPECT_EQ(s.answer, answer) << "text " << text << ", cut at " << where;
    EXPECT_EQ(s.reasoning, reasoning) << "text " << text << ", cut at " << where;
    EXPECT_EQ(s.unclosed, unclosed) << "text " << text << ", cut at " << where;
  }
}

TEST(ReasoningSplitter, AQwen3ReplyIsReasoningThenAnswer) {
  expect_split("<think>\nAdd them.\n</think>\n\n4", "4", "\nAdd them.\n");
  expect_split("<think>\n\n</think>\n\nHello there.", "Hello there.", "\n\n");
  // Blanks before the tag, and an answer that goes on over lines.
  expect_split(" \n<think>x</think>a\nb", "a\nb", "x");
}

TEST(ReasoningSplitter, TextWithoutAnOpeningTagIsAllAnswer) {
  expect_split("The answer is 4.", "The answer is 4.", "");
  expect_split("Use <think> tags like </think> this", "Use <think> tags like </think> this", "");
  expect_split("<thinking>no</thinking>", "<thinking>no</thinking>", "");
  expect_split("  \n", "  \n", "");
  expect_split("", "", "");
}

TEST(ReasoningSplitter, HeldTextComesOutAtTheEnd) {
  // A reply cut short inside what could have been a tag.
  expect_split("<thi", "<thi", "");
  expect_split("<think>half</thi", "", "half</thi", true);
  expect_split("<think>no end", "", "no end", true);
  // Only the first closing tag ends the reasoning.
  expect_split("<think>a</think>b</think>c", "b</think>c", "a");
  // Nothing after the reasoning but blank lines.
  expect_split("<think>r</think>\n\n", "", "r");
}

TEST(ReasoningSplitter, EitherSinkMayBeAbsent) {
  std::string answer;
  tern::ReasoningSplitter sp([&](const std::string& t) { answer += t; }, nullptr);
  sp.feed("<think>hidden</think>\n\nshown");
  sp.finish();
  EXPECT_EQ(answer, "shown");
  tern::ReasoningSplitter none(nullptr, nullptr);
  none.feed("<think>x</think>y");
  none.finish();
}

}  // namespace
