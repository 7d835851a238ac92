#include "config/switches.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "ir/error.h"

namespace nnfuse {
namespace switches_test {

const PassInfo kConvBn{"ConvBatchnormFusionPass", "Conv + BN", true, true};
const PassInfo kConvAct{"ConvActivationFusionPass", "Conv + act", true, true};
const PassInfo kOffByDefault{"AutoFusionPass", "generated kernels", true, false};
const PassInfo kFold{"ConstantFolding", "folds constants", false, true};

const std::vector<PassInfo> kKnown = {kConvBn, kConvAct, kOffByDefault, kFold};
const std::map<std::string, std::vector<std::string>> kPassOps = {
    {"ConvBatchnormFusionPass", {"Conv", "BatchNormalization"}},
    {"ConvActivationFusionPass", {"Conv", "Relu"}},
};

FusionSwitches parse(const std::string& text) {
  return FusionSwitches::parse(text, "sw.cfg", kKnown, kPassOps);
}

// The message of the kInvalidArgument error that parsing `text` throws.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << text;
  return "";
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(Switches, DefaultsWithoutFile) {
  FusionSwitches s;
  EXPECT_TRUE(s.enabled(kConvBn));
  EXPECT_FALSE(s.enabled(kOffByDefault));
  EXPECT_TRUE(s.enabled(kFold));
  EXPECT_TRUE(s.user_rules().empty());
}

TEST(Switches, GePerPassBeatsAll) {
  FusionSwitches s =
      parse(R"({"Switch":{"GraphFusion":{"ALL":"on","ConvBatchnormFusionPass":"off"}}})");
  EXPECT_FALSE(s.enabled(kConvBn));
  EXPECT_TRUE(s.enabled(kConvAct));
  EXPECT_TRUE(s.enabled(kOffByDefault));  // ALL on beats the default

  s = parse(R"({"Switch":{"GraphFusion":{"ALL":"off","ConvBatchnormFusionPass":"on"}}})");
  EXPECT_TRUE(s.enabled(kConvBn));
  EXPECT_FALSE(s.enabled(kConvAct));
  EXPECT_TRUE(s.enabled(kFold));  // not a fusion pass: always runs
}

TEST(Switches, GeUbFusionSectionAppliesToo) {
  FusionSwitches s = parse(R"({"Switch":{"UBFusion":{"ConvActivationFusionPass":"off"}}})");
  EXPECT_FALSE(s.enabled(kConvAct));
  EXPECT_TRUE(s.enabled(kConvBn));
  EXPECT_FALSE(s.enabled(kOffByDefault));  // no entry, no ALL: default

  // Per-pass in one section beats ALL in the other.
  s = parse(
      R"({"Switch":{"GraphFusion":{"ALL":"off"},"UBFusion":{"ConvActivationFusionPass":"on"}}})");
  EXPECT_TRUE(s.enabled(kConvAct));
  EXPECT_FALSE(s.enabled(kConvBn));

  // Where the sections disagree, off wins.
  s = parse(R"({"Switch":{"GraphFusion":{"ALL":"on"},"UBFusion":{"ALL":"off"}}})");
  EXPECT_FALSE(s.enabled(kConvBn));
}

TEST(Switches, LegacyLines) {
  FusionSwitches s = parse(
      "# switch file\n"
      "\n"
      "  ConvBatchnormFusionPass : off  \n"
      "AutoFusionPass:on # trailing comment\n"
      "\r\n");
  EXPECT_FALSE(s.enabled(kConvBn));
  EXPECT_TRUE(s.enabled(kOffByDefault));
  EXPECT_TRUE(s.enabled(kConvAct));

  s = parse("ALL:off\nConvActivationFusionPass:on\n");
  EXPECT_FALSE(s.enabled(kConvBn));
  EXPECT_TRUE(s.enabled(kConvAct));
  EXPECT_TRUE(s.enabled(kFold));
}

TEST(Switches, RulesToggleBuiltinsAndKeepUserRules) {
  FusionSwitches s = parse(R"({"rules":[
      {"name":"no_conv_bn","ops":["Conv","BatchNormalization"],"action":"off"},
      {"ops":["Conv","Relu"],"action":"fuse"},
      {"name":"mul_add","ops":["Mul","Add"],"action":"fuse"},
      {"ops":["Sigmoid","Mul"],"action":"fuse"}]})");
  EXPECT_FALSE(s.enabled(kConvBn));
  EXPECT_TRUE(s.enabled(kConvAct));
  ASSERT_EQ(s.user_rules().size(), 2u);
  EXPECT_EQ(s.user_rules()[0].name, "mul_add");
  EXPECT_EQ(s.user_rules()[0].ops, (std::vector<std::string>{"Mul", "Add"}));
  EXPECT_EQ(s.user_rules()[1].name, "Sigmoid_Mul");  // default name: the ops
}

TEST(Switches, SwitchAndRulesTogether) {
  FusionSwitches s = parse(
      R"({"Switch":{"GraphFusion":{"ALL":"off"}},"rules":[{"ops":["Conv","Relu"],"action":"fuse"}]})");
  EXPECT_TRUE(s.enabled(kConvAct));
  EXPECT_FALSE(s.enabled(kConvBn));
}

TEST(Switches, SetOverridesAndSetAll) {
  FusionSwitches s;
  s.set_all(false);
  s.set("ConvActivationFusionPass", true);
  EXPECT_FALSE(s.enabled(kConvBn));
  EXPECT_TRUE(s.enabled(kConvAct));
  EXPECT_TRUE(s.enabled(kFold));
}

TEST(Switches, ByteOrderMarkIsSkipped) {
  EXPECT_FALSE(
      parse("\xEF\xBB\xBF{\"Switch\":{\"GraphFusion\":{\"ALL\":\"off\"}}}").enabled(kConvBn));
  EXPECT_FALSE(parse("\xEF\xBB\xBF"
                     "ConvBatchnormFusionPass:off\n")
                   .enabled(kConvBn));
}

TEST(SwitchesErrors, EmptyFile) {
  EXPECT_HAS(error_of(""), "sw.cfg: the fusion switch file is empty");
  EXPECT_HAS(error_of(" \n\t\n"), "empty");
}

TEST(SwitchesErrors, MalformedJsonNamesTheLine) {
  std::string msg = error_of("{\n  \"Switch\": {\n    \"GraphFusion\": {\"ALL\": on}\n  }\n}\n");
  EXPECT_HAS(msg, "sw.cfg:3: malformed JSON");
  msg = error_of("{\"Switch\": {\"GraphFusion\": {}}\n");  // unterminated
  EXPECT_HAS(msg, "sw.cfg:");
  EXPECT_HAS(msg, "malformed JSON");
}

TEST(SwitchesErrors, JsonShapeAndKeys) {
  EXPECT_HAS(error_of("[1, 2]"), "sw.cfg: expected a JSON object");
  EXPECT_HAS(error_of("{}"), "sw.cfg: expected \"Switch\" or \"rules\"");
  EXPECT_HAS(error_of(R"({"Switch":{},"Extra":1})"), "sw.cfg: Extra: unknown top-level key");
  EXPECT_HAS(error_of(R"({"Switch":[]})"), "sw.cfg: Switch: expected an object");
  EXPECT_HAS(error_of(R"({"Switch":{"Fusion":{}}})"), "sw.cfg: Switch.Fusion: unknown section");
  EXPECT_HAS(error_of(R"({"Switch":{"GraphFusion":"on"}})"),
             "sw.cfg: Switch.GraphFusion: expected an object");
}

TEST(SwitchesErrors, GeValuesMustBeOnOrOff) {
  EXPECT_HAS(error_of(R"({"Switch":{"GraphFusion":{"ConvBatchnormFusionPass":"maybe"}}})"),
             "sw.cfg: Switch.GraphFusion.ConvBatchnormFusionPass: expected \"on\" or \"off\", "
             "got \"maybe\"");
  EXPECT_HAS(error_of(R"({"Switch":{"UBFusion":{"ALL":true}}})"),
             "sw.cfg: Switch.UBFusion.ALL: expected \"on\" or \"off\", got true");
}

TEST(SwitchesErrors, UnknownPassIsNamedWithKnownOnes) {
  std::string msg = error_of(R"({"Switch":{"GraphFusion":{"ConvBatchnormFusion":"off"}}})");
  EXPECT_HAS(msg, "sw.cfg: Switch.GraphFusion.ConvBatchnormFusion: unknown pass");
  EXPECT_HAS(msg, "did you mean \"ConvBatchnormFusionPass\"");
  EXPECT_HAS(msg, "known passes: ConvBatchnormFusionPass, ConvActivationFusionPass");

  msg = error_of("ConvBatchnormFusionPass:off\nTotallyUnknown:on\n");
  EXPECT_HAS(msg, "sw.cfg:2: unknown pass \"TotallyUnknown\"");
  EXPECT_EQ(msg.find("did you mean"), std::string::npos);
  msg = error_of("Conv:off\n");  // too short to be a typo of a long name
  EXPECT_EQ(msg.find("did you mean"), std::string::npos) << msg;
}

TEST(SwitchesErrors, LegacyLinesNameTheLine) {
  EXPECT_HAS(error_of("# c\nConvBatchnormFusionPass off\n"),
             "sw.cfg:2: expected \"PassName:on\" or \"PassName:off\"");
  EXPECT_HAS(error_of("\n\nConvBatchnormFusionPass:maybe\n"),
             "sw.cfg:3: ConvBatchnormFusionPass: expected \"on\" or \"off\", got \"maybe\"");
  EXPECT_HAS(error_of(":on\n"), "sw.cfg:1: missing pass name");
  EXPECT_HAS(error_of("Bad\xff\xfeName:on\n"), "sw.cfg:1: unknown pass");  // invalid UTF-8
}

TEST(SwitchesErrors, RuleFields) {
  EXPECT_HAS(error_of(R"({"rules":{}})"), "sw.cfg: rules: expected an array");
  EXPECT_HAS(error_of(R"({"rules":["Conv"]})"), "sw.cfg: rules[0]: expected an object");
  EXPECT_HAS(error_of(R"({"rules":[{"name":"x","action":"fuse"}]})"),
             "sw.cfg: rules[0]: rule has no \"ops\"");
  EXPECT_HAS(error_of(R"({"rules":[{"ops":[],"action":"fuse"}]})"),
             "sw.cfg: rules[0].ops: expected a non-empty array");
  EXPECT_HAS(error_of(R"({"rules":[{"ops":"Conv","action":"fuse"}]})"),
             "sw.cfg: rules[0].ops: expected a non-empty array");
  EXPECT_HAS(error_of(R"({"rules":[{"ops":["Conv","Relu"],"action":"fuse"},
                                   {"ops":["Conv",3],"action":"fuse"}]})"),
             "sw.cfg: rules[1].ops[1]: expected an op-type string, got 3");
  EXPECT_HAS(error_of(R"({"rules":[{"ops":["Conv","Relu"]}]})"),
             "sw.cfg: rules[0]: rule has no \"action\"");
  EXPECT_HAS(error_of(R"({"rules":[{"ops":["Conv","Relu"],"action":"on"}]})"),
             "sw.cfg: rules[0].action: expected \"fuse\" or \"off\", got \"on\"");
  EXPECT_HAS(error_of(R"({"rules":[{"name":7,"ops":["Conv","Relu"],"action":"fuse"}]})"),
             "sw.cfg: rules[0].name: expected a non-empty string, got 7");
  EXPECT_HAS(error_of(R"({"rules":[{"ops":["Conv","Relu"],"action":"fuse","prio":1}]})"),
             "sw.cfg: rules[0].prio: unknown key");
  EXPECT_HAS(error_of(R"({"rules":[{"name":"a","ops":["Mul","Add"],"action":"fuse"},
                                   {"name":"a","ops":["Sub","Add"],"action":"fuse"}]})"),
             "sw.cfg: rules[1].name: duplicate rule name \"a\"");
}

TEST(SwitchesErrors, OffRuleNeedsABuiltinPattern) {
  EXPECT_HAS(error_of(R"({"rules":[{"ops":["Mul","Add"],"action":"off"}]})"),
             "sw.cfg: rules[0].ops: no built-in pattern has ops [Mul, Add]");
}

TEST(Switches, LoadReadsTheFileAndNamesIt) {
  std::string path = ::testing::TempDir() + "switches_test_load.json";
  {
    std::ofstream out(path);
    out << R"({"Switch":{"GraphFusion":{"ConvBatchnormFusionPass":"off"}}})";
  }
  FusionSwitches s = FusionSwitches::load(path, kKnown, kPassOps);
  EXPECT_FALSE(s.enabled(kConvBn));
  {
    std::ofstream out(path);
    out << "{\"Switch\": {\"GraphFusion\": {\"Bogus\": \"on\"}}}";
  }
  try {
    FusionSwitches::load(path, kKnown, kPassOps);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), path + ": Switch.GraphFusion.Bogus: unknown pass");
  }
  std::remove(path.c_str());

  try {
    FusionSwitches::load(path, kKnown, kPassOps);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_HAS(e.what(), path + ": cannot read");
  }
}

// Found by fuzz_switches: a number too large for a double made the JSON parser throw its
// out_of_range, not parse_error, which escaped as an untyped exception.
TEST(SwitchesErrors, NumberOutOfRangeIsMalformedJson) {
  EXPECT_HAS(error_of(R"({"rules":[{"ops":[1E400]}]})"), "malformed JSON");
  EXPECT_HAS(error_of("{\"Switch\":{\"GraphFusion\":{\"ALL\":\"o\xff\"}}}"), "sw.cfg");
}

}  // namespace switches_test
}  // namespace nnfuse
