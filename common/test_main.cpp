// test_main.cpp - doctest's main for every step's test binary.
//
// Runs the checks as doctest normally does, then prints one plain summary line that
// `make test` adds up across steps:  "<name>: N passed, N failed, N skipped"
// where N counts test cases. A test case that called skip_test() counts as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "test_skip.h"

namespace {

const char* current_test_name = "";
bool current_test_skipped = false;
int passed_count = 0;
int failed_count = 0;
int skipped_count = 0;

// Listens to doctest's events and counts test cases by outcome.
struct CountingListener : doctest::IReporter {
    explicit CountingListener(const doctest::ContextOptions&) {}
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {}
    void test_case_start(const doctest::TestCaseData& data) override {
        current_test_name = data.m_name;
        current_test_skipped = false;
    }
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
        if (!stats.testCaseSuccess) failed_count++;
        else if (current_test_skipped) skipped_count++;
        else passed_count++;
    }
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

REGISTER_LISTENER("counting", 1, CountingListener);

void skip_test(const std::string& reason) {
    current_test_skipped = true;
    std::printf("SKIPPED \"%s\": %s\n", current_test_name, reason.c_str());
}

int main(int argc, char** argv) {
    doctest::Context context;
    context.applyCommandLine(argc, argv);
    int result = context.run();
    if (context.shouldExit()) return result;
    const char* name = std::strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    std::printf("%s: %d passed, %d failed, %d skipped\n", name, passed_count, failed_count,
                skipped_count);
    return result;
}
