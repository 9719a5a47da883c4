// test_skip.h - a check that cannot run here (no GPU, no real vocabulary) says so and is counted
// as skipped, never as passed. Call skip_test() at the top of the TEST_CASE and return.
#pragma once

#include <string>

// Records the running test case as skipped and prints the reason.
void skip_test(const std::string& reason);
