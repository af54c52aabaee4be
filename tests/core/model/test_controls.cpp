// The control table (model/controls.hpp): every spelling of every control round-trips
// (flag -> Controls -> label, plan key, policy part, environment, JSON -> Controls), the table is
// in the order of its enum and every control is spelled somewhere and applied by something.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/controls.hpp"
#include "model/limits.hpp"

namespace {

using cco::model::Control;
using cco::model::Controls;
using cco::model::kControls;
using cco::model::Spelling;

const Spelling kAll[] = {Spelling::Flag,    Spelling::TuneList, Spelling::PolicyPart,
                         Spelling::PlanKey, Spelling::Label,    Spelling::Env,
                         Spelling::Json};

// Values of each control worth a round trip (every enum value; a count; the model's k).
std::vector<Controls> samples(Control c) {
  std::vector<Controls> out;
  auto add = [&](auto set) {
    Controls v;
    set(v);
    out.push_back(v);
  };
  switch (c) {
    case Control::Priority:
      add([](Controls& v) { v.priority = true; });
      break;
    case Control::Shaping:
      add([](Controls& v) { v.blocks_per_sm = 3; });
      add([](Controls& v) { v.shape_model = true; });
      break;
    case Control::Pad:
      add([](Controls& v) { v.pad = 16384; });
      break;
    case Control::When:
      add([](Controls& v) { v.when = cco::model::When::Overlap; });
      add([](Controls& v) { v.when = cco::model::When::Always; });
      break;
    case Control::GemmSms:
      add([](Controls& v) { v.gemm_sms = 108; });
      break;
    case Control::NcclCtas:
      add([](Controls& v) { v.nccl_ctas = 32; });
      break;
    case Control::Green:
      add([](Controls& v) { v.green_sms = 54; });
      break;
    case Control::Register:
      for (auto r : {cco::model::CommRegister::None, cco::model::CommRegister::Buffer,
                     cco::model::CommRegister::Window})
        add([r](Controls& v) { v.nccl_reg = r; });
      break;
    case Control::CtaPolicy:
      for (auto p : {cco::model::CtaPolicy::Default, cco::model::CtaPolicy::Efficiency,
                     cco::model::CtaPolicy::Zero})
        add([p](Controls& v) { v.cta_policy = p; });
      break;
    case Control::Channels:
      add([](Controls& v) { v.channels = 8; });
      break;
  }
  return out;
}

std::string where(const cco::model::ControlRow& row, Spelling s) {
  return std::string(row.name) + " as spelling " + std::to_string(static_cast<int>(s));
}

TEST(Controls, TheTableIsInTheOrderOfItsEnumAndEveryControlIsSpelledAndApplied) {
  for (std::size_t i = 0; i < kControls.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(kControls[i].id), i) << kControls[i].name;
    std::size_t spelled = 0;
    for (const Spelling s : kAll) spelled += cco::model::spelling_keys(kControls[i].id, s);
    EXPECT_GE(spelled, 2u) << kControls[i].name;
    EXPECT_NE(std::string(kControls[i].applied_by), "") << kControls[i].name;
  }
}

TEST(Controls, EverySpellingOfEveryControlRoundTrips) {
  for (const auto& row : kControls) {
    for (const Controls& v : samples(row.id)) {
      for (const Spelling s : kAll) {
        if (cco::model::spelling_keys(row.id, s) == 0) {
          EXPECT_EQ(cco::model::control_text(v, row.id, s), "") << where(row, s);
          continue;
        }
        const std::string text = cco::model::control_text(v, row.id, s);
        if (text.empty()) continue;  // a value this spelling cannot say (shape:model as a flag)
        Controls back;
        cco::model::set_control(back, row.id, s, text);
        EXPECT_EQ(back, v) << where(row, s) << ": '" << text << "'";
      }
    }
  }
}

TEST(Controls, FlagToControlsToEveryOtherSpellingAndBack) {
  for (const auto& row : kControls) {
    if (cco::model::spelling_keys(row.id, Spelling::Flag) == 0) continue;
    for (const Controls& sample : samples(row.id)) {
      const std::string flag_text = cco::model::control_text(sample, row.id, Spelling::Flag);
      if (flag_text.empty()) continue;
      Controls from_flag;
      cco::model::set_control(from_flag, row.id, Spelling::Flag, flag_text);
      ASSERT_EQ(from_flag, sample) << row.name << " --flag " << flag_text;
      for (const Spelling s : kAll) {
        const std::string text = cco::model::control_text(from_flag, row.id, s);
        if (text.empty()) continue;
        Controls back;
        cco::model::set_control(back, row.id, s, text);
        EXPECT_EQ(back, from_flag) << where(row, s) << ": '" << text << "'";
      }
    }
  }
}

TEST(Controls, LabelsAreWrittenInTableOrderAndReadBack) {
  Controls v;
  v.blocks_per_sm = 3;
  v.pad = 16384;
  v.gemm_sms = 0;
  v.nccl_ctas = 32;
  v.green_sms = 54;
  v.nccl_reg = cco::model::CommRegister::Window;
  v.cta_policy = cco::model::CtaPolicy::Zero;
  const std::string label = cco::model::label_tokens(v);
  EXPECT_EQ(label, " k=3 pad=16K sms=all ctas=32 green=54 reg=window cta=zero");
  EXPECT_EQ(cco::model::controls_from_label(label), v);
  EXPECT_EQ(cco::model::label_tokens(Controls{}), "");
  EXPECT_THROW(cco::model::controls_from_label(" cta=fast"), cco::model::Error);
  EXPECT_THROW(cco::model::controls_from_label(" speed=3"), cco::model::Error);
}

TEST(Controls, TheCtaPolicyKeepsEachSpellingsOwnForms) {
  Controls v;
  cco::model::set_control(v, Control::CtaPolicy, Spelling::Flag, "2");  // NCCL's number on the CLI
  EXPECT_EQ(v.cta_policy, cco::model::CtaPolicy::Zero);
  EXPECT_EQ(cco::model::control_text(v, Control::CtaPolicy, Spelling::Env), "2");
  EXPECT_EQ(cco::model::control_text(v, Control::CtaPolicy, Spelling::PlanKey), "zero");
  EXPECT_EQ(cco::model::spelling_name(Control::CtaPolicy, Spelling::Env), "NCCL_CTA_POLICY");
  EXPECT_EQ(cco::model::spelling_name(Control::CtaPolicy, Spelling::PlanKey), "nccl.cta_policy");
  try {
    cco::model::set_control(v, Control::CtaPolicy, Spelling::PlanKey, "1");  // a plan names it
    FAIL() << "a number is no plan's CTA policy";
  } catch (const cco::model::Error& e) {
    EXPECT_STREQ(e.what(), "must be \"default\", \"efficiency\" or \"zero\", got \"1\"");
  }
  EXPECT_THROW(cco::model::set_control(v, Control::CtaPolicy, Spelling::PolicyPart, "zero"),
               cco::model::Error);
  EXPECT_EQ(cco::model::spelling_name(Control::NcclCtas, Spelling::Env, 1), "NCCL_MAX_CTAS");
}

// The results' field names as the files written today spell them (bench rows, step configs, a
// tuned plan's choice; golden files in tests/lab/bench/golden): the writers take them from the table.
TEST(Controls, TheJsonFieldsAreTheOnesTheResultFilesUse) {
  EXPECT_STREQ(cco::model::json_field(Control::Shaping), "target_blocks_per_sm");
  EXPECT_STREQ(cco::model::json_field(Control::Pad), "pad_bytes");
  EXPECT_STREQ(cco::model::json_field(Control::GemmSms), "gemm_sms");
  EXPECT_STREQ(cco::model::json_field(Control::NcclCtas), "nccl_ctas");
  EXPECT_STREQ(cco::model::json_field(Control::Green), "green_sms");
  EXPECT_STREQ(cco::model::json_field(Control::Register), "nccl_register");
  EXPECT_STREQ(cco::model::json_field(Control::CtaPolicy), "cta_policy");
  EXPECT_EQ(cco::model::json_field(Control::Priority), nullptr);
  // A row's registration is NCCL's number in the results, the name elsewhere.
  Controls v;
  v.nccl_reg = cco::model::CommRegister::Window;
  EXPECT_EQ(cco::model::control_text(v, Control::Register, Spelling::Json), "2");
  EXPECT_EQ(cco::model::control_text(v, Control::Register, Spelling::Flag), "window");
}

// A plan key split into its section and its field, as the plan reader and writer name them; a
// plan's priority is "high" or "default", never a flag's or a policy's "priority".
TEST(Controls, PlanKeysSplitIntoSectionAndField) {
  EXPECT_EQ(cco::model::plan_field(Control::Priority), "nccl");
  EXPECT_EQ(cco::model::plan_section(Control::Priority), "priority");
  EXPECT_EQ(cco::model::plan_field(Control::Shaping), "default");
  EXPECT_EQ(cco::model::plan_section(Control::Shaping), "shaping");
  EXPECT_EQ(cco::model::plan_field(Control::Pad), "pad");
  EXPECT_EQ(cco::model::plan_section(Control::Pad), "shaping.rules[]");
  EXPECT_EQ(cco::model::plan_field(Control::GemmSms), "sm_target");
  EXPECT_EQ(cco::model::plan_section(Control::GemmSms), "gemm");
  EXPECT_EQ(cco::model::plan_field(Control::Channels), "max_channels");
  EXPECT_EQ(cco::model::plan_section(Control::Channels), "nccl.channels[]");
  EXPECT_EQ(cco::model::plan_field(Control::NcclCtas, 1), "max_ctas");
  EXPECT_EQ(cco::model::plan_field(Control::CtaPolicy), "cta_policy");
  EXPECT_EQ(cco::model::plan_field(Control::When, 1), "when");
  EXPECT_EQ(cco::model::plan_section(Control::When, 1), "gemm");
  EXPECT_EQ(cco::model::plan_field(Control::Green), "");
  EXPECT_EQ(cco::model::plan_section(Control::Green), "");
  Controls v;
  cco::model::set_control(v, Control::Priority, Spelling::PlanKey, "High");
  EXPECT_EQ(v.priority, true);
  EXPECT_EQ(cco::model::control_text(v, Control::Priority, Spelling::PlanKey), "high");
  cco::model::set_control(v, Control::Priority, Spelling::PlanKey, "default");
  EXPECT_EQ(v.priority, false);
  EXPECT_EQ(cco::model::control_text(v, Control::Priority, Spelling::PlanKey), "default");
  EXPECT_THROW(cco::model::set_control(v, Control::Priority, Spelling::PlanKey, "priority"),
               cco::model::Error);
  cco::model::set_control(v, Control::Pad, Spelling::PlanKey, "16K");
  EXPECT_EQ(v.pad, 16384);
}

}  // namespace
